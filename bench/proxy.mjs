// Proxy benchmark. One run, four contenders interleaved round-robin, against the same
// simulator and the same request bytes:
//   direct       the load generator → simulator (no proxy; its CPU column is the simulator's)
//   passthrough  bench/passthrough.mjs: bare uWS → undici relay, no logic (the ceiling)
//   pi-gateway   the compiled gateway, full path: auth, rate limit, wallet hold + settle on a WAL
//                file store, request log, routing, body rewrite (a key with a huge rpm, $1M wallet)
//   portkey      @portkey-ai/gateway 1.15.2 (bench/portkey), provider openai, custom host = simulator
// Per round and contender: (1) closed-loop throughput at fixed concurrency + CPU µs/request of the
// process under test; (2) open-loop latency at a fixed offered rate (from the scheduled send time);
// (3) N concurrent SSE streams: time to first byte / first content event, CPU µs per relayed event.
// Peak RSS (VmHWM) of every process at the end. Medians over rounds; ratios per round, then median.
//
//   node bench/run.js proxy [--quick] [--rounds N]
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { once } from './lib/load.mjs';
import { BENCH_DIR, ensureBuilt, stopProcess } from './lib/proc.mjs';
import {
  chatRequest,
  measureLatency,
  measureStreams,
  measureThroughput,
  memOf,
  placement,
  scriptSim,
  startGateway,
  startPassthrough,
  startPortkey,
  startSimulator,
  target,
} from './lib/stack.mjs';
import { fmt, fmtInt, log, machineInfo, median, parseFlags, rotate, saveResult, table } from './lib/stats.mjs';

const flags = parseFlags(process.argv.slice(2));
const P = flags.quick
  ? {
      rounds: 2,
      conns: 64,
      tpWarm: 500,
      tpDur: 1000,
      rates: [1000, 250],
      latWarm: 300,
      latDur: 1000,
      streams: 200,
      chunks: 50,
      chunkDelayMs: 20,
      stWarm: 1000,
      stDur: 2000,
      lightStreams: 4,
      lightDur: 1000,
    }
  : {
      rounds: 5,
      conns: 64,
      tpWarm: 1000,
      tpDur: 5000,
      rates: [1000, 250],
      latWarm: 1000,
      latDur: 5000,
      streams: 250,
      chunks: 50,
      chunkDelayMs: 20,
      stWarm: 2000,
      stDur: 5000,
      lightStreams: 4,
      lightDur: 3000,
    };
if (flags.rounds) P.rounds = flags.rounds;

const NS_MODEL = 'openai/gpt-6-luna'; // instant default answer
const ST_MODEL = 'openai/gpt-6.2-sol'; // scripted: P.chunks content events, P.chunkDelayMs apart
const LIGHT_MODEL = 'meta-llama/llama-3.3-70b-instruct'; // scripted: 5 content events 20 ms apart (light-load TTFB)
const messages = [{ role: 'user', content: 'Hello, how are you today?' }];
const NS_BODY = { model: NS_MODEL, messages, max_tokens: 64 };
const ST_BODY = { model: ST_MODEL, messages, max_tokens: 64, stream: true, stream_options: { include_usage: true } };
const LIGHT_BODY = { ...ST_BODY, model: LIGHT_MODEL };

ensureBuilt();
log(`proxy: ${flags.quick ? 'quick' : 'full'} run, ${P.rounds} rounds`);
const sim = await startSimulator();
await scriptSim(sim.url, ST_MODEL, { chunks: P.chunks, chunkDelayMs: P.chunkDelayMs });
await scriptSim(sim.url, LIGHT_MODEL, { chunks: 5, chunkDelayMs: 20 });
const pt = await startPassthrough(sim.url);
const gw = await startGateway('gateway', {
  upstream: sim.url,
  nodeArgs: (process.env.PI_BENCH_GATEWAY_NODE_ARGS ?? '').split(' ').filter(Boolean),
});
const havePortkey = existsSync(join(BENCH_DIR, 'portkey', 'node_modules', '@portkey-ai', 'gateway'));
const pk = havePortkey ? await startPortkey() : null;
if (!havePortkey) log('portkey: bench/portkey/node_modules missing (npm ci --prefix bench/portkey); skipped');

