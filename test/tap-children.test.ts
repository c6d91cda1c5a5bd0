// The processes a test spawns start without tap's process tracker and with the NODE_OPTIONS their
// spawner gave them (test/helpers/untracked-children.ts, preloaded by .taprc); test files start
// without the loaders of plugins .taprc turns off (scripts/test-summary.mjs builds them first).
import t from 'tap';
import { execFileSync } from 'node:child_process';

const PRINT = `console.log(JSON.stringify({
  options: process.env.NODE_OPTIONS ?? null,
  tracker: Object.keys(process.env).filter((k) => k.startsWith('_TAPJS_PROCESSINFO_')),
}))`;
const child = (env?: NodeJS.ProcessEnv) =>
  JSON.parse(execFileSync(process.execPath, ['-e', PRINT], env ? { env } : {}).toString()) as unknown;

t.match(process.env.NODE_OPTIONS ?? '', /@tapjs[/\\]processinfo/, 'the test process itself is tracked');
t.notMatch(
  process.execArgv.join(' '),
  /@tapjs[/\\](typescript|mock)[/\\]/,
  'no loader of a plugin .taprc turns off (npm test builds the plugins first)',
);
t.same(child(), { options: null, tracker: [] }, 'a child inheriting the environment: untracked');
t.same(child({ PATH: process.env.PATH }), { options: null, tracker: [] }, 'a child given its own: the same');
t.same(
  child({ ...process.env, NODE_OPTIONS: '--max-old-space-size=200' }),
  { options: '--max-old-space-size=200', tracker: [] },
  "the spawner's own NODE_OPTIONS are kept as written",
);
const tracker = 'file:///x/node_modules/@tapjs/processinfo/dist/esm/import.mjs';
t.same(
  child({ ...process.env, NODE_OPTIONS: `--import "${tracker}" --max-old-space-size=100` }),
  { options: '"--max-old-space-size=100"', tracker: [] },
  'the tracker written as two words is dropped too',
);
