// CPU per request of JSON bodies whose shape, not their size, is what costs: wide objects, many tiny
// values, versus a real conversation of the same bytes. The gateway runs in this process (the test
// stack, working-tree sources, whose types Node.js strips) with its upstream a raw socket answering a fixed small chat
// completion, so what is measured is the request path: read, scan, parse, route, hold, upstream body,
// answer. Reports, per body, the median over 5 requests of this process's CPU (user + system; the
// client's share is a few ms) and of the longest event-loop block.
//
//   node bench/request-shape.mjs
//
// Not part of `bench/run.js` (that suite measures the compiled gateway in its own process).
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { startStack } from '../test/helpers/stack.ts';
import { rawJson, rawUpstream } from '../test/helpers/raw-upstream.ts';

const teardowns = [];
const t = { teardown: (f) => teardowns.push(f) };
const s = await startStack(t, { limits: { maxBodyBytes: 8 << 20 } });
const answer =
  '{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}';
const up = await rawUpstream(t, (ex) => ex.write(rawJson('200 OK', answer)));
s.gw.ctx.upstreamOverride = new URL(up.url);
const key = s.key('open');
s.credit('open', '100000');

const MSG = '"messages":[{"role":"user","content":"hi"}]';
const repeat = (n, item) => Array.from({ length: n }, (_, i) => item(i)).join(',');
const wide = (n, messages = MSG) => `{"model":"acme/chat-small",${messages},${repeat(n, (i) => `"k${i}":0`)}}`;
const conversation = (n) =>
  `{"model":"acme/chat-small","messages":[${repeat(n, (i) => JSON.stringify({ role: i % 2 ? 'assistant' : 'user', content: [{ type: 'text', text: 'word '.repeat(100) + i }] }))}]}`;
const cases = [
  ['200,000 top-level keys', wide(200_000)],
  ['200,000 top-level keys, messages invalid', wide(200_000, '"messages":"no"')],
  ['10,000 top-level keys (at the limit)', wide(9_997)],
  [
    '250,000 one-member objects, 5,000 names',
    `{"model":"acme/chat-small",${MSG},"x":[${repeat(3, () => `[${repeat(83_330, (i) => `{"a${i % 5000}":0}`)}]`)}]}`,
  ],
  ['conversation of 5,600 messages', conversation(5_600)],
  ['small chat', `{"model":"acme/chat-small",${MSG}}`],
];

const loop = monitorEventLoopDelay({ resolution: 1 });
const median = (a) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)];
for (const [label, body] of cases) {
  const cpu = [];
  const blocks = [];
  let status = 0;
  for (let r = 0; r < 5; r++) {
    loop.reset();
    loop.enable();
    const c0 = process.cpuUsage();
    const res = await s.post('/v1/chat/completions', body, { key });
    status = res.status;
    await res.arrayBuffer();
    const c = process.cpuUsage(c0);
    loop.disable();
    cpu.push((c.user + c.system) / 1000);
    blocks.push(loop.max / 1e6);
  }
  console.log(
    `${label.padEnd(44)} ${(body.length / 1048576).toFixed(2)} MiB  ${status}  CPU ${median(cpu).toFixed(0)} ms  longest block ${median(blocks).toFixed(0)} ms`,
  );
}
for (const f of teardowns.reverse()) await f();
