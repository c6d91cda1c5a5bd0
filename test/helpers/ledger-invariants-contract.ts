// The ledger's invariants under a randomized concurrent workload over HTTP, on either store: successes
// on three protocols, streams, provider errors, failovers, cut streams, client aborts (cancellable
// and not), 402s from a small wallet, 429s and validation errors, all at once. While it runs and
// after it, read in one consistent read of the store: available = credits − settlements − open
// holds, balance = credits − settlements, `ledger verify` passes; every X-Pi-Trace-Id maps to at
// most one settle row, every hold is closed once, each fully received 200 settled exactly once, and
// refusals settled nothing. One suite, run on the embedded store and on a fleet node's PostgreSQL
// (test/spec/admission/ledger-invariants.test.ts).
import type { Test } from 'tap';
import type { RequestLogEntry } from '../../src/store/types.ts';
import { USER } from './admission.ts';
import { seededRandom } from './prng.ts';

const SEED = Number(process.env['PI_TEST_SEED'] ?? 20260115);
const REQUESTS = 240;
const CONCURRENCY = 24;

/** A gateway over one store, with the fixture config (workspaces open, cheap, slow) and the
 *  simulator upstream, first-byte and stream-idle timeouts of a second. */
export interface WorkloadRig {
  url: string;
  /** An API key of the workspace (plaintext). */
  key(workspace: string): Promise<string>;
  /** Credits the workspace (decimal USD) through the store. */
  credit(workspace: string, usd: string): Promise<void>;
  /** Every wallet against its ledger and open holds, in one consistent read. */
  snapshot(): Promise<Snapshot[]>;
  /** Every ledger row, oldest first. */
  ledgerRows(): Promise<{ trace_id: string; kind: string; amount_nano: bigint }[]>;
  /** Open holds of every wallet together. */
  openHolds(): Promise<number>;
  verify(): Promise<{ ok: boolean; problems: string[] }>;
  /** Every request-log row, once what the log buffers is written. */
  logRows(): Promise<RequestLogEntry[]>;
}

type Make = (t: Test) => Promise<WorkloadRig>;

/** Whether every hold is closed within `ms` (settlements may land after the client's last byte). */
async function allClosed(s: WorkloadRig, ms: number): Promise<boolean> {
  const until = performance.now() + ms;
  for (;;) {
    if ((await s.openHolds()) === 0) return true;
    if (performance.now() > until) return false;
    await new Promise((r) => setTimeout(r, 5));
  }
}

interface Outcome {
  kind: string;
  workspace: string;
  status: number;
  trace: string;
  /** The client read the whole body (not aborted, not cut by the gateway). */
  complete: boolean;
  aborted: boolean;
}

type Plan = {
  kind: string;
  workspace: string;
  path: string;
  body: Record<string, unknown> | string;
  abortAfterChunks?: number;
};

