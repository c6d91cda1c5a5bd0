// `pi-gateway migrate`: brings a PostgreSQL database to this build's schema, or moves an embedded
// database into an empty PostgreSQL one (keys, sealed secrets, wallets and the ledger exactly, the
// holds and the request log too), with `ledger verify` before and after.
import { nanoToDecimal } from '../../money.ts';
import { isPostgresUrl } from '../../store/admin-store-interface.ts';
import { redactPasswords } from '../../store/redact-url.ts';
import { ownerLockHeld, openStore } from '../../store/sqlite/store.ts';
import { flag, parse, str, UsageError } from '../args.ts';
import type { Command } from '../command.ts';
import { printJson } from '../output.ts';
import { CliError, guarded, JSON_HELP, URL_LIKE } from '../store-command.ts';

const HELP = `Usage:
  pi-gateway migrate --db postgres://USER@HOST/DB [--json]
  pi-gateway migrate --from FILE --to postgres://USER@HOST/DB [--json]

--db     Runs the schema migrations this PostgreSQL database lacks (in one transaction; two runs at
         once serialise). \`serve --db postgres://…\` never migrates: it checks the schema at start and
         refuses an unmigrated database with this command in its message. An embedded SQLite file
         needs no command: it migrates itself when opened.
--from   Moves the embedded database FILE into the PostgreSQL database --to (migrated first if needed;
         it must hold no keys, secrets, wallets, ledger, holds or log rows). FILE must not be served
         (stop its gateway first). Runs \`ledger verify\` on FILE before and on the target after, and
         compares every wallet: nothing is written unless FILE verifies; the copy is one transaction.
         Secrets move as sealed bytes: the same PI_MASTER_KEY opens them. Open holds get a fresh
         30-second lease and are released when it lapses (their server is gone).

Options:
${JSON_HELP}`;

export const command: Command = {
  summary: 'migrate a PostgreSQL database, or move an embedded database into one',
  help: HELP,
  run: (argv) =>
    guarded('migrate', async () => {
      const p = parse(
        argv,
        { db: { type: 'string' }, from: { type: 'string' }, to: { type: 'string' }, json: { type: 'boolean' } },
        false,
      );
      const db = str(p, 'db');
      const from = str(p, 'from');
      const to = str(p, 'to');
      if (db !== undefined && (from !== undefined || to !== undefined))
        throw new UsageError('give either --db URL, or --from FILE --to URL');
      if (db !== undefined) return migrateSchema(db, flag(p, 'json'));
      if (from === undefined || to === undefined)
        throw new UsageError('give --db URL, or both --from FILE and --to URL');
      return moveEmbedded(from, to, flag(p, 'json'));
    }),
};

function requirePostgres(url: string, option: string): void {
  if (!isPostgresUrl(url)) throw new UsageError(`${option} must be a postgres://… URL, got "${redactPasswords(url)}"`);
}

async function migrateSchema(url: string, json: boolean): Promise<number> {
  requirePostgres(url, '--db');
  const { openPgStore } = await import('../../store/postgres/store.ts');
  const store = await openPgStore(url, { checkSchema: false });
  try {
    const applied = await store.migrate();
    const { current } = await store.schemaVersion();
    if (json) printJson({ database: store.location, applied, version: current });
    else
      process.stdout.write(
        applied.length
          ? `migrated ${store.location} to schema version ${current} (applied ${applied.join(', ')})\n`
          : `${store.location} is already at schema version ${current}\n`,
      );
    return 0;
  } finally {
    await store.close();
  }
}

async function moveEmbedded(file: string, url: string, json: boolean): Promise<number> {
  requirePostgres(url, '--to');
  if (isPostgresUrl(file) || URL_LIKE.test(file))
    throw new UsageError(`--from must be an embedded database file, got "${redactPasswords(file)}"`);
  if (ownerLockHeld(file))
    throw new CliError(`${file} is being served (its owner lock is held); stop that gateway first, then migrate`);
  const { openDump } = await import('../../store/sqlite/dump.ts');
  const { openPgStore, importDump, pgIsEmpty } = await import('../../store/postgres/store.ts');
  const source = openStore(file, { readonly: true });
  const target = await openPgStore(url, { checkSchema: false });
  try {
    // Open holds move with a fresh lease (a node settles them, or they lapse as after a crash).
    const before = source.wallets.verify({ unservedHolds: false });
    if (!before.ok)
      throw new CliError(
        `${file} does not verify (${before.problems.length} problem(s): ${before.problems[0]}); fix it before moving it`,
      );
    await target.migrate();
    const empty = await pgIsEmpty(target.pool);
    if (!empty.empty)
      throw new CliError(
        `${target.location} is not empty (rows in ${empty.tables.join(', ')}); migrate into a fresh database`,
      );
    const dump = openDump(file);
    let counts: Awaited<ReturnType<typeof importDump>>;
    try {
      counts = await importDump(target.pool, dump, Date.now());
    } finally {
      dump.close();
    }
    const after = await target.wallets.verify();
    const mismatches: string[] = [];
    for (const ws of source.wallets.workspaces()) {
      const a = source.wallets.show(ws, 0);
      const b = await target.wallets.show(ws, 0);
      if (a.balance !== b.balance || a.held !== b.held)
        mismatches.push(
          `wallet ${ws}: ${nanoToDecimal(a.balance)}/${nanoToDecimal(a.held)} became ${nanoToDecimal(b.balance)}/${nanoToDecimal(b.held)}`,
        );
    }
    const problems = [...after.problems, ...mismatches];
    if (json)
      printJson({
        from: file,
        to: target.location,
        moved: {
          keys: counts.keys,
          secrets: counts.secrets,
          wallets: counts.wallets,
          ledger: counts.ledger,
          holds: counts.holds,
          request_log: counts.requestLog,
          operators: counts.operators,
          audit: counts.audit,
        },
        verified_before: true,
        verified_after: problems.length === 0,
        problems,
      });
    else {
      process.stdout.write(
        `moved ${file} to ${target.location}: ${counts.keys} key(s), ${counts.secrets} sealed secret(s), ${counts.wallets} wallet(s), ` +
          `${counts.ledger} ledger row(s), ${counts.holds} hold(s), ${counts.requestLog} request-log row(s), ` +
          `${counts.operators} operator(s), ${counts.audit} audit row(s)\n`,
      );
      if (problems.length === 0)
        process.stdout.write(
          `ledger verify: ok before and after; every wallet's balance and held amount are unchanged\n`,
        );
      else for (const line of problems) process.stdout.write(line + '\n');
    }
    return problems.length === 0 ? 0 : 1;
  } finally {
    source.close();
    await target.close();
  }
}
