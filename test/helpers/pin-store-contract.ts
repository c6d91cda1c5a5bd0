// What every session-pin store promises the routing path, whichever way the gateway runs: the pins
// in process, a serving thread's coordinator client (`serve --workers N`) and Redis on a fleet node
// (alone and behind the fallback). One suite, run once per implementation
// (test/routing/pin-stores.test.ts): a pin lives 1 hour after its last `touch` or `set`, `get` does
// not extend it, `touch` never creates or revives one, and every caller sharing the store sees it.
import type { Test } from 'tap';
import { PIN_TTL_MS, type PinStore } from '../../src/routing/session-pins.ts';

/** One implementation, empty, with its pins' time under the test's control. */
export interface PinRig {
  pins: PinStore;
  /** Another caller of the same pins (another serving thread, another node); `pins` itself when
   *  only one event loop uses them. */
  other: PinStore;
  /** Moves the pins' time forward. */
  advance(ms: number): Promise<void>;
  /** How much earlier than the lifetime's end a pin may already be gone: 0 where the clock is the
   *  test's; the real milliseconds that pass between the calls where the server keeps the time. */
  slackMs: number;
}

type Make = (t: Test) => Promise<PinRig>;

const HOUR = PIN_TTL_MS;
const get = async (p: PinStore, key: string) => await p.get(key);

export function pinStoreContract(t: Test, make: Make): void {
  t.test('set pins, a new set re-pins, drop forgets; keys apart; nothing before a set', async (t) => {
    const r = await make(t);
    t.equal(await get(r.pins, 'k'), null, 'nothing pinned');
    await r.pins.set('k', 'd1');
    t.equal(await get(r.pins, 'k'), 'd1');
    t.equal(await get(r.pins, 'k2'), null, 'another session is not pinned');
    await r.pins.set('k', 'd2');
    t.equal(await get(r.pins, 'k'), 'd2', 'the deployment that answered last');
    await r.pins.drop('k');
    t.equal(await get(r.pins, 'k'), null, 'dropped');
    await r.pins.drop('never-set');
    await r.pins.touch('never-set');
    t.equal(await get(r.pins, 'never-set'), null, 'touch never creates a pin');
  });

  t.test('every caller of the store sees the same pins', async (t) => {
    const r = await make(t);
    await r.pins.set('k', 'd1');
    t.equal(await get(r.other, 'k'), 'd1', 'set by one, read by the other');
    await r.other.set('k', 'd2');
    t.equal(await get(r.pins, 'k'), 'd2', 're-pinned by the other');
    await r.other.drop('k');
    t.equal(await get(r.pins, 'k'), null, 'dropped by the other');
  });

  t.test('a pin lives exactly an hour after it was set', async (t) => {
    const r = await make(t);
    await r.pins.set('k', 'd1');
    await r.advance(HOUR - 1 - r.slackMs);
    t.equal(await get(r.pins, 'k'), 'd1', 'alive just before the hour');
    await r.advance(1 + r.slackMs);
    t.equal(await get(r.pins, 'k'), null, 'gone at the hour');
    await r.pins.touch('k');
    t.equal(await get(r.pins, 'k'), null, 'touching an expired pin does not revive it');
  });

  t.test('touch restarts the hour (a live pin), from any caller; get does not', async (t) => {
    const r = await make(t);
    await r.pins.set('k', 'd1');
    await r.advance(40 * 60_000);
    t.equal(await get(r.pins, 'k'), 'd1');
    await r.advance(10 * 60_000);
    await r.other.touch('k'); // a request admitted at +50 min, on another event loop
    await r.advance(HOUR - 1 - r.slackMs);
    t.equal(await get(r.pins, 'k'), 'd1', 'alive just before an hour after the last touch');
    await r.advance(1 + r.slackMs);
    t.equal(await get(r.pins, 'k'), null, 'gone an hour after the last touch');

    await r.pins.set('g', 'd1');
    for (let i = 0; i < 5; i++) {
      await r.advance(10 * 60_000);
      t.equal(await get(r.pins, 'g'), 'd1', `read at +${(i + 1) * 10} min`);
    }
    await r.advance(10 * 60_000);
    t.equal(await get(r.pins, 'g'), null, 'reads did not extend it: gone an hour after the set');
  });

  t.test('set restarts the hour too', async (t) => {
    const r = await make(t);
    await r.pins.set('k', 'd1');
    await r.advance(50 * 60_000);
    await r.pins.set('k', 'd2');
    await r.advance(HOUR - 1 - r.slackMs);
    t.equal(await get(r.pins, 'k'), 'd2', 'alive just before an hour after the second set');
    await r.advance(1 + r.slackMs);
    t.equal(await get(r.pins, 'k'), null);
  });
}
