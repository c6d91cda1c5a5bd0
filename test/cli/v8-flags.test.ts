// The V8 settings serve and demo apply to themselves (src/cli/v8-flags.ts), the way to keep V8's
// defaults, how the listening line reports them, and that `npm start` carries the start-up flags
// (the single executable's are checked in test/executable/smoke.test.ts).
import { readFileSync } from 'node:fs';
import t from 'tap';
import { applyServingV8Flags, SERVING_V8_FLAGS, STARTUP_V8_FLAGS, v8FlagsInEffect } from '../../src/cli/v8-flags.ts';

t.test('serve turns pretenuring and the memory reducer off, unless the environment opts out', async (t) => {
  t.same(SERVING_V8_FLAGS, ['--no-allocation-site-pretenuring']);
  t.same(STARTUP_V8_FLAGS, ['--no-memory-reducer']);
  // v8FlagsInEffect reads a start-up flag's last occurrence as a "--no-…" flag.
  for (const f of STARTUP_V8_FLAGS) t.match(f, /^--no-[a-z-]+$/, `${f} turns a V8 feature off`);
  t.same(applyServingV8Flags({ PI_V8_PRETENURING: 'on', PI_V8_MEMORY_REDUCER: 'on' }), [], 'both opted out');
  t.same(applyServingV8Flags({ PI_V8_MEMORY_REDUCER: 'on' }), SERVING_V8_FLAGS, 'reducer kept');
  t.same(applyServingV8Flags({ PI_V8_PRETENURING: 'on' }), STARTUP_V8_FLAGS, 'pretenuring kept');
  t.same(
    applyServingV8Flags({}),
    [...SERVING_V8_FLAGS, ...STARTUP_V8_FLAGS],
    'by default every flag is set (V8 accepts them at run time)',
  );
});

t.test('the listening line says which threads a start-up flag reaches', async (t) => {
  t.same(v8FlagsInEffect({}, ['--no-memory-reducer']), ['--no-allocation-site-pretenuring', '--no-memory-reducer']);
  t.same(
    v8FlagsInEffect({}, []),
    ['--no-allocation-site-pretenuring', '--no-memory-reducer (not the main thread)'],
    'not on the command line: the main thread keeps the reducer',
  );
  t.same(
    v8FlagsInEffect({ PI_V8_MEMORY_REDUCER: 'on', PI_V8_PRETENURING: 'on' }, ['--no-memory-reducer']),
    ['--no-memory-reducer'],
    'a flag on the command line holds whatever the environment says',
  );
  t.same(v8FlagsInEffect({ PI_V8_MEMORY_REDUCER: 'on', PI_V8_PRETENURING: 'on' }, []), []);
  t.same(v8FlagsInEffect({ PI_V8_MEMORY_REDUCER: 'on' }, []), ['--no-allocation-site-pretenuring']);
  t.same(
    v8FlagsInEffect({}, ['--no-memory-reducer', '--inspect', '--memory-reducer']),
    ['--no-allocation-site-pretenuring', '--no-memory-reducer (not the main thread)'],
    'V8 takes the last occurrence: a later --memory-reducer gives the main thread the reducer back',
  );
  t.same(
    v8FlagsInEffect({ PI_V8_MEMORY_REDUCER: 'on' }, ['--memory-reducer', '--no_memory_reducer']),
    ['--no-allocation-site-pretenuring', '--no-memory-reducer'],
    'any spelling V8 accepts',
  );
  t.same(v8FlagsInEffect({ PI_V8_MEMORY_REDUCER: 'on' }, ['--nomemory-reducer']), [
    '--no-allocation-site-pretenuring',
    '--no-memory-reducer',
  ]);
});

t.test('npm start launches node with the start-up flags', async (t) => {
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
    scripts: Record<string, string>;
  };
  t.equal(pkg.scripts['start'], `node ${STARTUP_V8_FLAGS.join(' ')} bin/pi-gateway.js demo`);
});