const simKey = { Authorization: 'Bearer sk-bench-upstream' };
const mk = (name, proc, headers) => {
  const t = target(proc.url);
  return {
    name,
    pid: proc.pid,
    target: t,
    req: chatRequest(t, headers, NS_BODY),
    streamReq: chatRequest(t, headers, ST_BODY),
    lightReq: chatRequest(t, headers, LIGHT_BODY),
  };
};
const contenders = [
  mk('direct', sim, simKey),
  mk('passthrough', pt, simKey),
  mk('pi-gateway', gw, { Authorization: `Bearer ${gw.key}` }),
  ...(pk
    ? [mk('portkey', pk, { ...simKey, 'x-portkey-provider': 'openai', 'x-portkey-custom-host': `${sim.url}/v1` })]
    : []),
];

// Sanity: every contender answers 200 and relays every event.
let expectEvents = null;
for (const c of contenders) {
  const a = await once(c.target, c.req);
  const s = await once(c.target, c.streamReq);
  if (a.status !== 200 || !a.text.includes('chat.completion'))
    throw new Error(
      `${c.name}: non-streaming sanity check failed: ${a.status} ${a.error ?? ''} ${a.text.slice(0, 200)}`,
    );
  if (s.status !== 200 || !s.text.includes('[DONE]'))
    throw new Error(`${c.name}: streaming sanity check failed: ${s.status} ${s.error ?? ''} ${s.text.slice(0, 200)}`);
  if (expectEvents === null) expectEvents = s.events;
  else if (s.events !== expectEvents) log(`warning: ${c.name} relayed ${s.events} events, direct ${expectEvents}`);
  c.sanity = { jsonBytes: a.bytes, streamEvents: s.events, streamBytes: s.bytes };
}
const simPid = sim.pid;
const memStart = memOf({ simulator: sim, passthrough: pt, gateway: gw, portkey: pk });
const place = placement({ simulator: sim, passthrough: pt, gateway: gw, portkey: pk });
log(`placement: ${JSON.stringify(place)}`);

const rounds = [];
for (let r = 0; r < P.rounds; r++) {
  const order = rotate(contenders, r);
  const round = { order: order.map((c) => c.name), tp: {}, lat: {}, st: {}, light: {} };
  for (const rate of P.rates) round[`lat${rate}`] = {};
  for (const c of order) {
    round.tp[c.name] = await measureThroughput(c, { simPid, conns: P.conns, warmupMs: P.tpWarm, durationMs: P.tpDur });
    log(
      `round ${r + 1} tp   ${c.name.padEnd(12)} ${fmtInt(round.tp[c.name].rps)} req/s  ${fmt(round.tp[c.name].sutCpuUsPerUnit)} µs/req  util ${fmt(round.tp[c.name].sutUtil, 2)}  core1 ${fmt(round.tp[c.name].core1Util, 2)}  err ${round.tp[c.name].errors}`,
    );
  }
  for (const rate of P.rates) {
    for (const c of order) {
      const x = await measureLatency(c, { simPid, rate, conns: P.conns, warmupMs: P.latWarm, durationMs: P.latDur });
      round[`lat${rate}`][c.name] = x;
      if (rate === P.rates[0]) round.lat[c.name] = x;
      log(
        `round ${r + 1} lat${rate} ${c.name.padEnd(12)} p50 ${fmt(x.p50, 3)} ms  p99 ${fmt(x.p99, 3)} ms  achieved ${fmtInt(x.achieved)}/s  err ${x.errors}`,
      );
    }
  }
  for (const c of order) {
    round.st[c.name] = await measureStreams(c, {
      simPid,
      streams: P.streams,
      warmupMs: P.stWarm,
      durationMs: P.stDur,
      expectEvents,
    });
    const x = round.st[c.name];
    log(
      `round ${r + 1} st   ${c.name.padEnd(12)} ttfc p50 ${fmt(x.ttfcP50, 3)} ms  ${fmtInt(x.eventsPerSec)} ev/s  ${fmt(x.sutCpuUsPerUnit, 2)} µs/event  short ${x.short}  err ${x.errors}`,
    );
  }
  for (const c of order) {
    const x = await measureStreams(
      { ...c, streamReq: c.lightReq },
      { simPid, streams: P.lightStreams, warmupMs: 500, durationMs: P.lightDur, expectEvents: null },
    );
    round.light[c.name] = x;
    log(`round ${r + 1} light ${c.name.padEnd(12)} ttfc p50 ${fmt(x.ttfcP50, 3)} ms (n ${x.ttfcCount})`);
  }
  rounds.push(round);
}
const mem = memOf({ simulator: sim, passthrough: pt, gateway: gw, portkey: pk });

