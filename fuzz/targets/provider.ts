// Target `provider`: well-formed client requests (the three text protocols and both image endpoints,
// streamed and not, sometimes pinned to one platform so every adapter is reached) answered by a
// raw-socket upstream (test/helpers/raw-upstream.ts) that misbehaves as a plan says
// (provider-answers.ts). Requests go in rounds of 1–32 at once, so one request's bad answer meets
// the others' settlements in the same group commit.
// Oracles: the process never exits; every client request ends within the hang bound; no 500 (the
// gateway's own "unexpected" answer); no settlement above its bound (price-bound.ts); no estimate
// above its hold; what reaches the client is the provider's answer or an error (broken-answer);
// the gateway's peak memory in a round stays within 192 MiB + 4 × the bytes its providers sent;
// after a graceful stop, `ledger verify` passes, no hold is open, every settlement has its log row.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { rawUpstream, type RawExchange, type RawUpstream } from '../../test/helpers/raw-upstream.ts';
import type { CompiledConfig } from '../../src/config/compiled.ts';
import { coverageReport } from '../lib/coverage.ts';
import type { FindingFiles } from '../lib/findings.ts';
import { type Bound, requestBound } from '../lib/price-bound.ts';
import { type ExchangeResult, exchange, header, requestBytes, statusSignature } from '../lib/raw-http.ts';
import { Rng } from '../lib/rng.ts';
import { topUp } from '../lib/gateway-child.ts';
import { type Generation, GatewaySession, crashSignature, isCrashed } from '../lib/session.ts';
import { type Target, type TargetOptions, type TargetSummary, budgetLeft, hitsFrom } from '../lib/target.ts';
import { ledgerNotes } from './ledger-oracles.ts';
import {
  type AnswerPlan,
  type UpstreamAction,
  type UpstreamRequestInfo,
  compileAnswer,
  describePlan,
  randomPlan,
  requestInfo,
} from './provider-answers.ts';

export const PROVIDER_LIMITS = { drain_timeout_ms: 5000, max_upstream_body_bytes: 8 * 1024 * 1024 };
/** Short cool-downs: a breaker opened by a bad answer must not keep the next rounds from the upstream. */
export const PROVIDER_HEALTH = { cooldown_ms: 500, max_cooldown_ms: 1000 };
const MIB = 1024 * 1024;

const ROUTES: readonly { path: string; endpoint: string; models: string[] }[] = [
  {
    path: '/v1/chat/completions',
    endpoint: 'chat_completions',
    models: ['acme/chat-small', 'acme/chat-big', 'acme/reasoner', 'acme/bracketed'],
  },
  { path: '/v1/responses', endpoint: 'responses', models: ['acme/chat-small', 'acme/reasoner'] },
  { path: '/v1/messages', endpoint: 'messages', models: ['beta-labs/sonnet-ish', 'acme/chat-big'] },
  { path: '/v1/images/generations', endpoint: 'images_generations', models: ['acme/painter'] },
  { path: '/v1/images/edits', endpoint: 'images_edits', models: ['acme/painter'] },
];

/** One upstream request of a case: what it asked for and which plan answered it. Its bytes are
 *  compiled again from the plan when a finding is written (compileAnswer is deterministic), so a
 *  long campaign keeps no answer bytes in memory. */
export interface UpstreamAttempt {
  path: string;
  info: UpstreamRequestInfo;
  plan: number;
  /** Bytes the upstream wrote (or meant to write) for it. */
  sent: number;
}

export interface ProviderCase {
  n: number;
  /** The round it ran in. */
  round: number;
  seed: number;
  label: string;
  path: string;
  stream: boolean;
  /** The client's request with an empty key (`Bearer ` then CRLF). */
  bytes: Buffer;
  plans: AnswerPlan[];
  bound: Bound;
  readPauseMs: number | null;
  /** What the upstream did for each attempt (filled while the case runs). */
  attempts: UpstreamAttempt[];
}

const KEY_SLOT = Buffer.from('Authorization: Bearer \r\n');

export function withKey(bytes: Buffer, key: string): Buffer {
  const at = bytes.indexOf(KEY_SLOT);
  if (at === -1) return bytes;
  const insertAt = at + KEY_SLOT.length - 2;
  return Buffer.concat([bytes.subarray(0, insertAt), Buffer.from(key, 'latin1'), bytes.subarray(insertAt)]);
}

