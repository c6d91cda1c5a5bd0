// `pi-gateway ledger verify`: recomputes every wallet from the append-only ledger and the holds table.
import { flag, parse } from '../args.ts';
import type { Command } from '../command.ts';
import { printJson } from '../output.ts';
import { DB_HELP, guarded, JSON_HELP, openFromArgs, STORE_OPTIONS, subcommand } from '../store-command.ts';

const HELP = `Usage: pi-gateway ledger verify [--db FILE|URL] [--json]

Recomputes each wallet's balance (credits − settlements) and held amount (open holds) from the
ledger and compares them with the stored wallets and holds; also checks that every settlement or
release follows a hold of the same workspace and that no request is closed twice; that no hold is
left open with nothing to close it (on a database file: the process that took it is gone, which the
next start releases; on PostgreSQL: its lease lapsed, which any node's sweeper releases); and that
every answered request has its settlement (a request-log row with a charge, or a 2xx answer a
provider served, whose trace has no settle row of that amount). Prints "ok" or one problem per line;
exits 1 when there is any.

Options:
${DB_HELP}
${JSON_HELP}`;

export const command: Command = {
  summary: 'check the wallets against the ledger',
  help: HELP,
  run: (argv) =>
    guarded('ledger', async () => {
      const [, rest] = subcommand(argv, ['verify']);
      const p = parse(rest, STORE_OPTIONS, false);
      const store = await openFromArgs(p, true);
      try {
        const r = await store.wallets.verify();
        const wallets = (await store.wallets.workspaces()).length;
        if (flag(p, 'json')) printJson({ ok: r.ok, wallets, problems: r.problems });
        else if (r.ok) process.stdout.write(`ok: ${wallets} wallet(s) agree with the ledger\n`);
        else {
          for (const line of r.problems) process.stdout.write(line + '\n');
          process.stderr.write(`pi-gateway ledger: ${r.problems.length} problem(s)\n`);
        }
        return r.ok ? 0 : 1;
      } finally {
        await store.close();
      }
    }),
};
