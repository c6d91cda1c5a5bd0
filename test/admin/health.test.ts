// The admin listener over real servers: /health/live and /health/ready while the gateway starts, runs
// and drains (drain simulated by flipping the lifecycle), what readiness needs (a config, a store
// that answers, a callable deployment), the reload result it reports, /metrics, and that the public
// API's answers stay the spec's (an admin path on the public port is the unserved-path 400).
import t from 'tap';
import { ManualClock } from '../../src/clock.ts';
import { startGateway } from '../../src/gateway.ts';
import { Lifecycle } from '../../src/observe/lifecycle.ts';
import { startAdminListener } from '../../src/server/admin-app.ts';
import { openStore } from '../../src/store/sqlite/store.ts';
import { startTelemetry } from '../../src/telemetry/telemetry.ts';
import { DEFAULT_NOW, fixtureConfig, startStack } from '../helpers/stack.ts';

interface Report {
  status: string;
  state: string;
  reasons: string[];
  config: { loaded: boolean; hash: string | null };
  store: { ok: boolean; error?: string };
  deployments: { total: number; callable: number };
  last_reload: { ok: boolean; hash: string | null; problems: string[]; restart_needed: string[]; at: string } | null;
}

async function get(url: string): Promise<{ status: number; body: Report; headers: Headers }> {
  const res = await fetch(url);
  return { status: res.status, body: (await res.json()) as Report, headers: res.headers };
}

t.test('during start: live at once, not ready until the gateway listens, then ready', async (t) => {
  const clock = new ManualClock(DEFAULT_NOW);
  const telemetry = await startTelemetry({ metrics: { processMetrics: false } });
  const lifecycle = new Lifecycle(clock);
  const admin = await startAdminListener({ host: '127.0.0.1', port: 0, lifecycle, metrics: telemetry.metrics });
  t.teardown(() => admin.close());
  t.match(admin.url, /^http:\/\/127\.0\.0\.1:\d+$/, 'bound to 127.0.0.1');

  const live = await get(`${admin.url}/health/live`);
  t.equal(live.status, 200, 'live while starting');
  t.same(live.body, { status: 'live', state: 'starting' });
  t.equal(live.headers.get('cache-control'), 'no-store');
  const starting = await get(`${admin.url}/health/ready`);
  t.equal(starting.status, 503, 'not ready while starting');
  t.equal(starting.body.status, 'not_ready');
  t.equal(starting.body.state, 'starting');
  t.same(starting.body.reasons, ['starting: the public listener is not up yet', 'no config is loaded yet']);
  t.same(starting.body.config, { loaded: false, hash: null });
  const metrics = await fetch(`${admin.url}/metrics`);
  t.equal(metrics.status, 200, '/metrics answers while starting');
  t.match(await metrics.text(), /pi_gateway_ready 0/, 'pi_gateway_ready is 0 while starting');

  const config = fixtureConfig('gateway');
  const store = openStore(':memory:', { clock, masterKey: Buffer.alloc(32, 7).toString('base64') });
  t.teardown(() => store.close());
  for (const r of config.resources)
    if (!store.secrets.names().has(r.credential)) store.secrets.set(r.credential, `secret-${r.credential}`);
  const gw = await startGateway({ config, store, clock, telemetry, admin, log: () => undefined });
  t.equal(gw.lifecycle, lifecycle, "the gateway's lifecycle is the admin listener's");
  const ready = await get(`${admin.url}/health/ready`);
  t.equal(ready.status, 200, 'ready once the public listener is up');
  t.equal(ready.body.status, 'ready');
  t.equal(ready.body.state, 'ready');
  t.same(ready.body.reasons, []);
  t.same(ready.body.config, { loaded: true, hash: config.sourceHash }, 'the serving config and its hash');
  t.same(ready.body.store, { ok: true });
  t.ok(
    ready.body.deployments.callable > 0 && ready.body.deployments.callable <= ready.body.deployments.total,
    `${ready.body.deployments.callable} of ${ready.body.deployments.total} deployments callable`,
  );
  t.equal(ready.body.last_reload, null, 'never reloaded');
  t.match(await (await fetch(`${admin.url}/metrics`)).text(), /pi_gateway_ready 1/, 'pi_gateway_ready is 1');

  await gw.close();
  t.equal(lifecycle.state, 'stopped', 'stopped after close');
  await t.rejects(fetch(`${admin.url}/health/live`), 'the admin listener closes with the gateway');
});

