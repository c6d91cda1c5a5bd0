// Summarises a V8 .cpuprofile (node --cpu-prof): self time per function (file:line, mapped from
// dist/*.js back to src/*.ts through the build's source maps), self time per file/package, and
// inclusive time of selected functions. Used by bench/profile.mjs.
import { existsSync, readFileSync } from 'node:fs';
import { SourceMap } from 'node:module';
import { relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { TREE as ROOT } from './proc.mjs';

const maps = new Map();

function sourceMapFor(file) {
  if (maps.has(file)) return maps.get(file);
  let sm = null;
  const mapFile = `${file}.map`;
  if (file.includes('/dist/') && existsSync(mapFile)) {
    try {
      sm = new SourceMap(JSON.parse(readFileSync(mapFile, 'utf8')));
    } catch {
      sm = null;
    }
  }
  maps.set(file, sm);
  return sm;
}

function pathOf(url) {
  if (!url) return '';
  if (url.startsWith('file://')) return fileURLToPath(url);
  return url;
}

/** "src/api/inference.ts:123" for dist files, else a shortened path; line is 1-based. */
export function locate(callFrame) {
  const file = pathOf(callFrame.url);
  if (!file) return { file: '', line: 0, where: '(native)' };
  const sm = sourceMapFor(file);
  if (sm && callFrame.lineNumber >= 0) {
    const e = sm.findEntry(callFrame.lineNumber, Math.max(0, callFrame.columnNumber));
    if (e?.originalSource) {
      const src = pathOf(
        e.originalSource.startsWith('file:') ? e.originalSource : new URL(e.originalSource, `file://${file}`).href,
      );
      const rel = src.includes('/node_modules/')
        ? src.replace(/^.*node_modules\//, 'node_modules/')
        : relative(ROOT, src);
      return { file: rel, line: e.originalLine + 1, where: `${rel}:${e.originalLine + 1}` };
    }
  }
  let rel = file.startsWith(ROOT) ? relative(ROOT, file) : file;
  rel = rel.replace(/^.*node_modules\//, 'node_modules/');
  return { file: rel, line: callFrame.lineNumber + 1, where: `${rel}:${callFrame.lineNumber + 1}` };
}

/** Which bucket a file belongs to: the gateway's own folders, a package, node internals, native. */
export function bucketOf(file, functionName) {
  if (!file) {
    if (functionName === '(garbage collector)') return '(garbage collector)';
    if (functionName === '(program)' || functionName === '(idle)') return functionName;
    return '(native: uWS / V8 builtins / C++)';
  }
  if (file.startsWith('src/')) return file.split('/').slice(0, 2).join('/') + '/';
  if (file.startsWith('node_modules/')) {
    const parts = file.split('/');
    return parts[1].startsWith('@') ? `${parts[1]}/${parts[2]}` : parts[1];
  }
  if (file.startsWith('node:')) return file.split('/').slice(0, 2).join('/');
  if (file.startsWith('bench/')) return 'bench/';
  return file;
}

/**
 * `window` = {fromUs, toUs} on the monotonic clock (process.hrtime, which V8's profiler timestamps
 * share on Linux): only samples inside it count, so start-up and warm-up are left out.
 * `under` = {name: (file) => boolean}: for each name, the time of samples with at least one frame
 * whose file matches (everything that code did, including what it called), counted once per sample.
 */
export function summarise(profilePath, { top = 25, window = null, under = {} } = {}) {
  const prof = JSON.parse(readFileSync(profilePath, 'utf8'));
  const byId = new Map();
  const parent = new Map();
  for (const n of prof.nodes) {
    byId.set(n.id, n);
    for (const c of n.children ?? []) parent.set(c, n.id);
  }
  const self = new Map(); // node id → µs
  const { samples, timeDeltas } = prof;
  let ts = prof.startTime;
  let inWindow = 0;
  let first = Infinity;
  let last = -Infinity;
  for (let i = 0; i < samples.length; i++) {
    ts += timeDeltas[i] ?? 0;
    if (window && (ts < window.fromUs || ts > window.toUs)) continue;
    inWindow++;
    first = Math.min(first, ts);
    last = Math.max(last, ts);
    const dt = timeDeltas[i + 1] ?? 0;
    self.set(samples[i], (self.get(samples[i]) ?? 0) + Math.max(0, dt));
  }
  if (window && inWindow === 0)
    throw new Error(`${profilePath}: no sample inside the measurement window (clock mismatch?)`);
  let total = 0;
  let idle = 0;
  const fn = new Map();
  const bucket = new Map();
  const incl = new Map();
  const underMs = Object.fromEntries(Object.keys(under).map((k) => [k, 0]));
  const locCache = new Map();
  const loc = (n) => {
    let l = locCache.get(n.id);
    if (!l) {
      const where = locate(n.callFrame);
      l = { ...where, name: n.callFrame.functionName || '(anonymous)' };
      locCache.set(n.id, l);
    }
    return l;
  };
  for (const [id, us] of self) {
    const n = byId.get(id);
    total += us;
    if (n.callFrame.functionName === '(idle)') {
      idle += us;
      continue;
    }
    const l = loc(n);
    const key = `${l.name} ${l.where}`;
    fn.set(key, (fn.get(key) ?? 0) + us);
    const b = bucketOf(l.file, l.name);
    bucket.set(b, (bucket.get(b) ?? 0) + us);
    // Inclusive: every distinct function on the stack gets this sample's time once.
    const seen = new Set();
    const hit = new Set();
    for (let cur = id; cur !== undefined; cur = parent.get(cur)) {
      const cn = byId.get(cur);
      const cl = loc(cn);
      for (const [name, test] of Object.entries(under)) {
        if (!hit.has(name) && test(cl.file)) {
          hit.add(name);
          underMs[name] += us / 1000;
        }
      }
      if (!cl.file.startsWith('src/')) continue;
      const k = `${cl.name} ${cl.file}`;
      if (seen.has(k)) continue;
      seen.add(k);
      incl.set(k, (incl.get(k) ?? 0) + us);
    }
  }
  const busy = total - idle;
  const rank = (m) =>
    [...m.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([k, us]) => ({ key: k, ms: us / 1000, pctBusy: (100 * us) / busy }));
  return {
    file: profilePath,
    durationMs: window ? (last - first) / 1000 : (prof.endTime - prof.startTime) / 1000,
    windowed: window !== null,
    busyMs: busy / 1000,
    idleMs: idle / 1000,
    topSelf: rank(fn),
    byBucket: rank(bucket),
    topInclusiveSrc: rank(incl),
    underMs,
  };
}