// Medians over rounds, and per-round ratios.
const names = contenders.map((c) => c.name);
const med = (phase, name, key) => median(rounds.map((r) => r[phase][name]?.[key]));
const ratio = (phase, a, b, key, op = (x, y) => x / y) =>
  median(rounds.map((r) => op(r[phase][a]?.[key], r[phase][b]?.[key])));
const summary = {};
for (const n of names) {
  summary[n] = {
    rps: med('tp', n, 'rps'),
    cpuUsPerReq: med('tp', n, 'sutCpuUsPerUnit'),
    sutUtil: med('tp', n, 'sutUtil'),
    sysShare: med('tp', n, 'sutSysShare'),
    stSysShare: med('st', n, 'sutSysShare'),
    core1Util: med('tp', n, 'core1Util'),
    tpErrors: rounds.reduce((a, r) => a + (r.tp[n]?.errors ?? 0), 0),
    latP50: med('lat', n, 'p50'),
    latP99: med('lat', n, 'p99'),
    latSvcP50: med('lat', n, 'svcP50'),
    latAchieved: med('lat', n, 'achieved'),
    latErrors: rounds.reduce((a, r) => a + (r.lat[n]?.errors ?? 0), 0),
    addedP50: n === 'direct' ? 0 : ratio('lat', n, 'direct', 'p50', (x, y) => x - y),
    addedP99: n === 'direct' ? 0 : ratio('lat', n, 'direct', 'p99', (x, y) => x - y),
    ttfbP50: med('st', n, 'ttfbP50'),
    ttfcP50: med('st', n, 'ttfcP50'),
    ttfcP99: med('st', n, 'ttfcP99'),
    addedTtfcP50: n === 'direct' ? 0 : ratio('st', n, 'direct', 'ttfcP50', (x, y) => x - y),
    lightTtfcP50: med('light', n, 'ttfcP50'),
    lightTtfcP99: med('light', n, 'ttfcP99'),
    lightAddedTtfcP50: n === 'direct' ? 0 : ratio('light', n, 'direct', 'ttfcP50', (x, y) => x - y),
    eventsPerSec: med('st', n, 'eventsPerSec'),
    cpuUsPerEvent: med('st', n, 'sutCpuUsPerUnit'),
    stUtil: med('st', n, 'sutUtil'),
    stErrors: rounds.reduce((a, r) => a + (r.st[n]?.errors ?? 0) + (r.st[n]?.short ?? 0), 0),
    peakRssMb: null,
  };
}
const memKey = { direct: 'simulator', passthrough: 'passthrough', 'pi-gateway': 'gateway', portkey: 'portkey' };
for (const n of names) summary[n].peakRssMb = mem[memKey[n]] ? mem[memKey[n]].hwmKb / 1024 : null;

