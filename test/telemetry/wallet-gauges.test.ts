// The wallet gauges on the admin listener's /metrics, through a real gateway and simulator: what each
// workspace can still spend, its low_balance_usd threshold and whether it is below it (0/1), exact
// to the nano-dollar as the store has it, moving with spend and credits, and at the threshold not
// below it; a workspace without a threshold has no threshold or below-threshold series. A store that
// does not answer leaves the three out of that scrape; the rest of the exposition is served. Under
// `serve --workers N` the coordinator reports them, once.
import t from 'tap';
import { ManualClock } from '../../src/clock.ts';
import { decimalToNano } from '../../src/money.ts';
import { Lifecycle } from '../../src/observe/lifecycle.ts';
import { GatewayMetrics } from '../../src/telemetry/metrics.ts';
import { metricsJSON, workerMetrics } from '../../src/telemetry/worker-metrics.ts';
import { chat } from '../helpers/console.ts';
import { parseMetrics, sampleValue, samplesOf, scrape } from '../helpers/metrics.ts';
import { startStack } from '../helpers/stack.ts';

t.test('wallet available, threshold and below-threshold gauges follow the store', async (t) => {
  const s = await startStack(t, { admin: true, telemetry: { metrics: { processMetrics: false } } });
  const admin = (s.admin as NonNullable<typeof s.admin>).url;
  s.credit('open', '100');
  s.credit('cheap', '10');
  const v = async (name: string, workspace: string) => sampleValue(await scrape(admin), name, { workspace });

  t.equal(await v('pi_gateway_wallet_available_usd', 'open'), 100);
  t.equal(await v('pi_gateway_wallet_low_balance_threshold_usd', 'open'), 50);
  t.equal(await v('pi_gateway_wallet_below_threshold', 'open'), 0, 'open: $100 is above $50');
  t.equal(await v('pi_gateway_wallet_available_usd', 'cheap'), 10);
  t.equal(await v('pi_gateway_wallet_low_balance_threshold_usd', 'cheap'), 25);
  t.equal(await v('pi_gateway_wallet_below_threshold', 'cheap'), 1, 'cheap: $10 is below $25');
  t.equal(await v('pi_gateway_wallet_available_usd', 'strict'), 0, 'every workspace of the config');
  const m = await scrape(admin);
  t.same(
    samplesOf(m, 'pi_gateway_wallet_below_threshold')
      .map((x) => x.labels.workspace)
      .sort(),
    ['cheap', 'open'],
    'only the workspaces with a threshold have the below-threshold gauge',
  );

  const key = s.key('cheap');
  t.equal(
    (await chat(s, key, { model: 'acme/chat-small', sim: { usage: { prompt: 1000, completion: 500 } } })).status,
    200,
  );
  const available = s.store.wallets.show('cheap', s.clock.now()).available;
  t.ok(available < decimalToNano('10'), 'the request cost something');
  t.equal(
    await v('pi_gateway_wallet_available_usd', 'cheap'),
    Number(available) / 1e9,
    'available after spend: what the store has',
  );
  // Credit exactly up to the threshold: at it is not below it.
  s.store.wallets.credit('cheap', decimalToNano('25') - available, 'to the threshold');
  t.equal(await v('pi_gateway_wallet_available_usd', 'cheap'), 25);
  t.equal(await v('pi_gateway_wallet_below_threshold', 'cheap'), 0, 'at the threshold: not below');
});

t.test('a store that does not answer leaves the wallet gauges out; the scrape still answers', async (t) => {
  const metrics = new GatewayMetrics({ processMetrics: false });
  let fail = true;
  metrics.bind({
    breakers: () => [],
    configHash: () => 'hash',
    lifecycle: new Lifecycle(new ManualClock(0)),
    wallets: async () => {
      if (fail) throw new Error('store down');
      return [{ workspace: 'w', availableNano: 1_500_000_001n, thresholdNano: 2_000_000_000n }];
    },
  });
  const down = parseMetrics(await metrics.render());
  t.same(samplesOf(down, 'pi_gateway_wallet_available_usd'), [], 'no wallet series');
  t.equal(sampleValue(down, 'pi_gateway_config_info', { hash: 'hash' }), 1, 'the rest is there');
  fail = false;
  const up = parseMetrics(await metrics.render());
  t.equal(sampleValue(up, 'pi_gateway_wallet_available_usd', { workspace: 'w' }), 1.500000001);
  t.equal(sampleValue(up, 'pi_gateway_wallet_low_balance_threshold_usd', { workspace: 'w' }), 2);
  t.equal(sampleValue(up, 'pi_gateway_wallet_below_threshold', { workspace: 'w' }), 1);
});

t.test('serve --workers N: the coordinator reports the wallet gauges once', async (t) => {
  const coordinator = new GatewayMetrics({ processMetrics: false });
  coordinator.bind({
    breakers: () => [],
    configHash: () => 'hash',
    lifecycle: new Lifecycle(new ManualClock(0)),
    wallets: async () => [{ workspace: 'w', availableNano: 3_000_000_000n, thresholdNano: null }],
  });
  // A serving thread has no wallet binding: its JSON has the gauges with no series.
  const worker = new GatewayMetrics({ processMetrics: false });
  const merged = workerMetrics(
    coordinator,
    () => [{ worker: 1, ready: true, restarts: 0 }],
    async () => [{ worker: 1, json: (await metricsJSON(worker)) as unknown[] }],
  );
  const m = parseMetrics(await merged.render());
  t.same(
    samplesOf(m, 'pi_gateway_wallet_available_usd').map((x) => [x.labels.workspace, x.value]),
    [['w', 3]],
    'one series, the coordinator’s',
  );
  t.same(samplesOf(m, 'pi_gateway_wallet_below_threshold'), [], 'no threshold, no below-threshold series');
});
