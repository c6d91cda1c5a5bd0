// Helpers every store-backed command (secret, key, wallet, ledger, usage, logs) shares: --db and
// --config handling, the workspace check against the config, and error → exit code mapping.
import { existsSync } from 'node:fs';
import { ADAPTERS } from '../platforms/index.ts';
import { openStore, SecretError, StoreError, WalletError, type Store } from '../store/store.ts';
import { str, UsageError, type OptionSpec, type Parsed } from './args.ts';

/** Options every store-backed command accepts. */
export const STORE_OPTIONS: OptionSpec = {
  db: { type: 'string' },
  json: { type: 'boolean' },
};
export const CONFIG_OPTION: OptionSpec = { config: { type: 'string' } };

export const DB_HELP = '  --db FILE        SQLite database (env PI_DB, default pi-gateway.db)';
export const CONFIG_HELP = '  --config DIR     config directory, to check workspace ids (env PI_CONFIG, default config)';
export const JSON_HELP = '  --json           print one JSON document';

/** An operator mistake worth a one-line message and exit 1. */
export class CliError extends Error {}

/**
 * Opens the database named by --db / PI_DB. Read-only commands never create a file: a missing one is
 * an error naming the path, so a typo in --db cannot show an empty but plausible answer.
 */
export function openFromArgs(p: Parsed, readonly: boolean): Store {
  const file = str(p, 'db', 'PI_DB', 'pi-gateway.db') as string;
  if (readonly && !existsSync(file)) throw new CliError(`no database at ${file} (set --db or PI_DB)`);
  return openStore(file, { readonly });
}

/**
 * Refuses a workspace id the config does not define (loaded with the config pipeline, --config /
 * PI_CONFIG). Imported lazily: commands that never check a workspace skip loading ajv and yaml.
 */
export async function requireWorkspace(p: Parsed, id: string): Promise<void> {
  const dir = str(p, 'config', 'PI_CONFIG', 'config') as string;
  const { loadConfig } = await import('../config/load-config.ts');
  const r = loadConfig(dir, { adapters: ADAPTERS });
  if (!r.ok) throw new CliError(`the config in ${dir} has ${r.issues.length} issue(s); run \`pi-gateway check --config ${dir}\``);
  const ids = r.config.workspaces.map((w) => w.id);
  if (!ids.includes(id)) throw new CliError(`unknown workspace "${id}": ${dir} defines ${ids.length ? ids.join(', ') : 'none'}`);
}

/** Runs a command body: usage mistakes exit 2 with a hint, known store/operator errors exit 1. */
export async function guarded(name: string, body: () => Promise<number> | number): Promise<number> {
  try {
    return await body();
  } catch (err) {
    if (err instanceof UsageError) {
      process.stderr.write(`pi-gateway ${name}: ${err.message}\nRun \`pi-gateway ${name} --help\` for usage.\n`);
      return 2;
    }
    if (err instanceof CliError || err instanceof SecretError || err instanceof StoreError || err instanceof WalletError || err instanceof RangeError) {
      process.stderr.write(`pi-gateway ${name}: ${err.message}\n`);
      return 1;
    }
    throw err;
  }
}

/** Splits `<sub> [args…]`, refusing anything but the listed subcommands. */
export function subcommand(argv: string[], allowed: readonly string[]): [string, string[]] {
  const [sub, ...rest] = argv;
  if (sub === undefined || !allowed.includes(sub)) {
    throw new UsageError(sub === undefined ? `a subcommand is required (${allowed.join(', ')})` : `unknown subcommand "${sub}" (${allowed.join(', ')})`);
  }
  return [sub, rest];
}

/** The single positional argument of a subcommand. */
export function onePositional(p: Parsed, what: string): string {
  if (p.positionals.length !== 1 || p.positionals[0] === '') throw new UsageError(`expected exactly one ${what}`);
  return p.positionals[0] as string;
}

/** A required string option. */
export function required(p: Parsed, name: string): string {
  const v = str(p, name);
  if (v === undefined || v === '') throw new UsageError(`--${name} is required`);
  return v;
}

/** `2026-02-01` or `2026-02-01T12:00:00Z` → epoch ms (a date alone is UTC midnight). */
export function parseIsoTime(raw: string, name: string): number {
  const ms = /^\d{4}-\d{2}-\d{2}([T ][0-9:.]+(Z|[+-]\d{2}:?\d{2})?)?$/.test(raw) ? Date.parse(raw) : Number.NaN;
  if (Number.isNaN(ms)) throw new UsageError(`--${name} must be an ISO date or date-time such as 2026-02-01 or 2026-02-01T12:00:00Z, got "${raw}"`);
  return ms;
}

export function iso(ms: number | null): string | null {
  return ms === null ? null : new Date(ms).toISOString();
}
