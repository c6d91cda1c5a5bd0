// Helpers every store-backed command (secret, key, wallet, ledger, usage, logs) shares: --db and
// --config handling, the workspace check against the config, and error → exit code mapping.
import { existsSync } from 'node:fs';
import { ADAPTERS } from '../platforms/index.ts';
import { type AdminStore, isPostgresUrl } from '../store/admin-store-interface.ts';
import { sqliteAdmin } from '../store/sqlite/admin-store.ts';
import { redactPasswords } from '../store/redact-url.ts';
import { openStore, SecretError, StoreError, WalletError } from '../store/sqlite/store.ts';
import { str, UsageError, type OptionSpec, type Parsed } from './args.ts';
import { configDirFor, configDirProblem, servedDirNote } from './config-dir.ts';
import type { CompiledConfig } from '../config/compiled.ts';

/** Options every store-backed command accepts. */
export const STORE_OPTIONS: OptionSpec = {
  db: { type: 'string' },
  json: { type: 'boolean' },
};
export const CONFIG_OPTION: OptionSpec = { config: { type: 'string' } };

export const DB_HELP =
  '  --db FILE|URL    SQLite database file, or a postgres://… URL (env PI_DB, default pi-gateway.db)';
export const CONFIG_HELP =
  '  --config DIR     config directory, to check workspace ids (env PI_CONFIG; default: the one the\n' +
  '                   server of the database was started with, else config)';
export const JSON_HELP = '  --json           print one JSON document';

/** An operator mistake worth a one-line message and exit 1. */
export class CliError extends Error {}

/**
 * Opens the database named by --db / PI_DB: a SQLite file, or PostgreSQL for a `postgres://` URL (it
 * must be migrated: `pi-gateway migrate --db URL`). Read-only commands never create a file: a missing
 * one is an error naming the path, so a typo in --db cannot show an empty but plausible answer.
 */
export async function openFromArgs(p: Parsed, readonly: boolean): Promise<AdminStore> {
  const db = dbFromArgs(p);
  if (isPostgresUrl(db)) {
    const { openPgStore } = await import('../store/postgres/store.ts');
    return openPgStore(db);
  }
  if (readonly && !existsSync(db)) throw new CliError(`no database at ${db} (set --db or PI_DB)`);
  return sqliteAdmin(openStore(db, { readonly }));
}

/** A value that names a URL scheme (`mysql://…`, `redis://…`): not a file path. */
export const URL_LIKE = /^[a-z][a-z0-9+.-]*:\/\//i;

/**
 * --db, else PI_DB, else pi-gateway.db: a file path or a postgres://… URL. Any other URL is a usage
 * error, not a file to create (whose name, printed back, would carry the URL's password).
 */
export function dbFromArgs(p: Parsed): string {
  const db = str(p, 'db', 'PI_DB', 'pi-gateway.db') as string;
  if (URL_LIKE.test(db) && !isPostgresUrl(db)) {
    const where = p.values.db === undefined ? 'PI_DB' : '--db';
    throw new UsageError(`${where} must be a database file or a postgres://… URL, got "${redactPasswords(db)}"`);
  }
  return db;
}

/**
 * The config of the directory configDirFor chooses (--config, PI_CONFIG, the one the database's
 * server was started with, ./config), saying which when it is the server's. Imported lazily:
 * commands that never read the config skip loading ajv and yaml.
 */
async function loadChosenConfig(
  p: Parsed,
  command: string,
): Promise<{ dir: string; config: CompiledConfig | null; issues: number }> {
  const db = dbFromArgs(p);
  const chosen = configDirFor(p, db);
  const note = servedDirNote(command, chosen, db);
  if (note !== null) process.stderr.write(note);
  const problem = configDirProblem(chosen.dir);
  if (problem !== null) {
    const hint = chosen.from === 'default' ? ' (give --config DIR or PI_CONFIG)' : '';
    throw new CliError(`${problem}${hint}`);
  }
  const { loadConfig } = await import('../config/load-config.ts');
  const r = loadConfig(chosen.dir, { adapters: ADAPTERS });
  return r.ok
    ? { dir: chosen.dir, config: r.config, issues: 0 }
    : { dir: chosen.dir, config: null, issues: r.issues.length };
}