t.test('while running and draining; the public API keeps its answers', async (t) => {
  const s = await startStack(t, { admin: true, telemetry: { metrics: { processMetrics: false } } });
  const admin = s.admin as NonNullable<typeof s.admin>;
  t.not(admin.port, s.gw.port, 'a port apart from the public API');
  t.equal((await get(`${admin.url}/health/ready`)).status, 200, 'ready');

  // The admin paths are not part of the public API: there they are the spec's unserved path.
  for (const path of ['/health/live', '/health/ready', '/metrics']) {
    const res = await fetch(`${s.url}${path}`);
    const body = (await res.json()) as { error: { code: string; message: string } };
    t.equal(res.status, 400, `public ${path}: 400`);
    t.same(
      [body.error.code, body.error.message],
      ['invalid_request', 'model is required'],
      `public ${path}: the unserved-path error`,
    );
  }
  const unknown = await fetch(`${admin.url}/v1/models`);
  t.equal(unknown.status, 404, 'an unknown admin path is 404');
  const unknownBody = (await unknown.json()) as { error: { code: string; message: string }; paths: string[] };
  t.same(unknownBody.paths, ['/health/live', '/health/ready', '/metrics']);
  t.equal(unknownBody.error.code, 'not_found', 'the error shape of every JSON error, with a code');
  t.match(unknownBody.error.message, /\/health\/live/);

  s.gw.lifecycle.draining = true;
  const draining = await get(`${admin.url}/health/ready`);
  t.equal(draining.status, 503, 'not ready while draining');
  t.equal(draining.body.state, 'draining');
  t.same(draining.body.reasons, ['draining: shutting down, in-flight requests are finishing']);
  t.equal(draining.body.config.loaded, true, 'the config is still reported');
  const live = await get(`${admin.url}/health/live`);
  t.same([live.status, live.body.state], [200, 'draining'], 'live while draining');
  t.match(
    await (await fetch(`${admin.url}/metrics`)).text(),
    /pi_gateway_ready 0/,
    'pi_gateway_ready 0 while draining',
  );
  t.ok(s.gw.lifecycle.draining, 'draining reads back');

  s.gw.lifecycle.draining = false;
  t.equal((await get(`${admin.url}/health/ready`)).status, 200, 'a cancelled drain is ready again');
});

t.test('readiness needs a callable deployment and a store that answers', async (t) => {
  const none = await startStack(t, { admin: true, seal: () => false });
  const r = await get(`${(none.admin as NonNullable<typeof none.admin>).url}/health/ready`);
  t.equal(r.status, 503, 'no credential stored: not ready');
  t.equal(r.body.deployments.callable, 0);
  t.same(r.body.reasons, [
    'no deployment can be called: none is active with its upstream credential stored (pi-gateway secret set NAME)',
  ]);

  const s = await startStack(t, { admin: true });
  const url = `${(s.admin as NonNullable<typeof s.admin>).url}/health/ready`;
  t.equal((await get(url)).status, 200);
  const names = s.store.secrets.names.bind(s.store.secrets);
  s.store.secrets.names = () => {
    throw new Error('disk I/O error');
  };
  const down = await get(url);
  t.equal(down.status, 503, 'a store that does not answer: not ready');
  t.same(down.body.store, { ok: false, error: 'disk I/O error' });
  t.same(down.body.reasons, ['the store does not answer']);
  s.store.secrets.names = names;
  t.equal((await get(url)).status, 200, 'ready again once it answers');
});

