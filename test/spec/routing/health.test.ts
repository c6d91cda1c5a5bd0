// The per-deployment circuit breaker through real traffic and a manual clock: real attempt outcomes
// trip it (3 failures in a row, or half of a 10-outcome window), requests avoid the deployment
// while it is open (it stays a last resort: health is not part of the candidate set), one probe is
// let through after the cool-down, a failed probe doubles the cool-down up to the cap, a good one
// closes it; the catalog's "not down beats down" reads the same state.
import t, { type Test } from 'tap';
import { ManualClock } from '../../../src/clock.ts';
import { ConfigIndex } from '../../../src/config/index.ts';
import { HealthTracker } from '../../../src/routing/health.ts';
import { planRoute } from '../../../src/routing/plan.ts';
import { mergePreferences } from '../../../src/routing/preferences.ts';
import { DEFAULT_NOW, fixtureConfig } from '../../helpers/stack.ts';
import { parseSse } from '../../helpers/inference.ts';
import { routingStack, upstreams, type RoutingStack } from './routing-helpers.ts';

const COOLDOWN = 10_000;
const MAX_COOLDOWN = 40_000;
const AWS_GCP = { provider: { only: ['aws', 'gcp'] } };

async function ask(
  r: RoutingStack,
  body: Record<string, unknown> = AWS_GCP,
): Promise<{ status: number; provider: string | null; tried: string[] }> {
  const from = r.s.sim.requests.length;
  const res = await r.chat(body);
  await res.text();
  return { status: res.status, provider: res.headers.get('x-pi-provider'), tried: upstreams(r.s).slice(from) };
}

function state(r: RoutingStack, deployment: string): string {
  return r.s.gw.ctx.health.state(deployment).state;
}

/** Three failed attempts in a row on aws/multi (each request is then served by gcp). */
async function trip(t: Test, r: RoutingStack): Promise<void> {
  r.s.sim.script('multi-aws', { status: 500 }, 3);
  for (let i = 1; i <= 3; i++) {
    const a = await ask(r);
    t.same(a.tried, ['multi-aws', 'multi-gcp'], `failure ${i}: gcp took over`);
    t.equal(state(r, 'aws/multi'), i < 3 ? 'closed' : 'open');
  }
}

