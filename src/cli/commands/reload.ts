// `pi-gateway reload`: asks the server that owns a database to reload its config directory (SIGHUP to
// the pid it wrote beside the database), waits for the result it records, and prints it; or, with
// --admin URL, asks one server through its admin listener (a fleet node: no file, no pid to signal).
import { resolve } from 'node:path';
import { type AdminReloadAnswer, reloadThroughAdmin } from '../admin-reload.ts';
import { flag, int, parse, str, UsageError } from '../args.ts';
import type { Command } from '../command.ts';
import { printJson } from '../output.ts';
import { readOwnerPid, readReloadRecord, type ReloadRecord } from '../../runtime/owner-files.ts';
import { CliError, DB_HELP, dbFromArgs, guarded, JSON_HELP, STORE_OPTIONS } from '../store-command.ts';
import { isPostgresUrl } from '../../store/admin-store-interface.ts';
import { redactUrl } from '../../store/redact-url.ts';
import { ownerLockHeld } from '../../store/sqlite/store.ts';

const HELP = `Usage: pi-gateway reload [--db FILE] [--timeout SECONDS] [--json]
       pi-gateway reload --admin URL [--timeout SECONDS] [--json]

Asks the running \`pi-gateway serve\` (or \`demo\`) that owns the database to re-read, validate and
compile its config directory (the same as \`kill -HUP\` on the pid in FILE.pid), waits for the
result, and prints it. On success new requests use the new config while in-flight ones finish on
the old; wallets, rate-limit windows, session pins and breaker state are kept. A config with
problems is refused, every problem is printed as file:line:col path: message, and the running
config stays. Exits 0 when reloaded, 1 when refused or when no server answers.

A node of a fleet (serve --db postgres://…) has no database file or pid file: reload each node
through its admin listener with --admin (docs/fleet.md), or send it SIGHUP on its own host.

Options:
${DB_HELP}
  --admin URL        the admin listener of the server to reload (http://HOST:ADMIN_PORT): POST
                     /admin/reload with the operator token from PI_ADMIN_TOKEN (or
                     PI_ADMIN_TOKEN_FILE); the server must run with PI_ADMIN_TOKEN set
  --timeout SECONDS  how long to wait for the server's answer (default 10)
${JSON_HELP}`;

/** Why \`--db postgres://…\` cannot work, without repeating the URL (it may carry a password). */
const FLEET_NODE =
  'the database is a PostgreSQL URL: a fleet node has no pid file to signal. Reload each node through its admin listener: pi-gateway reload --admin http://NODE:ADMIN_PORT with PI_ADMIN_TOKEN set (docs/fleet.md), or send SIGHUP to the node on its host';

/** Waits for the server to record a reload newer than `after` (pid, seq). */
async function waitForRecord(
  db: string,
  pid: number,
  afterSeq: number,
  timeoutMs: number,
): Promise<ReloadRecord | null> {
  const until = performance.now() + timeoutMs;
  for (;;) {
    const r = readReloadRecord(db);
    if (r && r.pid === pid && r.seq > afterSeq) return r;
    if (performance.now() >= until) return null;
    await new Promise((done) => setTimeout(done, 25));
  }
}

/** Prints a result; `server` names who reloaded ("pid 123", or "10.0.0.11:9090, pid 123"). */
function print(
  r: { ok: boolean; hash: string | null; problems: readonly string[] },
  restartNeeded: readonly string[],
  server: string,
): void {
  if (r.ok) {
    process.stdout.write(`reloaded: config ${r.hash ?? '?'} (${server})\n`);
    for (const note of restartNeeded) process.stdout.write(`note: takes effect at the next restart: ${note}\n`);
    return;
  }
  for (const p of r.problems) process.stdout.write(p + '\n');
  process.stderr.write(
    `pi-gateway reload: the config has ${r.problems.length} problem${r.problems.length === 1 ? '' : 's'}; the server keeps its running config\n`,
  );
}

async function reloadAdmin(admin: string, timeoutMs: number, json: boolean): Promise<number> {
  const { answer, name }: { answer: AdminReloadAnswer; name: string } = await reloadThroughAdmin(
    admin,
    process.env.PI_ADMIN_TOKEN,
    timeoutMs,
  );
  if (json) printJson(answer);
  else print(answer, answer.restart_needed, `${name}, pid ${answer.pid}`);
  return answer.ok ? 0 : 1;
}

export const command: Command = {
  summary: 'reload the running server’s config (SIGHUP through its pid file, or its admin listener)',
  help: HELP,
  run: (argv) =>
    guarded('reload', async () => {
      const p = parse(argv, { ...STORE_OPTIONS, admin: { type: 'string' }, timeout: { type: 'string' } }, false);
      const timeoutMs = (int(p, 'timeout', undefined, 10, { min: 1, max: 3600 }) as number) * 1000;
      const admin = str(p, 'admin');
      if (admin !== undefined) {
        if (str(p, 'db') !== undefined)
          throw new UsageError(
            'give either --db FILE (a server on this host) or --admin URL (any server with an admin listener), not both',
          );
        return reloadAdmin(admin, timeoutMs, flag(p, 'json'));
      }
      const db = dbFromArgs(p);
      if (isPostgresUrl(db)) throw new CliError(`${redactUrl(db)}: ${FLEET_NODE}`);
      // The lock, not the pid file, says whether a server runs: a stale pid is never signalled.
      if (!ownerLockHeld(db)) throw new CliError(`no running pi-gateway serve owns the database ${resolve(db)}`);
      const pid = readOwnerPid(db);
      if (pid === null)
        throw new CliError(
          `a server owns ${resolve(db)} but its pid file ${resolve(db)}.pid is missing; send SIGHUP to it yourself`,
        );
      const before = readReloadRecord(db);
      const afterSeq = before && before.pid === pid ? before.seq : 0;
      try {
        process.kill(pid, 'SIGHUP');
      } catch (err) {
        throw new CliError(`cannot signal pid ${pid}: ${err instanceof Error ? err.message : String(err)}`);
      }
      const r = await waitForRecord(db, pid, afterSeq, timeoutMs);
      if (r === null)
        throw new CliError(
          `sent SIGHUP to pid ${pid}, but it recorded no result within ${timeoutMs / 1000} s; see its log`,
        );
      if (flag(p, 'json')) printJson(r);
      else print(r, r.restart_needed, `pid ${r.pid}`);
      return r.ok ? 0 : 1;
    }),
};
