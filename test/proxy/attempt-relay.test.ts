// The stream relay without a server: preamble hold and the commit point, what breaks an attempt
// before the commit (fails over invisibly) and after it (the protocol's error event, never the end
// marker), backpressure both ways, the first-byte and idle limits on a fake clock, settle-before-
// last-byte, and client aborts. The fake protocol's events name their kind (see attempt-fakes.ts).
import t from 'tap';
import { StreamRelay } from '../../src/proxy/attempt-relay.ts';
import type { AttemptInput, AttemptLimits, AttemptOutcome } from '../../src/proxy/attempt-types.ts';
import { answerHead, coreHarness, ev, fakeProtocol, IDENTITY, LIMITS, SLUG } from './attempt-fakes.ts';

const DONE = 'data: [DONE]\n\n';

function relay(opts: { limits?: AttemptLimits; beforeComplete?: AttemptInput['beforeComplete'] } = {}) {
  const h = coreHarness(opts.limits, opts.beforeComplete);
  const unit = new StreamRelay(
    h.core,
    fakeProtocol,
    fakeProtocol.tap(SLUG),
    answerHead(200, { 'content-type': 'text/event-stream', 'x-request-id': 'req-1' }),
  );
  // What the attempt's sink does: a client abort reaches the phase while the attempt runs.
  h.reply.onAborted(() => {
    if (!h.core.done) unit.onClientAborted();
  });
  /** One upstream chunk made of these pieces. */
  const data = (...parts: (string | Buffer)[]) =>
    unit.onData(Buffer.concat(parts.map((p) => (typeof p === 'string' ? Buffer.from(p) : p))));
  return { ...h, unit, data };
}

function s(b: Buffer): string {
  return b.toString('utf8');
}

function errorEvent(message: string): string {
  return s(fakeProtocol.streamErrorEvent(`${message}; the answer is incomplete`, 'upstream_stream_error'));
}

function committed(o: AttemptOutcome | null) {
  if (o?.kind !== 'committed') throw new Error(`expected a committed outcome, got ${JSON.stringify(o)}`);
  return o;
}

t.test('preamble is held, then goes out with the first content event in one write', async (t) => {
  const r = relay();
  r.data(ev('p1'));
  r.data(': keep-alive\n\n', ev('p2'));
  t.same(r.reply.wire, [], 'nothing reaches the client before content');
  r.timers.advance(30);
  r.data(ev('c1'), ev('c2'));
  t.same(
    r.reply.wire,
    ['head 200', `write ${s(ev('p1'))}${s(ev('p2'))}${s(ev('c1'))}`, `write ${s(ev('c2'))}`],
    'the comment before the commit is dropped, not held',
  );
  t.same(r.reply.headers, [
    ...IDENTITY,
    ['X-Pi-Upstream-Model', 'up-model'],
    ['X-Pi-Upstream-Request-Id', 'req-1'],
    ['Content-Type', 'text/event-stream'],
  ]);
  t.equal(r.core.firstByteMs, 30, 'the first byte is the first content event');
  r.data(': keep-alive\n\n', ev('c3'));
  t.equal(
    r.reply.wire.at(-1),
    `write : keep-alive\n\n${s(ev('c3'))}`,
    'comments are relayed once committed, with the chunk in one write',
  );
  t.equal(r.seen.outcome, null, 'still running');
});

t.test('a preamble past preambleMaxBytes commits without content', async (t) => {
  const r = relay();
  const pre = Array.from({ length: 7 }, (_, i) => ev(`p${i}`)); // 7 × 10 bytes > 64
  r.data(...pre.slice(0, 6));
  t.same(r.reply.wire, [], '60 bytes are held');
  r.data(pre[6] ?? '', ev('c1'));
  t.same(r.reply.wire, ['head 200', `write ${pre.map(s).join('')}`, `write ${s(ev('c1'))}`]);
  t.ok(r.core.firstByteMs !== null, 'committed');
});