/** The marker the upstream finds its case by: in the prompt, which every adapter forwards. */
export function marker(n: number): string {
  return `fzc-${n}-`;
}

export function buildProviderCase(seed: number, n: number, round: number, config: CompiledConfig): ProviderCase {
  const rng = Rng.forCase(seed, 'provider', n);
  const route = rng.pick(ROUTES);
  const model = rng.pick(route.models);
  const stream = rng.chance(0.5);
  const maxTokens = rng.chance(0.7) ? rng.pick([1, 16, 64, 256, 4096, 100_000]) : null;
  const platforms = [
    ...new Set(
      config.deployments
        .filter((d) => d.model === model && d.endpoints.includes(route.endpoint))
        .map((d) => d.platform),
    ),
  ];
  const pin = rng.chance(0.35) && platforms.length > 0 ? rng.pick(platforms) : null;
  const images = route.endpoint.startsWith('images_') ? rng.int(1, 3) : 0;
  const prompt = `${marker(n)} say hello`;
  let body: Buffer;
  let contentType = 'application/json';
  if (route.endpoint === 'images_edits') {
    const b = `fzp${n}`;
    const fields: [string, string][] = [
      ['model', model],
      ['prompt', prompt],
      ['n', String(images)],
      ...(stream ? ([['stream', 'true']] as [string, string][]) : []),
    ];
    body = Buffer.concat([
      ...fields.map(([k, v]) => Buffer.from(`--${b}\r\nContent-Disposition: form-data; name="${k}"\r\n\r\n${v}\r\n`)),
      Buffer.from(
        `--${b}\r\nContent-Disposition: form-data; name="image"; filename="in.png"\r\nContent-Type: image/png\r\n\r\n`,
      ),
      Buffer.alloc(rng.int(64, 2048), 7),
      Buffer.from(`\r\n--${b}--\r\n`),
    ]);
    contentType = `multipart/form-data; boundary=${b}`;
  } else {
    const json: Record<string, unknown> = { model };
    if (route.endpoint === 'chat_completions') json['messages'] = [{ role: 'user', content: prompt }];
    if (route.endpoint === 'responses') json['input'] = prompt;
    if (route.endpoint === 'messages') json['messages'] = [{ role: 'user', content: prompt }];
    if (route.endpoint === 'images_generations') {
      json['prompt'] = prompt;
      json['n'] = images;
    }
    const limitField =
      route.endpoint === 'responses'
        ? 'max_output_tokens'
        : route.endpoint === 'messages'
          ? 'max_tokens'
          : route.endpoint === 'chat_completions'
            ? 'max_tokens'
            : null;
    if (limitField && (maxTokens !== null || route.endpoint === 'messages')) json[limitField] = maxTokens ?? 1024;
    if (stream) json['stream'] = true;
    if (stream && route.endpoint === 'chat_completions' && rng.chance(0.8))
      json['stream_options'] = { include_usage: true };
    if (pin) json['provider'] = { only: [pin] };
    body = Buffer.from(JSON.stringify(json));
  }
  const requested =
    route.endpoint === 'messages' ? (maxTokens ?? 1024) : route.endpoint.startsWith('images_') ? null : maxTokens;
  const bound = requestBound(config, {
    model,
    endpoint: route.endpoint,
    requestedOutput: requested,
    images,
    inputImages: route.endpoint === 'images_edits' ? 1 : 0,
    bodyBytes: body.length,
  });
  const bytes = requestBytes(
    'POST',
    route.path,
    [
      ['Host', 'localhost'],
      ['Authorization', 'Bearer '],
      ['Content-Type', contentType],
    ],
    body,
  );
  const plans = Array.from({ length: rng.chance(0.3) ? rng.int(2, 3) : 1 }, () => randomPlan(rng));
  const readPauseMs = rng.chance(0.05) ? rng.pick([200, 1000, 3000]) : null;
  const label = `${route.path} ${model}${stream ? ' stream' : ''}${pin ? ` only ${pin}` : ''}${maxTokens !== null ? ` max ${maxTokens}` : ''}${readPauseMs ? ` slow reader ${readPauseMs} ms` : ''} | ${plans.map(describePlan).join(' | ')}`;
  return { n, round, seed, label, path: route.path, stream, bytes, plans, bound, readPauseMs, attempts: [] };
}

