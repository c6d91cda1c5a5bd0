// Starts a worker thread on one of our modules: its TypeScript source in a checkout (Node.js strips
// the types itself, in the thread as in the main thread), its compiled file in the npm package
// (dist/), or the single executable's unpacked bundle. Used by the SQLite writer thread, its
// checkpointer and the serving threads of `serve --workers N`.
import { join } from 'node:path';
import { type ResourceLimits, type TransferListItem, Worker } from 'node:worker_threads';
import { singleExecutableRoot } from './install/single-executable.ts';

/** The argument that tells the single executable's bundle, started as a worker, which module it is. */
export const THREAD_ARG = '--pi-thread';
/** The single executable's bundle, unpacked beside its other files. */
export const EXECUTABLE_BUNDLE = 'pi-gateway.cjs';

/** `entry` is the module's URL as the caller sees it (`siblingModule('x', import.meta.url)`). */
export function spawnThread(
  entry: URL,
  opts: {
    workerData: unknown;
    transferList?: TransferListItem[];
    stdout?: boolean;
    stderr?: boolean;
    resourceLimits?: ResourceLimits;
  },
): Worker {
  const packaged = singleExecutableRoot();
  if (packaged !== null) {
    // Named by the module's file name (writer-thread, serving-thread…): src/cli/executable.ts maps it back.
    const name = entry.pathname.slice(entry.pathname.lastIndexOf('/') + 1).replace(/\.(ts|js)$/, '');
    return new Worker(join(packaged, EXECUTABLE_BUNDLE), { ...opts, argv: [THREAD_ARG, name] });
  }
  return new Worker(entry, opts);
}

/** `./name.ts` beside `base` when `base` is a source file, else `./name.js` (the build). */
export function siblingModule(name: string, base: string): URL {
  return new URL(`./${name}${base.endsWith('.ts') ? '.ts' : '.js'}`, base);
}
