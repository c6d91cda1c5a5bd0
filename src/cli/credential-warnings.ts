// `serve`'s start-up warnings about credentials, one JSON line each on stderr, by name: every
// credential active deployments need that is not stored (with the deployments that cannot serve
// without it), every stored secret no resource names (both at level warn), and a louder line when
// nothing can serve at all (error). Levels are the events' own (src/observe/log-line.ts).
import { auditCredentials } from '../availability/credential-audit.ts';
import type { CompiledConfig } from '../config/compiled.ts';

export type LogLine = (event: string, fields: Record<string, unknown>) => void;

export function logCredentialWarnings(
  config: CompiledConfig,
  stored: ReadonlySet<string>,
  nowMs: number,
  log: LogLine,
): void {
  const audit = auditCredentials(config, stored, nowMs);
  const needed = [...new Set(config.resources.filter((r) => r.active).map((r) => r.credential))].sort();
  for (const m of audit.missing) {
    log('credential_missing', {
      credential: m.credential,
      resources: m.resources,
      deployments: m.deployments,
      message: `credential "${m.credential}" is not stored: ${m.deployments.length} deployment(s) cannot serve (${m.deployments.join(', ')}); store it with \`pi-gateway secret set ${m.credential}\``,
    });
  }
  for (const name of audit.unused) {
    log('secret_unused', {
      name,
      message: `stored secret "${name}" is named by no resource in the config, so it serves nothing; resources use: ${needed.join(', ') || 'none'}`,
    });
  }
  if (audit.servable === 0 && config.deployments.length > 0) {
    log('nothing_servable', {
      message:
        'no deployment has its credential stored: every inference request will answer 404 no_eligible_provider until one is stored with `pi-gateway secret set <credential>`',
    });
  }
}