t.test(
  'before the commit: error, malformed, terminal, end and upstream errors fail over with nothing written',
  async (t) => {
    const cases: [string, (r: ReturnType<typeof relay>) => void, string, string][] = [
      [
        'in-band error',
        (r) => r.data(ev('p1'), ev('e1')),
        'inband_error',
        'the provider stream opened with an error event',
      ],
      [
        'malformed event',
        (r) => r.data(ev('p1'), ev('x1')),
        'malformed',
        'the provider sent a malformed event before any content',
      ],
      [
        'terminal before content',
        (r) => r.data(ev('p1'), DONE),
        'empty',
        'the provider stream ended before any content',
      ],
      [
        'end before content',
        (r) => {
          r.data(ev('p1'));
          r.unit.onEnd();
        },
        'empty',
        'the provider stream ended before any content',
      ],
      [
        'end inside an event',
        (r) => {
          r.data('data: c1');
          r.unit.onEnd();
        },
        'malformed',
        'the provider stream ended inside an event',
      ],
      [
        'an event over the size limit',
        (r) => r.data(`data: p${'a'.repeat(300)}`),
        'too_large',
        'a provider event exceeded 256 bytes',
      ],
    ];
    for (const [name, run, reason, detail] of cases) {
      const r = relay();
      run(r);
      t.same(r.seen.outcome, { kind: 'failed', reason, detail, firstByteMs: null }, name);
      t.same(r.ctrl.aborts, [detail], `${name}: the upstream exchange is dropped`);
      t.same(r.reply.wire, [], `${name}: nothing written`);
      t.equal(r.timers.armed, 0, `${name}: no timer left`);
    }
    const r = relay();
    r.data(ev('p1'));
    r.unit.onError(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }));
    t.same(
      r.seen.outcome,
      { kind: 'failed', reason: 'connect', detail: 'connect ECONNREFUSED', firstByteMs: null },
      'connect error',
    );
    const r2 = relay();
    r2.unit.onError(new Error('socket hang up'));
    t.same(r2.seen.outcome, { kind: 'failed', reason: 'reset', detail: 'socket hang up', firstByteMs: null }, 'reset');
    t.same(r2.ctrl.aborts, [], 'a broken exchange is over already');
  },
);

t.test('the first-byte limit runs until the first content event, preamble or not', async (t) => {
  const r = relay();
  r.data(ev('p1'));
  r.timers.advance(4999);
  t.equal(r.seen.outcome, null);
  r.timers.advance(1);
  t.same(r.seen.outcome, {
    kind: 'failed',
    reason: 'timeout',
    detail: 'provider did not start answering within 5000 ms',
    firstByteMs: null,
  });
  t.same(r.ctrl.aborts, ['provider did not start answering within 5000 ms']);
  t.same(r.reply.wire, []);
});

t.test('after the commit: the terminal event completes the stream', async (t) => {
  const r = relay();
  r.timers.advance(12);
  r.data(ev('c1'));
  r.data(ev('c2'), DONE, ev('c3'));
  t.same(
    r.reply.wire,
    ['head 200', `write ${s(ev('c1'))}`, `write ${s(ev('c2'))}`, `write ${DONE}`, 'end'],
    'nothing after the end marker',
  );
  const o = committed(r.seen.outcome);
  t.same(o, {
    kind: 'committed',
    status: 200,
    stream: true,
    upstreamModel: null,
    usage: { promptTokens: 1, completionTokens: 2 },
    inputUsage: null,
    completed: true,
    broken: null,
    clientAborted: false,
    firstByteMs: 12,
    contentEvents: 2,
    contentBytes: 20,
  });
  t.same(r.ctrl.aborts, [], 'a complete answer leaves the upstream alone');
  t.equal(r.timers.armed, 0);
  t.equal(r.seen.count, 1);
});

t.test('after the commit: malformed, provider error, end and reset break the stream with an error event', async (t) => {
  const cases: [string, (r: ReturnType<typeof relay>) => void, string, string[]][] = [
    [
      'malformed event',
      (r) => r.data(ev('c2'), ev('x1'), ev('c3')),
      'malformed',
      [`write ${s(ev('c2'))}`, `write ${errorEvent('the provider sent a malformed event')}`, 'end'],
    ],
    [
      'end before the end marker',
      (r) => r.unit.onEnd(),
      'reset',
      [`write ${errorEvent('the provider stream ended before its end marker')}`, 'end'],
    ],
    [
      'end inside an event',
      (r) => {
        r.data('data: c2');
        r.unit.onEnd();
      },
      'malformed',
      [`write ${errorEvent('the provider stream ended inside an event')}`, 'end'],
    ],
    [
      'connection broke',
      (r) => r.unit.onError(new Error('socket hang up')),
      'reset',
      [`write ${errorEvent('the provider connection broke')}`, 'end'],
    ],
    [
      'provider error event',
      (r) => r.data(ev('c2'), ev('e1')),
      'inband_error',
      [`write ${s(ev('c2'))}${s(ev('e1'))}`, 'end'],
    ],
  ];
  for (const [name, run, broken, tail] of cases) {
    const r = relay();
    r.data(ev('c1'));
    run(r);
    t.same(r.reply.wire, ['head 200', `write ${s(ev('c1'))}`, ...tail], name);
    t.notMatch(r.reply.body, '[DONE]', `${name}: never the normal end marker`);
    const o = committed(r.seen.outcome);
    t.equal(o.broken, broken, `${name}: broken ${broken}`);
    t.equal(o.completed, false);
    t.equal(r.ctrl.aborts.length, 1, `${name}: the upstream exchange is dropped`);
    t.equal(r.timers.armed, 0);
  }
});

