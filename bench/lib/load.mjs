// The load generator. A fixed set of keep-alive HTTP/1.1 connections (raw `node:net` sockets with a
// minimal response parser: status line, Content-Length or chunked bodies, no pipelining), driven in
// three modes:
//   closedLoop  — every connection sends its next request as soon as the previous answer ended
//                 (throughput at a fixed concurrency);
//   openLoop    — requests are scheduled at a fixed offered rate and latency is measured from the
//                 scheduled send time, so a slow server cannot hide its queueing (no coordinated
//                 omission); a request waiting for a free connection is still on the clock;
//   streams     — N concurrent SSE requests, closed-loop per connection, recording time to the first
//                 response byte, time to the first content event, and the events received.
// Raw sockets rather than undici/node:http because the generator shares one core with the
// simulator: its per-request cost must stay far below the process under test's (bench/README.md).
import net from 'node:net';
import { pct, sorted } from './stats.mjs';

const CRLFCRLF = Buffer.from('\r\n\r\n');
const DEFAULT_MARKER = Buffer.from('"delta":{"content":');

/** A request serialised once: method, path, headers, body. */
export function buildRequest({ method = 'GET', host, path, headers = {}, body = null }) {
  const bodyBuf =
    body === null
      ? null
      : Buffer.isBuffer(body)
        ? body
        : Buffer.from(typeof body === 'string' ? body : JSON.stringify(body));
  let head = `${method} ${path} HTTP/1.1\r\nHost: ${host}\r\nConnection: keep-alive\r\n`;
  for (const [k, v] of Object.entries(headers)) head += `${k}: ${v}\r\n`;
  if (bodyBuf) head += `Content-Length: ${bodyBuf.length}\r\n`;
  head += '\r\n';
  return bodyBuf ? Buffer.concat([Buffer.from(head, 'latin1'), bodyBuf]) : Buffer.from(head, 'latin1');
}

/**
 * One keep-alive connection. `send(buf, cb)` writes a request and calls back once with
 * `{status, bytes, firstByteAt, doneAt, body?, events, firstContentAt, error?}`.
 */
export class Conn {
  constructor(host, port, opts = {}) {
    this.host = host;
    this.port = port;
    this.keepBody = opts.keepBody ?? false;
    this.scanEvents = opts.scanEvents ?? false;
    this.marker = opts.marker ?? DEFAULT_MARKER;
    this.socket = null;
    this.cb = null;
    this.closed = false;
  }

  connect() {
    return new Promise((resolve, reject) => {
      const s = net.connect({ host: this.host, port: this.port });
      s.setNoDelay(true);
      s.once('connect', () => {
        s.off('error', reject);
        resolve();
      });
      s.once('error', reject);
      s.on('data', (d) => this.onData(d));
      s.on('error', (err) => this.fail(err));
      s.on('close', () => {
        this.socket = null;
        if (this.cb) {
          // A close-delimited body ends here; anything else is a broken response.
          if (this.state === 'body-close') this.finish();
          else this.fail(new Error('connection closed mid-response'));
        }
      });
      this.socket = s;
    });
  }

  async send(buf, cb) {
    if (this.closed) {
      cb({ status: 0, error: 'closed' });
      return;
    }
    if (!this.socket) {
      try {
        await this.connect();
      } catch (err) {
        cb({ status: 0, error: String(err?.message) });
        return;
      }
    }
    this.cb = cb;
    this.state = 'head';
    this.head = null;
    this.status = 0;
    this.bytes = 0;
    this.firstByteAt = 0;
    this.remaining = 0;
    this.sizeLine = '';
    this.crlfLeft = 0;
    this.keepAlive = true;
    this.chunks = this.keepBody ? [] : null;
    this.events = 0;
    this.carryNl = false;
    this.firstContentAt = 0;
    this.markerTail = null;
    this.socket.write(buf);
  }

  close() {
    this.closed = true;
    if (this.socket) this.socket.destroy();
    this.socket = null;
  }

  fail(err) {
    const cb = this.cb;
    this.cb = null;
    if (this.socket) {
      this.socket.destroy();
      this.socket = null;
    }
    if (cb)
      cb({
        status: this.status || 0,
        error: String(err?.message),
        bytes: this.bytes,
        events: this.events,
        firstByteAt: this.firstByteAt,
      });
  }

  finish() {
    const cb = this.cb;
    this.cb = null;
    if (!this.keepAlive && this.socket) {
      this.socket.destroy();
      this.socket = null;
    }
    if (cb) {
      cb({
        status: this.status,
        bytes: this.bytes,
        firstByteAt: this.firstByteAt,
        doneAt: performance.now(),
        events: this.events,
        firstContentAt: this.firstContentAt,
        body: this.chunks ? Buffer.concat(this.chunks) : null,
        headers: this.keepBody ? this.head : null,
      });
    }
  }

