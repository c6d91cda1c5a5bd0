// Telemetry benchmark: the CPU the gateway spends per request with metrics and the access
// log on vs off. Contenders, interleaved round-robin against one simulator, same request bytes:
//   off          the compiled gateway as the other benchmarks run it (no admin listener, no
//                metrics, no access log; the request-log writer is on, as always)
//   on           the same with the admin listener + Prometheus metrics and the access log written
//                to a file (synchronous writes of 100 ms of lines, as `serve` writes stdout)
//   metrics, access-log   (--split) each part alone
//   +traces      (--traces) the same as `on`, plus OTLP/HTTP traces to a sink in this process
// (a) bench/telemetry-micro.mjs on core 0: the observers' own CPU per request, in process.
// (b) HTTP, per round and contender: closed-loop non-streamed throughput (CPU µs/request of the
// gateway process) and concurrent streams (CPU µs/event). The extra CPU of `on` is taken per round
// (on − off, and on / off), then the median. Target: at most 5 % extra CPU per request.
//
//   node bench/run.js telemetry [--quick] [--rounds N] [--split] [--traces]
import { createServer } from 'node:http';
import { readFileSync } from 'node:fs';
import { once } from './lib/load.mjs';
import { ensureBuilt, startNode, stopProcess } from './lib/proc.mjs';
import {
  SUT_CORE,
  chatRequest,
  measureStreams,
  measureThroughput,
  placement,
  scriptSim,
  startGateway,
  startSimulator,
  target,
} from './lib/stack.mjs';
import { fmt, fmtInt, log, machineInfo, median, parseFlags, rotate, saveResult, table } from './lib/stats.mjs';

const flags = parseFlags(process.argv.slice(2));
const withTraces = process.argv.includes('--traces');
const split = process.argv.includes('--split');
const P = flags.quick
  ? {
      rounds: 3,
      conns: 64,
      tpWarm: 500,
      tpDur: 1500,
      streams: 100,
      chunks: 20,
      chunkDelayMs: 20,
      stWarm: 500,
      stDur: 1500,
    }
  : {
      rounds: 7,
      conns: 64,
      tpWarm: 1000,
      tpDur: 5000,
      streams: 200,
      chunks: 50,
      chunkDelayMs: 20,
      stWarm: 1000,
      stDur: 4000,
    };
if (flags.rounds) P.rounds = flags.rounds;

const NS_MODEL = 'openai/gpt-6-luna';
const ST_MODEL = 'openai/gpt-6.2-sol';
const messages = [{ role: 'user', content: 'Hello, how are you today?' }];
const NS_BODY = { model: NS_MODEL, messages, max_tokens: 64 };
const ST_BODY = { model: ST_MODEL, messages, max_tokens: 64, stream: true, stream_options: { include_usage: true } };

/** An OTLP/HTTP sink that accepts and drops exports (only for --traces). */
async function startSink() {
  let exports = 0;
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      exports++;
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    exports: () => exports,
    close: () => new Promise((r) => server.close(r)),
  };
}

ensureBuilt();
log(`telemetry: ${flags.quick ? 'quick' : 'full'} run, ${P.rounds} rounds${withTraces ? ', with traces' : ''}`);
log('telemetry (a): micro-benchmark on core 0');
const micro = await startNode('telemetry-micro', {
  core: SUT_CORE,
  args: ['bench/telemetry-micro.mjs', ...(flags.quick ? ['--quick'] : [])],
  readyTimeoutMs: 600_000,
});
const m = micro.result;
await stopProcess(micro);
log(`micro: ${JSON.stringify(m.usPerRequest)}`);

const sim = await startSimulator();
await scriptSim(sim.url, ST_MODEL, { chunks: P.chunks, chunkDelayMs: P.chunkDelayMs });
const sink = withTraces ? await startSink() : null;
const off = await startGateway('gateway-telemetry-off', { upstream: sim.url });
const on = await startGateway('gateway-telemetry-on', {
  upstream: sim.url,
  args: ['--metrics', 'on', '--access-log', 'on'],
});
const metricsOnly = split
  ? await startGateway('gateway-telemetry-metrics', { upstream: sim.url, args: ['--metrics', 'on'] })
  : null;
