// The stop switch ends running attempts from outside (the drain deadline): watchers run once, an
// attempt that finished no longer watches, and a thrown switch ends an attempt as it starts.
import t from 'tap';
import { StopSwitch } from '../../src/proxy/stop-switch.ts';
import { attemptHarness, ev } from './attempt-fakes.ts';

t.test('watchers run once when thrown; unwatched ones never; later watchers at once', async (t) => {
  const s = new StopSwitch();
  const calls: string[] = [];
  s.watch(() => calls.push('a'));
  const unwatch = s.watch(() => calls.push('b'));
  unwatch();
  t.equal(s.stopped, false);
  s.stop();
  s.stop();
  t.same(calls, ['a']);
  t.equal(s.stopped, true);
  s.watch(() => calls.push('late'));
  t.same(calls, ['a', 'late']);
});

t.test('runAttempt: a thrown switch ends the attempt as drained; a finished attempt stops watching', async (t) => {
  const stop = new StopSwitch();
  const h = attemptHarness({ stop });
  h.upstream().onHead(200, { 'content-type': 'text/event-stream' });
  h.upstream().onData(ev('c1'));
  stop.stop();
  const o = await h.promise;
  t.equal(o.kind === 'committed' && o.broken, 'drained');
  t.match(h.reply.body, 'the gateway is shutting down');

  const stop2 = new StopSwitch();
  const done = attemptHarness({ stop: stop2 });
  done.upstream().onHead(200, { 'content-type': 'text/event-stream' });
  done.upstream().onData(Buffer.concat([ev('c1'), Buffer.from('data: [DONE]\n\n')]));
  const o2 = await done.promise;
  t.equal(o2.kind === 'committed' && o2.broken, null);
  stop2.stop();
  t.equal(done.ctrl.aborts.length, 0, 'nothing to end once the attempt finished');

  const before = attemptHarness({ stop });
  const o3 = await before.promise;
  t.same(
    o3,
    { kind: 'failed', reason: 'drained', detail: 'the gateway is shutting down', firstByteMs: null },
    'already thrown: ended at once',
  );
});
