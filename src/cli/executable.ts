// The single executable's entry (`npm run dist` bundles from here). On the main thread it is the CLI;
// on a worker thread it is the thread module its argv names — the executable's worker threads all
// start from the one unpacked bundle (src/thread.ts), so the bundle has to be able to be any of them.
import { isMainThread } from 'node:worker_threads';
import { THREAD_ARG } from '../thread.ts';
import { runCli } from './main.ts';

const THREADS: Record<string, () => Promise<unknown>> = {
  'writer-thread': () => import('../store/sqlite/writer-thread.ts'),
  'checkpoint-thread': () => import('../store/sqlite/checkpoint-thread.ts'),
  'serving-thread': () => import('../runtime/serving-thread.ts'),
};

function threadName(): string | null {
  const at = process.argv.indexOf(THREAD_ARG);
  return at === -1 ? null : (process.argv[at + 1] ?? null);
}

const name = isMainThread ? null : threadName();
if (name === null) {
  // The executable's own path stands where a script's would (argv[1]); the CLI's words follow it.
  runCli(process.argv.slice(2));
} else {
  const load = THREADS[name];
  if (!load) throw new Error(`the executable has no thread module named ${name}`);
  void load();
}