  body(slice) {
    if (slice.length === 0) return;
    this.bytes += slice.length;
    if (this.chunks) this.chunks.push(Buffer.from(slice));
    if (!this.scanEvents) return;
    // Events end at a blank line: count non-overlapping "\n\n", also across slice boundaries.
    let prev = this.carryNl ? -1 : -2;
    for (let i = slice.indexOf(10); i >= 0; i = slice.indexOf(10, i + 1)) {
      if (prev === i - 1) {
        this.events++;
        prev = -2;
      } else prev = i;
    }
    this.carryNl = prev === slice.length - 1;
    if (this.firstContentAt === 0) {
      const hay = this.markerTail ? Buffer.concat([this.markerTail, slice]) : slice;
      if (hay.indexOf(this.marker) >= 0) this.firstContentAt = performance.now();
      else this.markerTail = Buffer.from(hay.subarray(Math.max(0, hay.length - this.marker.length + 1)));
    }
  }

  onData(d) {
    if (!this.cb) return;
    if (this.firstByteAt === 0) this.firstByteAt = performance.now();
    let i = 0;
    if (this.state === 'head') {
      const buf = this.head ? Buffer.concat([this.head, d]) : d;
      const end = buf.indexOf(CRLFCRLF);
      if (end < 0) {
        this.head = Buffer.from(buf);
        return;
      }
      const head = buf.toString('latin1', 0, end);
      this.status = Number.parseInt(head.slice(9, 12), 10);
      this.head = this.keepBody ? head : null;
      const cl = /\r\ncontent-length:\s*(\d+)/i.exec(head);
      const chunked = /\r\ntransfer-encoding:\s*chunked/i.test(head);
      this.keepAlive = !/\r\nconnection:\s*close/i.test(head) && !head.startsWith('HTTP/1.0');
      d = buf;
      i = end + 4;
      if (chunked) this.state = 'size';
      else if (cl) {
        this.remaining = Number(cl[1]);
        this.state = 'len';
        if (this.remaining === 0) {
          this.finish();
          return;
        }
      } else if (this.status === 204 || this.status === 304) {
        this.finish();
        return;
      } else {
        this.state = 'body-close';
        this.keepAlive = false;
      }
    }
    if (this.state === 'len') {
      const n = Math.min(this.remaining, d.length - i);
      this.body(d.subarray(i, i + n));
      this.remaining -= n;
      if (this.remaining === 0) this.finish();
      return;
    }
    if (this.state === 'body-close') {
      this.body(d.subarray(i));
      return;
    }
    // Chunked transfer coding.
    while (i < d.length && this.cb) {
      if (this.state === 'size') {
        const nl = d.indexOf(10, i);
        if (nl < 0) {
          this.sizeLine += d.toString('latin1', i);
          return;
        }
        this.sizeLine += d.toString('latin1', i, nl);
        i = nl + 1;
        const size = Number.parseInt(this.sizeLine.trim().split(';')[0], 16);
        this.sizeLine = '';
        if (!Number.isFinite(size)) {
          this.fail(new Error('bad chunk size'));
          return;
        }
        if (size === 0) {
          this.state = 'trailer';
          continue;
        }
        this.remaining = size;
        this.state = 'data';
      } else if (this.state === 'data') {
        const n = Math.min(this.remaining, d.length - i);
        this.body(d.subarray(i, i + n));
        this.remaining -= n;
        i += n;
        if (this.remaining === 0) {
          this.state = 'crlf';
          this.crlfLeft = 2;
        }
      } else if (this.state === 'crlf') {
        const n = Math.min(this.crlfLeft, d.length - i);
        this.crlfLeft -= n;
        i += n;
        if (this.crlfLeft === 0) this.state = 'size';
      } else if (this.state === 'trailer') {
        // Trailer lines until an empty one; we never get trailers, so normally just "\r\n".
        const nl = d.indexOf(10, i);
        if (nl < 0) {
          this.sizeLine += d.toString('latin1', i);
          return;
        }
        const line = this.sizeLine + d.toString('latin1', i, nl);
        this.sizeLine = '';
        i = nl + 1;
        if (line.trim() === '') {
          this.finish();
          return;
        }
      }
    }
  }
}

async function openConns(target, n, opts) {
  const conns = [];
  for (let i = 0; i < n; i++) {
    const c = new Conn(target.host, target.port, opts);
    await c.connect();
    conns.push(c);
  }
  return conns;
}

function sendP(conn, buf) {
  return new Promise((resolve) => conn.send(buf, resolve));
}

