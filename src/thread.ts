// Starts a worker thread on one of our modules, from the build (dist/: plain .js) or from the
// TypeScript sources (tests, a checkout without dist/). From the sources a small bootstrap registers
// tsx in the thread first: the parent thread's loader hooks do not reach a worker. Used by the SQLite
// writer thread and by the serving threads of `serve --workers N`.
import { type ResourceLimits, type TransferListItem, Worker } from 'node:worker_threads';

/**
 * `entry` is the module's URL as the caller sees it (`new URL('./x.ts', import.meta.url)` from a
 * source file, `./x.js` from the build): a `.ts` entry is started through tsx.
 */
export function spawnThread(
  entry: URL,
  opts: { workerData: unknown; transferList?: TransferListItem[]; stdout?: boolean; stderr?: boolean; resourceLimits?: ResourceLimits },
): Worker {
  if (!entry.pathname.endsWith('.ts')) return new Worker(entry, opts);
  const tsx = import.meta.resolve('tsx/esm/api');
  const boot = `import(${JSON.stringify(tsx)}).then((m) => { m.register(); return import(${JSON.stringify(entry.href)}); })`;
  return new Worker(boot, { ...opts, eval: true });
}

/** `./name.ts` beside `base` when `base` is a source file, else `./name.js` (the build). */
export function siblingModule(name: string, base: string): URL {
  return new URL(`./${name}${base.endsWith('.ts') ? '.ts' : '.js'}`, base);
}