const logOnly = split
  ? await startGateway('gateway-telemetry-access-log', { upstream: sim.url, args: ['--access-log', 'on'] })
  : null;
const traced = sink
  ? await startGateway('gateway-telemetry-traces', {
      upstream: sim.url,
      args: ['--metrics', 'on', '--access-log', 'on', '--traces', sink.url],
    })
  : null;

const mk = (name, proc) => {
  const t = target(proc.url);
  const headers = { Authorization: `Bearer ${proc.key}` };
  return {
    name,
    proc,
    pid: proc.pid,
    target: t,
    req: chatRequest(t, headers, NS_BODY),
    streamReq: chatRequest(t, headers, ST_BODY),
  };
};
const contenders = [
  mk('off', off),
  mk('on', on),
  ...(metricsOnly ? [mk('metrics', metricsOnly)] : []),
  ...(logOnly ? [mk('access-log', logOnly)] : []),
  ...(traced ? [mk('+traces', traced)] : []),
];

let expectEvents = null;
for (const c of contenders) {
  const a = await once(c.target, c.req);
  const s = await once(c.target, c.streamReq);
  if (a.status !== 200 || s.status !== 200 || !s.text.includes('[DONE]'))
    throw new Error(`${c.name}: sanity check failed: ${a.status} ${s.status}`);
  if (expectEvents === null) expectEvents = s.events;
}
const place = placement({ simulator: sim, off, on, metricsOnly, logOnly, traced });
log(`placement: ${JSON.stringify(place)}`);

const rounds = [];
for (let r = 0; r < P.rounds; r++) {
  const round = { order: [], tp: {}, st: {} };
  for (const c of rotate(contenders, r)) {
    round.order.push(c.name);
    round.tp[c.name] = await measureThroughput(c, {
      simPid: sim.pid,
      conns: P.conns,
      warmupMs: P.tpWarm,
      durationMs: P.tpDur,
    });
    log(
      `round ${r + 1} tp ${c.name.padEnd(8)} ${fmtInt(round.tp[c.name].rps)} req/s  ${fmt(round.tp[c.name].sutCpuUsPerUnit)} µs/req  util ${fmt(round.tp[c.name].sutUtil, 2)}  err ${round.tp[c.name].errors}`,
    );
  }
  for (const c of rotate(contenders, r)) {
    round.st[c.name] = await measureStreams(c, {
      simPid: sim.pid,
      streams: P.streams,
      warmupMs: P.stWarm,
      durationMs: P.stDur,
      expectEvents,
    });
    log(
      `round ${r + 1} st ${c.name.padEnd(8)} ${fmt(round.st[c.name].sutCpuUsPerUnit, 2)} µs/event  short ${round.st[c.name].short}  err ${round.st[c.name].errors}`,
    );
  }
  rounds.push(round);
}

const names = contenders.map((c) => c.name);
const med = (phase, n, key) => median(rounds.map((r) => r[phase][n][key]));
const perRound = (phase, n, op) =>
  median(rounds.map((r) => op(r[phase][n].sutCpuUsPerUnit, r[phase].off.sutCpuUsPerUnit)));
const summary = {};
for (const n of names) {
  summary[n] = {
    rps: med('tp', n, 'rps'),
    cpuUsPerReq: med('tp', n, 'sutCpuUsPerUnit'),
    util: med('tp', n, 'sutUtil'),
    cpuUsPerEvent: med('st', n, 'sutCpuUsPerUnit'),
    extraUsPerReq: n === 'off' ? 0 : perRound('tp', n, (x, y) => x - y),
    ratioPerReq: n === 'off' ? 1 : perRound('tp', n, (x, y) => x / y),
    extraUsPerEvent: n === 'off' ? 0 : perRound('st', n, (x, y) => x - y),
    ratioPerEvent: n === 'off' ? 1 : perRound('st', n, (x, y) => x / y),
    errors: rounds.reduce((a, r) => a + r.tp[n].errors + r.st[n].errors + r.st[n].short, 0),
  };
}

