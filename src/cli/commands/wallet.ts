// `pi-gateway wallet credit|show`: top up a workspace wallet and read its balance.
// Also home (for now) of the helpers every store-backed command shares: --db/--config handling,
// the workspace check against the config, and error → exit code mapping.
import { existsSync } from 'node:fs';
import { systemClock } from '../../clock.ts';
import { decimalToNano, nanoToDecimal } from '../../money.ts';
import { openStore, SecretError, StoreError, WalletError, type Store } from '../../store/store.ts';
import { flag, parse, str, UsageError, type OptionSpec, type Parsed } from '../args.ts';
import type { Command } from '../command.ts';
import { printJson, printTable } from '../output.ts';

// ---- shared by secret, key, wallet, ledger, usage, logs --------------------------------------

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
  const { loadConfig } = await import('../../config/load-config.ts');
  const r = loadConfig(dir);
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

// ---- wallet ------------------------------------------------------------------------------------

const HELP = `Usage:
  pi-gateway wallet credit --workspace W --usd AMOUNT [--note TEXT] [options]
  pi-gateway wallet show W [options]

credit  Adds AMOUNT US dollars (a decimal with at most 9 places, e.g. 25 or 0.5) to the workspace
        wallet, as one ledger row. Prints the new balance.
show    Prints balance (credits − settled spend), held (open request holds), available
        (balance − held), spend today (UTC) and the number of open holds.

Options:
${DB_HELP}
${CONFIG_HELP}
${JSON_HELP}`;

export const command: Command = {
  summary: 'credit a workspace wallet or show its balance',
  help: HELP,
  run: (argv) =>
    guarded('wallet', async () => {
      const [sub, rest] = subcommand(argv, ['credit', 'show']);
      if (sub === 'credit') {
        const p = parse(rest, { ...STORE_OPTIONS, ...CONFIG_OPTION, workspace: { type: 'string' }, usd: { type: 'string' }, note: { type: 'string' } }, false);
        const workspace = required(p, 'workspace');
        const raw = required(p, 'usd');
        let nano: bigint;
        try {
          nano = decimalToNano(raw);
        } catch {
          throw new UsageError(`--usd must be a positive decimal amount with at most 9 decimals, got "${raw}"`);
        }
        if (nano <= 0n) throw new UsageError(`--usd must be positive, got "${raw}"`);
        await requireWorkspace(p, workspace);
        const store = openFromArgs(p, false);
        try {
          const r = store.wallets.credit(workspace, nano, str(p, 'note') ?? '');
          if (flag(p, 'json')) printJson({ workspace, traceId: r.traceId, creditedUsd: nanoToDecimal(nano), balanceUsd: nanoToDecimal(r.balance) });
          else process.stdout.write(`credited ${nanoToDecimal(nano)} USD to ${workspace}; balance ${nanoToDecimal(r.balance)} USD (${r.traceId})\n`);
          return 0;
        } finally {
          store.close();
        }
      }
      const p = parse(rest, { ...STORE_OPTIONS, ...CONFIG_OPTION }, true);
      const workspace = onePositional(p, 'workspace id');
      await requireWorkspace(p, workspace);
      const store = openFromArgs(p, true);
      try {
        const v = store.wallets.show(workspace, systemClock.now());
        const out = {
          workspace,
          balanceUsd: nanoToDecimal(v.balance),
          heldUsd: nanoToDecimal(v.held),
          availableUsd: nanoToDecimal(v.available),
          spendTodayUsd: nanoToDecimal(v.spendToday),
          openHolds: v.openHolds,
        };
        if (flag(p, 'json')) printJson(out);
        else
          printTable(
            ['WORKSPACE', 'BALANCE USD', 'HELD USD', 'AVAILABLE USD', 'SPEND TODAY USD', 'OPEN HOLDS'],
            [[workspace, out.balanceUsd, out.heldUsd, out.availableUsd, out.spendTodayUsd, String(v.openHolds)]],
          );
        return 0;
      } finally {
        store.close();
      }
    }),
};