t.test('idle limit after the commit: each chunk restarts it; a stall ends with the error event', async (t) => {
  const r = relay();
  r.data(ev('c1'));
  r.timers.advance(999);
  r.data(ev('c2'));
  r.timers.advance(999);
  t.equal(r.seen.outcome, null, 'each chunk restarts the idle limit');
  r.timers.advance(1);
  t.same(r.reply.wire.slice(-2), [`write ${errorEvent('the provider stream stalled for 1000 ms')}`, 'end']);
  t.notMatch(r.reply.body, '[DONE]');
  t.equal(committed(r.seen.outcome).broken, 'timeout');
  t.same(r.ctrl.aborts, ['the provider stream stalled for 1000 ms']);
  t.equal(r.timers.armed, 0);
});

t.test(
  'backpressure: a slow client pauses the upstream, silence while paused is no stall, drain resumes',
  async (t) => {
    const r = relay();
    r.reply.accepting = false;
    r.data(ev('p1'), ev('c1'));
    t.equal(r.ctrl.pauses, 1, 'write returned false: upstream paused');
    t.ok(r.reply.waitingWritable, 'waiting for the client to drain');
    r.timers.advance(10_000);
    t.equal(r.seen.outcome, null, 'no idle timeout while paused');
    // A chunk already in flight when the pause took effect: relayed, no second pause.
    r.data(ev('c2'));
    t.equal(r.ctrl.pauses, 1);
    r.timers.advance(10_000);
    t.equal(r.seen.outcome, null, 'still no idle timeout while paused');
    r.reply.drain();
    t.equal(r.ctrl.resumes, 1, 'drained: upstream resumed');
    r.data(ev('c3'));
    t.equal(r.ctrl.pauses, 1, 'the client keeps up again');
    t.same(
      r.reply.wire,
      ['head 200', `write ${s(ev('p1'))}${s(ev('c1'))}`, `write ${s(ev('c2'))}`, `write ${s(ev('c3'))}`],
      'nothing lost, in order',
    );
    // After a pause the idle limit still catches a real stall.
    r.timers.advance(999);
    t.equal(r.seen.outcome, null);
    r.timers.advance(1);
    t.equal(committed(r.seen.outcome).broken, 'timeout', 'the idle limit is re-armed on resume');
    t.match(r.reply.body, 'the provider stream stalled for 1000 ms');
  },
);

t.test('backpressure: the idle limit is re-armed on resume even with no chunk while paused', async (t) => {
  const r = relay();
  r.reply.accepting = false;
  r.data(ev('c1'));
  r.timers.advance(5000);
  r.reply.drain();
  t.equal(r.ctrl.resumes, 1);
  r.timers.advance(1000);
  t.equal(committed(r.seen.outcome).broken, 'timeout');
});

t.test('settle before the last byte: beforeComplete runs first and its promise delays the end marker', async (t) => {
  let release: () => void = () => undefined;
  const seenByHook: { outcome: AttemptOutcome; wire: number }[] = [];
  const r = relay({
    beforeComplete: (o) => {
      seenByHook.push({ outcome: o, wire: r.reply.wire.length });
      return new Promise<void>((resolve) => (release = resolve));
    },
  });
  r.data(ev('c1'));
  r.data(ev('c2'), DONE);
  t.equal(seenByHook.length, 1, 'the hook ran at the terminal event');
  t.same(seenByHook[0]?.outcome, {
    kind: 'committed',
    status: 200,
    stream: true,
    upstreamModel: null,
    usage: { promptTokens: 1, completionTokens: 2 },
    inputUsage: null,
    completed: true,
    broken: null,
    clientAborted: false,
    firstByteMs: 0,
    contentEvents: 2,
    contentBytes: 20,
  });
  t.same(
    r.reply.wire,
    ['head 200', `write ${s(ev('c1'))}`, `write ${s(ev('c2'))}`],
    'the end marker waits for the hook',
  );
  // While the hook runs: upstream bytes, its end or errors, and any time, change nothing.
  r.data(ev('c9'));
  r.unit.onEnd();
  r.unit.onError(new Error('late'));
  r.timers.advance(60_000);
  t.equal(r.seen.outcome, null);
  t.equal(r.reply.wire.length, 3);
  release();
  await new Promise((resolve) => setImmediate(resolve));
  t.same(r.reply.wire.slice(-2), [`write ${DONE}`, 'end']);
  t.equal(committed(r.seen.outcome).broken, null);
  t.equal(r.seen.count, 1);
});

