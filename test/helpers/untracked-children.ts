// Preloaded into every test process (.taprc `node-arg`). tap's process tracker puts its module hook
// into the NODE_OPTIONS of every process a test spawns, so each gateway, simulator and CLI command a
// test starts loads its modules through a hook thread: about half a second of CPU more per process,
// which adds minutes to the suite on two cores. That tracking serves coverage (and `tap --changed`),
// which this project does not use, so the processes a test spawns are started without it: with the
// NODE_OPTIONS their spawner gave them, less the tracker's hook. The test process itself keeps it:
// tap needs it there.
import { createRequire } from 'node:module';

interface SpawnOptions {
  env: Record<string, string | undefined>;
}
interface ProcessOnSpawn {
  addListener(listener: (options: SpawnOptions) => void): void;
  prependListener(listener: (options: SpawnOptions) => void): void;
}
interface NodeOptionsCodec {
  nodeOptionsToArgv(options: string | undefined): string[];
  argvToNodeOptions(argv: readonly string[]): string;
}

// The same module instances the tracker uses (process-on-spawn keeps its listeners in a process-wide
// singleton, and runs them in order for each spawn).
const fromTracker = createRequire(createRequire(import.meta.url).resolve('@tapjs/processinfo'));
const onSpawn = fromTracker('process-on-spawn') as ProcessOnSpawn;
const codec = fromTracker('node-options-to-argv') as NodeOptionsCodec;

const TRACKER = /@tapjs[/\\]processinfo/;
const HOOK_OPTIONS = new Set(['--import', '--loader', '--experimental-loader']);

/** `options` without the tracker's hook, in whichever form it is written (`--import=X`, `--import X`). */
function withoutTracker(options: string | undefined): string | undefined {
  const argv = codec.nodeOptionsToArgv(options);
  const kept: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i] ?? '';
    const eq = a.indexOf('=');
    if (eq > 0 && HOOK_OPTIONS.has(a.slice(0, eq)) && TRACKER.test(a)) continue;
    if (HOOK_OPTIONS.has(a) && TRACKER.test(argv[i + 1] ?? '')) {
      i++;
      continue;
    }
    kept.push(a);
  }
  if (kept.length === argv.length) return options;
  return kept.length === 0 ? undefined : codec.argvToNodeOptions(kept);
}

// What the spawner asked for, seen before the tracker's listener rewrites it (the tracker also copies
// the test process's own NODE_OPTIONS into a child whose spawner left them out).
let asked: string | undefined;
onSpawn.prependListener((options) => {
  asked = options.env.NODE_OPTIONS;
});
onSpawn.addListener((options) => {
  const env = { ...options.env };
  for (const name of Object.keys(env)) if (name.startsWith('_TAPJS_PROCESSINFO_')) delete env[name];
  const nodeOptions = withoutTracker(asked);
  if (nodeOptions === undefined) delete env.NODE_OPTIONS;
  else env.NODE_OPTIONS = nodeOptions;
  options.env = env;
});