function plans(random: () => number): Plan[] {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)] as T;
  const chat = (extra: Record<string, unknown>) => ({
    model: 'acme/chat-small',
    messages: USER,
    max_tokens: 64,
    ...extra,
  });
  const kinds: (() => Plan)[] = [
    () => ({
      kind: 'chat',
      workspace: 'open',
      path: '/v1/chat/completions',
      body: chat({
        stream: random() < 0.5,
        sim: { usage: { prompt: 20 + Math.floor(random() * 50), completion: 1 + Math.floor(random() * 60) } },
      }),
    }),
    () => ({
      kind: 'responses',
      workspace: 'open',
      path: '/v1/responses',
      body: {
        model: 'acme/chat-small',
        input: 'hi',
        max_output_tokens: 64,
        stream: random() < 0.5,
        provider: { only: ['alpha', 'beta'] },
      },
    }),
    () => ({
      kind: 'messages',
      workspace: 'open',
      path: '/v1/messages',
      body: { model: 'beta-labs/sonnet-ish', max_tokens: 64, messages: USER, stream: random() < 0.5 },
    }),
    () => ({
      kind: 'provider-400',
      workspace: 'open',
      path: '/v1/chat/completions',
      body: chat({ provider: { only: ['alpha'] }, stream: random() < 0.5, sim: { status: 400 } }),
    }),
    () => ({
      kind: 'all-503',
      workspace: 'open',
      path: '/v1/chat/completions',
      body: chat({ provider: { only: ['alpha', 'gamma'] }, sim: { status: 503 } }),
    }),
    () => ({
      kind: 'no-answer',
      workspace: 'open',
      path: '/v1/chat/completions',
      body: chat({ provider: { only: ['alpha'] }, stream: true, sim: { reset: 'before_head' } }),
    }),
    () => ({
      kind: 'failover',
      workspace: 'open',
      path: '/v1/chat/completions',
      body: chat({
        provider: { order: ['alpha', 'gamma'], only: ['alpha', 'gamma'] },
        stream: random() < 0.5,
        sim: { by_model: { 'small-v1': { status: 502 }, 'small-gamma': { chunks: 4 } } },
      }),
    }),
    () => ({
      kind: 'cut-stream',
      workspace: 'open',
      path: '/v1/chat/completions',
      body: chat({ provider: { only: ['alpha'] }, stream: true, sim: { chunks: 6, resetAfterChunks: 2 } }),
    }),
    () => ({
      kind: 'abort',
      workspace: 'open',
      path: '/v1/chat/completions',
      // alpha stops billing on cancellation; beta does not (charged the hold).
      body: chat({
        provider: { only: [pick(['alpha', 'beta'])] },
        stream: true,
        sim: { chunks: 30, chunkDelayMs: 15 },
      }),
      abortAfterChunks: 1 + Math.floor(random() * 3),
    }),
    () => ({
      kind: 'poor',
      workspace: 'cheap',
      path: '/v1/chat/completions',
      body: chat({ provider: { only: ['alpha'] }, sim: { ttfbMs: Math.floor(random() * 40) } }),
    }),
    () => ({
      kind: 'slow-rpm',
      workspace: 'slow',
      path: '/v1/chat/completions',
      body: chat({ provider: { only: ['alpha'] } }),
    }),
    () => ({
      kind: 'invalid',
      workspace: 'open',
      path: '/v1/chat/completions',
      body: pick([
        '{"model":',
        JSON.stringify(chat({ preset: 'x' })),
        JSON.stringify({ model: 'nobody/x', messages: USER }),
      ]),
    }),
  ];
  return Array.from({ length: REQUESTS }, () => pick(kinds)());
}

async function send(url: string, keys: Record<string, string>, p: Plan): Promise<Outcome> {
  const ac = new AbortController();
  const res = await fetch(`${url}${p.path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${keys[p.workspace]}`, 'content-type': 'application/json' },
    body: typeof p.body === 'string' ? p.body : JSON.stringify(p.body),
    signal: ac.signal,
  });
  const trace = res.headers.get('x-pi-trace-id') ?? '';
  const out: Outcome = {
    kind: p.kind,
    workspace: p.workspace,
    status: res.status,
    trace,
    complete: false,
    aborted: false,
  };
  const reader = (res.body as ReadableStream<Uint8Array>).getReader();
  let chunks = 0;
  let text = '';
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      text += Buffer.from(value).toString('utf8');
      chunks++;
      if (p.abortAfterChunks !== undefined && res.status === 200 && chunks >= p.abortAfterChunks) {
        out.aborted = true;
        ac.abort();
        break;
      }
    }
    // A stream the gateway had to cut ends with its error event instead of the protocol's end.
    out.complete = !out.aborted && !text.includes('upstream_stream_error');
  } catch {
    out.complete = false;
  }
  return out;
}

/** One wallet against its ledger and open holds, read in one consistent read. */
export interface Snapshot {
  ws: string;
  credits: bigint;
  settles: bigint;
  openHolds: bigint;
  balance: bigint;
  held: bigint;
}

export function ledgerInvariantsContract(t: Test, make: Make): void {
  t.test(`randomized concurrent workload keeps the ledger exact (seed ${SEED})`, (t) => workload(t, make));
}

