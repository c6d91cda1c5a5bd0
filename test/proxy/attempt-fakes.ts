// Fakes for the attempt unit tests (no server, no sockets, no sleeping): a Reply that records what
// would reach the wire and can refuse writes (backpressure) or go away (abort); an upstream control
// that records pause/resume/abort; timers on a hand-moved clock with Node's refresh/close rules; a
// tiny protocol whose events say what they are; and harnesses that build the units around them.
import type { GatewayError } from '../../src/errors.ts';
import type { HeaderList, Reply } from '../../src/http/reply.ts';
import type { JsonAnswer, ProtocolModule, StreamTap, TappedEvent } from '../../src/protocols/types.ts';
import type { AttemptOutcome, AttemptLimits, AttemptInput } from '../../src/proxy/attempt-types.ts';
import type { AttemptTimer, AttemptTimers } from '../../src/proxy/attempt-timers.ts';
import { AttemptCore } from '../../src/proxy/attempt-core.ts';
import type { AnswerHead } from '../../src/proxy/attempt-head.ts';
import { runAttempt } from '../../src/proxy/attempt.ts';
import type { UpstreamCall, UpstreamControl, UpstreamSink } from '../../src/upstream/client.ts';

/** What reached the client, in order: `head <status>`, `write <text>`, `end`, `send <status> <body>`. */
export class FakeReply implements Reply {
  readonly traceId = 'trace-test';
  aborted = false;
  started = false;
  done = false;
  bytesSent = 0;
  /** Effective operations only (what a real reply would put on the wire). */
  readonly wire: string[] = [];
  /** The headers of the started stream or the sent response. */
  headers: HeaderList = [];
  /** What write() returns next: false simulates a client that is not keeping up. */
  accepting = true;
  corks = 0;
  private abortHandlers: (() => void)[] = [];
  private writable: (() => void) | null = null;

  onAborted(cb: () => void): void {
    if (this.aborted) cb();
    else if (!this.done) this.abortHandlers.push(cb);
  }

  send(status: number, headers: HeaderList, body?: string | Uint8Array): void {
    if (this.done || this.started) return;
    this.done = true;
    this.started = true;
    this.headers = headers;
    this.wire.push(`send ${status} ${body === undefined ? '' : Buffer.from(body).toString('utf8')}`);
  }

  sendJson(status: number, value: unknown, headers: HeaderList = []): void {
    this.send(status, headers, JSON.stringify(value));
  }

  sendError(err: GatewayError): void {
    this.sendJson(err.status, err.toBody(), err.headers);
  }

  startStream(status: number, headers: HeaderList): void {
    if (this.done || this.started) return;
    this.started = true;
    this.headers = headers;
    this.wire.push(`head ${status}`);
  }

  write(chunk: string | Uint8Array): boolean {
    if (this.done) return true;
    this.wire.push(`write ${Buffer.from(chunk).toString('utf8')}`);
    return this.accepting;
  }

  onWritable(cb: () => void): void {
    if (this.done) return;
    this.writable = cb;
  }

  end(): void {
    if (this.done) return;
    this.done = true;
    this.wire.push('end');
  }

  close(): void {
    this.done = true;
  }

  cork(fn: () => void): void {
    if (this.done) return;
    this.corks++;
    fn();
  }

  /** Whether someone waits for the client to drain. */
  get waitingWritable(): boolean {
    return this.writable !== null;
  }

  /** The client drained: accept writes again and call whoever waits. */
  drain(): void {
    this.accepting = true;
    const cb = this.writable;
    this.writable = null;
    if (cb && !this.done) cb();
  }

  /** The client went away. */
  abort(): void {
    if (this.done) return;
    this.aborted = true;
    this.done = true;
    const handlers = this.abortHandlers;
    this.abortHandlers = [];
    for (const h of handlers) h();
  }

  /** Everything written to a stream, concatenated. */
  get body(): string {
    return this.wire
      .filter((w) => w.startsWith('write '))
      .map((w) => w.slice(6))
      .join('');
  }
}

export class FakeControl implements UpstreamControl {
  pauses = 0;
  resumes = 0;
  readonly aborts: string[] = [];

