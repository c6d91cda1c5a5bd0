// The V8 settings serve and demo apply to themselves (src/cli/v8-flags.ts), and the way to keep
// V8's defaults.
import t from 'tap';
import { applyServingV8Flags, SERVING_V8_FLAGS } from '../../src/cli/v8-flags.ts';

t.test('serve turns allocation-site pretenuring off, unless PI_V8_PRETENURING=on', async (t) => {
  t.same(SERVING_V8_FLAGS, ['--no-allocation-site-pretenuring']);
  t.same(applyServingV8Flags({ PI_V8_PRETENURING: 'on' }), [], 'opted out: nothing set');
  t.same(applyServingV8Flags({}), SERVING_V8_FLAGS, 'by default the flags are set (V8 accepts them at run time)');
});
