// Which values of a client's `anthropic-beta` header reach a platform. Anthropic's API accepts every
// beta it knows; a cloud serving Claude accepts only the betas it supports and refuses the whole
// request over one it does not know (Bedrock answers `400 invalid beta flag`), and coding agents send
// many (Claude Code: `claude-code-20250219,interleaved-thinking-…,prompt-caching-scope-…`). A
// platform's YAML `anthropic_beta` allows or denies names; without one its adapter's default applies.
import type { BetaPolicy } from '../config/compiled.ts';

/** The header value that may go to the platform (names comma-separated, as sent), or undefined when
 *  none is left. Names are compared without regard to case. */
export function forwardedBetas(header: string, policy: BetaPolicy): string | undefined {
  const names = header
    .split(',')
    .map((b) => b.trim())
    .filter((b) => b !== '');
  const listed = new Set(policy.names);
  const kept = names.filter((b) => listed.has(b.toLowerCase()) === (policy.kind === 'allow'));
  return kept.length > 0 ? kept.join(',') : undefined;
}

/** The client headers an adapter sees: `anthropic-beta` filtered by the policy (the same object when
 *  there is nothing to filter, so requests without the header pay nothing). */
export function withBetaPolicy(
  clientHeaders: Record<string, string>,
  policy: BetaPolicy | null,
): Record<string, string> {
  const header = clientHeaders['anthropic-beta'];
  if (policy === null || header === undefined || header === '') return clientHeaders;
  const { 'anthropic-beta': _dropped, ...rest } = clientHeaders;
  const kept = forwardedBetas(header, policy);
  return kept === undefined ? rest : { ...rest, 'anthropic-beta': kept };
}
