// `pi-gateway logs`: the request log, newest rows, optionally followed as they are written.
import { setTimeout as sleep } from 'node:timers/promises';
import { nanoToDecimal } from '../../money.ts';
import type { RequestLogEntry } from '../../store/sqlite/store.ts';
import { flag, int, parse, str } from '../args.ts';
import { followLog } from '../log-follow.ts';
import type { Command } from '../command.ts';
import { printJson, printTable } from '../output.ts';
import { DB_HELP, guarded, iso, JSON_HELP, openFromArgs, STORE_OPTIONS } from '../store-command.ts';

const FOLLOW_POLL_MS = 1000;

const HELP = `Usage: pi-gateway logs [--workspace W] [--limit N] [--follow] [options]

Prints the newest N request-log rows (default 50), oldest first: time, trace id, workspace, endpoint,
model served, provider, status, error code, latency, cost. With --follow, keeps printing new rows
(polling once a second) until interrupted; with --json each row is then one JSON line. A new row is
printed one poll (one to two seconds) after it appears, as it stands then: a charged request's row,
first written with its charge, is updated by the request's final row (total latency, how it ended),
which shows when it came within that time. The first N rows are printed as they stand at once.
The log holds no prompts, keys or credentials.

Options:
  --workspace W    only this workspace
  --limit N        rows to print first (1..10000, default 50)
  --follow         keep printing new rows
${DB_HELP}
${JSON_HELP}`;

const HEADERS = [
  'ID',
  'TIME',
  'TRACE',
  'WORKSPACE',
  'ENDPOINT',
  'MODEL',
  'PROVIDER',
  'STATUS',
  'ENDED',
  'ERROR',
  'MS',
  'COST USD',
];

/** Longest cell shown in the table; the full value is in --json. */
const MAX_CELL = 80;

/**
 * A cell as inert text. Some columns hold client-supplied text (the requested model name of a
 * refused request is recorded as sent), which may carry terminal control sequences (ESC, BEL, C1,
 * bidi overrides); printed raw they would retitle or clear the operator's terminal. They are shown
 * escaped, and very long values are cut so one row cannot flood the screen.
 */
function printable(s: string): string {
  const escaped = s.replace(/[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/gu, (c) => `\\u{${(c.codePointAt(0) ?? 0).toString(16)}}`);
  const chars = Array.from(escaped);
  return chars.length > MAX_CELL ? chars.slice(0, MAX_CELL - 1).join('') + '…' : escaped;
}

function cells(r: RequestLogEntry): string[] {
  return [
    String(r.id),
    iso(r.ts) ?? '',
    r.trace_id,
    r.workspace ?? '-',
    r.endpoint,
    r.model_served ?? r.model_requested ?? '-',
    r.provider ?? '-',
    String(r.status),
    r.ended ?? '',
    r.error_code ?? '',
    r.latency_ms === null ? '' : String(r.latency_ms),
    r.cost_nano === null ? '' : nanoToDecimal(r.cost_nano),
  ].map(printable);
}

/** bigint cost as a USD decimal string, the time in ISO 8601 UTC (`time`, as in every line the
 *  gateway writes); everything else as stored. */
function toJson(r: RequestLogEntry): Record<string, unknown> {
  const { id, ts, cost_nano, ...rest } = r;
  return { id, time: iso(ts), ...rest, cost_usd: cost_nano === null ? null : nanoToDecimal(cost_nano) };
}

export const command: Command = {
  summary: 'show (and follow) the request log',
  help: HELP,
  run: (argv) =>
    guarded('logs', async () => {
      const p = parse(
        argv,
        { ...STORE_OPTIONS, workspace: { type: 'string' }, limit: { type: 'string' }, follow: { type: 'boolean' } },
        false,
      );
      const limit = int(p, 'limit', undefined, 50, { min: 1, max: 10_000 }) as number;
      const workspace = str(p, 'workspace');
      const json = flag(p, 'json');
      const follow = flag(p, 'follow');
      const store = await openFromArgs(p, true);
      try {
        const first = await store.requestLog.query({ ...(workspace !== undefined ? { workspace } : {}), limit });
        if (!follow) {
          if (json) printJson(first.map(toJson));
          else printTable(HEADERS, first.map(cells));
          return 0;
        }
        const print = (rows: RequestLogEntry[]) => {
          for (const r of rows) process.stdout.write((json ? JSON.stringify(toJson(r)) : cells(r).join('  ')) + '\n');
        };
        if (!json) process.stdout.write(HEADERS.join('  ') + '\n');
        print(first);
        let stopped = false;
        const stop = () => (stopped = true);
        process.once('SIGINT', stop);
        process.once('SIGTERM', stop);
        await followLog(
          {
            query: (afterId, limit) =>
              store.requestLog.query({ ...(workspace !== undefined ? { workspace } : {}), afterId, limit }),
            print,
            wait: () => sleep(FOLLOW_POLL_MS),
            stopped: () => stopped,
          },
          first.at(-1)?.id ?? 0,
        );
        return 0;
      } finally {
        await store.close();
      }
    }),
};
