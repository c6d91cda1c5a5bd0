// `pi-gateway audit [--since ISO] [--limit N]`: the audit trail, newest first — every sign-in to the
// console (ok or failed), every admin write through the admin listener (credits, keys, reload) and
// every operator account added or removed, with who, when, from where and how it ended.
import { flag, int, parse, str } from '../args.ts';
import type { Command } from '../command.ts';
import { printJson, printTable } from '../output.ts';
import { auditEntryView } from '../../store/operator-types.ts';
import { DB_HELP, guarded, JSON_HELP, openFromArgs, parseIsoTime, STORE_OPTIONS } from '../store-command.ts';

const HELP = `Usage: pi-gateway audit [--since ISO] [--limit N] [options]

Prints the audit trail, newest first: time, who (an operator's name, "token" for the shared
operator token, "cli:<user>" for this command line), action, target, client address, outcome and
detail. The trail is append-only in both stores.

  --since ISO      rows at or after this date or date-time (UTC without an offset)
  --limit N        at most N rows (1–10000, default 100)
${DB_HELP}
${JSON_HELP}`;

export const command: Command = {
  summary: 'show the audit trail of sign-ins and admin writes',
  help: HELP,
  run: (argv) =>
    guarded('audit', async () => {
      const p = parse(argv, { ...STORE_OPTIONS, since: { type: 'string' }, limit: { type: 'string' } }, false);
      const rawSince = str(p, 'since');
      const since = rawSince === undefined ? undefined : parseIsoTime(rawSince, 'since');
      const limit = int(p, 'limit', undefined, 100, { min: 1, max: 10_000 }) as number;
      const store = await openFromArgs(p, true);
      try {
        const rows = (await store.audit.list({ limit, ...(since === undefined ? {} : { since }) })).map(auditEntryView);
        if (flag(p, 'json')) printJson(rows);
        else
          printTable(
            ['TIME', 'WHO', 'ACTION', 'TARGET', 'FROM', 'OUTCOME', 'DETAIL'],
            rows.map((r) => [
              r.time ?? '',
              r.actor,
              r.action,
              r.target ?? '',
              r.client ?? '',
              r.outcome,
              r.detail === null ? '' : JSON.stringify(r.detail),
            ]),
          );
        return 0;
      } finally {
        await store.close();
      }
    }),
};
