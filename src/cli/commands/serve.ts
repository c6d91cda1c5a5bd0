// `pi-gateway serve`: run the gateway on a config directory and a database file.
import { flag, int, parse, PORT_RANGE, str, UsageError } from '../args.ts';
import type { Command } from '../command.ts';
import { jsonLog } from '../../gateway.ts';
import { claimDatabase, type Owner } from '../owner-files.ts';
import { OBSERVABILITY_HELP, OBSERVABILITY_OPTIONS, observabilityOptions } from '../observability-options.ts';
import { configForServe, reloadGateway, runGateway, type Running, untilStopped } from '../runtime.ts';
import { systemClock } from '../../clock.ts';
import { logCredentialWarnings } from '../credential-warnings.ts';

const HELP = `Usage: pi-gateway serve [options]

Runs the gateway: validates and compiles the config directory, opens (and migrates) the SQLite
database, and listens for the API of SPEC.md.

One server per database file and per port: a second serve on the same database refuses to start,
naming the file and the pid that holds it (an OS lock on FILE.lock, dropped when the process dies);
a port already in use is refused. The pid is written to FILE.pid.

Signals:
  SIGTERM, SIGINT   graceful drain: stop accepting connections, let in-flight requests finish for
                    limits.drain_timeout_ms (config/gateway.yaml, default 30 s), end the rest with
                    the protocol's error event, settle, write the log, exit 0. A second signal
                    exits at once (exit 1).
  SIGHUP            reload the config directory (also: pi-gateway reload --db FILE); a config with
                    problems is refused and the running one kept.

Options:
  --config DIR              config directory (env PI_CONFIG, default config)
  --db FILE                 SQLite database file (env PI_DB, default pi-gateway.db)
  --host HOST               address to bind (env PI_HOST, default 127.0.0.1)
  --port N                  port (env PI_PORT, default 8080; 0 picks a free one)
  --upstream-override URL   send every upstream request to this origin instead of the
                            resources' base URLs (env PI_UPSTREAM_OVERRIDE; for testing
                            against the simulator only)
  -h, --help                this text

${OBSERVABILITY_HELP}

Environment:
  PI_MASTER_KEY             32-byte key (base64 or hex) that unseals upstream credentials.
                            Required when the database holds sealed credentials.`;

export const command: Command = {
  summary: 'run the gateway',
  help: HELP,
  async run(argv) {
    let p;
    let observability;
    try {
      p = parse(argv, {
        config: { type: 'string' },
        db: { type: 'string' },
        host: { type: 'string' },
        port: { type: 'string' },
        'upstream-override': { type: 'string' },
        ...OBSERVABILITY_OPTIONS,
      }, false);
      observability = observabilityOptions(p);
    } catch (err) {
      if (err instanceof UsageError) {
        process.stderr.write(`pi-gateway serve: ${err.message}\n`);
        return 2;
      }
      throw err;
    }
    void flag;
    const configDir = str(p, 'config', 'PI_CONFIG', 'config') as string;
    const loaded = await configForServe(configDir);
    if (!loaded) return 1;
    const config = loaded.config;
    const host = str(p, 'host', 'PI_HOST', '127.0.0.1') as string;
    const port = int(p, 'port', 'PI_PORT', 8080, PORT_RANGE) as number;
    const db = str(p, 'db', 'PI_DB', 'pi-gateway.db') as string;
    const override = str(p, 'upstream-override', 'PI_UPSTREAM_OVERRIDE') ?? null;
    let owner: Owner;
    let running: Running;
    try {
      // The database first: a second server must not even migrate or touch holds on it.
      owner = claimDatabase(db);
    } catch (err) {
      process.stderr.write(`pi-gateway serve: ${err instanceof Error ? err.message : String(err)}\n`);
      return 1;
    }
    try {
      running = await runGateway({ config, db, host, port, upstreamOverride: override, observability });
    } catch (err) {
      owner.release();
      process.stderr.write(`pi-gateway serve: ${err instanceof Error ? err.message : String(err)}\n`);
      return 1;
    }
    jsonLog('listening', {
      url: running.gateway.url,
      config: configDir,
      config_source: loaded.source,
      db,
      pid: process.pid,
      models: config.models.length,
      upstream_override: override,
      admin: running.gateway.admin?.url ?? null,
      metrics: (running.gateway.telemetry?.metrics ?? null) !== null,
      access_log: observability.accessLog,
      traces: observability.tracesUrl,
    });
    logCredentialWarnings(config, running.store.secrets.names(), systemClock.now(), jsonLog);
    const { gateway, store } = running;
    return untilStopped({
      async stop() {
        await gateway.drain();
        store.close();
        owner.release();
      },
      flushNow() {
        gateway.flushNow();
      },
      reload: () => reloadGateway(gateway, configDir, owner),
    });
  },
};
