// Where the serving thread's bytes per request are allocated: `serve` as it runs a database file (the
// writer thread on) under a closed loop of non-streamed chat completions, V8's sampling heap profiler
// on the serving thread for the measured window only (servers/gateway.mjs --alloc-prof: objects
// collected since are counted too, so the figures are allocation, not retention). Prints the bytes
// allocated per request in all, the top allocation sites (function, src file:line through the build's
// source maps) and the bytes per folder or package, each per request. Pooling pays only where one
// site or one folder allocates a large share; this shows whether one does.
//
//   node bench/run.js alloc-sites [--seconds S] [--conns N | --rate R] [--top N] [--survivors]
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bucketOf, locate } from './lib/cpuprofile.mjs';
import { closedLoop, once, openLoop } from './lib/load.mjs';
import { ensureBuilt, stopProcess } from './lib/proc.mjs';
import { chatRequest, startGateway, startSimulator, target } from './lib/stack.mjs';
import { fmt, fmtInt, log, numberArg, parseFlags, table } from './lib/stats.mjs';

const argv = process.argv.slice(2);
const flags = parseFlags(argv);
const seconds = numberArg(argv, 'seconds', 5);
const conns = numberArg(argv, 'conns', 50);
const top = numberArg(argv, 'top', 25);
/** 0: closed loop (every connection busy); else an open loop at this many requests a second. */
const rate = numberArg(argv, 'rate', 0);
const BODY = {
  model: 'openai/gpt-6-luna', // the continuous benchmark's instant default answer
  messages: [{ role: 'user', content: 'Hello, how are you today?' }],
  max_tokens: 64,
};

/** Resolves with the next `{"allocProf":…}` line the gateway prints. */
function written(proc) {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('the gateway wrote no allocation profile')), 30_000);
    let buf = '';
    const onData = (d) => {
      buf += d.toString('utf8');
      const line = buf.split('\n').find((l) => l.startsWith('{"allocProf":'));
      if (!line) return;
      clearTimeout(timer);
      proc.child.stdout.off('data', onData);
      resolve(JSON.parse(line).allocProf.written);
    };
    proc.child.stdout.on('data', onData);
  });
}

/** Self bytes per allocation site and per bucket, over the whole sampled tree. */
function sites(profile) {
  const bySite = new Map();
  const byBucket = new Map();
  let total = 0;
  const walk = (node) => {
    if (node.selfSize > 0) {
      const at = locate(node.callFrame);
      const fn = node.callFrame.functionName || '(anonymous)';
      const key = `${fn}\t${at.where}`;
      bySite.set(key, (bySite.get(key) ?? 0) + node.selfSize);
      const bucket = bucketOf(at.file, fn);
      byBucket.set(bucket, (byBucket.get(bucket) ?? 0) + node.selfSize);
      total += node.selfSize;
    }
    for (const child of node.children) walk(child);
  };
  walk(profile.head);
  return { total, bySite, byBucket };
}

ensureBuilt();
const dir = mkdtempSync(join(tmpdir(), 'pi-alloc-'));
const file = join(dir, 'serving-thread.heapprofile');
const sim = await startSimulator();
const survivors = argv.includes('--survivors');
const gw = await startGateway('gw-alloc', {
  upstream: sim.url,
  args: ['--writer-thread', 'on', '--alloc-prof', file, ...(survivors ? ['--alloc-survivors', 'on'] : [])],
});
try {
  const t = target(gw.url);
  const req = chatRequest(t, { Authorization: `Bearer ${gw.key}` }, BODY);
  const first = await once(t, req);
  if (first.status !== 200) throw new Error(`gateway: ${first.status} ${first.text.slice(0, 200)}`);
  log(`alloc-sites: ${rate > 0 ? `${rate} req/s` : `${conns} connections`}, 2 s warm-up, ${seconds} s sampled`);
  const profile = written(gw);
  const loop = {
    target: t,
    req,
    conns,
    warmupMs: 2000,
    durationMs: seconds * 1000,
    hooks: { start: () => process.kill(gw.pid, 'SIGUSR2'), end: () => process.kill(gw.pid, 'SIGUSR2') },
  };
  const r = rate > 0 ? await openLoop({ ...loop, rate }) : await closedLoop(loop);
  const rps = r.rps ?? rate;
  const path = await profile;
  if (!existsSync(path)) throw new Error(`no profile at ${path}`);
  const s = sites(JSON.parse(readFileSync(path, 'utf8')));
  const per = (bytes) => fmtInt(bytes / r.ok);
  const share = (bytes) => `${fmt((bytes / s.total) * 100, 1)} %`;
  const siteRows = [...s.bySite]
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)
    .map(([key, bytes]) => [...key.split('\t'), per(bytes), share(bytes)]);
  const bucketRows = [...s.byBucket]
    .sort((a, b) => b[1] - a[1])
    .slice(0, 15)
    .map(([bucket, bytes]) => [bucket, per(bytes), share(bytes)]);
  process.stdout.write(
    [
      `## Allocation per request, serving thread (${flags.quick ? 'quick' : `${seconds} s`})`,
      '',
      `${fmtInt(r.ok)} requests in the window (${fmtInt(rps)} req/s, ${rate > 0 ? 'open loop' : `${conns} connections`}): ${per(s.total)} bytes ${survivors ? 'that survived a scavenge' : 'allocated'} per request (sampled every 1 KiB on average).`,
      '',
      table(['function', 'where', 'bytes/request', 'share'], siteRows),
      '',
      table(['folder / package', 'bytes/request', 'share'], bucketRows),
      '',
    ].join('\n'),
  );
} finally {
  await stopProcess(gw);
  await stopProcess(sim);
  rmSync(dir, { recursive: true, force: true });
}
