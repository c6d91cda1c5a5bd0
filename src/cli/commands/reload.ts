// `pi-gateway reload`: asks the server that owns a database to reload its config directory (SIGHUP to
// the pid it wrote beside the database), waits for the result it records, and prints it.
import { resolve } from 'node:path';
import { flag, int, parse, str } from '../args.ts';
import type { Command } from '../command.ts';
import { printJson } from '../output.ts';
import { readOwnerPid, readReloadRecord, type ReloadRecord } from '../owner-files.ts';
import { CliError, DB_HELP, guarded, JSON_HELP, STORE_OPTIONS } from '../store-command.ts';
import { ownerLockHeld } from '../../store/store.ts';

const HELP = `Usage: pi-gateway reload [--db FILE] [--timeout SECONDS] [--json]

Asks the running \`pi-gateway serve\` (or \`demo\`) that owns the database to re-read, validate and
compile its config directory (the same as \`kill -HUP\` on the pid in FILE.pid), waits for the
result, and prints it. On success new requests use the new config while in-flight ones finish on
the old; wallets, rate-limit windows, session pins and breaker state are kept. A config with
problems is refused, every problem is printed as file:line:col path: message, and the running
config stays. Exits 0 when reloaded, 1 when refused or when no server answers.

Options:
${DB_HELP}
  --timeout SECONDS  how long to wait for the server's answer (default 10)
${JSON_HELP}`;

/** Waits for the server to record a reload newer than `after` (pid, seq). */
async function waitForRecord(db: string, pid: number, afterSeq: number, timeoutMs: number): Promise<ReloadRecord | null> {
  const until = performance.now() + timeoutMs;
  for (;;) {
    const r = readReloadRecord(db);
    if (r && r.pid === pid && r.seq > afterSeq) return r;
    if (performance.now() >= until) return null;
    await new Promise((done) => setTimeout(done, 25));
  }
}

function print(r: ReloadRecord, json: boolean): void {
  if (json) {
    printJson(r);
    return;
  }
  if (r.ok) {
    process.stdout.write(`reloaded: config ${r.hash ?? '?'} (pid ${r.pid})\n`);
    for (const note of r.restart_needed) process.stdout.write(`note: takes effect at the next restart: ${note}\n`);
    return;
  }
  for (const p of r.problems) process.stdout.write(p + '\n');
  process.stderr.write(`pi-gateway reload: the config has ${r.problems.length} problem${r.problems.length === 1 ? '' : 's'}; the server keeps its running config\n`);
}

export const command: Command = {
  summary: 'reload the running server’s config (SIGHUP through its pid file)',
  help: HELP,
  run: (argv) =>
    guarded('reload', async () => {
      const p = parse(argv, { ...STORE_OPTIONS, timeout: { type: 'string' } }, false);
      const db = str(p, 'db', 'PI_DB', 'pi-gateway.db') as string;
      const timeoutMs = (int(p, 'timeout', undefined, 10) as number) * 1000;
      // The lock, not the pid file, says whether a server runs: a stale pid is never signalled.
      if (!ownerLockHeld(db)) throw new CliError(`no running pi-gateway serve owns the database ${resolve(db)}`);
      const pid = readOwnerPid(db);
      if (pid === null) throw new CliError(`a server owns ${resolve(db)} but its pid file ${resolve(db)}.pid is missing; send SIGHUP to it yourself`);
      const before = readReloadRecord(db);
      const afterSeq = before && before.pid === pid ? before.seq : 0;
      try {
        process.kill(pid, 'SIGHUP');
      } catch (err) {
        throw new CliError(`cannot signal pid ${pid}: ${err instanceof Error ? err.message : String(err)}`);
      }
      const r = await waitForRecord(db, pid, afterSeq, timeoutMs);
      if (r === null) throw new CliError(`sent SIGHUP to pid ${pid}, but it recorded no result within ${timeoutMs / 1000} s; see its log`);
      print(r, flag(p, 'json'));
      return r.ok ? 0 : 1;
    }),
};
