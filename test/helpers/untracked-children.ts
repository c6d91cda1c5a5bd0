// Preloaded into every test process (.taprc `node-arg`). tap's process tracker puts its module hook
// into the NODE_OPTIONS of every process a test spawns, so each gateway, simulator and CLI command a
// test starts loads its modules through a hook thread: about half a second of CPU more per process,
// which adds minutes to the suite on two cores. That tracking serves coverage, which this project's
// tap config turns off, so the processes a test spawns are started without it. The test process
// itself keeps it: tap needs it there.
import { createRequire } from 'node:module';

interface SpawnOptions {
  env: Record<string, string | undefined>;
}
interface ProcessOnSpawn {
  addListener(listener: (options: SpawnOptions) => void): void;
}

// The tracker's option as NODE_OPTIONS carries it, quoted or not.
const TRACKER = /(?:^|\s)"?--(?:import|loader)[= ][^\s"]*@tapjs[/\\]processinfo[^\s"]*"?/g;

// The same module instance the tracker registered with (it keeps its listeners in a process-wide
// singleton): listeners run in order, so this one, added after the tracker's, sees what it added.
const fromTracker = createRequire(createRequire(import.meta.url).resolve('@tapjs/processinfo'));
const onSpawn = fromTracker('process-on-spawn') as ProcessOnSpawn;

onSpawn.addListener((options) => {
  const env = { ...options.env };
  for (const name of Object.keys(env)) if (name.startsWith('_TAPJS_PROCESSINFO_')) delete env[name];
  const rest = (env.NODE_OPTIONS ?? '').replace(TRACKER, '').trim();
  if (rest === '') delete env.NODE_OPTIONS;
  else env.NODE_OPTIONS = rest;
  options.env = env;
});
