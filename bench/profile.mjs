// CPU profiles of the gateway under the proxy benchmark's loads (node --cpu-prof on the compiled
// gateway, pinned to core 0; simulator and load generator on core 1):
//   json    closed loop, 64 connections, non-streaming chat completions (instant simulator answer)
//   stream  250 concurrent SSE streams of 50 content events 20 ms apart
// Each load runs against a fresh gateway process, which is then stopped (SIGTERM → clean exit, so
// the profile is written). Prints the top self-time functions (file:line in src/ via source maps),
// self time per folder/package, and inclusive time of src/ functions, each also per request/event.
//
// With --with-passthrough the bare passthrough is profiled under the same two loads too, and a
// side-by-side table of self time per folder/package (µs per request / per event) is printed.
// With --telemetry the gateway runs with metrics and the access log on, and the time of every sample
// inside telemetry code (src/telemetry/ but the request-log writer, prom-client, @opentelemetry/*,
// and all they call, e.g. the access log's write) is reported per request / per event.
//
// With --writer-thread the gateway commits on the SQLite writer thread, as `serve` does (the profile
// is the serving thread's; the writer thread's samples are not in it).
//
//   node bench/run.js profile [--quick] [--with-passthrough] [--telemetry] [--writer-thread]
import { mkdirSync } from 'node:fs';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { summarise } from './lib/cpuprofile.mjs';
import { closedLoop, once, streamLoop } from './lib/load.mjs';
import { RESULTS_DIR, ensureBuilt, stopProcess } from './lib/proc.mjs';
import { chatRequest, scriptSim, startGateway, startSimulator, target } from './lib/stack.mjs';
import { startNode } from './lib/proc.mjs';
import { fmt, fmtInt, log, machineInfo, parseFlags, saveResult, table } from './lib/stats.mjs';

const flags = parseFlags(process.argv.slice(2));
const P = flags.quick ? { durMs: 5000, streams: 200 } : { durMs: 15_000, streams: 250 };
const messages = [{ role: 'user', content: 'Hello, how are you today?' }];
const NS_BODY = { model: 'openai/gpt-6-luna', messages, max_tokens: 64 };
const ST_BODY = {
  model: 'openai/gpt-6.2-sol',
  messages,
  max_tokens: 64,
  stream: true,
  stream_options: { include_usage: true },
};

ensureBuilt();
const stamp = new Date().toISOString().replace(/[:.]/g, '-');
const dir = join(RESULTS_DIR, 'profiles', stamp);
mkdirSync(dir, { recursive: true });
const sim = await startSimulator();
await scriptSim(sim.url, 'openai/gpt-6.2-sol', { chunks: 50, chunkDelayMs: 20 });

const withPassthrough = process.argv.includes('--with-passthrough');
const withTelemetry = process.argv.includes('--telemetry');
const withWriterThread = process.argv.includes('--writer-thread');
const UNDER = {
  telemetry: (file) =>
    (file.startsWith('src/telemetry/') && file !== 'src/telemetry/request-log-observer.ts') ||
    file.startsWith('node_modules/prom-client/') ||
    file.startsWith('node_modules/@opentelemetry/'),
};
const results = {};
const passthrough = {};
for (const [who, phase] of [
  ['gateway', 'json'],
  ['gateway', 'stream'],
  ...(withPassthrough
    ? [
        ['passthrough', 'json'],
        ['passthrough', 'stream'],
      ]
    : []),
]) {
  const profArgs = ['--cpu-prof', '--cpu-prof-dir', dir, '--cpu-prof-name', `${who}-${phase}.cpuprofile`];
  const gw =
    who === 'gateway'
      ? await startGateway(`gateway-prof-${phase}`, {
          upstream: sim.url,
          nodeArgs: profArgs,
          args: [
            ...(withTelemetry ? ['--metrics', 'on', '--access-log', 'on'] : []),
            ...(withWriterThread ? ['--writer-thread', 'on'] : []),
          ],
        })
      : await startNode(`passthrough-prof-${phase}`, {
          core: 0,
          nodeArgs: profArgs,
          args: ['bench/passthrough.mjs', '--upstream', sim.url],
        });
  const t = target(gw.url);
  const auth = { Authorization: `Bearer ${gw.key ?? 'sk-bench-upstream'}` };
  const req = chatRequest(t, auth, phase === 'json' ? NS_BODY : ST_BODY);
  const ok = await once(t, req);
  if (ok.status !== 200)
    throw new Error(`profile ${phase}: sanity request failed ${ok.status} ${ok.text.slice(0, 200)}`);
  log(`profile ${phase}: loading for ${P.durMs / 1000} s`);
  const win = {};
  const hooks = {
    start: () => {
      win.fromUs = Number(process.hrtime.bigint() / 1000n);
    },
    end: () => {
      win.toUs = Number(process.hrtime.bigint() / 1000n);
    },
  };
  const r =
    phase === 'json'
      ? await closedLoop({ target: t, req, conns: 64, warmupMs: 1000, durationMs: P.durMs, hooks })
      : await streamLoop({ target: t, req, streams: P.streams, warmupMs: 2000, durationMs: P.durMs, hooks });
  await stopProcess(gw, 20_000);
  const file = readdirSync(dir).find((f) => f === `${who}-${phase}.cpuprofile`);
  if (!file) throw new Error(`profile ${phase}: no profile written in ${dir}`);
  const units = phase === 'json' ? r.ok : r.events;
  const s = summarise(join(dir, file), { window: win, under: UNDER });
  const entry = { load: r, units, unit: phase === 'json' ? 'request' : 'event', summary: s };
  if (who === 'gateway') results[phase] = entry;
  else passthrough[phase] = entry;
}
await stopProcess(sim);