t.test('trip, avoid, probe, back off, recover', async (t) => {
  const r = await routingStack(t);
  await trip(t, r);
  const opened = r.s.gw.ctx.health.state('aws/multi');
  t.equal(opened.openUntil, r.s.clock.now() + COOLDOWN);
  t.equal(opened.consecutiveFailures, 3);

  // Open: gcp goes first; aws is not asked.
  t.same((await ask(r)).tried, ['multi-gcp']);
  t.same((await ask(r, {})).tried, ['multi-gcp'], 'without preferences too: the heaviest healthy one');
  // Still a last resort when everything healthy fails; outcomes while open change nothing.
  let a = await ask(r, { ...AWS_GCP, sim: { by_model: { 'multi-gcp': { status: 503 } } } });
  t.same(a.tried, ['multi-gcp', 'multi-aws']);
  t.equal(a.provider, 'aws');
  t.equal(state(r, 'aws/multi'), 'open', 'a success recorded while open does not close it');

  r.s.clock.advance(COOLDOWN - 1);
  t.same((await ask(r)).tried, ['multi-gcp'], '1 ms before the cool-down ends');

  // Half-open: one probe. It fails: open again for twice the cool-down.
  r.s.clock.advance(1);
  t.equal(state(r, 'aws/multi'), 'half_open');
  r.s.sim.script('multi-aws', { status: 502 }, 1);
  a = await ask(r);
  t.same(a.tried, ['multi-aws', 'multi-gcp'], 'the probe went to aws');
  t.equal(state(r, 'aws/multi'), 'open');
  t.equal(r.s.gw.ctx.health.state('aws/multi').openUntil, r.s.clock.now() + 2 * COOLDOWN);

  r.s.clock.advance(COOLDOWN);
  t.same((await ask(r)).tried, ['multi-gcp'], 'the doubled cool-down is not over');
  r.s.clock.advance(COOLDOWN);
  // Failed probes keep doubling, up to max_cooldown_ms.
  r.s.sim.script('multi-aws', { reset: 'before_head' }, 1);
  t.same((await ask(r)).tried, ['multi-aws', 'multi-gcp']);
  t.equal(r.s.gw.ctx.health.state('aws/multi').openUntil, r.s.clock.now() + 4 * COOLDOWN);
  r.s.clock.advance(4 * COOLDOWN);
  r.s.sim.script('multi-aws', { status: 429 }, 1);
  t.same((await ask(r)).tried, ['multi-aws', 'multi-gcp']);
  t.equal(r.s.gw.ctx.health.state('aws/multi').openUntil, r.s.clock.now() + MAX_COOLDOWN, 'capped');

  // A good probe closes it: aws is first again, its counters reset.
  r.s.clock.advance(MAX_COOLDOWN);
  a = await ask(r);
  t.same(a.tried, ['multi-aws'], 'the probe answered');
  t.equal(a.provider, 'aws');
  t.same(r.s.gw.ctx.health.state('aws/multi'), {
    state: 'closed',
    consecutiveFailures: 0,
    errorRate: 0,
    openUntil: null,
  });
  t.same((await ask(r)).tried, ['multi-aws']);
  t.same((await ask(r, {})).tried, ['multi-aws']);

  // After recovery the cool-down starts from the configured value again.
  await trip(t, r);
  t.equal(r.s.gw.ctx.health.state('aws/multi').openUntil, r.s.clock.now() + COOLDOWN);
});

t.test('one probe at a time: while the probe is in flight, other requests see the deployment down', async (t) => {
  const r = await routingStack(t);
  await trip(t, r);
  r.s.clock.advance(COOLDOWN);
  r.s.sim.script('multi-aws', { ttfbMs: 300 }, 1);
  const from = r.s.sim.requests.length;
  const probe = r.chat(AWS_GCP);
  // Wait until the probe reached the simulator (an event, not a time rule).
  for (let i = 0; i < 400 && r.s.sim.requests.length === from; i++)
    await new Promise((resolve) => setTimeout(resolve, 5));
  t.same(upstreams(r.s).slice(from), ['multi-aws'], 'the probe is in flight');
  const other = await ask(r);
  t.same(other.tried, ['multi-gcp'], 'a concurrent request does not probe too');
  const res = await probe;
  t.equal(res.status, 200);
  t.equal(res.headers.get('x-pi-provider'), 'aws');
  await res.text();
  t.equal(state(r, 'aws/multi'), 'closed');
});

t.test('a request refused after routing (402) gives its claimed probe back at once', async (t) => {
  const r = await routingStack(t);
  await trip(t, r);
  r.s.clock.advance(COOLDOWN);
  // Default routing on an empty wallet: routing claims the half-open probe, then the hold fails.
  const broke = r.s.key('lean');
  const from = r.s.sim.requests.length;
  const poor = await r.chat(AWS_GCP, { key: broke });
  await poor.text();
  t.equal(poor.status, 402, 'refused for its balance');
  t.same(upstreams(r.s).slice(from), [], 'before any upstream');
  // Without the give-back the probe stays claimed for its lease (120 s) and aws looks down.
  t.same((await ask(r)).tried, ['multi-aws'], 'the next request probes');
  t.equal(state(r, 'aws/multi'), 'closed');
});

