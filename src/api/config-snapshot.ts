// One compiled config as the request path reads it: the lookups, the settings (with the caller's
// overrides) and the upstream calls built on its resources and platforms. A reload builds a new
// snapshot and swaps it in whole; a request reads the current one once at its start and keeps it to
// its end, so in-flight requests finish on the config they started with.
import type { CompiledConfig, GatewaySettings } from '../config/compiled.ts';
import { ConfigIndex } from '../config/index.ts';
import type { AdapterContext } from '../platforms/types.ts';
import { configuredTargets } from '../proxy/targets.ts';
import type { CallResolver } from '../proxy/upstream-call.ts';

export interface ConfigSnapshot {
  readonly index: ConfigIndex;
  readonly settings: GatewaySettings;
  /** Upstream calls on this config's resources and platforms. */
  readonly targets: CallResolver;
  /** sha256 of the config files it was compiled from (CompiledConfig.sourceHash). */
  readonly hash: string;
}

export interface SnapshotSources {
  /** Overrides of `gateway.yaml` limits (tests use short timeouts); kept across reloads. */
  limits?: Partial<GatewaySettings['limits']> | undefined;
  /** The unsealed credential, or null when absent or refused. */
  reveal(credential: string): string | null;
  /** Replaces scheme, host and port of every resource base URL; read per call. */
  upstreamOverride(): URL | null;
  /** Lent to platform adapters; the same one across reloads, so cached tokens are kept. */
  adapters: AdapterContext;
}

export function configSnapshot(config: CompiledConfig, sources: SnapshotSources): ConfigSnapshot {
  const index = new ConfigIndex(config);
  const settings: GatewaySettings = { ...config.settings, limits: { ...config.settings.limits, ...sources.limits } };
  const targets = configuredTargets({
    index,
    reveal: sources.reveal,
    upstreamOverride: sources.upstreamOverride,
    context: sources.adapters,
  });
  return { index, settings, targets, hash: config.sourceHash };
}

/** What a new config changes that only a restart applies (the running server keeps the old). */
export function restartNeeded(from: ConfigSnapshot, to: ConfigSnapshot): string[] {
  const out: string[] = [];
  const paths = (s: ConfigSnapshot) => JSON.stringify(s.index.config.vocabularies.endpoints.map((e) => [e.id, e.path]));
  if (paths(from) !== paths(to)) out.push('vocabularies.yaml endpoints (the route table is built at start)');
  const log = (s: ConfigSnapshot) => JSON.stringify(s.settings.requestLog);
  if (log(from) !== log(to)) out.push('gateway.yaml request_log (the log writer is opened at start)');
  return out;
}