/** The files that replay a case: the client's bytes and every byte the upstream wrote, per attempt. */
export function providerCaseFiles(c: ProviderCase, key: string, extra: Record<string, unknown> = {}): FindingFiles {
  return {
    'request.bin': withKey(c.bytes, key),
    'upstream.json': {
      attempts: c.attempts.map((a) => ({
        path: a.path,
        wire: a.info.wire,
        stream: a.info.stream,
        model: a.info.model,
        actions: compileAnswer(c.plans[a.plan] as AnswerPlan, a.info).map((x) =>
          x.kind === 'write'
            ? { kind: 'write', delayMs: x.delayMs, bytes: x.bytes.length, base64: x.bytes.toString('base64') }
            : { kind: x.kind },
        ),
      })),
    },
    'meta.json': {
      target: 'provider',
      seed: c.seed,
      case: c.n,
      label: c.label,
      key,
      marker: marker(c.n),
      bound: { nano: c.bound.nano, basis: c.bound.basis },
      plans: c.plans,
      readPauseMs: c.readPauseMs,
      ...extra,
      replay: 'npm run fuzz -- --replay <this directory>',
    },
  };
}

/** Performs an attempt's actions on its connection, one after another. */
export async function perform(ex: RawExchange, actions: UpstreamAction[]): Promise<void> {
  for (const a of actions) {
    if (ex.socket.destroyed) return;
    if (a.kind === 'write') {
      if (a.delayMs > 0) await new Promise((r) => setTimeout(r, a.delayMs));
      ex.write(a.bytes);
    } else if (a.kind === 'end') ex.end();
    else if (a.kind === 'reset') ex.reset();
    else return;
  }
}

/** The upstream's side: find the case by its marker, answer with the plan of this attempt. */
export function upstreamHandler(cases: () => Map<number, ProviderCase>): (ex: RawExchange) => void {
  return (ex) => {
    const m = /fzc-(\d+)-/.exec(ex.body.toString('latin1'));
    const c = m ? cases().get(Number(m[1])) : undefined;
    if (!c) {
      ex.write('HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}');
      return;
    }
    const plan = Math.min(c.attempts.length, c.plans.length - 1);
    const info = requestInfo(ex.path, ex.body);
    const actions = compileAnswer(c.plans[plan] as AnswerPlan, info);
    let sent = 0;
    for (const a of actions) if (a.kind === 'write') sent += a.bytes.length;
    c.attempts.push({ path: ex.path, info, plan, sent });
    void perform(ex, actions);
  };
}

function observedOf(r: ExchangeResult): Record<string, unknown> {
  return {
    ms: r.ms,
    answers: r.answers.map((a) => ({
      status: a.status,
      headers: a.headers,
      body: a.body.subarray(0, 8192).toString('utf8'),
    })),
    closedByServer: r.closedByServer,
    timedOut: r.timedOut,
    partial: r.partial,
    error: r.error,
  };
}

