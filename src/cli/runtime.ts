// Shared start-up for `serve` and `demo`: load and validate the config (a bad config never starts a
// server), open the store, start the gateway, and shut everything down cleanly on SIGINT/SIGTERM.
import { sourceHashOf } from '../config/config-files.ts';
import type { CompiledConfig } from '../config/compiled.ts';
import { startGateway, type Gateway, type GatewayOptions, jsonLog } from '../gateway.ts';
import { Lifecycle } from '../observe/lifecycle.ts';
import { ADAPTERS } from '../platforms/index.ts';
import { type AdminListener, startAdminListener } from '../server/admin-app.ts';
import { openStore, type Store } from '../store/store.ts';
import { BufferedLines } from '../telemetry/line-sink.ts';
import { startTelemetry, type Telemetry } from '../telemetry/telemetry.ts';
import type { ObservabilityOptions } from './observability-options.ts';

/** Compiles a config directory; the compiler (ajv, yaml) is loaded only here, so serving from the
 *  generated tables never loads it. */
export async function loadOrExit(dir: string): Promise<CompiledConfig | null> {
  const { loadConfig, formatIssue } = await import('../config/load-config.ts');
  const r = loadConfig(dir, { adapters: ADAPTERS });
  if (r.ok) return r.config;
  for (const i of r.issues) process.stderr.write(formatIssue(i) + '\n');
  process.stderr.write(`pi-gateway: the config in ${dir} has ${r.issues.length} problem${r.issues.length === 1 ? '' : 's'}; not starting\n`);
  return null;
}

/**
 * The config to serve: the generated tables (src/generated/tables.ts, built and reviewed from the same
 * YAML) when the directory's files hash to the tables' `sourceHash`, so the server parses no YAML;
 * otherwise the directory compiled in memory by the same pipeline codegen uses.
 */
export async function configForServe(dir: string): Promise<{ config: CompiledConfig; source: 'generated tables' | 'compiled' } | null> {
  const hash = sourceHashOf(dir);
  if (hash !== null) {
    try {
      const { tables } = await import('../generated/tables.ts');
      if (tables.sourceHash === hash) return { config: tables, source: 'generated tables' };
    } catch {
      // No generated tables in this build: compile.
    }
  }
  const config = await loadOrExit(dir);
  return config ? { config, source: 'compiled' } : null;
}

export interface Running {
  gateway: Gateway;
  store: Store;
}

export async function runGateway(opts: {
  config: CompiledConfig;
  db: string;
  host: string;
  port: number;
  upstreamOverride?: string | null;
  store?: Store;
  observability?: ObservabilityOptions;
}): Promise<Running> {
  // The admin listener comes up first, so readiness answers "starting" while the store opens.
  const { telemetry, admin } = await startObservability(opts.observability);
  let store: Store | undefined = opts.store;
  let gateway: Gateway;
  try {
    store ??= openStore(opts.db, { requestLog: opts.config.settings.requestLog });
    const gwOpts: GatewayOptions = { config: opts.config, store, host: opts.host, port: opts.port, upstreamOverride: opts.upstreamOverride ?? null, telemetry };
    if (admin) gwOpts.admin = admin;
    gateway = await startGateway(gwOpts);
  } catch (err) {
    admin?.close();
    await telemetry.close();
    store?.close();
    throw err;
  }
  return { gateway, store };
}

/** Telemetry and the admin listener as the options say (nothing on without them). */
async function startObservability(o: ObservabilityOptions | undefined): Promise<{ telemetry: Telemetry; admin: AdminListener | null }> {
  const telemetry = await startTelemetry({
    metrics: o?.admin !== null && o?.admin !== undefined && o.metrics,
    accessLog: o?.accessLog ? new BufferedLines(process.stdout) : null,
    traces: o?.tracesUrl ? { url: o.tracesUrl, serviceName: o.serviceName } : null,
    log: jsonLog,
  });
  if (!o?.admin) return { telemetry, admin: null };
  try {
    const admin = await startAdminListener({
      ...o.admin,
      lifecycle: new Lifecycle(),
      metrics: telemetry.metrics,
      onUnexpectedError: (err) => jsonLog('admin_error', { error: err instanceof Error ? err.message : String(err) }),
    });
    return { telemetry, admin };
  } catch (err) {
    await telemetry.close();
    throw new Error(`admin listener: ${err instanceof Error ? err.message : String(err)}`);
  }
}

/** Resolves when SIGINT or SIGTERM arrives, after closing what `onStop` closes. */
export function untilStopped(onStop: () => Promise<void>): Promise<number> {
  return new Promise((resolve) => {
    let stopping = false;
    const stop = (signal: string) => {
      if (stopping) return;
      stopping = true;
      jsonLog('stopping', { signal });
      onStop().then(
        () => resolve(0),
        (err: unknown) => {
          process.stderr.write(`pi-gateway: error while stopping: ${err instanceof Error ? err.message : String(err)}\n`);
          resolve(1);
        },
      );
    };
    process.once('SIGINT', () => stop('SIGINT'));
    process.once('SIGTERM', () => stop('SIGTERM'));
  });
}