/** One request, body kept (for sanity checks). */
export async function once(target, req, opts = {}) {
  const c = new Conn(target.host, target.port, { keepBody: true, scanEvents: true, ...opts });
  await c.connect();
  const t0 = performance.now();
  const r = await sendP(c, req);
  c.close();
  return { ...r, ms: (r.doneAt ?? performance.now()) - t0, text: r.body ? r.body.toString('utf8') : '' };
}

function isOk(r) {
  return !r.error && r.status >= 200 && r.status < 300;
}

/**
 * Closed loop at `conns` concurrency: warm up for `warmupMs`, then measure for `durationMs`.
 * `hooks.start()` runs when the window opens, `hooks.end()` once the window closed and every
 * request in flight has finished (CPU samples are taken there). Bounded: the drain waits at most
 * `drainTimeoutMs`.
 */
export async function closedLoop({
  target,
  req,
  conns = 64,
  warmupMs = 1000,
  durationMs = 5000,
  drainTimeoutMs = 10_000,
  hooks = {},
}) {
  const pool = await openConns(target, conns, {});
  let phase = 'warmup';
  let inflight = 0;
  let ok = 0;
  let errors = 0;
  const lat = [];
  let tStart = 0;
  let drained = null;
  const errorSamples = [];

  const loop = (c) => {
    if (phase === 'stop') {
      if (inflight === 0 && drained) drained();
      return;
    }
    const t0 = performance.now();
    const counted = phase === 'measure';
    inflight++;
    c.send(req, (r) => {
      inflight--;
      if (counted) {
        if (isOk(r)) {
          ok++;
          lat.push(r.doneAt - t0);
        } else {
          errors++;
          if (errorSamples.length < 3) errorSamples.push(r.error ?? `status ${r.status}`);
        }
      }
      loop(c);
    });
  };
  for (const c of pool) loop(c);
  await new Promise((r) => setTimeout(r, warmupMs));
  await hooks.start?.();
  phase = 'measure';
  tStart = performance.now();
  await new Promise((r) => setTimeout(r, durationMs));
  phase = 'stop';
  const tStop = performance.now();
  await new Promise((resolve) => {
    drained = resolve;
    if (inflight === 0) resolve();
    setTimeout(resolve, drainTimeoutMs);
  });
  const tEnd = performance.now();
  await hooks.end?.();
  for (const c of pool) c.close();
  const s = sorted(lat);
  return {
    ok,
    errors,
    errorSamples,
    windowMs: tEnd - tStart,
    issueMs: tStop - tStart,
    rps: ok / ((tEnd - tStart) / 1000),
    p50: pct(s, 50),
    p99: pct(s, 99),
  };
}

/**
 * Open loop: `rate` requests/s for `durationMs` after a warm-up at the same rate. Latency is taken
 * from the scheduled send time (`p50`, `p99`) and, for reference, from the actual write (`svcP50`).
 * A request that finds no idle connection waits in a queue, on the clock.
 */