/** Whether what reached the client is a provider's answer or an error; the problem, or null. */
export function brokenAnswer(c: ProviderCase, r: ExchangeResult): string | null {
  const a = r.answers[0];
  if (a?.status !== 200) return null;
  const slug = header(a, 'x-pi-model');
  const text = a.body.toString('utf8');
  const isImage = c.path.startsWith('/v1/images/');
  if (!c.stream) {
    let v: unknown;
    try {
      v = JSON.parse(text);
    } catch {
      return 'a non-streamed 200 whose body is not whole JSON';
    }
    if (typeof v !== 'object' || v === null || Array.isArray(v))
      return 'a non-streamed 200 whose body is not an object';
    const o = v as Record<string, unknown>;
    if (o['type'] === 'error' || (o['error'] !== undefined && o['error'] !== null))
      return 'a 200 whose body is an error object';
    if (!isImage && slug !== undefined && 'model' in o && o['model'] !== slug)
      return 'body model is not the model X-Pi-Model names';
    return null;
  }
  let completedSeen = false;
  for (const ev of text.split(/\r?\n\r?\n/)) {
    const data = ev
      .split(/\r?\n/)
      .filter((l) => l.startsWith('data:'))
      .map((l) => l.slice(5).trimStart())
      .join('\n');
    if (data === '' || data === '[DONE]') continue;
    let o: Record<string, unknown> | null = null;
    try {
      const v = JSON.parse(data) as unknown;
      o = typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : null;
    } catch {
      o = null;
    }
    if (isImage) {
      if (completedSeen && !/"type":"error"|event: error/.test(ev))
        return 'an image stream event after its completed event';
      if (/\.completed"/.test(data) || /event: image_(generation|edit)\.completed/.test(ev)) completedSeen = true;
    } else if (o && c.path === '/v1/chat/completions' && slug !== undefined && 'model' in o && o['model'] !== slug) {
      return 'a chunk model is not the model X-Pi-Model names';
    }
  }
  return null;
}

/** Peak and current RSS of a process (kB), from /proc; null where unavailable. */
function memoryOf(pid: number): { hwm: number; rss: number } | null {
  try {
    const s = readFileSync(`/proc/${pid}/status`, 'utf8');
    const hwm = Number(/VmHWM:\s+(\d+)/.exec(s)?.[1]);
    const rss = Number(/VmRSS:\s+(\d+)/.exec(s)?.[1]);
    return Number.isFinite(hwm) && Number.isFinite(rss) ? { hwm, rss } : null;
  } catch {
    return null;
  }
}

/** Resets a process's peak RSS to its current RSS (Linux clear_refs 5); false where not allowed. */
function resetPeak(pid: number): boolean {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
    return true;
  } catch {
    return false;
  }
}

export interface ProviderState {
  /** Cases the upstream answers (the running round's). */
  byN: Map<number, ProviderCase>;
  byTrace: Map<string, ProviderCase>;
  /** Every round's cases, by round (small: no answer bytes are kept). */
  rounds: Map<number, ProviderCase[]>;
  maxBound: bigint;
}

/** A case's files, with the other cases of its round in case-N/ folders (a money finding may be
 *  caused by a round-mate: one bad settlement can take its batch down with it). */
export function roundFiles(
  state: ProviderState,
  c: ProviderCase,
  key: string,
  extra: Record<string, unknown> = {},
): FindingFiles {
  const files = providerCaseFiles(c, key, extra);
  for (const m of state.rounds.get(c.round) ?? []) {
    if (m === c) continue;
    for (const [k, v] of Object.entries(providerCaseFiles(m, key))) files[`case-${m.n}/${k}`] = v;
  }
  return files;
}

