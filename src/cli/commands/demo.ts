// `pi-gateway demo`: the offline quick start. Starts the built-in simulator, seeds a demo database
// (demo-only credentials for every resource, of the kind its adapter takes — ../demo-credentials.ts —,
// an API key, wallet credit) and runs the gateway on the bundled config with every upstream, token
// endpoints included, pointed at the simulator, which is told which keys, service accounts and Entra
// clients to accept.
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { int, parse, PORT_RANGE, str, UsageError } from '../args.ts';
import type { Command } from '../command.ts';
import { openStore } from '../../store/sqlite/store.ts';
import { startSimulator } from '../../simulator/server.ts';
import { sealDemoCredentials } from '../demo-credentials.ts';
import { claimDatabase, type Owner } from '../../runtime/owner-files.ts';
import {
  OBSERVABILITY_HELP,
  OBSERVABILITY_OPTIONS,
  type ObservabilityOptions,
  observabilityOptions,
} from '../observability-options.ts';
import {
  configForServe,
  holdReloadsWhileStarting,
  reloadGateway,
  runGateway,
  untilStopped,
} from '../../runtime/runtime.ts';
import { surviveClosedOutput } from '../../runtime/last-resort.ts';
import { applyServingV8Flags } from '../v8-flags.ts';
import { projectPath } from '../../install/project-root.ts';

const HELP = `Usage: pi-gateway demo [options]

The offline quick start: runs the upstream simulator and the gateway together on the bundled
example config. Every resource's base URL (and every token endpoint) is redirected to the simulator,
so every model answers without network access. Resources without a sealed credential get demo-only
ones of the kind their platform takes: AWS access keys for Bedrock (SigV4-signed requests), a
service-account key generated at first start for Vertex AI, Entra client credentials for Azure
OpenAI; the simulator is told to accept them. State lives in .demo/ (database and a generated
master key); each start mints a new API key, prints it, and tops the demo wallet up to $10. Like serve, it owns its
database (one demo per --dir), drains on Ctrl-C/SIGTERM and reloads its config on SIGHUP
(pi-gateway reload --db .demo/pi-gateway.db).

Options:
  --config DIR      config directory (default ./config, else the bundled example config)
  --dir DIR         demo state directory (default .demo)
  --host HOST       gateway address (default 127.0.0.1)
  --port N          gateway port (default 8080; a busy port is refused)
  --sim-port N      simulator port (default 4010; a busy port is refused)
  --workspace W     workspace of the demo key (default acme)
  -h, --help        this text

${OBSERVABILITY_HELP}`;

/** ./config where there is one (a checkout), else the example config that ships with the gateway
 *  (the npm package's, or the one the single executable unpacked). */
function defaultDemoConfig(): string {
  return existsSync('config') ? 'config' : projectPath('config');
}

interface DemoOptions {
  configDir: string;
  dir: string;
  host: string;
  port: number;
  simPort: number;
  workspace: string;
  observability: ObservabilityOptions;
}

/** Every option of `demo`, read and checked before anything starts (a bad value is a UsageError). */
function demoOptions(argv: string[]): DemoOptions {
  const p = parse(
    argv,
    {
      config: { type: 'string' },
      dir: { type: 'string' },
      host: { type: 'string' },
      port: { type: 'string' },
      'sim-port': { type: 'string' },
      workspace: { type: 'string' },
      ...OBSERVABILITY_OPTIONS,
    },
    false,
  );
  return {
    configDir: str(p, 'config', 'PI_CONFIG') ?? defaultDemoConfig(),
    dir: str(p, 'dir', undefined, '.demo') as string,
    host: str(p, 'host', undefined, '127.0.0.1') as string,
    port: int(p, 'port', undefined, 8080, PORT_RANGE) as number,
    simPort: int(p, 'sim-port', undefined, 4010, PORT_RANGE) as number,
    workspace: str(p, 'workspace', undefined, 'acme') as string,
    observability: observabilityOptions(p),
  };
}