t.test('reload results: readiness reports the last one; metrics count them by result', async (t) => {
  const s = await startStack(t, { admin: true, telemetry: { metrics: { processMetrics: false } } });
  const admin = s.admin as NonNullable<typeof s.admin>;
  const hash = s.config.sourceHash;
  s.gw.lifecycle.recordReload({ ok: false, hash, problems: ['models/acme.yaml:3:7 /models/0/id: must match pattern'] });
  const failed = await get(`${admin.url}/health/ready`);
  t.equal(failed.status, 200, 'a failed reload keeps the running config: still ready');
  t.same(failed.body.last_reload, {
    ok: false,
    hash,
    problems: ['models/acme.yaml:3:7 /models/0/id: must match pattern'],
    restart_needed: [],
    at: new Date(s.clock.now()).toISOString(),
  });
  s.clock.advance(1000);
  s.gw.lifecycle.recordReload({ ok: true, hash, problems: [] });
  const ok = await get(`${admin.url}/health/ready`);
  t.same(ok.body.last_reload, {
    ok: true,
    hash,
    problems: [],
    restart_needed: [],
    at: new Date(s.clock.now()).toISOString(),
  });
  const text = await (await fetch(`${admin.url}/metrics`)).text();
  t.match(text, /pi_gateway_config_reloads_total\{result="failed"\} 1\n/);
  t.match(text, /pi_gateway_config_reloads_total\{result="ok"\} 1\n/);
  t.match(text, new RegExp(`pi_gateway_config_info\\{hash="${hash}"\\} 1\\n`));
});

t.test('/metrics is 404 when metrics are off', async (t) => {
  const s = await startStack(t, { admin: true });
  const res = await fetch(`${(s.admin as NonNullable<typeof s.admin>).url}/metrics`);
  t.equal(res.status, 404);
  t.same(await res.json(), {
    error: { code: 'not_found', message: 'metrics are off on this gateway (serve --metrics on turns them on)' },
  });
});

t.test(
  'the real drain and reload reach readiness: Gateway.drain turns it 503, Gateway.recordReload shows there',
  async (t) => {
    const s = await startStack(t, { admin: true, limits: { firstByteTimeoutMs: 2000, streamIdleTimeoutMs: 2000 } });
    const admin = s.admin as NonNullable<typeof s.admin>;
    const url = `${admin.url}/health/ready`;

    // A reload as SIGHUP / `pi-gateway reload` records it (src/runtime/runtime.ts reloadGateway).
    const { restartNeeded } = s.gw.reload(s.config);
    s.gw.recordReload({
      ok: true,
      hash: s.config.sourceHash,
      problems: [],
      restartNeeded: ['limits.demo'],
      at: s.clock.now(),
    });
    const reloaded = await get(url);
    t.equal(reloaded.status, 200, 'ready after a reload');
    t.same(restartNeeded, [], 'the same config needs no restart');
    t.same(
      reloaded.body.last_reload,
      {
        ok: true,
        hash: s.config.sourceHash,
        problems: [],
        restart_needed: ['limits.demo'],
        at: new Date(s.clock.now()).toISOString(),
      },
      "the gateway's reload record, with what needs a restart",
    );

    // A stream in flight keeps the drain open long enough to ask readiness during it.
    const key = s.key('open');
    s.credit('open', '100');
    const res = await s.post(
      '/v1/chat/completions',
      {
        model: 'acme/chat-small',
        messages: [{ role: 'user', content: 'hi' }],
        stream: true,
        provider: { only: ['alpha'] },
        sim: { chunks: 10, chunkDelayMs: 40 },
      },
      { key },
    );
    const body = res.text();
    const drained = s.gw.drain(10_000);
    const during = await get(url);
    t.equal(during.status, 503, 'not ready while the gateway drains');
    t.equal(during.body.state, 'draining');
    t.same(during.body.reasons, ['draining: shutting down, in-flight requests are finishing']);
    t.match(await body, /\[DONE\]/, 'the stream in flight still completes');
    await drained;
    t.equal(s.gw.lifecycle.state, 'stopped', 'stopped once the drain closed the gateway');
  },
);
