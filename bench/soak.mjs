// Does memory stay flat over a long run? `serve` as it runs a database file (the writer thread on)
// under a steady mixed load for --minutes (10): an open loop of non-streamed chat completions at
// --rate req/s (500) beside --streams concurrent streams (50; each 100 content events 10 ms apart,
// the next starting when one ends). The gateway's RSS is read from /proc every 5 s. Prints RSS per
// minute, the peak, the least-squares slope of RSS over the second half of the run (MB per minute:
// a leak shows as a slope that does not fall to about zero once the heap has grown to its working
// size), the errors, and RSS after 15 s idle at the end. --saturate replaces the open loop and the
// streams with a closed loop of 50 connections (the most requests a minute, so the most garbage and
// the largest heap a minute can make): whether RSS stops growing once the heap reached the size the
// saturated gateway works at.
//
//   node bench/run.js soak [--minutes M] [--rate R] [--streams S] [--saturate]
import { readFileSync } from 'node:fs';
import { closedLoop, openLoop, streamLoop, once } from './lib/load.mjs';
import { ensureBuilt, stopProcess } from './lib/proc.mjs';
import { chatRequest, scriptSim, startGateway, startSimulator, target } from './lib/stack.mjs';
import { fmt, fmtInt, log, numberArg, table } from './lib/stats.mjs';

const argv = process.argv.slice(2);
const minutes = numberArg(argv, 'minutes', 10);
const rate = numberArg(argv, 'rate', 500);
const streams = numberArg(argv, 'streams', 50);
const saturate = argv.includes('--saturate');
const ST_MODEL = 'openai/gpt-6.2-sol'; // scripted below: 100 content events 10 ms apart
const messages = [{ role: 'user', content: 'Hello, how are you today?' }];

function rssMb(pid) {
  const m = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : Number.NaN;
}

/** Least-squares slope of y over x. */
function slope(points) {
  const n = points.length;
  if (n < 2) return Number.NaN;
  const mx = points.reduce((a, p) => a + p[0], 0) / n;
  const my = points.reduce((a, p) => a + p[1], 0) / n;
  let num = 0;
  let den = 0;
  for (const [x, y] of points) {
    num += (x - mx) * (y - my);
    den += (x - mx) ** 2;
  }
  return num / den;
}

ensureBuilt();
const sim = await startSimulator();
await scriptSim(sim.url, ST_MODEL, { chunks: 100, chunkDelayMs: 10 });
const gw = await startGateway('gw-soak', { upstream: sim.url, args: ['--writer-thread', 'on'] });
try {
  const t = target(gw.url);
  const headers = { Authorization: `Bearer ${gw.key}` };
  const req = chatRequest(t, headers, { model: 'openai/gpt-6-luna', messages, max_tokens: 64 });
  const streamReq = chatRequest(t, headers, {
    model: ST_MODEL,
    messages,
    max_tokens: 64,
    stream: true,
    stream_options: { include_usage: true },
  });
  const first = await once(t, req);
  if (first.status !== 200) throw new Error(`gateway: ${first.status} ${first.text.slice(0, 200)}`);
  const what = saturate ? 'saturated (closed loop, 50 connections)' : `${rate} req/s beside ${streams} streams`;
  log(`soak: ${minutes} min, ${what}`);
  const durationMs = minutes * 60_000;
  const samples = [[0, rssMb(gw.pid)]];
  const t0 = performance.now();
  const sampler = setInterval(() => samples.push([(performance.now() - t0) / 60_000, rssMb(gw.pid)]), 5000);
  const [json, st] = saturate
    ? [await closedLoop({ target: t, req, conns: 50, warmupMs: 0, durationMs }), { ok: 0, errors: 0, events: 0 }]
    : await Promise.all([
        openLoop({ target: t, req, rate, conns: 64, warmupMs: 0, durationMs }),
        streamLoop({ target: t, req: streamReq, streams, warmupMs: 0, durationMs }),
      ]);
  clearInterval(sampler);
  await new Promise((r) => setTimeout(r, 15_000));
  const idle = rssMb(gw.pid);
  const perMinute = [];
  for (let m = 1; m <= minutes; m++) {
    const inMinute = samples.filter(([x]) => x > m - 1 && x <= m).map(([, y]) => y);
    if (inMinute.length) perMinute.push([String(m), fmt(Math.max(...inMinute)), fmt(inMinute.at(-1))]);
  }
  const second = samples.filter(([x]) => x >= minutes / 2);
  const peak = Math.max(...samples.map(([, y]) => y));
  process.stdout.write(
    [
      `## Soak: ${minutes} min, ${what} (\`serve\`, writer thread)`,
      '',
      table(['minute', 'RSS max MB', 'RSS at its end MB'], perMinute),
      '',
      `Answered: ${fmtInt(json.ok)} non-streamed (${fmtInt(json.errors)} errors, ${fmt(json.achieved ?? json.rps, 0)} req/s achieved), ${fmtInt(st.ok)} streams (${fmtInt(st.errors)} errors, ${fmtInt(st.events)} events).`,
      `RSS: start ${fmt(samples[0][1])} MB, peak ${fmt(peak)} MB, slope over the second half ${fmt(slope(second), 2)} MB/min (${second.length} samples), after 15 s idle ${fmt(idle)} MB.`,
      '',
    ].join('\n'),
  );
} finally {
  await stopProcess(gw);
  await stopProcess(sim);
}
