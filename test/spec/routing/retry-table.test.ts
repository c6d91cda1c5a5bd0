// The retry table of src/proxy/failover.ts through real servers: which provider answers are retried,
// fallback models after every deployment of the current one failed, the five-attempt cap, and what
// the client gets when everything failed (the last attempt decides).
import t, { type Test } from 'tap';
import { startStack, type Stack } from '../../helpers/stack.ts';
import { logRow, USER } from '../../helpers/inference.ts';

async function stack(t: Test): Promise<{ s: Stack; key: string }> {
  const s = await startStack(t, { limits: { firstByteTimeoutMs: 300, streamIdleTimeoutMs: 300 } });
  const key = s.key('open');
  s.credit('open', '100');
  return { s, key };
}

const TWO = { order: ['alpha', 'beta'], only: ['alpha', 'beta'] };

t.test('retried statuses move to the next provider; other 4xx are the client’s and pass through', async (t) => {
  for (const status of [500, 502, 503, 504, 529, 408, 409, 429, 401, 403]) {
    const { s, key } = await stack(t);
    const res = await s.post(
      '/v1/chat/completions',
      { model: 'acme/chat-small', messages: USER, provider: TWO, sim: { by_model: { 'small-v1': { status } } } },
      { key },
    );
    t.equal(res.status, 200, `${status} → next provider`);
    t.equal(res.headers.get('x-pi-provider'), 'beta');
    await res.text();
    t.equal(s.sim.requests.length, 2);
    const row = await logRow(s, res.headers.get('x-pi-trace-id'));
    t.same(
      row?.attempts_json.map((a) => a.outcome),
      [`status_${status}`, 'ok'],
    );
  }
  for (const status of [400, 404, 413, 422]) {
    const { s, key } = await stack(t);
    const res = await s.post(
      '/v1/chat/completions',
      { model: 'acme/chat-small', messages: USER, provider: TWO, sim: { by_model: { 'small-v1': { status } } } },
      { key },
    );
    t.equal(res.status, status, `${status} passes through`);
    t.equal(res.headers.get('x-pi-provider'), 'alpha');
    await res.text();
    t.equal(s.sim.requests.length, 1, `${status} is not retried`);
  }
});

t.test('fallback models: tried after every deployment of the current model failed', async (t) => {
  const { s, key } = await stack(t);
  const failing = { status: 503 };
  const res = await s.post(
    '/v1/chat/completions',
    {
      model: 'acme/chat-small',
      models: ['acme/chat-small', 'acme/reasoner'],
      messages: USER,
      stream: true,
      provider: TWO,
      sim: { by_model: { 'small-v1': failing, 'small-beta': failing } },
    },
    { key },
  );
  t.equal(res.status, 200);
  t.equal(res.headers.get('x-pi-model'), 'acme/reasoner', 'X-Pi-Model names the model that answered');
  const text = await res.text();
  t.match(text, '"model":"acme/reasoner"');
  t.notMatch(text, '"model":"acme/chat-small"');
  t.same(
    s.sim.requests.map((r) => (r.body as { model: string }).model),
    ['small-v1', 'small-beta', res.headers.get('x-pi-provider') === 'alpha' ? 'reasoner-v1' : 'reasoner-beta'],
    'both chat-small deployments first, then the fallback model (the duplicate entry is dropped)',
  );
  const row = await logRow(s, res.headers.get('x-pi-trace-id'));
  t.equal(row?.model_requested, 'acme/chat-small');
  t.equal(row?.model_served, 'acme/reasoner');
});

t.test('at most five attempts; the last answer decides what the client gets', async (t) => {
  let { s, key } = await stack(t);
  let res = await s.post(
    '/v1/chat/completions',
    { model: 'acme/chat-small', models: ['acme/reasoner', 'acme/chat-big'], messages: USER, sim: { status: 500 } },
    { key },
  );
  t.equal(res.status, 500, 'the last provider error passes through');
  t.ok(res.headers.get('x-pi-provider'), 'with its provider headers');
  await res.text();
  t.equal(s.sim.requests.length, 5, 'five attempts, no more');

  ({ s, key } = await stack(t));
  res = await s.post(
    '/v1/chat/completions',
    {
      model: 'acme/chat-small',
      messages: USER,
      provider: TWO,
      sim: { by_model: { 'small-v1': { status: 500 }, 'small-beta': { reset: 'before_head' } } },
    },
    { key },
  );
  t.equal(res.status, 503, 'no answer at the last attempt → 503');
  t.equal(res.headers.get('x-pi-provider'), null);
  t.equal(((await res.json()) as { error: { code: string } }).error.code, 'provider_unavailable');

  ({ s, key } = await stack(t));
  res = await s.post(
    '/v1/chat/completions',
    {
      model: 'acme/chat-small',
      messages: USER,
      provider: TWO,
      sim: { by_model: { 'small-v1': { status: 401 }, 'small-beta': { status: 403 } } },
    },
    { key },
  );
  t.equal(res.status, 503);
  t.equal(res.headers.get('x-pi-provider'), 'beta', 'the last refusing provider is named');
  t.match(((await res.json()) as { error: { message: string } }).error.message, /beta/);
});

t.test('a workspace order without fallbacks is kept', async (t) => {
  const { s } = await stack(t);
  const key = s.key('pinned-order');
  s.credit('pinned-order', '10');
  const res = await s.post(
    '/v1/chat/completions',
    { model: 'acme/chat-small', messages: USER, sim: { status: 500 } },
    { key },
  );
  await res.text();
  t.same(
    s.sim.requests.map((r) => (r.body as { model: string }).model),
    ['small-beta', 'small-v1'],
    'beta then alpha, nobody else',
  );
});