t.test(
  'the last usage event waits for the settlement and carries what it adds; any other event sends it on unchanged',
  async (t) => {
    const usageEv = ev('{"usage":{"n":1}}');
    const COST = Buffer.from('"cost":0.5');
    const r = relay({ beforeComplete: () => Promise.resolve(COST) });
    r.data(ev('c1'), usageEv);
    t.same(r.reply.wire, ['head 200', `write ${s(ev('c1'))}`], 'held while it is the last event');
    r.data(DONE);
    await new Promise((resolve) => setImmediate(resolve));
    t.same(
      r.reply.wire.slice(2),
      [`write ${s(ev('{"usage":{"n":1,"cost":0.5}}'))}`, `write ${DONE}`, 'end'],
      'sent with the end, the addition in its usage',
    );

    const ping = relay({ beforeComplete: () => COST });
    ping.data(ev('c1'), usageEv, ev('p1'), ': keep-alive\n\n', DONE);
    t.same(
      ping.reply.wire.slice(1),
      [
        `write ${s(ev('c1'))}`,
        `write ${s(ev('p1'))}: keep-alive\n\n`,
        `write ${s(ev('{"usage":{"n":1,"cost":0.5}}'))}`,
        `write ${DONE}`,
        'end',
      ],
      'a keep-alive passes it: it keeps the addition',
    );

    const later = relay({ beforeComplete: () => COST });
    later.data(ev('c1'), usageEv, ev('c2'));
    later.data(DONE);
    t.same(
      later.reply.wire,
      ['head 200', `write ${s(ev('c1'))}`, `write ${s(usageEv)}${s(ev('c2'))}`, `write ${DONE}`, 'end'],
      'followed by another event: unchanged, and the addition goes nowhere',
    );

    const broken = relay({ beforeComplete: () => COST });
    broken.data(ev('c1'), usageEv);
    broken.unit.onEnd();
    t.same(
      broken.reply.wire.slice(2),
      [`write ${s(usageEv)}`, `write ${errorEvent('the provider stream ended before its end marker')}`, 'end'],
      'a stream cut after it: sent unchanged before the error event',
    );

    const first = relay({ beforeComplete: () => COST });
    first.data(ev('p1'), usageEv, DONE);
    t.same(
      first.reply.wire,
      ['head 200', `write ${s(ev('p1'))}`, `write ${s(ev('{"usage":{"n":1,"cost":0.5}}'))}`, `write ${DONE}`, 'end'],
      'the first content event too',
    );

    const nothing = relay({ beforeComplete: () => null });
    nothing.data(ev('c1'), usageEv, DONE);
    t.same(
      nothing.reply.wire.slice(2),
      [`write ${s(usageEv)}`, `write ${DONE}`, 'end'],
      'a hook that adds nothing: the event as it came',
    );
  },
);

t.test('settle before the last byte: a throwing or rejecting hook still delivers the end', async (t) => {
  const r = relay({
    beforeComplete: () => {
      throw new Error('hook failed');
    },
  });
  r.data(ev('c1'), DONE);
  t.same(r.reply.wire.slice(-2), [`write ${DONE}`, 'end']);
  const r2 = relay({ beforeComplete: () => Promise.reject(new Error('ledger down')) });
  r2.data(ev('c1'), DONE);
  await new Promise((resolve) => setImmediate(resolve));
  t.same(r2.reply.wire.slice(-2), [`write ${DONE}`, 'end']);
  t.equal(committed(r2.seen.outcome).broken, null);
});

