// Backpressure on the relay: a client that stops reading makes the gateway pause its upstream read
// (and not time the silence as a provider stall), nothing is lost when it reads again, and a
// provider that really stalls after such a pause is still caught by the idle limit.
import t from 'tap';
import { startStack } from '../../helpers/stack.ts';
import { handUpstream, parseSse, rawPost, spyUpstream, USER, waitFor } from '../../helpers/inference.ts';
import type { IncomingMessage } from 'node:http';

function readAll(res: IncomingMessage, timeoutMs: number): Promise<{ text: string; timedOut: boolean }> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => {
      res.destroy();
      resolve({ text: Buffer.concat(chunks).toString('utf8'), timedOut: true });
    }, timeoutMs);
    res.on('data', (c: Buffer) => chunks.push(c));
    res.on('end', () => {
      clearTimeout(timer);
      resolve({ text: Buffer.concat(chunks).toString('utf8'), timedOut: false });
    });
    res.on('error', () => {
      clearTimeout(timer);
      resolve({ text: Buffer.concat(chunks).toString('utf8'), timedOut: false });
    });
    res.resume();
  });
}

const WORD = 'a'.repeat(2000);

t.test('a slow client pauses the upstream read; nothing is lost; the pause is not a stall', async (t) => {
  const s = await startStack(t, { limits: { firstByteTimeoutMs: 2000, streamIdleTimeoutMs: 300 } });
  const key = s.key('open');
  s.credit('open', '100');
  const spy = spyUpstream(s);
  const n = 2500;
  const text = Array.from({ length: n }, (_, i) => `${i}${WORD}`).join(' ');
  for (const [path, body, upstreamModel] of [
    [
      '/v1/chat/completions',
      { model: 'acme/chat-small', messages: USER, stream: true, provider: { only: ['alpha'] } },
      'small-v1',
    ],
    [
      '/v1/messages',
      {
        model: 'beta-labs/sonnet-ish',
        max_tokens: 100_000,
        messages: USER,
        stream: true,
        provider: { only: ['delta'] },
      },
      'sonnet-ish-20250101',
    ],
    [
      '/v1/responses',
      { model: 'acme/chat-small', input: 'x', stream: true, provider: { only: ['alpha'] } },
      'small-v1',
    ],
  ] as const) {
    // The buffers between the gateway and the client hold about 4 of the answer's 5.8 MB here, and
    // grow under load: after a resume they may take all the rest, and the answer is then over before
    // the quiet below — nothing left to pause, so that quiet shows nothing. Such a try is made again
    // with a new request; every path must show the pause on one of its tries.
    let quietChecked = false;
    for (let attempt = 1; attempt <= 3 && !quietChecked; attempt++) {
      quietChecked = await slowClient(path, body, upstreamModel, attempt);
    }
    t.ok(quietChecked, `${path}: the quiet while the client does not read was checked as a pause`);
  }

  /** One request read by a client that stops reading, then reads it all; false when the answer was
   *  over before the quiet could be checked (see above). */
  async function slowClient(path: string, body: object, upstreamModel: string, attempt: number): Promise<boolean> {
    const name = attempt === 1 ? path : `${path} (try ${attempt})`;
    const pausesBefore = spy.pauses;
    const resumesBefore = spy.resumes;
    const endsBefore = spy.endMarkerAt.length;
    // 5.8 MB of content in one burst (scripted: the text is too big for the request body limit).
    s.sim.script(upstreamModel, { chunks: n, text }, 1);
    const raw = await rawPost(`${s.url}${path}`, JSON.stringify(body), {
      authorization: `Bearer ${key}`,
      'content-type': 'application/json',
    });
    t.equal(raw.status, 200);
    raw.res.pause();
    t.ok(await waitFor(() => spy.pauses > pausesBefore, 5000), `${name}: the gateway paused the upstream read`);
    // While the client does not read, the upstream read stays paused (a few in-flight chunks at most),
    // well past the 300 ms idle limit — once the buffers between the gateway and the client are full:
    // on a loaded machine they may still take some of the stream after the first pause.
    let seenAtPause = spy.dataAt.length;
    for (let settle = 0; settle < 20; settle++) {
      await new Promise((r) => setTimeout(r, 150));
      if (spy.dataAt.length === seenAtPause) break;
      seenAtPause = spy.dataAt.length;
    }
    const checked = spy.endMarkerAt.length === endsBefore;
    if (checked) {
      t.ok(
        spy.pauses - pausesBefore > spy.resumes - resumesBefore,
        `${name}: the upstream read is paused while the flow is quiet`,
      );
      await new Promise((r) => setTimeout(r, 700));
      t.ok(
        spy.dataAt.length - seenAtPause <= 2,
        `${name}: no upstream data while paused (${spy.dataAt.length - seenAtPause} chunks)`,
      );
    } else t.comment(`${name}: the buffers took the whole answer before the quiet; tried again`);
    const { text: got, timedOut } = await readAll(raw.res, 20_000);
    t.notOk(timedOut, `${name}: the stream finished`);
    t.ok(spy.resumes > resumesBefore, `${name}: resumed once the client read again`);
    const events = parseSse(got);
    let relayed = '';
    for (const e of events) {
      if (e.data === '[DONE]' || e.data === '') continue;
      const d = JSON.parse(e.data) as {
        choices?: { delta?: { content?: string } }[];
        delta?: { text?: string } | string;
        type?: string;
      };
      if (d.choices) relayed += d.choices[0]?.delta?.content ?? '';
      else if (d.type === 'content_block_delta' && typeof d.delta === 'object') relayed += d.delta.text ?? '';
      else if (d.type === 'response.output_text.delta' && typeof d.delta === 'string') relayed += d.delta;
    }
    t.equal(relayed.length, text.length, `${name}: every byte of the answer arrived`);
    t.ok(relayed === text, `${name}: in order`);
    t.notMatch(got, /stalled/, `${name}: the client's own slowness was not reported as a provider stall`);
    const last = events.at(-1);
    t.ok(
      last?.data === '[DONE]' || last?.event === 'message_stop' || last?.event === 'response.completed',
      `${name}: normal end`,
    );
    return checked;
  }
});