export const provider: Target = {
  name: 'provider',
  describe: 'a raw-socket provider that splits, truncates, mis-types, compresses, stalls and resets its answers',
  async run(opts: TargetOptions): Promise<TargetSummary> {
    const started = performance.now();
    const state: ProviderState = { byN: new Map(), byTrace: new Map(), rounds: new Map(), maxBound: 0n };
    const teardowns: (() => unknown)[] = [];
    const up: RawUpstream = await rawUpstream(
      { teardown: (fn) => teardowns.push(fn) },
      upstreamHandler(() => state.byN),
    );
    const covDir = opts.coverage ? join(opts.workDir, 'coverage', 'provider') : null;
    const session = new GatewaySession(join(opts.workDir, 'provider'), () => up.url, covDir, {
      limits: PROVIDER_LIMITS,
      health: PROVIDER_HEALTH,
    });
    let cases = 0;
    let rounds = 0;
    let topUps = 0;
    const statuses = new Map<number, number>();
    try {
      let gen = await session.child();
      let previous: ProviderCase[] = [];
      while (budgetLeft(opts.budget, cases)) {
        const r = rounds++;
        const rng = Rng.forCase(opts.seed, 'provider-round', r);
        const size = rng.weighted([
          [1, 30],
          [rng.int(2, 8), 60],
          [rng.int(16, 32), 10],
        ] as const);
        const round: ProviderCase[] = [];
        for (let i = 0; i < size && budgetLeft(opts.budget, cases); i++) {
          const c = buildProviderCase(opts.seed, cases++, r, session.config);
          state.byN.set(c.n, c);
          if (c.bound.nano !== null && c.bound.nano > state.maxBound) state.maxBound = c.bound.nano;
          round.push(c);
        }
        state.rounds.set(r, round);
        const refused = await runRound(round, gen, opts, state, statuses, false);
        if (refused > 0 && !isCrashed(gen) && topUp(gen.db) > 0n) topUps++;
        if (isCrashed(gen)) {
          // The previous round is a suspect too: its upstream connections may still have been
          // writing (pauses, a close-delimited end) when this round began.
          await recordCrash([...previous, ...round], gen, opts, state, session);
          gen = await session.child();
        }
        // Only the running round is answered by marker; the previous one's connections may still
        // be finishing, and their attempts are already recorded.
        for (const c of previous) state.byN.delete(c.n);
        previous = round;
      }
    } catch (err) {
      await session.kill();
      await up.close();
      throw err;
    }
    const checks = await session.finish();
    for (const fn of teardowns) await fn();
    const settled = judgeSettlements(checks, opts, state);
    const ledger = ledgerNotes('provider', checks, opts.findings, (trace, key) => {
      const c = state.byTrace.get(trace);
      return c ? roundFiles(state, c, key, { trace }) : null;
    });
    const coverage = covDir ? await coverageReport(covDir, join(opts.workDir, 'coverage-report', 'provider')) : null;
    return {
      target: 'provider',
      cases,
      seconds: (performance.now() - started) / 1000,
      hits: hitsFrom(opts.findings, 'provider'),
      ledgerVerify: ledger.verify,
      openHolds: ledger.openHolds,
      settlementsChecked: settled,
      notes: [
        `wallet top-ups after an over-charge: ${topUps}`,
        `rounds: ${rounds}; answers by status: ${[...statuses]
          .sort((a, b) => a[0] - b[0])
          .map(([s, k]) => `${s}×${k}`)
          .join(' ')}`,
        `gateway processes: ${session.generations.length}`,
        ...ledger.notes,
      ],
      coverage,
    };
  },
};

/** Runs a round's cases at once and judges them; returns how many were refused 402. */
async function runRound(
  round: ProviderCase[],
  gen: Generation,
  opts: TargetOptions,
  state: ProviderState,
  statuses: Map<number, number>,
  quiet: boolean,
): Promise<number> {
  for (const c of round) c.attempts = [];
  let refused = 0;
  const canReset = resetPeak(gen.child.pid);
  const before = memoryOf(gen.child.pid);
  await Promise.all(
    round.map(async (c) => {
      const r = await exchange({
        port: gen.child.port,
        steps: [{ bytes: withKey(c.bytes, gen.db.key) }],
        deadlineMs: opts.hangMs,
        ...(c.readPauseMs ? { readPauseMs: c.readPauseMs } : {}),
      });
      if (quiet) return;
      const a = r.answers[0];
      const trace = a ? header(a, 'x-pi-trace-id') : undefined;
      if (trace) state.byTrace.set(trace, c);
      if (a) statuses.set(a.status, (statuses.get(a.status) ?? 0) + 1);
      if (a?.status === 402) refused++;
      const files = (): FindingFiles =>
        providerCaseFiles(c, gen.db.key, { trace: trace ?? null, observed: observedOf(r) });
      if (!a && r.timedOut)
        opts.findings.record(
          'provider',
          'hang',
          `${c.stream ? 'stream' : 'request'} not ended within ${opts.hangMs} ms${r.partial ? ' (answer begun)' : ''}`,
          c.label,
          files(),
        );
      // A provider's own 5xx is passed on or failed over; only the gateway's catch-all answer (an
      // exception it did not expect) is judged here.
      if (a && statusSignature(a) === '500 internal_error')
        opts.findings.record('provider', '5xx', `${statusSignature(a)} on ${c.path}`, c.label, files());
      const broken = brokenAnswer(c, r);
      if (broken) opts.findings.record('provider', 'broken-answer', broken, c.label, files());
    }),
  );
  const after = memoryOf(gen.child.pid);
  if (quiet || !before || !after || isCrashed(gen)) return refused;
  // The bytes providers sent this round: a gateway may hold a few copies of them, not a bomb's inflation.
  let sent = 0;
  for (const c of round) for (const a of c.attempts) sent += a.sent;
  const growthKb = after.hwm - (canReset ? before.rss : before.hwm);
  const allowanceKb = (192 * MIB + 4 * sent) / 1024;
  if (growthKb > allowanceKb) {
    const files: FindingFiles = {
      'meta.json': {
        peakGrowthMiB: Math.round(growthKb / 1024),
        allowanceMiB: Math.round(allowanceKb / 1024),
        cases: round.map((c) => c.label),
      },
    };
    for (const c of round)
      for (const [k, v] of Object.entries(providerCaseFiles(c, gen.db.key))) files[`case-${c.n}/${k}`] = v;
    opts.findings.record(
      'provider',
      'memory',
      'peak memory grew past 192 MiB + 4 × the bytes providers sent',
      `+${Math.round(growthKb / 1024)} MiB in a round of ${round.length}: ${round
        .map((c) => c.label)
        .join(' || ')
        .slice(0, 600)}`,
      files,
    );
  }
  return refused;
}

