// `pi-gateway serve`: run the gateway on a config directory and a database file.
import { flag, int, parse, str, UsageError } from '../args.ts';
import type { Command } from '../command.ts';
import { jsonLog } from '../../gateway.ts';
import { OBSERVABILITY_HELP, OBSERVABILITY_OPTIONS, observabilityOptions } from '../observability-options.ts';
import { configForServe, runGateway, untilStopped } from '../runtime.ts';

const HELP = `Usage: pi-gateway serve [options]

Runs the gateway: validates and compiles the config directory, opens (and migrates) the SQLite
database, and listens for the API of SPEC.md. Stops cleanly on SIGINT/SIGTERM.

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
    const port = int(p, 'port', 'PI_PORT', 8080) as number;
    const db = str(p, 'db', 'PI_DB', 'pi-gateway.db') as string;
    const override = str(p, 'upstream-override', 'PI_UPSTREAM_OVERRIDE') ?? null;
    let running;
    try {
      running = await runGateway({ config, db, host, port, upstreamOverride: override, observability });
    } catch (err) {
      process.stderr.write(`pi-gateway serve: ${err instanceof Error ? err.message : String(err)}\n`);
      return 1;
    }
    jsonLog('listening', { url: running.gateway.url, config: configDir, config_source: loaded.source, db, models: config.models.length, upstream_override: override, admin: running.gateway.admin?.url ?? null, metrics: (running.gateway.telemetry?.metrics ?? null) !== null, access_log: observability.accessLog, traces: observability.tracesUrl });
    return untilStopped(async () => {
      await running.gateway.close();
      running.store.close();
    });
  },
};
