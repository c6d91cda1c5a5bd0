// `pi-gateway check`: validates a config dir (schemas + cross-file rules) and prints every issue;
// with --warn-expiring, also lists the enabled models whose expiration date is near.
import type { Command } from '../command.ts';
import { flag, int, parse, str, UsageError } from '../args.ts';
import { printJson } from '../output.ts';
import { configDirProblem } from '../config-dir.ts';
import { formatIssue, loadConfig } from '../../config/load-config.ts';
import type { CompiledConfig } from '../../config/compiled.ts';
import { ADAPTERS } from '../../platforms/index.ts';
import { type Clock, systemClock } from '../../clock.ts';
import { type ExpiringModel, expiringWithin } from '../../availability/lifecycle.ts';

const HELP = `Usage: pi-gateway check [--config DIR] [--json] [--warn-expiring DAYS [--strict]]

Validates the config directory: every YAML file against its JSON Schema, then the cross-file rules
(references, ids, vocabulary, prices). Prints "ok: …" with counts, or every issue, one per line, as
  <file>:<line>:<col> <path>: <message>
and exits 1 when there is any.

Options:
  --config DIR          Config directory (default: $PI_CONFIG, else ./config).
  --json                Print one JSON document ({"ok": true, "counts": …} or {"ok": false, "issues": […]});
                        with --warn-expiring it also has "expiring": [{"id", "expiration_date", "days_left"}].
  --warn-expiring DAYS  Also list every enabled model whose expiration_date is at most DAYS days after
                        today (UTC), and those already past it: routing refuses a model from its
                        expiration date. Warnings only: the exit code stays 0 (0 to 3650).
  --strict              With --warn-expiring: exit 1 when any model is listed (for a CI or cron job).
`;

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

function countsOf(c: CompiledConfig): Record<string, number> {
  return {
    models: c.models.length,
    enabledModels: c.models.filter((m) => m.enabled).length,
    platforms: c.platforms.length,
    resources: c.resources.length,
    deployments: c.deployments.length,
    workspaces: c.workspaces.length,
  };
}

/** The counts as --json prints them (snake_case, like every JSON the gateway writes). */
function snakeCounts(counts: Record<string, number>): Record<string, number> {
  return Object.fromEntries(
    Object.entries(counts).map(([k, v]) => [k.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`), v]),
  );
}

function countsLine(counts: Record<string, number>): string {
  const n = (k: string) => counts[k] ?? 0;
  return (
    `ok: ${plural(n('models'), 'model')} (${n('enabledModels')} enabled), ${plural(n('platforms'), 'platform')}, ` +
    `${plural(n('resources'), 'resource')}, ${plural(n('deployments'), 'deployment')}, ${plural(n('workspaces'), 'workspace')}\n`
  );
}

/** One line per model: when it expires, and that routing refuses it from then. */
function expiringLine(e: ExpiringModel): string {
  const when =
    e.daysLeft > 0
      ? `expires on ${e.expirationDate} (in ${plural(e.daysLeft, 'day')})`
      : e.daysLeft === 0
        ? `expires today (${e.expirationDate})`
        : `expired on ${e.expirationDate} (${plural(-e.daysLeft, 'day')} ago)`;
  return `warning: ${e.id} ${when}; routing refuses it from that date\n`;
}

/** The command, reading "today" from `clock` (tests pass a ManualClock). */
export function checkCommand(clock: Clock = systemClock): Command {
  return {
    summary: 'Validate the config directory and list every problem',
    help: HELP,
    async run(argv) {
      const p = parse(
        argv,
        {
          config: { type: 'string' },
          json: { type: 'boolean' },
          'warn-expiring': { type: 'string' },
          strict: { type: 'boolean' },
        },
        false,
      );
      const dir = str(p, 'config', 'PI_CONFIG', 'config') as string;
      const days = int(p, 'warn-expiring', undefined, undefined, { min: 0, max: 3650 });
      if (flag(p, 'strict') && days === undefined) throw new UsageError('--strict needs --warn-expiring DAYS');
      const missing = configDirProblem(dir);
      if (missing !== null) {
        if (flag(p, 'json')) printJson({ ok: false, error: missing, issues: [] });
        process.stderr.write(`pi-gateway check: ${missing}\n`);
        return 1;
      }
      const r = loadConfig(dir, { adapters: ADAPTERS });
      if (!r.ok) {
        if (flag(p, 'json')) printJson({ ok: false, issues: r.issues });
        else {
          for (const i of r.issues) process.stdout.write(formatIssue(i) + '\n');
          process.stderr.write(`pi-gateway check: ${plural(r.issues.length, 'issue')} in ${dir}\n`);
        }
        return 1;
      }
      const counts = countsOf(r.config);
      const expiring = days === undefined ? null : expiringWithin(r.config.models, clock.now(), days);
      if (flag(p, 'json')) {
        const listed = expiring?.map((e) => ({ id: e.id, expiration_date: e.expirationDate, days_left: e.daysLeft }));
        printJson({
          ok: true,
          counts: snakeCounts(counts),
          source_hash: r.config.sourceHash,
          ...(listed ? { expiring: listed } : {}),
        });
      } else {
        process.stdout.write(countsLine(counts));
        for (const e of expiring ?? []) process.stdout.write(expiringLine(e));
        if (expiring?.length === 0)
          process.stdout.write(`no enabled model expires within ${plural(days as number, 'day')}\n`);
      }
      if (flag(p, 'strict') && expiring !== null && expiring.length > 0) {
        process.stderr.write(
          `pi-gateway check: ${plural(expiring.length, 'model')} expire within ${plural(days as number, 'day')} (--strict)\n`,
        );
        return 1;
      }
      return 0;
    },
  };
}

export const command: Command = checkCommand();