t.test('client abort before the commit: fails over as client_aborted, nothing written', async (t) => {
  const r = relay();
  r.data(ev('p1'));
  r.reply.abort();
  t.same(r.seen.outcome, { kind: 'failed', reason: 'client_aborted', detail: 'client went away', firstByteMs: null });
  t.same(r.ctrl.aborts, ['client went away']);
  t.same(r.reply.wire, []);
  t.equal(r.timers.armed, 0);
});

t.test('client abort after the commit: a committed outcome cut by the client, nothing written after', async (t) => {
  const r = relay();
  r.data(ev('c1'));
  r.reply.abort();
  const o = committed(r.seen.outcome);
  t.equal(o.broken, 'client_aborted');
  t.equal(o.clientAborted, true);
  t.equal(o.completed, false);
  t.same(r.ctrl.aborts, ['client went away']);
  t.same(r.reply.wire, ['head 200', `write ${s(ev('c1'))}`], 'no error event, no end: the client is gone');
  t.equal(r.timers.armed, 0);
});

t.test(
  'client abort while beforeComplete pends: the client-aborted outcome wins, the end is never written',
  async (t) => {
    let release: () => void = () => undefined;
    const r = relay({ beforeComplete: () => new Promise<void>((resolve) => (release = resolve)) });
    r.data(ev('c1'), DONE);
    r.reply.abort();
    const o = committed(r.seen.outcome);
    t.equal(o.broken, 'client_aborted');
    t.equal(o.completed, true, 'the provider did finish');
    release();
    await new Promise((resolve) => setImmediate(resolve));
    t.same(r.reply.wire, ['head 200', `write ${s(ev('c1'))}`]);
    t.equal(r.seen.count, 1);
  },
);

t.test('a custom preamble bound and size limit come from the limits', async (t) => {
  const r = relay({ limits: { ...LIMITS, preambleMaxBytes: 1000, maxUpstreamEventBytes: 10_000 } });
  r.data(...Array.from({ length: 50 }, (_, i) => ev(`p${String(i).padStart(2, '0')}`)));
  t.same(r.reply.wire, [], '550 bytes of preamble held under a 1000-byte bound');
  r.data(`data: p${'a'.repeat(5000)}`);
  t.equal(r.seen.outcome, null, 'a 5000-byte partial event is under the 10000-byte limit');
});

t.test(
  'an event over the size limit after the commit point breaks the stream; one after the end marker changes nothing',
  async (t) => {
    const r = relay();
    r.data(ev('c1'));
    r.data(`data: c${'a'.repeat(100)}`);
    t.equal(r.seen.outcome, null, 'a partial event under the limit');
    r.data('a'.repeat(200));
    const o = committed(r.seen.outcome);
    t.equal(o.broken, 'too_large');
    t.same(r.ctrl.aborts, ['a provider event exceeded 256 bytes']);
    t.match(
      r.reply.wire.at(-2) ?? '',
      /a provider event exceeded 256 bytes; the answer is incomplete/,
      "the protocol's error event",
    );
    t.equal(r.reply.wire.at(-1), 'end');

    const whole = relay();
    whole.data(ev('c1'));
    whole.data(Buffer.concat([ev('c2'), Buffer.from(`data: c${'a'.repeat(300)}\n\n`)]));
    t.equal(committed(whole.seen.outcome).broken, 'too_large', 'a whole event over the limit in one chunk');
    t.match(whole.reply.body, /data: c2/, 'the events before it went out first');

    const after = relay();
    after.data(ev('c1'), DONE + `data: c${'a'.repeat(300)}`);
    t.equal(committed(after.seen.outcome).broken, null, 'complete');
  },
);

t.test('a client that drains while beforeComplete pends does not turn a complete stream into a stall', async (t) => {
  // The end marker arrived while the client was not reading; it then drains during a slow commit.
  // The upstream is over: the idle limit must not fire and end a complete answer with an error event.
  let release: () => void = () => undefined;
  const r = relay({ beforeComplete: () => new Promise<void>((resolve) => (release = resolve)) });
  r.reply.accepting = false;
  r.data(ev('c1'));
  r.reply.accepting = true;
  r.data(DONE);
  r.reply.drain();
  t.equal(r.ctrl.resumes, 0, 'nothing to resume: the upstream already ended');
  r.timers.advance(60_000);
  t.equal(r.seen.outcome, null, 'no stall while the settlement commits');
  release();
  await new Promise((resolve) => setImmediate(resolve));
  t.same(r.reply.wire.slice(-2), [`write ${DONE}`, 'end']);
  t.equal(committed(r.seen.outcome).broken, null);
});