const out = [`## gateway CPU profile (${flags.quick ? 'quick' : 'full'})`, ''];
for (const [phase, x] of Object.entries(results)) {
  const s = x.summary;
  // Only samples inside the measurement window count (start-up and warm-up excluded).
  const perUnit = (ms) => fmt((ms * 1000) / x.units, 2);
  out.push(
    `### ${phase}: ${fmtInt(x.units)} ${x.unit}s measured (${phase === 'json' ? `${fmtInt(x.load.rps)} req/s` : `${fmtInt(x.load.eventsPerSec)} events/s`}); profile busy ${fmt(s.busyMs)} ms of ${fmt(s.durationMs)} ms in the window`,
  );
  out.push('');
  if (withTelemetry) {
    out.push(
      `Telemetry (metrics + access log on): ${perUnit(s.underMs.telemetry)} µs/${x.unit} inside telemetry code, of ${perUnit(s.busyMs)} µs/${x.unit} busy: ${fmt((100 * s.underMs.telemetry) / s.busyMs, 2)} % (${fmt((100 * s.underMs.telemetry) / (s.busyMs - s.underMs.telemetry), 2)} % added to the rest).`,
    );
    out.push('');
  }
  out.push('Top self time:');
  out.push('');
  out.push(
    table(
      ['function', 'where', 'self ms', '% busy', `µs/${x.unit}`],
      s.topSelf.map((e) => {
        const sp = e.key.indexOf(' ');
        return [e.key.slice(0, sp), e.key.slice(sp + 1), fmt(e.ms), fmt(e.pctBusy), perUnit(e.ms)];
      }),
    ),
  );
  out.push('');
  out.push('Self time by folder / package:');
  out.push('');
  out.push(
    table(
      ['bucket', 'self ms', '% busy', `µs/${x.unit}`],
      s.byBucket.map((e) => [e.key, fmt(e.ms), fmt(e.pctBusy), perUnit(e.ms)]),
    ),
  );
  out.push('');
  out.push('Inclusive time of src/ functions:');
  out.push('');
  out.push(
    table(
      ['function', 'file', 'incl ms', '% busy', `µs/${x.unit}`],
      s.topInclusiveSrc.slice(0, 20).map((e) => {
        const sp = e.key.indexOf(' ');
        return [e.key.slice(0, sp), e.key.slice(sp + 1), fmt(e.ms), fmt(e.pctBusy), perUnit(e.ms)];
      }),
    ),
  );
  out.push('');
}
if (withPassthrough) {
  for (const phase of ['json', 'stream']) {
    const g = results[phase];
    const p = passthrough[phase];
    const per = (x, key) => {
      const e = x.summary.byBucket.find((b) => b.key === key);
      return e ? (e.ms * 1000) / x.units : 0;
    };
    const keys = [...new Set([...g.summary.byBucket.map((b) => b.key), ...p.summary.byBucket.map((b) => b.key)])];
    keys.sort((a, b) => per(g, b) - per(p, b) - (per(g, a) - per(p, a)));
    out.push(
      `### ${phase}: self time per ${g.unit}, gateway vs passthrough (busy ${fmt((g.summary.busyMs * 1000) / g.units, 1)} vs ${fmt((p.summary.busyMs * 1000) / p.units, 1)} µs/${g.unit})`,
    );
    out.push('');
    out.push(
      table(
        ['bucket', `gateway µs/${g.unit}`, `passthrough µs/${g.unit}`, 'difference'],
        keys.slice(0, 20).map((k) => [k, fmt(per(g, k), 2), fmt(per(p, k), 2), fmt(per(g, k) - per(p, k), 2)]),
      ),
    );
    out.push('');
  }
}
out.push(`Profiles: ${dir}`);
process.stdout.write(out.join('\n') + '\n');
const file = saveResult('profile', {
  bench: 'profile',
  params: P,
  telemetry: withTelemetry,
  machine: machineInfo(),
  results,
  passthrough,
});
log(`saved ${file}`);