t.test('error-rate trip: half of a 10-outcome window fails, never 3 in a row', async (t) => {
  const r = await routingStack(t);
  for (let i = 1; i <= 10; i++) {
    const fail = i % 2 === 1;
    if (fail) r.s.sim.script('multi-aws', { status: 500 }, 1);
    const a = await ask(r);
    t.same(a.tried, fail ? ['multi-aws', 'multi-gcp'] : ['multi-aws'], `outcome ${i}: ${fail ? 'failure' : 'success'}`);
    t.equal(state(r, 'aws/multi'), i < 10 ? 'closed' : 'open', `after ${i} outcomes`);
  }
  t.equal(r.s.gw.ctx.health.state('aws/multi').errorRate, 0.5);
  t.same((await ask(r)).tried, ['multi-gcp']);
});

t.test('which outcomes count: provider failures and broken streams do, client-fault answers do not', async (t) => {
  const counts: [string, Record<string, unknown>, boolean][] = [
    ['401 (credential refused)', { status: 401 }, true],
    ['429', { status: 429 }, true],
    ['in-band error', { inbandError: true }, true],
    ['a stream cut after content', { resetAfterChunks: 1 }, true],
    ['first byte too late', { ttfbMs: 1000 }, true],
    ['400', { status: 400 }, false],
    ['404', { status: 404 }, false],
    ['422', { status: 422 }, false],
  ];
  for (const [what, behaviour, trips] of counts) {
    const r = await routingStack(t, { limits: { firstByteTimeoutMs: 300, streamIdleTimeoutMs: 300 } });
    r.s.sim.script('multi-aws', behaviour, 3);
    for (let i = 0; i < 3; i++) {
      const res = await r.chat({ ...AWS_GCP, stream: true });
      await res.text();
    }
    t.equal(state(r, 'aws/multi'), trips ? 'open' : 'closed', `${what} ×3 → ${trips ? 'open' : 'closed'}`);
    await r.s.close();
  }
});

t.test(
  'health is not part of the candidate set: an open deployment still serves when it is the only one',
  async (t) => {
    const r = await routingStack(t);
    await trip(t, r);
    const a = await ask(r, { provider: { only: ['aws'] } });
    t.equal(a.status, 200);
    t.same(a.tried, ['multi-aws']);
    // The declared-down deployment likewise: after kappa/multi, never excluded.
    const b = await ask(r, { provider: { only: ['kappa'] }, sim: { by_model: { 'multi-kappa': { status: 500 } } } });
    t.same(b.tried, ['multi-kappa', 'multi-kappa-down']);
    t.equal(b.status, 200);
    // The catalog keeps listing aws.
    const view = (await (await fetch(`${r.s.url}/v1/models/acme/multi/endpoints`)).json()) as {
      data: { endpoints: { provider: string }[] };
    };
    t.ok(view.data.endpoints.some((e) => e.provider === 'aws'));
  },
);

interface Entry {
  provider: string;
  quantization: string | null;
}

async function entries(r: RoutingStack): Promise<Entry[]> {
  const body = (await (await fetch(`${r.s.url}/v1/models/acme/multi/endpoints`)).json()) as {
    data: { endpoints: Entry[] };
  };
  return body.data.endpoints;
}

t.test('the endpoints view\'s "not down beats down" reads the breaker\'s state', async (t) => {
  const r = await routingStack(t);
  const mu = async () => (await entries(r)).find((e) => e.provider === 'mu')?.quantization;
  // Entry order by the best deployment's weight: kappa's is kappa/multi (40), not the declared-down 1000.
  t.same(
    (await entries(r)).map((e) => e.provider),
    ['aws', 'gcp', 'gemini', 'kappa', 'lambda', 'mu', 'nu'],
  );
  t.equal(await mu(), 'fp4', 'mu/multi (fp4) beats mu/multi-a (fp8) on id at equal weight');

  const onlyMuMulti = { provider: { only: ['mu'], quantizations: ['fp4'] }, sim: { status: 500 } };
  for (let i = 0; i < 3; i++) await ask(r, onlyMuMulti);
  t.equal(state(r, 'mu/multi'), 'open');
  t.equal(await mu(), 'fp8', 'mu/multi is down: mu/multi-a is the entry');

  r.s.clock.advance(COOLDOWN);
  t.equal(await mu(), 'fp8', 'half-open still counts as down for the catalog');
  t.equal(await mu(), 'fp8', 'and the catalog does not consume the probe');
  const a = await ask(r, { provider: { only: ['mu'], quantizations: ['fp4'] } });
  t.same(a.tried, ['multi-mu'], 'the router still gets the probe');
  t.equal(state(r, 'mu/multi'), 'closed');
  t.equal(await mu(), 'fp4', 'recovered: back to mu/multi');
});

