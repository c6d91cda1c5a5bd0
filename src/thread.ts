// Starts a worker thread on one of our modules, from the build (dist/: plain .js) or from the
// TypeScript sources (tests, a checkout without dist/). From the sources a small bootstrap registers
// tsx in the thread first: the parent thread's loader hooks do not reach a worker. Used by the SQLite
// writer thread and by the serving threads of `serve --workers N`.
import { join } from 'node:path';
import { type ResourceLimits, type TransferListItem, Worker } from 'node:worker_threads';
import { singleExecutableRoot } from './install/single-executable.ts';

/** The argument that tells the single executable's bundle, started as a worker, which module it is. */
export const THREAD_ARG = '--pi-thread';
/** The single executable's bundle, unpacked beside its other files. */
export const EXECUTABLE_BUNDLE = 'pi-gateway.cjs';

/**
 * `entry` is the module's URL as the caller sees it (`new URL('./x.ts', import.meta.url)` from a
 * source file, `./x.js` from the build): a `.ts` entry is started through tsx.
 */
export function spawnThread(
  entry: URL,
  opts: { workerData: unknown; transferList?: TransferListItem[]; stdout?: boolean; stderr?: boolean; resourceLimits?: ResourceLimits },
): Worker {
  const packaged = singleExecutableRoot();
  if (packaged !== null) {
    // Named by the module's file name (writer-thread, serving-thread…): src/cli/executable.ts maps it back.
    const name = entry.pathname.slice(entry.pathname.lastIndexOf('/') + 1).replace(/\.(ts|js)$/, '');
    return new Worker(join(packaged, EXECUTABLE_BUNDLE), { ...opts, argv: [THREAD_ARG, name] });
  }
  if (!entry.pathname.endsWith('.ts')) return new Worker(entry, opts);
  const tsx = import.meta.resolve('tsx/esm/api');
  const boot = `import(${JSON.stringify(tsx)}).then((m) => { m.register(); return import(${JSON.stringify(entry.href)}); })`;
  return new Worker(boot, { ...opts, eval: true });
}

/** `./name.ts` beside `base` when `base` is a source file, else `./name.js` (the build). */
export function siblingModule(name: string, base: string): URL {
  return new URL(`./${name}${base.endsWith('.ts') ? '.ts' : '.js'}`, base);
}
