// Recording: method, path, query, headers, parsed body and raw bytes (JSON and multipart), the cap,
// `record: false`, and GET/DELETE /_sim/requests.
import t from 'tap';
import { CHAT, post, startSim } from './helpers.ts';

t.test('records what was received', async (t) => {
  let now = Date.UTC(2026, 0, 15, 12, 0, 0);
  const sim = await startSim(t, { clock: { now: () => now } });
  const raw = JSON.stringify({ ...CHAT, temperature: 0.2, custom_field: { kept: true } });
  const res = await post(sim.url + '/proxy/v1/chat/completions?trace=1', raw, {
    'x-title': 'My App',
    'x-pi-session-id': 's-1',
  });
  const body = (await res.json()) as { created: number };
  t.equal(body.created, Math.floor(now / 1000), 'created from the injected clock');
  now += 1000;
  const r = sim.requests[0];
  t.equal(r?.method, 'POST');
  t.equal(r?.path, '/proxy/v1/chat/completions', 'any prefix accepted');
  t.equal(r?.query, 'trace=1');
  t.equal(r?.headers['x-title'], 'My App');
  t.equal(r?.headers['x-pi-session-id'], 's-1');
  t.equal(r?.headers['content-type'], 'application/json');
  t.same(r?.body, JSON.parse(raw));
  t.equal(r?.rawBody.toString('utf8'), raw, 'raw bytes as sent');
  t.equal(r?.at, Date.UTC(2026, 0, 15, 12, 0, 0));
});

t.test('multipart image edits: fields and file summaries', async (t) => {
  const sim = await startSim(t);
  const form = new FormData();
  form.append('model', 'gpt-image-1');
  form.append('prompt', 'add a hat');
  form.append('n', '3');
  form.append('image[]', new Blob([Buffer.alloc(100, 1)], { type: 'image/png' }), 'one.png');
  form.append('image[]', new Blob([Buffer.alloc(250, 2)], { type: 'image/webp' }), 'two.webp');
  const res = await fetch(sim.url + '/v1/images/edits', { method: 'POST', body: form });
  const reply = (await res.json()) as { data: unknown[]; usage: { input_tokens_details: { image_tokens: number } } };
  t.equal(reply.data.length, 3, 'n from the form');
  t.equal(reply.usage.input_tokens_details.image_tokens, 2 * 194);
  t.same(sim.requests[0]?.body, {
    fields: { model: 'gpt-image-1', prompt: 'add a hat', n: '3' },
    files: [
      { name: 'image[]', filename: 'one.png', size: 100, contentType: 'image/png' },
      { name: 'image[]', filename: 'two.webp', size: 250, contentType: 'image/webp' },
    ],
  });
});

t.test('cap, record:false and the HTTP view', async (t) => {
  const sim = await startSim(t, { maxRecorded: 3 });
  for (let i = 0; i < 5; i++) await (await post(sim.url + '/v1/chat/completions', { ...CHAT, seed: i })).text();
  t.same(
    sim.requests.map((r) => (r.body as { seed: number }).seed),
    [2, 3, 4],
    'keeps the last N',
  );
  const list = (await (await fetch(sim.url + '/_sim/requests')).json()) as Record<string, unknown>[];
  t.equal(list.length, 3);
  t.notOk('rawBody' in (list[0] ?? {}), 'no rawBody over HTTP');
  t.same(Object.keys(list[0] ?? {}), ['method', 'path', 'query', 'headers', 'body', 'at']);
  const del = await fetch(sim.url + '/_sim/requests', { method: 'DELETE' });
  t.same(await del.json(), { cleared: 3 });
  t.equal(sim.requests.length, 0, 'same array, cleared in place');

  const quiet = await startSim(t, { record: false });
  await (await post(quiet.url + '/v1/chat/completions', CHAT)).text();
  t.equal(quiet.requests.length, 0);
});