t.test('within a tier the weighted order resumes once a deployment recovers (stream traffic)', async (t) => {
  const r = await routingStack(t);
  r.s.sim.script('multi-aws', { inbandError: true }, 3);
  for (let i = 0; i < 3; i++) {
    const res = await r.chat({ stream: true });
    t.equal(res.headers.get('x-pi-provider'), 'gcp');
    t.equal(parseSse(await res.text()).at(-1)?.data, '[DONE]');
  }
  t.equal(state(r, 'aws/multi'), 'open');
  t.same((await ask(r, {})).tried, ['multi-gcp']);
  r.s.clock.advance(COOLDOWN);
  t.same((await ask(r, {})).tried, ['multi-aws'], 'probe');
  t.same((await ask(r, {})).tried, ['multi-aws'], 'closed');
});

t.test('a probe claimed by a request that never reached the deployment is given back', async (t) => {
  const r = await routingStack(t);
  await trip(t, r);
  r.s.clock.advance(COOLDOWN);
  // gcp is ordered first: this request claims aws's probe while ordering, but gcp answers.
  t.same((await ask(r, { provider: { only: ['aws', 'gcp'], order: ['gcp'] } })).tried, ['multi-gcp']);
  t.equal(state(r, 'aws/multi'), 'half_open');
  // The next request that would reach aws first should probe it.
  t.same((await ask(r)).tried, ['multi-aws'], 'aws gets its probe');
});

t.test(
  'planRoute lists the probes it claimed, and only those, so a caller can give back the unused ones',
  async (t) => {
    const config = fixtureConfig('routing-http');
    const index = new ConfigIndex(config);
    const clock = new ManualClock(DEFAULT_NOW);
    const health = new HealthTracker(config.settings.health, clock);
    const model = index.modelById.get('acme/multi');
    const workspace = index.workspaceById.get('open');
    if (!model || !workspace) throw new Error('fixture model or workspace missing');
    const plan = () =>
      planRoute({
        index,
        endpoint: 'chat_completions',
        models: [model],
        policy: mergePreferences(workspace.routing, { only: ['aws', 'gcp'] }),
        creds: { has: () => true },
        health,
        nowMs: clock.now(),
        random: () => 0.5,
      });
    t.same(plan().probes, [], 'closed: nothing to probe');
    for (let i = 0; i < 3; i++) health.record('aws/multi', { ok: false, reason: 'status_5xx' });
    t.same(plan().probes, [], 'open: no probe yet');
    clock.advance(COOLDOWN);
    const first = plan();
    t.same(first.probes, ['aws/multi'], 'half-open: this plan claimed the probe');
    t.equal(first.plans[0]?.deployments[0]?.id, 'aws/multi', 'and routes it first');
    const second = plan();
    t.same(second.probes, [], 'a concurrent plan does not claim it (and must not give it back)');
    t.equal(second.plans[0]?.deployments[0]?.id, 'gcp/multi');
    health.releaseProbe('aws/multi');
    t.same(plan().probes, ['aws/multi'], 'given back: the next plan claims it');
    // The declared-down deployment never takes a probe.
    const kappa = planRoute({
      index,
      endpoint: 'chat_completions',
      models: [model],
      policy: mergePreferences(workspace.routing, { only: ['kappa'] }),
      creds: { has: () => true },
      health,
      nowMs: clock.now(),
      random: () => 0.5,
    });
    t.same(kappa.probes, []);
  },
);
