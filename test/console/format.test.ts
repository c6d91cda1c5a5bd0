// The console's display formatting (console/src/format.ts): a percentage says 0% or 100% only when
// the share is exactly that.
import t from 'tap';
import { pct } from '../../console/src/format.ts';

t.test('a percentage is 0% or 100% only when the share is', async (t) => {
  t.equal(pct(0), '0%');
  t.equal(pct(1), '100%');
  t.equal(pct(0.5), '50%');
  t.equal(pct(0.984), '98%', 'whole percents away from the ends');
  t.equal(pct(0.994), '99.40%');
  t.equal(pct(0.999), '99.90%', '999 of 1,000 is not all');
  t.equal(pct(0.995), '99.50%');
  t.equal(pct(0.99999), '>99.99%', 'nor is 99,999 of 100,000');
  t.equal(pct(0.004), '0.40%');
  t.equal(pct(0.00001), '<0.01%', 'one failure of 100,000 is not none');
  t.equal(pct(null), '—');
});
