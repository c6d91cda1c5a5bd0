// `pi-gateway <command> [options]`: dispatches to one module per command under ./commands/.
import { realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { versionLine } from '../install/build-info.ts';
import { isSingleExecutable } from '../install/single-executable.ts';
import { UsageError } from './args.ts';
import { loadSecretFiles, SecretFileError } from './secret-env.ts';
import type { Command } from './command.ts';

/** Command name → module. Loaded lazily so `pi-gateway check` never opens SQLite or uWS. */
const COMMANDS: Record<string, () => Promise<{ command: Command }>> = {
  init: () => import('./commands/init.ts'),
  check: () => import('./commands/check.ts'),
  build: () => import('./commands/build.ts'),
  serve: () => import('./commands/serve.ts'),
  reload: () => import('./commands/reload.ts'),
  demo: () => import('./commands/demo.ts'),
  simulator: () => import('./commands/simulator.ts'),
  secret: () => import('./commands/secret.ts'),
  key: () => import('./commands/key.ts'),
  operator: () => import('./commands/operator.ts'),
  audit: () => import('./commands/audit.ts'),
  wallet: () => import('./commands/wallet.ts'),
  ledger: () => import('./commands/ledger.ts'),
  usage: () => import('./commands/usage.ts'),
  logs: () => import('./commands/logs.ts'),
  migrate: () => import('./commands/migrate.ts'),
  probe: () => import('./commands/probe.ts'),
  backup: () => import('./commands/backup.ts'),
};

async function usage(): Promise<string> {
  const lines = ['Usage: pi-gateway <command> [options]', '', 'Commands:'];
  for (const [name, load] of Object.entries(COMMANDS)) {
    let summary = '';
    try {
      summary = (await load()).command.summary;
    } catch {
      summary = '(unavailable)';
    }
    lines.push(`  ${name.padEnd(10)} ${summary}`);
  }
  lines.push(
    '',
    'Run `pi-gateway <command> --help` for the options of one command, `pi-gateway --version` for the build.',
  );
  return lines.join('\n');
}

export async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (name === '--version' || name === '-V' || name === 'version') {
    process.stdout.write(versionLine() + '\n');
    return 0;
  }
  if (!name || name === '--help' || name === '-h' || name === 'help') {
    // Asked for: the list on stdout, exit 0. No command at all is a usage error (exit 2).
    if (name) {
      process.stdout.write((await usage()) + '\n');
      return 0;
    }
    process.stderr.write((await usage()) + '\n');
    return 2;
  }
  const load = COMMANDS[name];
  if (!load) {
    process.stderr.write(`pi-gateway: unknown command "${name}"\n\n${await usage()}\n`);
    return 2;
  }
  const { command } = await load();
  if (rest.includes('--help') || rest.includes('-h')) {
    process.stdout.write(command.help.trimEnd() + '\n');
    return 0;
  }
  try {
    loadSecretFiles();
  } catch (err) {
    if (!(err instanceof SecretFileError)) throw err;
    process.stderr.write(`pi-gateway ${name}: ${err.message}\n`);
    return 1;
  }
  try {
    return await command.run(rest);
  } catch (err) {
    // A usage error a command did not map itself (check's unknown option, simulator's --port…):
    // named after the command, with the hint, and exit 2 like every other usage error.
    if (!(err instanceof UsageError)) throw err;
    process.stderr.write(`pi-gateway ${name}: ${err.message}\nRun \`pi-gateway ${name} --help\` for usage.\n`);
    return 2;
  }
}

/** Runs the CLI as the process: its exit code becomes the process's. */
export function runCli(argv: string[]): void {
  main(argv).then(
    (code) => {
      process.exitCode = code;
    },
    (err: unknown) => {
      process.stderr.write(`pi-gateway: ${err instanceof Error ? err.message : String(err)}\n`);
      process.exitCode = 1;
    },
  );
}

/** Started as `node src/cli/main.ts …` (tests, development): run. Imported (bin/pi-gateway.js, the
 *  single executable's entry): the importer calls runCli. */
function startedDirectly(): boolean {
  // In the single executable the bundle's file is the executable itself, like argv[1].
  if (isSingleExecutable()) return false;
  const script = process.argv[1];
  if (script === undefined) return false;
  try {
    return realpathSync(script) === realpathSync(fileURLToPath(import.meta.url));
  } catch {
    return false;
  }
}
if (startedDirectly()) runCli(process.argv.slice(2));