async function workload(t: Test, make: Make): Promise<void> {
  const s = await make(t);
  const keys = { open: await s.key('open'), cheap: await s.key('cheap'), slow: await s.key('slow') };
  await s.credit('open', '50');
  await s.credit('open', '0.5');
  // Worth about three concurrent chat holds (~0.000137 USD each): some of the `poor` ones get 402.
  await s.credit('cheap', '0.0004');
  await s.credit('slow', '1');
  const creditsBefore = (await s.ledgerRows()).filter((r) => r.kind === 'credit');

  const work = plans(seededRandom(SEED));
  const outcomes: Outcome[] = [];
  const samples: Snapshot[][] = [];
  let next = 0;
  let running = true;
  const sampler = (async () => {
    while (running) {
      samples.push(await s.snapshot());
      await new Promise((r) => setTimeout(r, 20));
    }
  })();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < work.length) {
        const p = work[next++] as Plan;
        outcomes.push(await send(s.url, keys, p));
      }
    }),
  );
  t.ok(await allClosed(s, 10_000), 'every hold closed');
  running = false;
  await sampler;
  samples.push(await s.snapshot());

  const kinds = new Map<string, number[]>();
  for (const o of outcomes) kinds.set(o.kind, [...(kinds.get(o.kind) ?? []), o.status]);
  t.comment(JSON.stringify(Object.fromEntries([...kinds].map(([k, v]) => [k, v.length]))));
  t.ok((kinds.get('poor') ?? []).includes(402), 'the workload produced 402s');
  t.ok((kinds.get('slow-rpm') ?? []).includes(429), 'and 429s');
  t.ok(
    outcomes.some((o) => o.aborted),
    'and client aborts',
  );
  t.ok(
    samples.some((snap) => snap.some((w) => w.openHolds > 0n)),
    'snapshots were taken with holds open',
  );

  // The invariants in every snapshot, mid-flight included.
  let bad = 0;
  for (const snap of samples) {
    for (const w of snap) {
      if (
        w.balance !== w.credits - w.settles ||
        w.held !== w.openHolds ||
        w.balance - w.held !== w.credits - w.settles - w.openHolds
      )
        bad++;
    }
  }
  t.equal(bad, 0, `balance = credits − settlements and held = open holds in all ${samples.length} snapshots`);
  // biome-ignore lint/complexity/useMathMinMax: bigints; Math.min throws a TypeError on them.
  const lowest = samples.flatMap((snap) => snap.map((w) => w.balance - w.held)).reduce((a, b) => (a < b ? a : b));
  t.ok(lowest >= 0n, 'available never negative');
  t.same(await s.verify(), { ok: true, problems: [] }, 'verify() passes');

  // Trace by trace.
  const rows = await s.ledgerRows();
  const byTrace = new Map<string, typeof rows>();
  for (const r of rows) byTrace.set(r.trace_id, [...(byTrace.get(r.trace_id) ?? []), r]);
  const settleRows = (trace: string) => (byTrace.get(trace) ?? []).filter((r) => r.kind === 'settle');
  const closeRows = (trace: string) =>
    (byTrace.get(trace) ?? []).filter((r) => r.kind === 'settle' || r.kind === 'release');
  t.same(
    outcomes.filter((o) => settleRows(o.trace).length > 1).map((o) => o.trace),
    [],
    'no trace id has two settle rows',
  );
  t.same(
    [...byTrace.entries()]
      .filter(([, rs]) => rs.some((r) => r.kind === 'hold') && closeRows(rs[0]?.trace_id ?? '').length !== 1)
      .map(([k]) => k),
    [],
    'every hold closed exactly once',
  );
  t.same(outcomes.filter((o) => o.trace === '').length, 0, 'every response carried X-Pi-Trace-Id');
  t.equal(new Set(outcomes.map((o) => o.trace)).size, outcomes.length, 'trace ids are unique');
  const fullOk = outcomes.filter((o) => o.status === 200 && o.complete);
  t.same(
    fullOk.filter((o) => settleRows(o.trace).length !== 1).map((o) => `${o.kind} ${o.trace}`),
    [],
    `each of the ${fullOk.length} fully received 200s settled exactly once`,
  );
  t.same(
    outcomes.filter((o) => o.status !== 200 && settleRows(o.trace).length > 0).map((o) => `${o.kind} ${o.status}`),
    [],
    'no error response settled anything',
  );
  t.same(
    outcomes
      .filter(
        (o) =>
          [402, 429, 400, 404, 422].includes(o.status) &&
          o.kind !== 'provider-400' &&
          (byTrace.get(o.trace) ?? []).length > 0,
      )
      .map((o) => `${o.kind} ${o.status}`),
    [],
    'refusals left no ledger row at all',
  );

  // Credits made before the workload are all there, once; nothing else was credited.
  const creditsAfter = rows.filter((r) => r.kind === 'credit');
  t.same(
    creditsAfter.map((r) => [r.trace_id, r.amount_nano]),
    creditsBefore.map((r) => [r.trace_id, r.amount_nano]),
    'credits unchanged',
  );
  // The request log agrees with the ledger trace by trace.
  const log = new Map((await s.logRows()).map((r) => [r.trace_id, r]));
  t.equal(log.size, outcomes.length, 'one request-log row per request');
  const mismatched = outcomes.filter(
    (o) => (log.get(o.trace)?.cost_nano ?? null) !== (settleRows(o.trace)[0]?.amount_nano ?? null),
  );
  t.same(
    mismatched.map((o) => `${o.kind} ${o.status}`),
    [],
    'the logged cost of each request is its settle amount',
  );
}
