// `pi-gateway reload --admin URL`: asks one gateway to reload through its admin listener
// (POST URL/admin/reload with the operator token), for a process no local signal or pid file reaches
// — each node of a fleet. Nothing it prints carries a credential: the token is never echoed, and the
// listener is named by its host and port only (a URL's user name and password are refused, never
// shown).
import { CliError } from './store-command.ts';
import { UsageError } from './args.ts';

/** What a node answers to POST /admin/reload (src/console/reload.ts). */
export interface AdminReloadAnswer {
  ok: boolean;
  hash: string | null;
  problems: string[];
  restart_needed: string[];
  at: string;
  pid: number;
}

/** The reload endpoint of the admin listener at `raw`, and how to name it in messages. */
export function adminReloadUrl(raw: string): { url: URL; name: string } {
  let base: URL;
  try {
    base = new URL(raw);
  } catch {
    throw new UsageError('--admin must be the admin listener’s http(s) URL, such as http://10.0.0.11:9090');
  }
  if (base.protocol !== 'http:' && base.protocol !== 'https:')
    throw new UsageError(`--admin must be an http(s) URL, not ${base.protocol}`);
  if (base.username !== '' || base.password !== '') {
    throw new UsageError(
      '--admin must not carry a user name or password: the operator token is read from PI_ADMIN_TOKEN (or PI_ADMIN_TOKEN_FILE)',
    );
  }
  // A path is kept (a proxy may serve the admin listener under a prefix); query and fragment are not.
  const prefix = base.pathname.endsWith('/') ? base.pathname : `${base.pathname}/`;
  return { url: new URL(`${base.origin}${prefix}admin/reload`), name: base.host };
}

/** The error of an answer that is not a reload result, as one line. */
function refusal(status: number, body: unknown, name: string): CliError {
  const error = (body as { error?: { code?: unknown; message?: unknown } } | null)?.error;
  const code = typeof error?.code === 'string' ? error.code : null;
  const message = typeof error?.message === 'string' ? error.message : null;
  if (status === 401)
    return new CliError(
      `${name} refused the operator token (401): set PI_ADMIN_TOKEN to the token that node was started with`,
    );
  if (code === 'console_off')
    return new CliError(
      `${name} has no operator token, so it takes no reload through its admin listener: start it with PI_ADMIN_TOKEN set (or send it SIGHUP)`,
    );
  return new CliError(`${name} answered ${status}${code ? ` ${code}` : ''}${message ? `: ${message}` : ''}`);
}

/** POSTs the reload; resolves with the node's result (applied or refused), throws for anything else. */
export async function reloadThroughAdmin(
  raw: string,
  token: string | undefined,
  timeoutMs: number,
): Promise<{ answer: AdminReloadAnswer; name: string }> {
  const { url, name } = adminReloadUrl(raw);
  if (token === undefined || token === '')
    throw new CliError(
      'reloading through the admin listener needs the operator token: set PI_ADMIN_TOKEN (or PI_ADMIN_TOKEN_FILE)',
    );
  let res: Response;
  try {
    res = await fetch(url, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}` },
      signal: AbortSignal.timeout(timeoutMs),
    });
  } catch (err) {
    // A timeout rejects with the abort signal's TimeoutError; a network failure with `fetch failed`
    // whose cause carries the system error's code (ECONNREFUSED, ENOTFOUND, …).
    const cause = err instanceof Error && err.cause instanceof Error ? err.cause : err;
    const code = cause instanceof Error ? (cause as NodeJS.ErrnoException).code : undefined;
    const why =
      cause instanceof Error && cause.name === 'TimeoutError'
        ? `no answer within ${timeoutMs / 1000} s`
        : typeof code === 'string'
          ? code
          : cause instanceof Error
            ? cause.message
            : String(cause);
    throw new CliError(`cannot reach the admin listener at ${name} (${why})`);
  }
  const text = await res.text();
  let body: unknown = null;
  try {
    body = JSON.parse(text);
  } catch {
    // Not JSON: a proxy's page, or not a pi-gateway admin listener at all.
  }
  const answer = body as Partial<AdminReloadAnswer> | null;
  if ((res.status === 200 || res.status === 422) && typeof answer?.ok === 'boolean' && Array.isArray(answer.problems)) {
    return { answer: answer as AdminReloadAnswer, name };
  }
  throw refusal(res.status, body, name);
}
