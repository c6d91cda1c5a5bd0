// A compiled `pi-gateway serve` as a child process of a drill benchmark: started with `args`, ready
// once it logs `listening` on stderr (its JSON log lines are kept, each stamped with `at`), killed
// (SIGKILL) if still running when the benchmark exits.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { TREE, startupV8Flags } from './proc.mjs';

export const CLI = join(TREE, 'dist', 'src', 'cli', 'main.js');

const live = new Set();

/** SIGKILLs every serve process still running (the benchmark is ending). */
export function killAll() {
  for (const c of live) {
    try {
      process.kill(c.pid, 'SIGKILL');
    } catch {
      // gone
    }
  }
}
process.on('exit', killAll);

/** Resolves to { child, url, admin, events, exited, pid } once it listens; rejects if it exits first
 *  or does not listen within 30 s. `exited` resolves to { code, signal }. */
export async function startServeProcess(args, env = {}) {
  // The start-up V8 flags the executable carries, as a gateway under load runs with them.
  const child = spawn(process.execPath, [...(await startupV8Flags()), CLI, 'serve', ...args], {
    cwd: TREE,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  live.add(child);
  const events = [];
  let pending = '';
  let err = '';
  const exited = new Promise((resolve) =>
    child.once('exit', (code, signal) => {
      live.delete(child);
      resolve({ code, signal });
    }),
  );
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`serve did not start:\n${err}`)), 30_000);
    child.stderr.on('data', (d) => {
      err = (err + d.toString()).slice(-4000);
      pending += d.toString();
      const lines = pending.split('\n');
      pending = lines.pop() ?? '';
      for (const line of lines) {
        let e;
        try {
          e = JSON.parse(line);
        } catch {
          continue;
        }
        e.at = performance.now();
        events.push(e);
        if (e.event === 'listening') {
          clearTimeout(timer);
          resolve({
            child,
            url: String(e.url),
            admin: e.admin === null ? null : String(e.admin),
            events,
            exited,
            pid: child.pid,
          });
        }
      }
    });
    child.once('exit', () => reject(new Error(`serve exited at start:\n${err}`)));
  });
}
