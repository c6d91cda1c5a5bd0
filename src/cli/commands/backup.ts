// `pi-gateway backup --to FILE`: an online copy of the embedded database (src/store/sqlite/backup.ts).
import { isPostgresUrl } from '../../store/admin-store-interface.ts';
import { backupDatabase } from '../../store/sqlite/backup.ts';
import { flag, parse, str, UsageError } from '../args.ts';
import type { Command } from '../command.ts';
import { printJson } from '../output.ts';
import { CliError, DB_HELP, dbFromArgs, guarded, JSON_HELP, STORE_OPTIONS, URL_LIKE } from '../store-command.ts';
import { redactPasswords } from '../../store/redact-url.ts';

const HELP = `Usage: pi-gateway backup --to FILE [--db FILE] [--json]

Copies the embedded database into FILE, a new file (never overwritten), while a server may keep
serving from it: one consistent snapshot of keys, sealed credentials, wallets, the ledger and the
request log, readable by its owner only. Restore by stopping the server and putting the copy in
place of the database file (removing FILE-wal and FILE-shm beside it). Take one before an upgrade.
PostgreSQL (--db postgres://…): use pg_dump.

Options:
  --to FILE        the copy
${DB_HELP}
${JSON_HELP}`;

export const command: Command = {
  summary: 'copy the embedded database while it serves (before an upgrade)',
  help: HELP,
  run: (argv) =>
    guarded('backup', async () => {
      const p = parse(argv, { ...STORE_OPTIONS, to: { type: 'string' } }, false);
      const to = str(p, 'to');
      if (!to) throw new UsageError('--to FILE is required');
      if (URL_LIKE.test(to))
        throw new UsageError(
          `--to must be a file (the copy), got "${redactPasswords(to)}"; for PostgreSQL use pg_dump`,
        );
      const db = dbFromArgs(p);
      if (isPostgresUrl(db))
        throw new CliError('backup copies the embedded (SQLite) database; for PostgreSQL use pg_dump');
      const r = await backupDatabase(db, to);
      if (flag(p, 'json')) printJson({ file: to, pages: r.pages, bytes: r.bytes });
      else process.stdout.write(`backed up ${db} to ${to} (${r.bytes} bytes)\n`);
      return 0;
    }),
};