/** Refuses a workspace id the config (see loadChosenConfig) does not define. */
export async function requireWorkspace(p: Parsed, id: string, command: string): Promise<void> {
  const { dir, config, issues } = await loadChosenConfig(p, command);
  if (config === null)
    throw new CliError(`the config in ${dir} has ${issues} issue(s); run \`pi-gateway check --config ${dir}\``);
  const ids = config.workspaces.map((w) => w.id);
  if (!ids.includes(id))
    throw new CliError(`unknown workspace "${id}": ${dir} defines ${ids.length ? ids.join(', ') : 'none'}`);
}

/**
 * The credential names the resources of the config (see loadChosenConfig) use, or null when that
 * config does not load (then nothing can be said about names).
 */
export async function configCredentials(p: Parsed, command: string): Promise<{ dir: string; names: string[] } | null> {
  let loaded: Awaited<ReturnType<typeof loadChosenConfig>>;
  try {
    loaded = await loadChosenConfig(p, command);
  } catch (err) {
    if (err instanceof CliError) return null;
    throw err;
  }
  if (loaded.config === null) return null;
  return { dir: loaded.dir, names: [...new Set(loaded.config.resources.map((x) => x.credential))].sort() };
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
    if (
      err instanceof CliError ||
      err instanceof SecretError ||
      err instanceof StoreError ||
      err instanceof WalletError ||
      err instanceof RangeError
    ) {
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
    throw new UsageError(
      sub === undefined
        ? `a subcommand is required (${allowed.join(', ')})`
        : `unknown subcommand "${sub}" (${allowed.join(', ')})`,
    );
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

const ISO_TIME = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(Z|[+-]\d{2}:?\d{2})?)?$/;
const MONTHS = [
  'January',
  'February',
  'March',
  'April',
  'May',
  'June',
  'July',
  'August',
  'September',
  'October',
  'November',
  'December',
];

/**
 * `2026-02-01`, `2026-02-01T12:00`, `2026-02-01T12:00:00.5Z` or `…+02:00` → epoch ms. A date alone is
 * 00:00 UTC and a time without an offset is UTC too (never the machine's zone). Each field is checked
 * against the calendar: `2026-02-30` is refused, not read as March 2 (what Date.parse does).
 */
export function parseIsoTime(raw: string, name: string): number {
  const m = ISO_TIME.exec(raw);
  if (!m)
    throw new UsageError(
      `--${name} must be an ISO date or date-time such as 2026-02-01 or 2026-02-01T12:00:00Z, got "${raw}"`,
    );
  const [year, month, day, hour, minute, second] = [1, 2, 3, 4, 5, 6].map((i) => Number(m[i] ?? '0')) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  const bad = (what: string) => new UsageError(`--${name} ${raw} is not a valid time: ${what}`);
  if (month < 1 || month > 12) throw bad(`month ${m[2]} is not 01-12`);
  const days = new Date(Date.UTC(year, month, 0)).getUTCDate();
  if (day < 1 || day > days) throw bad(`${MONTHS[month - 1]} ${year} has days 01-${days}`);
  if (hour > 23) throw bad(`hour ${m[4]} is not 00-23`);
  if (minute > 59) throw bad(`minute ${m[5]} is not 00-59`);
  if (second > 59) throw bad(`second ${m[6]} is not 00-59`);
  const offset = offsetMinutes(m[8]);
  if (offset === null) throw bad(`offset ${m[8]} is not between -14:00 and +14:00`);
  const fraction = Math.floor(Number(`0.${m[7] ?? '0'}`) * 1000);
  const utc = new Date(0);
  utc.setUTCFullYear(year, month - 1, day);
  utc.setUTCHours(hour, minute, second, fraction);
  return utc.getTime() - offset * 60_000;
}

/** Minutes east of UTC for `Z`, `+02:00`, `-0530`, or null when out of range. */
function offsetMinutes(raw: string | undefined): number | null {
  if (raw === undefined || raw === 'Z') return 0;
  const digits = raw.slice(1).replace(':', '');
  const hours = Number(digits.slice(0, 2));
  const minutes = Number(digits.slice(2));
  if (hours > 14 || minutes > 59 || (hours === 14 && minutes > 0)) return null;
  return (raw.startsWith('-') ? -1 : 1) * (hours * 60 + minutes);
}

export function iso(ms: number | null): string | null {
  return ms === null ? null : new Date(ms).toISOString();
}