export async function openLoop({
  target,
  req,
  rate = 1000,
  conns = 64,
  warmupMs = 1000,
  durationMs = 5000,
  drainTimeoutMs = 10_000,
  hooks = {},
}) {
  const pool = await openConns(target, conns, {});
  const idle = [...pool];
  const queue = [];
  const lat = [];
  const svc = [];
  const latAt = [];
  let ok = 0;
  let errors = 0;
  let late = 0;
  let inflight = 0;
  const interval = 1000 / rate;
  const errorSamples = [];

  const dispatch = (job) => {
    const c = idle.pop();
    if (!c) {
      queue.push(job);
      return;
    }
    const sentAt = performance.now();
    inflight++;
    c.send(req, (r) => {
      inflight--;
      if (job.counted) {
        if (isOk(r)) {
          ok++;
          lat.push(r.doneAt - job.at);
          latAt.push(job.at);
          svc.push(r.doneAt - sentAt);
        } else {
          errors++;
          if (errorSamples.length < 3) errorSamples.push(r.error ?? `status ${r.status}`);
        }
      }
      idle.push(c);
      const next = queue.shift();
      if (next) dispatch(next);
    });
  };

  const run = (ms, counted) =>
    new Promise((resolve) => {
      const t0 = performance.now();
      let i = 0;
      const total = Math.floor((ms / 1000) * rate);
      const tick = () => {
        const now = performance.now();
        while (i < total && t0 + i * interval <= now) {
          dispatch({ at: t0 + i * interval, counted });
          i++;
        }
        if (i >= total) resolve();
        else setTimeout(tick, Math.max(0, Math.min(1, t0 + i * interval - performance.now())));
      };
      tick();
    });

  await run(warmupMs, false);
  await hooks.start?.();
  const tStart = performance.now();
  await run(durationMs, true);
  await new Promise((resolve) => {
    const t0 = performance.now();
    const check = () => {
      if ((inflight === 0 && queue.length === 0) || performance.now() - t0 > drainTimeoutMs) resolve();
      else setTimeout(check, 2);
    };
    check();
  });
  const tEnd = performance.now();
  await hooks.end?.();
  late = queue.length + inflight;
  for (const c of pool) c.close();
  const s = sorted(lat);
  const sv = sorted(svc);
  // The window second by second (by scheduled send time): where in it a tail happened. Failed
  // requests are not in it (they are counted in `errors`).
  const lastSecond = Math.max(0, Math.ceil(durationMs / 1000) - 1);
  const seconds = [];
  for (let k = 0; k < lat.length; k++) {
    const sec = Math.min(lastSecond, Math.max(0, Math.floor((latAt[k] - tStart) / 1000)));
    (seconds[sec] ??= []).push(lat[k]);
  }
  const bySecond = Array.from({ length: lastSecond + 1 }, (_, i) => {
    const ys = sorted(seconds[i] ?? []);
    return { n: ys.length, p50: pct(ys, 50), p99: pct(ys, 99), max: ys.length ? ys[ys.length - 1] : NaN };
  });
  return {
    ok,
    errors: errors + late,
    bySecond,
    errorSamples,
    offered: rate,
    achieved: ok / ((tEnd - tStart) / 1000),
    windowMs: tEnd - tStart,
    p50: pct(s, 50),
    p90: pct(s, 90),
    p95: pct(s, 95),
    p99: pct(s, 99),
    p999: pct(s, 99.9),
    max: s.length ? s[s.length - 1] : NaN,
    svcP50: pct(sv, 50),
    svcP99: pct(sv, 99),
  };
}

/**
 * `streams` concurrent SSE requests, each connection starting its next stream when one ends.
 * Per stream: time to first response byte, time to the first content event (first body bytes
 * containing the marker), events received. `events` totals every event received in the window.
 */
export async function streamLoop({
  target,
  req,
  streams = 250,
  warmupMs = 2000,
  durationMs = 5000,
  drainTimeoutMs = 30_000,
  hooks = {},
  expectEvents = null,
}) {
  const pool = [];
  for (let i = 0; i < streams; i++) {
    const c = new Conn(target.host, target.port, { scanEvents: true });
    await c.connect();
    pool.push(c);
  }
  let phase = 'warmup';
  let inflight = 0;
  let ok = 0;
  let errors = 0;
  let short = 0;
  let events = 0;
  const ttfb = [];
  const ttfc = [];
  const dur = [];
  const errorSamples = [];
  let drained = null;

  const loop = (c) => {
    if (phase === 'stop') {
      if (inflight === 0 && drained) drained();
      return;
    }
    const counted = phase === 'measure';
    const t0 = performance.now();
    inflight++;
    c.send(req, (r) => {
      inflight--;
      if (counted) {
        events += r.events ?? 0;
        if (isOk(r)) {
          ok++;
          ttfb.push(r.firstByteAt - t0);
          if (r.firstContentAt) ttfc.push(r.firstContentAt - t0);
          dur.push(r.doneAt - t0);
          if (expectEvents !== null && r.events !== expectEvents) short++;
        } else {
          errors++;
          if (errorSamples.length < 3) errorSamples.push(r.error ?? `status ${r.status}`);
        }
      }
      loop(c);
    });
  };
  // Stagger the starts over one chunk interval-ish so streams do not tick in lockstep.
  for (let i = 0; i < pool.length; i++) setTimeout(() => loop(pool[i]), (i * 20) / pool.length);
  await new Promise((r) => setTimeout(r, warmupMs));
  await hooks.start?.();
  phase = 'measure';
  const tStart = performance.now();
  await new Promise((r) => setTimeout(r, durationMs));
  phase = 'stop';
  await new Promise((resolve) => {
    drained = resolve;
    if (inflight === 0) resolve();
    setTimeout(resolve, drainTimeoutMs);
  });
  const tEnd = performance.now();
  await hooks.end?.();
  for (const c of pool) c.close();
  const a = sorted(ttfb);
  const b = sorted(ttfc);
  const d = sorted(dur);
  return {
    ok,
    errors,
    errorSamples,
    short,
    events,
    windowMs: tEnd - tStart,
    eventsPerSec: events / ((tEnd - tStart) / 1000),
    ttfbP50: pct(a, 50),
    ttfbP99: pct(a, 99),
    ttfcP50: pct(b, 50),
    ttfcP99: pct(b, 99),
    ttfcCount: b.length,
    durP50: pct(d, 50),
  };
}