  abort(reason?: Error): void {
    this.aborts.push(reason?.message ?? 'aborted');
  }

  pause(): void {
    this.pauses++;
  }

  resume(): void {
    this.resumes++;
  }
}

class FakeTimer implements AttemptTimer {
  state: 'armed' | 'fired' | 'closed' = 'armed';
  dueAt: number;

  private readonly clock: FakeTimers;
  readonly fn: () => void;
  readonly ms: number;
  constructor(clock: FakeTimers, fn: () => void, ms: number) {
    this.clock = clock;
    this.fn = fn;
    this.ms = ms;
    this.dueAt = clock.now() + ms;
  }

  /** Node: restarts the timer, even one that already fired; does nothing on a cleared one. */
  refresh(): this {
    if (this.state !== 'closed') {
      this.state = 'armed';
      this.dueAt = this.clock.now() + this.ms;
    }
    return this;
  }

  close(): this {
    this.state = 'closed';
    return this;
  }
}

/** Timers on a clock that moves only when the test says so. */
export class FakeTimers implements AttemptTimers {
  private at = 1000;
  private readonly timers: FakeTimer[] = [];

  start(fn: () => void, ms: number): AttemptTimer {
    const t = new FakeTimer(this, fn, ms);
    this.timers.push(t);
    return t;
  }

  now(): number {
    return this.at;
  }

  /** Moves the clock by `ms`, firing every timer that falls due on the way, in order. */
  advance(ms: number): void {
    const target = this.at + ms;
    for (;;) {
      let next: FakeTimer | null = null;
      for (const t of this.timers)
        if (t.state === 'armed' && t.dueAt <= target && (next === null || t.dueAt < next.dueAt)) next = t;
      if (next === null) break;
      this.at = next.dueAt;
      next.state = 'fired';
      next.fn();
    }
    this.at = target;
  }

  /** How many timers would still fire. */
  get armed(): number {
    return this.timers.filter((t) => t.state === 'armed').length;
  }
}

/**
 * A protocol whose events name their kind in the first data byte: `data: p…` preamble, `data: c…`
 * content, `data: e…` error, `data: x…` malformed, `data: [DONE]` terminal. Bytes pass unchanged.
 * JSON answers are usable unless they hold an "error" key.
 */
export const fakeProtocol: ProtocolModule = {
  endpoints: ['test'],
  bodyDelivery: () => 'buffer',
  read() {
    throw new Error('the attempt never reads the client request');
  },
  outputBound: () => 0,
  validate() {},
  wantsStream: () => true,
  prepare: (original) => original,
  tap: (): StreamTap => new FakeTap(),
  readJson(body: Buffer, slugJson: Buffer): JsonAnswer | null {
    let v: unknown;
    try {
      v = JSON.parse(body.toString('utf8'));
    } catch {
      return null;
    }
    if (typeof v !== 'object' || v === null || 'error' in v) return null;
    const model = 'model' in v && typeof v.model === 'string' ? v.model : null;
    return {
      body: Buffer.from(body.toString('utf8').replace(`"model":"${model}"`, `"model":${slugJson.toString('utf8')}`)),
      upstreamModel: model,
      usage: { promptTokens: 3, completionTokens: 4 },
    };
  },
  streamErrorEvent: (message, code) =>
    Buffer.from(`data: {"error":{"message":${JSON.stringify(message)},"code":"${code}"}}\n\n`),
};

class FakeTap implements StreamTap {
  upstreamModel: string | null = null;
  completed = false;
  contentEvents = 0;
  contentBytes = 0;

  usage() {
    return this.completed ? { promptTokens: 1, completionTokens: this.contentEvents } : null;
  }

  inputUsage() {
    return null;
  }

