// `pi-gateway serve` as a real process keeps serving whatever a provider sends and whatever bug is
// hit: an answer ended by closing the connection while the client is slow (which once made undici
// throw from a socket listener and the process exit) does not end it, and an exception nothing
// caught or a rejection nothing handled is logged once each as `uncaught_error` — its class, code
// and where it was thrown, never the text it quoted — counted, and the process goes on answering.
import t from 'tap';
import { pathToFileURL } from 'node:url';
import { rawHead, rawJson, rawUpstream } from '../../helpers/raw-upstream.ts';
import { parseSse, rawPost, USER, waitFor } from '../../helpers/inference.ts';
import { GATEWAY_CONFIG } from '../../helpers/admission.ts';
import { parseMetrics, sampleValue } from '../../helpers/metrics.ts';
import { prepareDb, type ServeProcess, startServe } from '../../helpers/serve-process.ts';

const CHAT = { model: 'acme/chat-small', messages: USER, provider: { only: ['alpha'] } };
const OK = rawJson(
  '200 OK',
  JSON.stringify({
    id: 'x',
    object: 'chat.completion',
    model: 'small-v1',
    choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }],
    usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
  }),
);

async function answersOk(p: ServeProcess, key: string): Promise<number> {
  const res = await fetch(`${p.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify(CHAT),
  });
  await res.text();
  return res.status;
}

t.test('a provider closing a close-delimited stream while the client is slow does not end the process', async (t) => {
  let first = true;
  const up = await rawUpstream(t, (ex) => {
    if (!first) return ex.end(OK);
    first = false;
    const content = 'a'.repeat(8 * 1024 * 1024);
    ex.write(rawHead('200 OK', [['Content-Type', 'text/event-stream']]));
    ex.end(
      `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', model: 'small-v1', choices: [{ index: 0, delta: { content } }] })}\n\ndata: [DONE]\n\n`,
    );
  });
  const db = prepareDb(t);
  const p = await startServe(t, { config: GATEWAY_CONFIG, db, upstream: up.url });
  const raw = await rawPost(`${p.url}/v1/chat/completions`, JSON.stringify({ ...CHAT, stream: true }), {
    authorization: `Bearer ${db.key}`,
    'content-type': 'application/json',
  });
  t.equal(raw.status, 200);
  raw.res.pause();
  // The gateway's write to the client backs up, it pauses the upstream read, the provider closes.
  await new Promise((r) => setTimeout(r, 1500));
  const chunks: Buffer[] = [];
  raw.res.on('data', (c: Buffer) => chunks.push(c));
  raw.res.resume();
  await new Promise((r) => raw.res.on('close', r));
  const events = parseSse(Buffer.concat(chunks).toString('utf8'));
  t.equal(events.at(-1)?.data, '[DONE]', 'the whole answer, with its normal end');
  t.equal(await answersOk(p, db.key), 200, 'still serving');
  t.notOk(
    p.events.some((e) => e.event === 'uncaught_error'),
    'nothing reached the last line of defence',
  );
  p.child.kill('SIGTERM');
  t.equal((await p.exited).code, 0, 'a normal stop');
});

t.test('an uncaught exception or unhandled rejection is logged, counted, and the process keeps serving', async (t) => {
  const up = await rawUpstream(t, (ex) => ex.end(OK));
  const db = prepareDb(t);
  const plant = pathToFileURL(new URL('../../fixtures/processes/plant-failures.mjs', import.meta.url).pathname).href;
  const p = await startServe(t, {
    config: GATEWAY_CONFIG,
    db,
    upstream: up.url,
    args: ['--admin-port', '0'],
    env: { NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --import ${plant}`.trim() },
  });
  const admin = String(p.events.find((e) => e.event === 'listening')?.['admin']);
  const uncaught = async () =>
    sampleValue(parseMetrics(await (await fetch(`${admin}/metrics`)).text()), 'pi_gateway_uncaught_errors_total');
  t.equal(await uncaught(), 0, 'pi_gateway_uncaught_errors_total is there from the start, at zero');
  t.equal(await answersOk(p, db.key), 200);
  p.child.kill('SIGUSR2');
  t.ok(await waitFor(() => p.events.filter((e) => e.event === 'uncaught_error').length === 2, 10_000), 'two lines');
  const lines = p.events.filter((e) => e.event === 'uncaught_error');
  const exception = lines.find((e) => e['kind'] === 'uncaught_exception');
  const rejection = lines.find((e) => e['kind'] === 'unhandled_rejection');
  t.match(exception, { error: 'Error', code: 'EPLANTED', message: 'planted failure near …' });
  t.match(rejection, { error: 'Error', message: 'planted rejection of …' });
  t.same(lines.map((e) => e['count']).sort(), [1, 2], 'counted');
  t.equal(await uncaught(), 2, 'and counted in the metrics');
  t.match(lines[0], { level: 'error' }, 'at level error');
  const stack = exception?.['stack'];
  t.ok(
    Array.isArray(stack) && (stack as string[]).some((f) => f.includes('plant-failures.mjs')),
    'where it was thrown',
  );
  t.notMatch(p.stderr(), 'sk-pi-planted-secret', 'the quoted text is not logged');
  t.notMatch(p.stderr(), 'a request body');
  t.equal(await answersOk(p, db.key), 200, 'still serving');
  p.child.kill('SIGTERM');
  t.equal((await p.exited).code, 0);
});
