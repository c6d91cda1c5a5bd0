// Which behaviour applies: script() with counts and queues, POST /_sim/script, the body `sim` field
// with `by_model`, the `x-sim` header, and their precedence.
import t from 'tap';
import { CHAT, MESSAGES, post, startSim } from './helpers.ts';

t.test('script(model, b, times): the next `times` requests for that model, then the next entry', async (t) => {
  const sim = await startSim(t);
  sim.script('gpt-4o-mini', { status: 500 }, 2);
  sim.script('gpt-4o-mini', { status: 503 }, 1);
  sim.script('gpt-4o-mini', { text: 'recovered' });
  const statuses: number[] = [];
  for (let i = 0; i < 5; i++) {
    const res = await post(sim.url + '/v1/chat/completions', CHAT);
    statuses.push(res.status);
    const body = (await res.json()) as { choices?: { message: { content: string } }[] };
    if (res.status === 200) t.equal(body.choices?.[0]?.message.content, 'recovered');
  }
  t.same(statuses, [500, 500, 503, 200, 200], 'an entry without times stays until cleared');
  const other = await post(sim.url + '/v1/chat/completions', { ...CHAT, model: 'gpt-4.1' });
  t.equal(other.status, 200, 'other models unaffected');
  await other.text();
  sim.clear();
  const after = (await (await post(sim.url + '/v1/chat/completions', CHAT)).json()) as {
    choices: { message: { content: string } }[];
  };
  t.match(after.choices[0]?.message.content, /simulated reply/, 'clear() drops scripts');
  t.equal(sim.requests.length, 1, 'clear() drops recordings');
  t.throws(() => sim.script('m', {}, 0), /times must be a positive integer/);
});

t.test('POST /_sim/script drives a separately running simulator', async (t) => {
  const sim = await startSim(t);
  let res = await post(sim.url + '/_sim/script', { model: 'claude-sim-1', behaviour: { status: 529 }, times: 1 });
  t.equal(res.status, 200);
  t.same(await res.json(), { ok: true });
  res = await post(sim.url + '/v1/messages', MESSAGES);
  t.equal(res.status, 529);
  await res.text();
  res = await post(sim.url + '/v1/messages', MESSAGES);
  t.equal(res.status, 200);
  await res.text();

  res = await post(sim.url + '/_sim/script', { model: 'claude-sim-1', behaviour: { status: 500 } });
  await res.text();
  res = await fetch(sim.url + '/_sim/script', { method: 'DELETE' });
  t.same(await res.json(), { ok: true });
  res = await post(sim.url + '/v1/messages', MESSAGES);
  t.equal(res.status, 200, 'DELETE /_sim/script clears scripts');
  await res.text();

  for (const [bad, message] of [
    [{ behaviour: {} }, 'model must be a non-empty string'],
    [{ model: 'x', behaviour: { statuss: 1 } }, 'behaviour: unknown key "statuss"'],
    [{ model: 'x', behaviour: {}, times: 0 }, 'times must be a positive integer'],
    ['nope', 'body must be JSON: {model, behaviour, times?}'],
  ] as const) {
    res = await post(sim.url + '/_sim/script', bad);
    t.equal(res.status, 400);
    t.equal(((await res.json()) as { error: { message: string } }).error.message, message);
  }
  res = await fetch(sim.url + '/_sim/health');
  t.same(await res.json(), { ok: true });
  res = await fetch(sim.url + '/_sim/nothing');
  t.equal(res.status, 404);
  await res.text();
  t.equal(sim.requests.length, 3, 'control calls are not recorded');
});

t.test('sim.by_model makes deployment A fail and B succeed with one body', async (t) => {
  const sim = await startSim(t);
  const simField = { ttfbMs: 0, by_model: { 'deploy-a': { status: 503 }, 'deploy-b': { text: 'from B' } } };
  let res = await post(sim.url + '/v1/chat/completions', { ...CHAT, model: 'deploy-a', sim: simField });
  t.equal(res.status, 503);
  await res.text();
  res = await post(sim.url + '/v1/chat/completions', { ...CHAT, model: 'deploy-b', sim: simField });
  t.equal(
    ((await res.json()) as { choices: { message: { content: string } }[] }).choices[0]?.message.content,
    'from B',
  );
  res = await post(sim.url + '/v1/chat/completions', {
    ...CHAT,
    model: 'deploy-c',
    sim: { text: 'own', by_model: { 'deploy-a': { status: 500 } } },
  });
  t.equal(
    ((await res.json()) as { choices: { message: { content: string } }[] }).choices[0]?.message.content,
    'own',
    'sim itself for other models',
  );
  // Azure: the deployment in the URL is the model by_model matches.
  res = await post(sim.url + '/openai/deployments/deploy-a/chat/completions?api-version=2024-10-21', {
    messages: [],
    sim: simField,
  });
  t.equal(res.status, 503);
  await res.text();
});

t.test('precedence: script, then body sim, then x-sim header', async (t) => {
  const sim = await startSim(t);
  const header = { 'x-sim': JSON.stringify({ text: 'from header' }) };
  const content = async (res: Response) =>
    ((await res.json()) as { choices: { message: { content: string } }[] }).choices[0]?.message.content;
  t.equal(await content(await post(sim.url + '/v1/chat/completions', CHAT, header)), 'from header');
  t.equal(
    await content(await post(sim.url + '/v1/chat/completions', { ...CHAT, sim: { text: 'from body' } }, header)),
    'from body',
  );
  sim.script('gpt-4o-mini', { text: 'from script' }, 1);
  t.equal(
    await content(await post(sim.url + '/v1/chat/completions', { ...CHAT, sim: { text: 'from body' } }, header)),
    'from script',
  );
});

t.test('sim as a multipart form field (image edits)', async (t) => {
  const sim = await startSim(t);
  const form = new FormData();
  form.append('model', 'gpt-image-1');
  form.append('prompt', 'blue');
  form.append('sim', JSON.stringify({ status: 400 }));
  form.append('image', new Blob([Buffer.alloc(10)], { type: 'image/png' }), 'a.png');
  const res = await fetch(sim.url + '/v1/images/edits', { method: 'POST', body: form });
  t.equal(res.status, 400);
  await res.text();
});