export const command: Command = {
  summary: 'run the gateway and the simulator together (offline quick start)',
  help: HELP,
  async run(argv) {
    let o: DemoOptions;
    try {
      o = demoOptions(argv);
    } catch (err) {
      if (err instanceof UsageError) {
        process.stderr.write(`pi-gateway demo: ${err.message}\n`);
        return 2;
      }
      throw err;
    }
    const { configDir, dir, host, port, simPort, workspace, observability } = o;
    surviveClosedOutput();
    applyServingV8Flags();
    holdReloadsWhileStarting();
    const loaded = await configForServe(configDir);
    if (!loaded) return 1;
    const config = loaded.config;
    if (!config.workspaces.some((w) => w.id === workspace)) {
      process.stderr.write(`pi-gateway demo: workspace "${workspace}" is not in the config\n`);
      return 1;
    }

    mkdirSync(dir, { recursive: true });
    const dbFile = join(dir, 'pi-gateway.db');
    let owner: Owner;
    try {
      owner = claimDatabase(dbFile, { configDir });
    } catch (err) {
      process.stderr.write(`pi-gateway demo: ${err instanceof Error ? err.message : String(err)}\n`);
      return 1;
    }
    const keyFile = join(dir, 'master.key');
    if (!existsSync(keyFile)) {
      writeFileSync(keyFile, randomBytes(32).toString('base64') + '\n', { mode: 0o600 });
      chmodSync(keyFile, 0o600);
    }
    const masterKey = readFileSync(keyFile, 'utf8').trim();
    const store = openStore(dbFile, { masterKey, requestLog: config.settings.requestLog });
    const upstreamAuth = sealDemoCredentials(config, store.secrets);
    const key = store.apiKeys.create({ workspace, name: 'demo' });
    const wallet = store.wallets.show(workspace, Date.now());
    const target = 10_000_000_000n;
    if (wallet.balance < target) store.wallets.credit(workspace, target - wallet.balance, 'demo top-up');

    let sim: Awaited<ReturnType<typeof startSimulator>> | undefined;
    let running: Awaited<ReturnType<typeof runGateway>>;
    try {
      sim = await startSimulator({ host: '127.0.0.1', port: simPort, record: false, ...upstreamAuth });
      running = await runGateway({ config, db: dbFile, host, port, upstreamOverride: sim.url, store, observability });
    } catch (err) {
      await sim?.close();
      store.close();
      owner.release();
      process.stderr.write(`pi-gateway demo: ${err instanceof Error ? err.message : String(err)}\n`);
      return 1;
    }
    const base = running.gateway.url;
    // Signals are handled before the announcement (untilStopped says why).
    const gateway = running.gateway;
    const stopped = untilStopped({
      // The simulator stays up while the gateway drains: in-flight streams come from it.
      async stop() {
        await gateway.drain();
        await sim.close();
        store.close();
        owner.release();
      },
      flushNow() {
        gateway.flushNow();
      },
      reload: () => reloadGateway(gateway, configDir, owner),
      admin: gateway.admin,
      metrics: gateway.telemetry?.metrics,
    });
    process.stdout.write(
      [
        `pi-gateway demo: gateway on ${base}, simulator on ${sim.url}${running.gateway.admin ? `, admin on ${running.gateway.admin.url}` : ''}`,
        `API key (workspace ${workspace}): ${key.key}`,
        '',
        'Try:',
        `  curl -s ${base}/v1/models | head -c 400; echo`,
        `  curl -s ${base}/v1/chat/completions -H "Authorization: Bearer ${key.key}" \\`,
        `    -H 'Content-Type: application/json' \\`,
        `    -d '{"model":"openai/gpt-6-luna","messages":[{"role":"user","content":"Hello"}]}'`,
        '  # Claude on Amazon Bedrock (InvokeModel, SigV4-signed) over the Messages protocol:',
        `  curl -s ${base}/v1/messages -H "Authorization: Bearer ${key.key}" \\`,
        `    -H 'Content-Type: application/json' \\`,
        `    -d '{"model":"anthropic/claude-sonnet-5.5","max_tokens":64,"messages":[{"role":"user","content":"Hello"}],"provider":{"only":["aws"]}}'`,
        '',
        ...(running.gateway.admin && process.env.PI_ADMIN_TOKEN
          ? [`Console: ${running.gateway.admin.url}/console (sign in with your PI_ADMIN_TOKEN)`, '']
          : ['Console: set PI_ADMIN_TOKEN and pass --admin-port N to open it at http://127.0.0.1:N/console', '']),
        'CLI commands on this state (logs, wallet, key, ledger), from this directory:',
        `  export PI_DB=${join(dir, 'pi-gateway.db')} PI_MASTER_KEY=$(cat ${keyFile})`,
        '  npx pi-gateway logs --limit 5',
        '',
        'Ctrl-C drains the gateway and stops both.',
        '',
      ].join('\n'),
    );
    return stopped;
  },
};