const latency = {};
for (const rate of P.rates) {
  const ph = `lat${rate}`;
  latency[rate] = Object.fromEntries(
    names.map((n) => [
      n,
      {
        p50: med(ph, n, 'p50'),
        p99: med(ph, n, 'p99'),
        svcP50: med(ph, n, 'svcP50'),
        achieved: med(ph, n, 'achieved'),
        saturated: med(ph, n, 'achieved') < 0.97 * rate,
        errors: rounds.reduce((a, r) => a + (r[ph][n]?.errors ?? 0), 0),
        addedP50: n === 'direct' ? 0 : ratio(ph, n, 'direct', 'p50', (x, y) => x - y),
        addedP99: n === 'direct' ? 0 : ratio(ph, n, 'direct', 'p99', (x, y) => x - y),
      },
    ]),
  );
}
const ratios = {
  tpVsPassthrough: ratio('tp', 'pi-gateway', 'passthrough', 'rps'),
  cpuPerReqVsPassthrough: ratio('tp', 'pi-gateway', 'passthrough', 'sutCpuUsPerUnit'),
  cpuPerEventVsPassthrough: ratio('st', 'pi-gateway', 'passthrough', 'sutCpuUsPerUnit'),
  addedTtfcP50Ms: summary['pi-gateway'].addedTtfcP50,
  addedTtfcP50VsPassthroughMs: ratio('st', 'pi-gateway', 'passthrough', 'ttfcP50', (x, y) => x - y),
  lightAddedTtfcP50Ms: summary['pi-gateway'].lightAddedTtfcP50,
  peakRssMb: summary['pi-gateway'].peakRssMb,
  tpVsPortkey: pk ? ratio('tp', 'pi-gateway', 'portkey', 'rps') : null,
  // CPU-normalised: requests per second one core could serve at the measured CPU cost per request
  // (robust when other load on the machine keeps the process under test from saturating its core).
  capacityVsPassthrough: ratio('tp', 'passthrough', 'pi-gateway', 'sutCpuUsPerUnit'),
  capacityVsPortkey: pk ? ratio('tp', 'portkey', 'pi-gateway', 'sutCpuUsPerUnit') : null,
  passthroughTpVsDirect: ratio('tp', 'passthrough', 'direct', 'rps'),
};
const targets = [
  {
    name: 'throughput ≥ 60 % of the bare passthrough (measured req/s)',
    value: ratios.tpVsPassthrough,
    ok: ratios.tpVsPassthrough >= 0.6,
    shown: `${fmt(ratios.tpVsPassthrough * 100)} %`,
  },
  {
    name: 'throughput ≥ 60 % of the bare passthrough (CPU-normalised capacity)',
    value: ratios.capacityVsPassthrough,
    ok: ratios.capacityVsPassthrough >= 0.6,
    shown: `${fmt(ratios.capacityVsPassthrough * 100)} %`,
  },
  {
    name: 'CPU per streamed event ≤ 1.5× the passthrough',
    value: ratios.cpuPerEventVsPassthrough,
    ok: ratios.cpuPerEventVsPassthrough <= 1.5,
    shown: `${fmt(ratios.cpuPerEventVsPassthrough, 2)}×`,
  },
  {
    name: `added TTFB p50 ≤ 1 ms (first content event vs direct, under ${P.streams} streams)`,
    value: ratios.addedTtfcP50Ms,
    ok: ratios.addedTtfcP50Ms <= 1,
    shown: `${fmt(ratios.addedTtfcP50Ms, 3)} ms`,
  },
  {
    name: `added TTFB p50 ≤ 1 ms (first content event vs direct, ${P.lightStreams} concurrent streams)`,
    value: ratios.lightAddedTtfcP50Ms,
    ok: ratios.lightAddedTtfcP50Ms <= 1,
    shown: `${fmt(ratios.lightAddedTtfcP50Ms, 3)} ms`,
  },
  {
    name: 'peak RSS ≤ 150 MB',
    value: ratios.peakRssMb,
    ok: ratios.peakRssMb <= 150,
    shown: `${fmt(ratios.peakRssMb)} MB`,
  },
  ...(pk
    ? [
        {
          name: '≥ 20× Portkey throughput (measured req/s)',
          value: ratios.tpVsPortkey,
          ok: ratios.tpVsPortkey >= 20,
          shown: `${fmt(ratios.tpVsPortkey, 1)}×`,
        },
        {
          name: '≥ 20× Portkey throughput (CPU-normalised capacity)',
          value: ratios.capacityVsPortkey,
          ok: ratios.capacityVsPortkey >= 20,
          shown: `${fmt(ratios.capacityVsPortkey, 1)}×`,
        },
      ]
    : []),
];