// What `on` recorded: the requests its metrics counted and the lines its access log holds.
const scraped = await (await fetch(`${on.admin}/metrics`)).text();
const counted = [...scraped.matchAll(/^pi_gateway_requests_total\{[^}]*\} (\d+)$/gm)].reduce(
  (a, m) => a + Number(m[1]),
  0,
);
const t0 = performance.now();
await fetch(`${on.admin}/metrics`).then((r) => r.text());
const scrapeMs = performance.now() - t0;
const accessLines = readFileSync(on.accessLog, 'utf8').split('\n').filter(Boolean).length;

const out = [];
out.push(`## telemetry (${flags.quick ? 'quick' : 'full'}; ${P.rounds} rounds, medians)`);
out.push('');
const base = m.usPerRequest['request log only'];
out.push(
  `(a) In process, core 0: CPU µs per request of the observers' own work (median of ${m.batches} batches of ${fmtInt(m.perBatch)}; the access log written once per ${m.perFlush} requests):`,
);
out.push('');
out.push(
  table(
    ['observers', 'µs/request', 'added to the request log alone'],
    Object.entries(m.usPerRequest).map(([k, v]) => [k, fmt(v, 2), k === 'request log only' ? '—' : fmt(v - base, 2)]),
  ),
);
out.push('');
out.push('(b) Over HTTP:');
out.push('');
out.push(
  `Non-streamed: closed loop, ${P.conns} connections, ${P.tpDur / 1000} s per contender per round. Streams: ${P.streams} concurrent × ${expectEvents} events (${P.chunks} content events ${P.chunkDelayMs} ms apart), ${P.stDur / 1000} s window. Extra = per round against \`off\`, then the median.`,
);
out.push('');
out.push(
  table(
    [
      'contender',
      'req/s',
      'CPU µs/req',
      'extra µs/req',
      'CPU per req vs off',
      'CPU µs/event',
      'extra µs/event',
      'CPU per event vs off',
      'errors',
    ],
    names.map((n) => {
      const s = summary[n];
      return [
        n,
        fmtInt(s.rps),
        fmt(s.cpuUsPerReq),
        n === 'off' ? '—' : fmt(s.extraUsPerReq),
        n === 'off' ? '—' : `${fmt((s.ratioPerReq - 1) * 100)} %`,
        fmt(s.cpuUsPerEvent, 2),
        n === 'off' ? '—' : fmt(s.extraUsPerEvent, 2),
        n === 'off' ? '—' : `${fmt((s.ratioPerEvent - 1) * 100)} %`,
        String(s.errors),
      ];
    }),
  ),
);
out.push('');
const target5 = summary.on.ratioPerReq - 1 <= 0.05;
out.push(
  `Target (metrics + access log, ≤ 5 % extra CPU per request): ${fmt((summary.on.ratioPerReq - 1) * 100)} % — ${target5 ? 'met' : '**missed**'}.`,
);
out.push(
  `\`on\` counted ${fmtInt(counted)} requests in pi_gateway_requests_total and wrote ${fmtInt(accessLines)} access-log lines; one /metrics scrape took ${fmt(scrapeMs, 1)} ms.${sink ? ` The trace sink received ${sink.exports()} exports.` : ''}`,
);
out.push('');
out.push(
  `Placement (Cpus_allowed_list): ${Object.entries(place)
    .map(([k, v]) => `${k}=${v}`)
    .join(', ')}`,
);
process.stdout.write(out.join('\n') + '\n');

const file = saveResult('telemetry', {
  bench: 'telemetry',
  params: P,
  quick: flags.quick,
  traces: withTraces,
  machine: machineInfo(),
  placement: place,
  micro: m,
  rounds,
  summary,
  counted,
  accessLines,
  scrapeMs,
});
log(`saved ${file}`);
for (const p of [traced, logOnly, metricsOnly, on, off, sim]) if (p) await stopProcess(p);
await sink?.close();
