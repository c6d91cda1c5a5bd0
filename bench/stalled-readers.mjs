// Stalled readers: does a gateway whose clients stopped reading their streams still answer others promptly?
// N clients open a long stream each and never read (their sockets paused, so the kernel buffers
// fill and backpressure reaches the gateway and then the simulator); meanwhile a probe asks the
// admin listener's /health/live and the public /v1/models every 50 ms and records how long each took.
//
// `--workers 2` runs the gateway as `serve --workers 2`: the admin listener is then on the
// coordinator's thread, apart from the serving threads' loops.
//
//   node bench/run.js stalled-readers [--clients 50] [--seconds 10] [--workers N]
import { connect } from 'node:net';
import { parseArgs } from 'node:util';
import { ensureBuilt, stopProcess } from './lib/proc.mjs';
import { scriptSim, startGateway, startSimulator, target } from './lib/stack.mjs';
import { fmt, log, pct, sorted } from './lib/stats.mjs';

const { values } = parseArgs({
  options: {
    clients: { type: 'string', default: '50' },
    seconds: { type: 'string', default: '10' },
    workers: { type: 'string', default: '1' },
  },
});
const CLIENTS = Number(values.clients);
const SECONDS = Number(values.seconds);
const MODEL = 'openai/gpt-6.2-sol';

ensureBuilt();
const sim = await startSimulator();
await scriptSim(sim.url, MODEL, { chunks: 20000, chunkDelayMs: 0 });
const gw = await startGateway('gateway', {
  upstream: sim.url,
  args: ['--metrics', 'on', ...(values.workers === '1' ? ['--writer-thread', 'on'] : ['--workers', values.workers])],
  nodeArgs: (process.env.PI_BENCH_GATEWAY_NODE_ARGS ?? '').split(' ').filter(Boolean),
});
const t = target(gw.url);
const body = JSON.stringify({ model: MODEL, messages: [{ role: 'user', content: 'hi' }], stream: true });
const sockets = [];
for (let i = 0; i < CLIENTS; i++) {
  const s = connect(t.port, t.host);
  s.on('error', () => undefined);
  s.write(
    `POST /v1/chat/completions HTTP/1.1\r\nHost: ${t.hostHeader}\r\nAuthorization: Bearer ${gw.key}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
  );
  // Read the first bytes only, then stop reading for good.
  s.once('data', () => s.pause());
  sockets.push(s);
}
log(`${CLIENTS} clients opened a stream each and stopped reading`);

async function timed(url) {
  const t0 = performance.now();
  const r = await fetch(url);
  await r.arrayBuffer();
  return performance.now() - t0;
}
const live = [];
const models = [];
const end = Date.now() + SECONDS * 1000;
while (Date.now() < end) {
  live.push(await timed(`${gw.admin}/health/live`));
  models.push(await timed(`${gw.url}/v1/models`));
  await new Promise((r) => setTimeout(r, 50));
}
for (const [name, xs] of [
  ['admin /health/live', live],
  ['public /v1/models', models],
]) {
  const s = sorted(xs);
  log(
    `${name}: ${xs.length} probes, p50 ${fmt(pct(s, 50), 2)} ms, p99 ${fmt(pct(s, 99), 2)} ms, max ${fmt(s.at(-1), 2)} ms`,
  );
}
for (const s of sockets) s.destroy();
await stopProcess(gw);
await stopProcess(sim);
