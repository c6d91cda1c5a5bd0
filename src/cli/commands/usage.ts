// `pi-gateway usage`: a workspace's settled spend by model and provider.
import { nanoToDecimal } from '../../money.ts';
import { flag, parse, str, UsageError } from '../args.ts';
import type { Command } from '../command.ts';
import { printJson, printTable } from '../output.ts';
import {
  CONFIG_HELP,
  CONFIG_OPTION,
  DB_HELP,
  guarded,
  iso,
  JSON_HELP,
  openFromArgs,
  parseIsoTime,
  required,
  requireWorkspace,
  STORE_OPTIONS,
} from '../store-command.ts';

const HELP = `Usage: pi-gateway usage --workspace W [--since ISO] [--until ISO] [options]

Settled spend of workspace W grouped by model and provider (from the ledger), largest first, with a
total. REQUESTS counts billed requests: those with a settlement (a $0 one included); requests the
gateway refused, and those no upstream answered, are not billed and not counted (the console's Spend
page shows them apart, as rejected and unbilled). --since and --until take an ISO date or date-time
(a date alone is 00:00 UTC, a time without an offset is UTC): settlements from --since, before
--until; default: all time.

Options:
${DB_HELP}
${CONFIG_HELP}
${JSON_HELP}`;

export const command: Command = {
  summary: 'spend by model and provider for a workspace',
  help: HELP,
  run: (argv) =>
    guarded('usage', async () => {
      const p = parse(
        argv,
        {
          ...STORE_OPTIONS,
          ...CONFIG_OPTION,
          workspace: { type: 'string' },
          since: { type: 'string' },
          until: { type: 'string' },
        },
        false,
      );
      const workspace = required(p, 'workspace');
      const rawSince = str(p, 'since');
      const since = rawSince === undefined ? 0 : parseIsoTime(rawSince, 'since');
      const rawUntil = str(p, 'until');
      const until = rawUntil === undefined ? undefined : parseIsoTime(rawUntil, 'until');
      if (until !== undefined && until <= since) throw new UsageError('--until must be after --since');
      await requireWorkspace(p, workspace, 'usage');
      const store = await openFromArgs(p, true);
      try {
        const lines = await store.wallets.usage(workspace, since, until);
        const total = lines.reduce((a, l) => a + l.costNano, 0n);
        const requests = lines.reduce((a, l) => a + l.requests, 0);
        if (flag(p, 'json')) {
          printJson({
            workspace,
            since: rawSince === undefined ? null : iso(since),
            ...(until === undefined ? {} : { until: iso(until) }),
            lines: lines.map((l) => ({
              model: l.model,
              provider: l.provider,
              requests: l.requests,
              cost_usd: nanoToDecimal(l.costNano),
            })),
            requests,
            total_usd: nanoToDecimal(total),
          });
        } else {
          printTable(
            ['MODEL', 'PROVIDER', 'REQUESTS', 'COST USD'],
            [
              ...lines.map((l) => [l.model || '-', l.provider || '-', String(l.requests), nanoToDecimal(l.costNano)]),
              ['total', '', String(requests), nanoToDecimal(total)],
            ],
          );
        }
        return 0;
      } finally {
        await store.close();
      }
    }),
};