t.test('a provider that stalls after a backpressure pause is still caught by the idle limit', async (t) => {
  const s = await startStack(t, { limits: { firstByteTimeoutMs: 2000, streamIdleTimeoutMs: 300 } });
  const key = s.key('open');
  s.credit('open', '100');
  const spy = spyUpstream(s);
  const up = await handUpstream(t, (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write(
      'data: {"id":"c","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"role":"assistant"},"finish_reason":null}]}\n\n',
    );
    const piece =
      'data: ' +
      JSON.stringify({
        id: 'c',
        object: 'chat.completion.chunk',
        model: 'm',
        choices: [{ index: 0, delta: { content: WORD }, finish_reason: null }],
      }) +
      '\n\n';
    // About 6 MB at once, then silence with the connection left open.
    res.write(piece.repeat(3000));
  });
  s.gw.ctx.upstreamOverride = new URL(up.url);
  const raw = await rawPost(
    `${s.url}/v1/chat/completions`,
    JSON.stringify({ model: 'acme/chat-small', messages: USER, stream: true, provider: { only: ['alpha'] } }),
    {
      authorization: `Bearer ${key}`,
      'content-type': 'application/json',
    },
  );
  raw.res.pause();
  t.ok(await waitFor(() => spy.pauses > 0, 5000), 'backpressure paused the upstream');
  await new Promise((r) => setTimeout(r, 500));
  const { text, timedOut } = await readAll(raw.res, 5000);
  t.notOk(timedOut, 'the stream ended instead of hanging');
  const last = parseSse(text).at(-1);
  t.match(last?.data ?? '', /"error":\{"message":"the provider stream stalled/, 'with the stall error event');
  t.notMatch(text, '[DONE]');
  t.ok(await waitFor(() => up.seen[0]?.closedAt !== null), 'the upstream connection was closed');
});
