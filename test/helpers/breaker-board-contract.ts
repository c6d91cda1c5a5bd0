// What every breaker board promises the routing path, whichever way the gateway runs: the tracker in
// process and the serving threads' mirrors over the coordinator's board (`serve --workers N`). One
// suite, run once per implementation (test/routing/breaker-boards.test.ts): failures up to the
// threshold (in a row, or the window's share) open a breaker; it is down while open; after the
// cool-down exactly one caller gets the half-open probe, however many ask in the same turn; the
// probe's success closes it, its failure re-opens it with the cool-down doubled up to the cap; a
// probe given back or left without an outcome past its lease goes to the next caller; deployments
// are apart; a reload keeps every breaker's state; the passive view never claims; every caller
// sees one view per deployment.
import type { Test } from 'tap';
import type { CompiledDeployment, GatewaySettings } from '../../src/config/compiled.ts';
import { type BreakerBoard, DEFAULT_PROBE_LEASE_MS, type Outcome } from '../../src/routing/health.ts';

export type HealthSettings = GatewaySettings['health'];

/** One implementation, with no outcome recorded yet, its time under the test's control. */
export interface BreakerRig {
  board: BreakerBoard;
  /** Another caller of the same breakers (another serving thread); `board` itself when only one
   *  event loop uses them. */
  other: BreakerBoard;
  /** Delivers every message sent so far and what it causes (the owner's changes reaching every
   *  mirror); nothing to do where the board is in process. */
  deliver(): Promise<void>;
  /** Moves time forward and runs what fell due (the owner's timers), then delivers. */
  advance(ms: number): Promise<void>;
  /** Moves time forward with nothing delivered: what waits to be sent keeps waiting. */
  pass(ms: number): void;
  now(): number;
  /** A config reload as this way of running applies it: new thresholds, the deployments that remain. */
  reload(settings: HealthSettings, deployments: readonly CompiledDeployment[]): Promise<void>;
}

/** The rig over `settings`, its owner knowing `deployments` (as the compiled config has them). */
type Make = (t: Test, settings: HealthSettings, deployments: readonly CompiledDeployment[]) => Promise<BreakerRig>;

export const CONTRACT_HEALTH: HealthSettings = {
  consecutiveFailures: 3,
  window: 10,
  minRequests: 6,
  errorRate: 0.5,
  slowFirstByteMs: 5_000,
  cooldownMs: 1_000,
  maxCooldownMs: 4_000,
};
const COOLDOWN = CONTRACT_HEALTH.cooldownMs;

const deployment = (id: string, status: 'up' | 'down' = 'up') => ({ id, status }) as CompiledDeployment;
const D1 = deployment('acme/one');
const D2 = deployment('acme/two');
const OFF = deployment('acme/off', 'down');
const REASONS = [
  'connect',
  'timeout',
  'reset',
  'status_5xx',
  'status_429',
  'auth',
  'malformed',
  'inband_error',
] as const;
const BY_REASON = REASONS.map((reason) => deployment(`reason/${reason}`));
const DEPLOYMENTS = [D1, D2, OFF, ...BY_REASON];

const FAIL: Outcome = { ok: false, reason: 'status_5xx' };
const OK: Outcome = { ok: true, firstByteMs: 100 };

/** The breaker as every caller sees it; fails the test when the callers' views differ. */
function view(t: Test, r: BreakerRig, d: CompiledDeployment) {
  const seen = [r.board, r.other].map((b) => {
    const s = b.state(d.id);
    return { state: s.state, openUntil: s.openUntil };
  });
  t.same(seen[1], seen[0], `${d.id}: one view for every caller`);
  return seen[0] as { state: string; openUntil: number | null };
}

/** `isDown` from both callers, alternating, `times` each, in one turn. */
function ask(r: BreakerRig, d: CompiledDeployment, times = 2): { down: boolean[]; upFrom: BreakerBoard[] } {
  const boards = Array.from({ length: times * 2 }, (_, i) => (i % 2 === 0 ? r.board : r.other));
  const now = r.now();
  const down = boards.map((b) => b.isDown(d, now));
  return { down, upFrom: boards.filter((_, i) => !down[i]) };
}