async function recordCrash(
  round: ProviderCase[],
  crashed: Generation,
  opts: TargetOptions,
  state: ProviderState,
  session: GatewaySession,
): Promise<void> {
  const signature = crashSignature(crashed.child.stderrTail(), crashed.child.exit());
  const files: FindingFiles = { 'stderr.txt': crashed.child.stderrTail() };
  for (const c of round)
    for (const [k, v] of Object.entries(providerCaseFiles(c, crashed.db.key)))
      files[round.length === 1 ? k : `case-${c.n}/${k}`] = v;
  // Once more on a fresh process (while the signature still gets saved): do these cases, all at
  // once, stop it again?
  let confirmed = false;
  if (opts.findings.wouldSave('provider', 'crash', signature)) {
    const again = await session.child();
    for (const c of round) state.byN.set(c.n, c);
    await runRound(round, again, opts, state, new Map(), true);
    await new Promise((r) => setTimeout(r, 300));
    confirmed = isCrashed(again);
  }
  files['crash.json'] = { target: 'provider', seed: opts.seed, cases: round.map((c) => c.n), confirmed };
  const where = opts.findings.record(
    'provider',
    'crash',
    signature,
    `${confirmed ? 'the round stopped a fresh process again' : 'not reproduced by one replay of the round'}: ${round
      .map((c) => c.label)
      .join(' || ')
      .slice(0, 800)}`,
    files,
  );
  opts.log(`[provider] crash: ${signature}${where ? ` → ${where}` : ''}`);
}

/** Settlements against their bound, estimates against their hold; returns how many were judged. */
function judgeSettlements(
  checks: Awaited<ReturnType<GatewaySession['finish']>>,
  opts: TargetOptions,
  state: ProviderState,
): number {
  let judged = 0;
  for (const chk of checks) {
    if (!chk.ledger) continue;
    for (const s of chk.ledger.settlements) {
      const c = state.byTrace.get(s.traceId);
      const bound = c ? c.bound.nano : state.maxBound;
      if (bound === null) continue;
      judged++;
      const files = (): FindingFiles => ({
        ...(c ? roundFiles(state, c, chk.generation.db.key, { trace: s.traceId }) : {}),
        'settlement.json': {
          trace: s.traceId,
          amountNano: s.amountNano,
          boundNano: bound,
          basis: c?.bound.basis ?? 'the largest bound of any case (the trace is not known)',
          details: s.details,
        },
      });
      if (s.amountNano > bound) {
        opts.findings.record(
          'provider',
          'over-bound',
          `settlement above its bound${s.details['estimated'] === true ? ' (estimated)' : ''}${c ? '' : ' (case not known)'}`,
          `${s.amountNano} > ${bound} nano-USD: ${c?.label ?? s.traceId}`,
          files(),
        );
      }
      const hold = chk.ledger.holds.get(s.traceId);
      // An estimate whose input counts the provider stated may pass the hold by what those counts cost
      // (docs/api.md); only the gateway's own figures are held to it, and the bound judges the rest.
      if (
        s.details['estimated'] === true &&
        s.details['inputReported'] !== true &&
        hold !== undefined &&
        s.amountNano > hold
      ) {
        opts.findings.record(
          'provider',
          'estimate-over-hold',
          'an estimated charge above its hold',
          `${s.amountNano} > hold ${hold} nano-USD: ${c?.label ?? s.traceId}`,
          files(),
        );
      }
    }
  }
  return judged;
}