const out = [];
out.push(`## proxy (${flags.quick ? 'quick' : 'full'}; ${P.rounds} rounds, medians)`);
out.push('');
out.push(
  `Non-streaming: closed loop, ${P.conns} connections, ${P.tpDur / 1000} s per contender per round. Latency columns: open loop at ${P.rates[0]} req/s for ${P.latDur / 1000} s (from the scheduled send time; other rates below). Streaming: ${P.streams} concurrent streams × ${expectEvents} events (${P.chunks} content events ${P.chunkDelayMs} ms apart), ${P.stDur / 1000} s window.`,
);
out.push('');
out.push(
  table(
    [
      'contender',
      'req/s',
      'CPU µs/req',
      'sys share',
      'capacity req/s/core',
      'util (SUT / core 1)',
      'lat p50 ms',
      'lat p99 ms',
      'added p50 / p99 ms',
      'TTFB p50 ms',
      'first content p50 ms',
      'added first content ms',
      'events/s',
      'CPU µs/event',
      'peak RSS MB',
      'errors',
    ],
    names.map((n) => {
      const s = summary[n];
      return [
        n,
        fmtInt(s.rps),
        fmt(s.cpuUsPerReq),
        `${fmt(s.sysShare * 100, 0)} %`,
        fmtInt(1e6 / s.cpuUsPerReq),
        `${fmt(s.sutUtil, 2)} / ${fmt(s.core1Util, 2)}`,
        fmt(s.latP50, 3),
        fmt(s.latP99, 3),
        n === 'direct' ? '—' : `${fmt(s.addedP50, 3)} / ${fmt(s.addedP99, 3)}`,
        fmt(s.ttfbP50, 3),
        fmt(s.ttfcP50, 3),
        n === 'direct' ? '—' : fmt(s.addedTtfcP50, 3),
        fmtInt(s.eventsPerSec),
        fmt(s.cpuUsPerEvent, 2),
        fmt(s.peakRssMb),
        String(s.tpErrors + s.latErrors + s.stErrors),
      ];
    }),
  ),
);
out.push('');
out.push(
  `Open-loop latency by offered rate (ms, from the scheduled send time; added = minus direct, per round, median; "saturated" = achieved < 97 % of offered):`,
);
out.push('');
out.push(
  table(
    ['contender', ...P.rates.flatMap((r) => [`${r}/s p50`, `${r}/s p99`, `${r}/s added p50 / p99`, `${r}/s achieved`])],
    names.map((n) => [
      n,
      ...P.rates.flatMap((r) => {
        const x = latency[r][n];
        return [
          fmt(x.p50, 3),
          fmt(x.p99, 3),
          n === 'direct' ? '—' : `${fmt(x.addedP50, 3)} / ${fmt(x.addedP99, 3)}`,
          `${fmtInt(x.achieved)}${x.saturated ? ' (saturated)' : ''}`,
        ];
      }),
    ]),
  ),
);
out.push('');
out.push(
  `Light load: ${P.lightStreams} concurrent streams of 5 content events 20 ms apart, ${P.lightDur / 1000} s per contender per round, time to first content event (ms):`,
);
out.push('');
out.push(
  table(
    ['contender', 'p50', 'p99', 'added p50 vs direct'],
    names.map((n) => [
      n,
      fmt(summary[n].lightTtfcP50, 3),
      fmt(summary[n].lightTtfcP99, 3),
      n === 'direct' ? '—' : fmt(summary[n].lightAddedTtfcP50, 3),
    ]),
  ),
);
out.push('');
out.push('Ratios (median of per-round ratios):');
out.push('');
out.push(
  table(
    ['measure', 'value'],
    [
      ['pi-gateway / passthrough throughput', `${fmt(ratios.tpVsPassthrough * 100)} %`],
      ['pi-gateway / passthrough CPU per request', `${fmt(ratios.cpuPerReqVsPassthrough, 2)}×`],
      ['pi-gateway / passthrough CPU-normalised capacity', `${fmt(ratios.capacityVsPassthrough * 100)} %`],
      ['pi-gateway / passthrough CPU per streamed event', `${fmt(ratios.cpuPerEventVsPassthrough, 2)}×`],
      [
        'pi-gateway added first-content p50 vs direct / vs passthrough',
        `${fmt(ratios.addedTtfcP50Ms, 3)} ms / ${fmt(ratios.addedTtfcP50VsPassthroughMs, 3)} ms`,
      ],
      ...(pk
        ? [
            ['pi-gateway / portkey throughput', `${fmt(ratios.tpVsPortkey, 1)}×`],
            ['pi-gateway / portkey CPU-normalised capacity', `${fmt(ratios.capacityVsPortkey, 1)}×`],
          ]
        : []),
      ['passthrough / direct throughput', `${fmt(ratios.passthroughTpVsDirect * 100)} %`],
    ],
  ),
);
out.push('');
out.push('Targets:');
out.push('');
out.push(
  table(
    ['target', 'measured', 'met'],
    targets.map((t) => [t.name, t.shown, t.ok ? 'yes' : '**no**']),
  ),
);
out.push('');
out.push(
  `RSS after start-up (before load), MB: ${Object.entries(memStart)
    .map(([k, v]) => `${k} ${fmt(v.rssKb / 1024)}`)
    .join(', ')}. Peak RSS is VmHWM at the end of the run.`,
);
out.push('');
out.push(
  `Placement (Cpus_allowed_list): ${Object.entries(place)
    .map(([k, v]) => `${k}=${v}`)
    .join(', ')}`,
);
process.stdout.write(out.join('\n') + '\n');

const file = saveResult('proxy', {
  bench: 'proxy',
  params: P,
  quick: flags.quick,
  machine: machineInfo(),
  placement: place,
  sanity: Object.fromEntries(contenders.map((c) => [c.name, c.sanity])),
  expectEvents,
  rounds,
  summary,
  latency,
  ratios,
  targets,
  mem,
  memStart,
});
log(`saved ${file}`);
for (const p of [pk, gw, pt, sim]) if (p) await stopProcess(p);