/** Records `outcomes` through `board`, then delivers. */
async function feed(r: BreakerRig, board: BreakerBoard, d: CompiledDeployment, ...outcomes: Outcome[]) {
  for (const o of outcomes) board.record(d.id, o);
  await r.deliver();
}

async function trip(t: Test, r: BreakerRig, d: CompiledDeployment): Promise<void> {
  await feed(r, r.board, d, FAIL, FAIL, FAIL);
  t.equal(view(t, r, d).state, 'open', `${d.id} tripped`);
}

/** After the cool-down: the one caller that got the probe (fails the test unless exactly one did). */
function claimProbe(t: Test, r: BreakerRig, d: CompiledDeployment): BreakerBoard {
  const { upFrom } = ask(r, d);
  t.equal(upFrom.length, 1, 'exactly one caller gets the probe');
  return upFrom[0] ?? r.board;
}

export function breakerBoardContract(t: Test, make: Make): void {
  const rig = (t: Test) => make(t, CONTRACT_HEALTH, DEPLOYMENTS);

  t.test(
    'failures in a row up to the threshold open the breaker, from any caller; a success breaks the run',
    async (t) => {
      const r = await rig(t);
      t.same(view(t, r, D1), { state: 'closed', openUntil: null }, 'nothing recorded: closed');
      t.same(ask(r, D1).down, [false, false, false, false], 'closed: up for every caller');
      // Fewer outcomes than minRequests: only the run can trip it.
      await feed(r, r.board, D1, FAIL, OK, FAIL);
      await feed(r, r.other, D1, FAIL);
      t.equal(view(t, r, D1).state, 'closed', 'the success broke the run: two in a row since');
      t.same(ask(r, D1).down, [false, false, false, false]);
      await feed(r, r.other, D1, FAIL);
      t.same(view(t, r, D1), { state: 'open', openUntil: r.now() + COOLDOWN }, 'the third in a row opens it');
      t.same(ask(r, D1).down, [true, true, true, true], 'open: down for every caller');
    },
  );

  t.test("the window's failure share trips it, not before minRequests outcomes", async (t) => {
    const r = await rig(t);
    await feed(r, r.board, D1, FAIL, OK, FAIL, OK, FAIL);
    t.equal(view(t, r, D1).state, 'closed', '5 outcomes at 60% failures: below minRequests');
    await feed(r, r.other, D1, OK);
    t.same(
      view(t, r, D1),
      { state: 'open', openUntil: r.now() + COOLDOWN },
      '6 outcomes at 50%: open (the outcome that reaches minRequests is a success)',
    );
    t.same(ask(r, D1).down, [true, true, true, true]);
  });

  t.test('a slow first byte is a failure; exactly slowFirstByteMs is not; every failure reason counts', async (t) => {
    const r = await rig(t);
    const slow: Outcome = { ok: true, firstByteMs: CONTRACT_HEALTH.slowFirstByteMs + 1 };
    const edge: Outcome = { ok: true, firstByteMs: CONTRACT_HEALTH.slowFirstByteMs };
    await feed(r, r.board, D1, slow, edge, slow, slow);
    t.equal(view(t, r, D1).state, 'closed', 'the edge broke the run');
    await feed(r, r.board, D1, slow);
    t.equal(view(t, r, D1).state, 'open', 'three slow answers in a row');
    for (const d of BY_REASON)
      await feed(r, r.other, d, { ok: false, reason: d.id.slice(7) as (typeof REASONS)[number] }, FAIL, FAIL);
    for (const d of BY_REASON) t.equal(view(t, r, d).state, 'open', `${d.id} is a failure`);
  });

  t.test('deployments are apart', async (t) => {
    const r = await rig(t);
    await feed(r, r.board, D2, FAIL, FAIL);
    await trip(t, r, D1);
    t.same(view(t, r, D2), { state: 'closed', openUntil: null }, "another deployment's failures are not counted");
    t.same(ask(r, D2).down, [false, false, false, false]);
    await r.advance(COOLDOWN);
    claimProbe(t, r, D1);
    await feed(r, r.other, D2, FAIL);
    t.equal(view(t, r, D2).state, 'open', 'its own run went on');
    t.equal(view(t, r, D1).state, 'half_open', 'the first one unchanged');
  });

  t.test('after the cool-down exactly one caller gets the half-open probe, even in one turn', async (t) => {
    const r = await rig(t);
    await trip(t, r, D1);
    const until = r.now() + COOLDOWN;
    await r.advance(COOLDOWN - 1);
    t.same(view(t, r, D1), { state: 'open', openUntil: until });
    t.same(ask(r, D1).down, [true, true, true, true], 'still cooling down');
    await r.advance(1);
    t.same(view(t, r, D1), { state: 'half_open', openUntil: until });
    claimProbe(t, r, D1);
    await r.deliver();
    t.same(ask(r, D1).down, [true, true, true, true], 'the claim holds once it is known everywhere');
    await r.advance(COOLDOWN);
    t.same(ask(r, D1).down, [true, true, true, true], 'and while the probe is in flight');
  });

  t.test(
    "the probe's success closes the breaker for every caller; a later trip starts at the base cool-down",
    async (t) => {
      const r = await rig(t);
      await trip(t, r, D1);
      await r.advance(COOLDOWN);
      // A failed probe first: the cool-down doubles, and the success must bring it back.
      await feed(r, claimProbe(t, r, D1), D1, FAIL);
      await r.advance(2 * COOLDOWN);
      const prober = claimProbe(t, r, D1);
      await feed(r, prober, D1, OK);
      t.same(view(t, r, D1), { state: 'closed', openUntil: null });
      t.same(ask(r, D1).down, [false, false, false, false], 'closed: up for every caller');
      await feed(r, r.other, D1, FAIL, FAIL);
      t.equal(view(t, r, D1).state, 'closed', 'the counters started again');
      await feed(r, r.other, D1, FAIL);
      t.same(view(t, r, D1), { state: 'open', openUntil: r.now() + COOLDOWN });
    },
  );

  t.test("the probe's failure re-opens it, the cool-down doubled up to the cap", async (t) => {
    const r = await rig(t);
    await trip(t, r, D1);
    let cooldown = COOLDOWN;
    const seen: number[] = [];
    await r.advance(cooldown);
    for (let i = 0; i < 4; i++) {
      const prober = claimProbe(t, r, D1);
      await feed(r, prober, D1, FAIL);
      const s = view(t, r, D1);
      t.equal(s.state, 'open', `probe ${i + 1} failed: open again`);
      cooldown = (s.openUntil as number) - r.now();
      seen.push(cooldown);
      t.same(ask(r, D1).down, [true, true, true, true]);
      await r.advance(cooldown - 1);
      t.same(ask(r, D1).down, [true, true, true, true], 'for the whole new cool-down');
      await r.advance(1);
    }
    t.same(seen, [2_000, 4_000, 4_000, 4_000]);
  });

  t.test('an outcome recorded by another caller in half-open settles the probe too', async (t) => {
    const r = await rig(t);
    await trip(t, r, D1);
    await r.advance(COOLDOWN);
    const prober = claimProbe(t, r, D1);
    const bystander = prober === r.board ? r.other : r.board;
    await feed(r, bystander, D1, OK);
    t.same(view(t, r, D1), { state: 'closed', openUntil: null });
  });

  t.test(
    'in a row is in the order the attempts ended: a success told late does not undo a later failure',
    async (t) => {
      const r = await rig(t);
      // A success on a closed breaker is news nobody waits for: another thread's failure that ended
      // after it may reach the board's owner first.
      r.board.record(D1.id, OK);
      r.pass(1);
      r.other.record(D1.id, FAIL);
      await r.deliver();
      r.pass(1);
      await feed(r, r.other, D1, FAIL, FAIL);
      t.equal(view(t, r, D1).state, 'open', 'three failures ended in a row after the success');
    },
  );

  t.test('outcomes recorded while open (requests already in flight) change nothing', async (t) => {
    const r = await rig(t);
    await trip(t, r, D1);
    const before = view(t, r, D1);
    await feed(r, r.board, D1, OK, OK);
    await feed(r, r.other, D1, OK, FAIL);
    t.same(view(t, r, D1), before);
    await r.advance(COOLDOWN);
    claimProbe(t, r, D1);
  });

  t.test(
    'a probe given back goes to the next caller at once; giving back what was not claimed is harmless',
    async (t) => {
      const r = await rig(t);
      r.board.releaseProbe(D1.id);
      r.other.releaseProbe('never-recorded');
      await r.deliver();
      t.same(ask(r, D1).down, [false, false, false, false], 'closed stays closed');
      await trip(t, r, D1);
      await r.advance(COOLDOWN);
      const prober = claimProbe(t, r, D1);
      prober.releaseProbe(D1.id);
      await r.deliver();
      claimProbe(t, r, D1);
      await r.deliver();
      t.same(ask(r, D1).down, [true, true, true, true], 'claimed again: down for everyone else');
      t.equal(view(t, r, D1).state, 'half_open');
    },
  );

  t.test('a claimed probe whose outcome never comes lapses after its lease', async (t) => {
    const r = await rig(t);
    await trip(t, r, D1);
    await r.advance(COOLDOWN);
    claimProbe(t, r, D1);
    await r.advance(DEFAULT_PROBE_LEASE_MS - 1);
    t.same(ask(r, D1).down, [true, true, true, true], 'the claim still holds');
    await r.advance(1);
    claimProbe(t, r, D1);
  });

  t.test('the passive view never claims the probe; half-open counts as down there', async (t) => {
    const r = await rig(t);
    const passive = () => [r.board, r.other].map((b) => b.passive.isDown(D1, r.now()));
    t.same(passive(), [false, false], 'closed');
    await trip(t, r, D1);
    t.same(passive(), [true, true], 'open');
    await r.advance(COOLDOWN);
    for (let i = 0; i < 3; i++) t.same(passive(), [true, true], 'half-open');
    claimProbe(t, r, D1);
  });

  t.test('a declared-down deployment is always down and never takes a probe', async (t) => {
    const r = await rig(t);
    t.same(ask(r, OFF).down, [true, true, true, true], 'with no outcome at all');
    await feed(r, r.board, OFF, OK);
    t.same(ask(r, OFF).down, [true, true, true, true], 'after a success');
    await feed(r, r.board, OFF, FAIL, FAIL, FAIL);
    await r.advance(COOLDOWN);
    t.same(ask(r, OFF, 3).down, [true, true, true, true, true, true], 'no probe after the cool-down');
    t.same([r.board.passive.isDown(OFF, r.now()), r.other.passive.isDown(OFF, r.now())], [true, true]);
  });

  t.test(
    'a reload keeps the state of every deployment that remains; later outcomes meet the new thresholds',
    async (t) => {
      const r = await rig(t);
      await trip(t, r, D1);
      const open = view(t, r, D1);
      await feed(r, r.other, D2, FAIL, FAIL);
      await r.reload({ ...CONTRACT_HEALTH, consecutiveFailures: 5 }, [D1, D2]);
      t.same(view(t, r, D1), open, 'open stays open, until the same moment');
      t.same(ask(r, D1).down, [true, true, true, true]);
      await feed(r, r.board, D2, FAIL, FAIL);
      t.equal(view(t, r, D2).state, 'closed', 'four in a row: below the new threshold of five');
      await feed(r, r.board, D2, FAIL);
      t.equal(view(t, r, D2).state, 'open', 'the fifth, counted from before the reload');
      await r.advance(COOLDOWN);
      claimProbe(t, r, D1);
    },
  );
}