  onEvent(ev: Buffer): TappedEvent {
    const text = ev.toString('utf8');
    if (text.startsWith('data: [DONE]')) {
      this.completed = true;
      return { kind: 'terminal', out: ev };
    }
    const k = text.slice(6, 7);
    if (k === '{') {
      // A JSON event carries the answer's usage (the relay holds it while it is the last event).
      this.contentEvents++;
      this.contentBytes += ev.length;
      return { kind: 'content', out: ev, usage: true };
    }
    if (k === 'p') {
      this.upstreamModel ??= 'up-model';
      return { kind: 'preamble', out: ev };
    }
    if (k === 'c') {
      this.contentEvents++;
      this.contentBytes += ev.length;
      return { kind: 'content', out: ev };
    }
    if (k === 'e') return { kind: 'error', out: ev };
    return { kind: 'malformed', out: ev };
  }
}

// The write-stall limit is long here so the backpressure tests can hold a client paused for 20 s of
// fake time; the write-stall tests set their own.
export const LIMITS: AttemptLimits = {
  firstByteTimeoutMs: 5000,
  streamIdleTimeoutMs: 1000,
  preambleMaxBytes: 64,
  maxUpstreamBodyBytes: 256,
  maxUpstreamEventBytes: 256,
  writeStallTimeoutMs: 30_000,
};

export const IDENTITY: HeaderList = [
  ['X-Pi-Provider', 'alpha'],
  ['X-Pi-Model', 'acme/slug'],
];

export const SLUG = Buffer.from(JSON.stringify('acme/slug'));

/** `data: <text>` as one event. */
export function ev(text: string): Buffer {
  return Buffer.from(`data: ${text}\n\n`);
}

/** What an attempt resolved to, and how many times it tried to (exactly once is right). */
export interface Seen {
  outcome: AttemptOutcome | null;
  count: number;
}

/** A core around the fakes (the first-byte timer starts with it). */
export function coreHarness(limits: AttemptLimits = LIMITS, beforeComplete?: AttemptInput['beforeComplete']) {
  const reply = new FakeReply();
  const ctrl = new FakeControl();
  const timers = new FakeTimers();
  const seen: Seen = { outcome: null, count: 0 };
  let resolve: (o: AttemptOutcome) => void = () => undefined;
  /** The first outcome (for phases that end asynchronously, like decompression). */
  const promise = new Promise<AttemptOutcome>((r) => (resolve = r));
  const core = new AttemptCore(
    reply,
    limits,
    timers,
    (o) => {
      seen.outcome = o;
      seen.count++;
      resolve(o);
    },
    beforeComplete,
  );
  core.ctrl = ctrl;
  return { reply, ctrl, timers, core, seen, promise };
}

export function answerHead(status: number, headers: Record<string, string> = {}): AnswerHead {
  return { status, headers, identity: IDENTITY };
}

/** runAttempt over a fake client: the test plays the upstream through `sink`. */
export function attemptHarness(
  opts: {
    limits?: AttemptLimits;
    beforeComplete?: AttemptInput['beforeComplete'];
    stop?: AttemptInput['stop'];
    decoding?: AttemptInput['decoding'];
    errorBody?: AttemptInput['errorBody'];
    body?: UpstreamCall['body'];
  } = {},
) {
  const reply = new FakeReply();
  const ctrl = new FakeControl();
  const timers = new FakeTimers();
  let sink: UpstreamSink | null = null;
  const client = {
    call(_call: UpstreamCall, s: UpstreamSink): UpstreamControl {
      sink = s;
      return ctrl;
    },
  };
  let outcome: AttemptOutcome | null = null;
  const promise = runAttempt(
    {
      client,
      call: { url: 'http://upstream.test/v1', headers: {}, body: opts.body ?? '{}' },
      protocol: fakeProtocol,
      slugJson: SLUG,
      reply,
      limits: opts.limits ?? LIMITS,
      identity: IDENTITY,
      ...(opts.beforeComplete ? { beforeComplete: opts.beforeComplete } : {}),
      ...(opts.stop ? { stop: opts.stop } : {}),
      ...(opts.decoding ? { decoding: opts.decoding } : {}),
      ...(opts.errorBody ? { errorBody: opts.errorBody } : {}),
    },
    timers,
  ).then((o) => (outcome = o));
  const upstream = (): UpstreamSink => {
    if (!sink) throw new Error('the attempt did not call the upstream');
    return sink;
  };
  return { reply, ctrl, timers, promise, upstream, outcome: () => outcome };
}