t.test('write stall: a client that takes nothing for the limit is cut, with the error event queued', async (t) => {
  const r = relay({ limits: { ...LIMITS, writeStallTimeoutMs: 3000 } });
  r.data(ev('c1'));
  r.reply.accepting = false;
  r.data(ev('c2'));
  t.equal(r.ctrl.pauses, 1, 'paused on backpressure');
  r.timers.advance(2999);
  t.equal(r.seen.outcome, null, 'within the limit');
  r.timers.advance(1);
  const o = committed(r.seen.outcome);
  t.equal(o.broken, 'write_stall');
  t.equal(o.clientAborted, true, 'the client side ended it (billed like an abort)');
  t.equal(o.completed, false);
  t.same(r.ctrl.aborts, ['the client took no bytes for 3000 ms'], 'the upstream is cancelled');
  t.same(
    r.reply.wire.slice(-2),
    [
      `write ${s(fakeProtocol.streamErrorEvent('the client took no bytes for 3000 ms; the answer is incomplete', 'write_stall'))}`,
      'end',
    ],
    'the error event and the end go behind the unread bytes',
  );
  t.notMatch(r.reply.body, '[DONE]');
  t.equal(r.timers.armed, 0);
});

t.test('write stall: a client that drains in time is not cut, and a later stall gets a full limit', async (t) => {
  const r = relay({ limits: { ...LIMITS, writeStallTimeoutMs: 3000, streamIdleTimeoutMs: 100_000 } });
  r.data(ev('c1'));
  r.reply.accepting = false;
  r.data(ev('c2'));
  r.timers.advance(2500);
  r.reply.drain();
  r.timers.advance(2500);
  t.equal(r.seen.outcome, null, 'the drain cleared the stall timer');
  r.reply.accepting = false;
  r.data(ev('c3'));
  r.timers.advance(2999);
  t.equal(r.seen.outcome, null);
  r.timers.advance(1);
  t.equal(committed(r.seen.outcome).broken, 'write_stall');
});

t.test('write stall: not armed before the commit or once the end marker is being delivered', async (t) => {
  const r = relay({
    limits: { ...LIMITS, writeStallTimeoutMs: 3000 },
    beforeComplete: () => new Promise<void>(() => undefined),
  });
  r.data(ev('c1'));
  r.reply.accepting = false;
  r.data(ev('c2'), DONE);
  r.timers.advance(10_000);
  t.equal(r.seen.outcome, null, 'completing: the settlement is pending, no stall cut');
});

t.test(
  'drained: a live stream ends with the error event, a preamble fails, a completing one is left alone',
  async (t) => {
    const live = relay();
    live.data(ev('c1'));
    live.unit.onDrained();
    const o = committed(live.seen.outcome);
    t.equal(o.broken, 'drained');
    t.equal(o.clientAborted, false, 'the gateway ended it, not the client');
    t.same(live.reply.wire.slice(-2), [
      `write ${s(fakeProtocol.streamErrorEvent('the gateway is shutting down; the answer is incomplete', 'gateway_shutdown'))}`,
      'end',
    ]);
    t.same(live.ctrl.aborts, ['the gateway is shutting down']);
    t.equal(live.timers.armed, 0);

    const pre = relay();
    pre.data(ev('p1'));
    pre.unit.onDrained();
    t.same(pre.seen.outcome, {
      kind: 'failed',
      reason: 'drained',
      detail: 'the gateway is shutting down',
      firstByteMs: null,
    });
    t.same(pre.reply.wire, [], 'nothing reached the client');

    const completing = relay({ beforeComplete: () => new Promise<void>(() => undefined) });
    completing.data(ev('c1'), DONE);
    completing.unit.onDrained();
    t.equal(completing.seen.outcome, null, 'the settlement and end marker go ahead');
  },
);

t.test(
  'bytes after the end marker, while the settlement commits: not relayed, and the provider is dropped',
  async (t) => {
    let release: () => void = () => undefined;
    const r = relay({ beforeComplete: () => new Promise<void>((resolve) => (release = resolve)) });
    r.data(ev('c1'), DONE);
    r.data(ev('c2'));
    t.same(r.ctrl.aborts, ['the provider kept sending after its answer ended']);
    release();
    await new Promise((resolve) => setImmediate(resolve));
    t.equal(committed(r.seen.outcome).broken, null, 'the answer is complete');
    t.notMatch(r.reply.body, 'c2');
    t.equal(r.reply.wire.at(-1), 'end');
  },
);
