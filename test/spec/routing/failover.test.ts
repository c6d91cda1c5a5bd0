// Failover through a real gateway and simulator: every simulator failure mode before the first
// content event moves on to the next deployment invisibly (rounds of four scripted failures, the
// fifth attempt answers), at most 5 attempts, never after a byte reached the client; client-fault
// 4xx are returned as is; what the client gets when every attempt fails; only the attempt that
// answered is billed while every attempt is logged.
import t, { type Test } from 'tap';
import type { Behaviour } from '../../../src/simulator/server.ts';
import { parseSse } from '../../helpers/inference.ts';
import {
  CHAT,
  MULTI_ORDER,
  USER,
  gatewayError,
  lastLog,
  routingStack,
  upstreams,
  type RoutingStack,
} from './routing-helpers.ts';

/** Short real timeouts so the timeout failure modes fire quickly. */
const LIMITS = { firstByteTimeoutMs: 300, streamIdleTimeoutMs: 300 };
const LATE = 1000;

type Mode = [name: string, behaviour: Behaviour, outcome: string];

const STATUS_MODES: Mode[] = [
  ['500', { status: 500 }, 'status_500'],
  ['502', { status: 502 }, 'status_502'],
  ['503', { status: 503 }, 'status_503'],
  ['529', { status: 529 }, 'status_529'],
  ['429', { status: 429, headers: { 'retry-after': '3' } }, 'status_429'],
  ['401 (our credential refused)', { status: 401 }, 'status_401'],
  ['403 (our credential refused)', { status: 403 }, 'status_403'],
  ['408', { status: 408 }, 'status_408'],
  ['409', { status: 409 }, 'status_409'],
];

const STREAM_MODES: Mode[] = [
  ...STATUS_MODES,
  ['reset before the head', { reset: 'before_head' }, 'reset'],
  ['reset after the head', { reset: 'after_head' }, 'reset'],
  ['reset after the preamble', { reset: 'after_preamble' }, 'reset'],
  ['first byte too late', { ttfbMs: LATE }, 'timeout'],
  ['head, then silence', { firstEventDelayMs: LATE }, 'timeout'],
  ['preamble, then a stall', { stallAfterChunks: 0 }, 'timeout'],
  ['content too late', { chunkDelayMs: LATE }, 'timeout'],
  ['malformed frame before content', { malformedAfterChunks: 0 }, 'malformed'],
  ['in-band error in a 200 stream', { inbandError: true }, 'inband_error'],
  ['preamble only, then a clean end', { preambleOnly: true }, 'empty'],
];

const JSON_MODES: Mode[] = [
  ...STATUS_MODES,
  ['reset before the head', { reset: 'before_head' }, 'reset'],
  ['reset after the head', { reset: 'after_head' }, 'reset'],
  ['half a body, then reset', { reset: 'after_chunks' }, 'reset'],
  ['first byte too late', { ttfbMs: LATE }, 'timeout'],
  ['never answers', { stallAfterChunks: 0 }, 'timeout'],
  ['half a body, then silence', { stallAfterChunks: 1 }, 'timeout'],
  ['JSON cut in half', { malformedAfterChunks: 0 }, 'malformed'],
];

function rounds<T>(list: T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < list.length; i += size) out.push(list.slice(i, i + size));
  return out;
}

/** Scripts the first deployments of the attempt order with one failure each. */
function script(r: RoutingStack, modes: Mode[]): void {
  for (const [i, [, b]] of modes.entries()) r.s.sim.script(MULTI_ORDER[i] as string, b, 1);
}

const PLATFORM_OF: Record<string, string> = {
  'multi-aws': 'aws',
  'multi-gcp': 'gcp',
  'multi-gemini': 'gemini',
  'multi-kappa': 'kappa',
  'multi-lambda': 'lambda',
};

for (const [kind, modes] of [
  ['stream', STREAM_MODES],
  ['JSON', JSON_MODES],
] as const) {
  t.test(
    `${kind}: every failure mode before the first content event fails over invisibly (4 failures, the 5th attempt answers)`,
    async (t) => {
      for (const round of rounds(modes, 4)) {
        const r = await routingStack(t, { limits: LIMITS });
        script(r, round);
        const what = round.map(([n]) => n).join(' → ');
        const res = await r.chat({ stream: kind === 'stream' });
        const answered = MULTI_ORDER[round.length] as string;
        t.equal(res.status, 200, `${what}: 200`);
        t.equal(res.headers.get('x-pi-provider'), PLATFORM_OF[answered], `${what}: served by the next deployment`);
        t.equal(res.headers.get('x-pi-model'), 'acme/multi');
        t.equal(res.headers.get('x-pi-upstream-model'), answered);
        const text = await res.text();
        if (kind === 'stream') {
          const events = parseSse(text);
          t.equal(
            events.filter((e) => e.data.includes('"role":"assistant"')).length,
            1,
            `${what}: one preamble, nothing of a failed attempt`,
          );
          t.equal(events.at(-1)?.data, '[DONE]');
          t.notMatch(text, /"error"/, 'no error event reached the client');
        } else {
          const body = JSON.parse(text) as { model: string; choices: unknown[] };
          t.equal(body.model, 'acme/multi');
          t.equal(body.choices.length, 1);
        }
        t.same(upstreams(r.s), MULTI_ORDER.slice(0, round.length + 1), `${what}: tried in order`);
        const row = lastLog(r.s);
        t.equal(row.attempts, round.length + 1);
        t.same(
          row.attempts_json.map((a) => a.outcome),
          [...round.map(([, , o]) => o), 'ok'],
          `${what}: each attempt logged with its outcome`,
        );
        t.same(
          row.attempts_json.map((a) => a.deployment),
          MULTI_ORDER.slice(0, round.length + 1).map((m) => m.replace('multi-', '') + '/multi'),
        );
        t.equal(row.status, 200);
        t.equal(row.provider, PLATFORM_OF[answered]);
        await r.s.close();
      }
    },
  );
}

t.test('five failures: the cap is 5 attempts, the sixth deployment is never called', async (t) => {
  for (const stream of [false, true]) {
    const r = await routingStack(t, { limits: LIMITS });
    script(r, [
      ['reset', { reset: 'before_head' }, 'reset'],
      ['timeout', { ttfbMs: LATE }, 'timeout'],
      ['503', { status: 503 }, 'status_503'],
      ['401', { status: 401 }, 'status_401'],
      ['500', { status: 500, requestId: 'req_last' }, 'status_500'],
    ]);
    const res = await r.chat({ stream });
    t.equal(res.status, 500, 'the last attempt answer is passed through');
    t.equal(res.headers.get('x-pi-provider'), 'lambda');
    t.equal(res.headers.get('x-pi-model'), 'acme/multi');
    t.equal(res.headers.get('x-pi-upstream-request-id'), 'req_last');
    const body = (await res.json()) as { error: { type: string } };
    t.equal(body.error.type, 'server_error', "the provider's own error body");
    t.same(upstreams(r.s), MULTI_ORDER.slice(0, 5), 'mu, mu-a, nu, kappa-down never called');
    const row = lastLog(r.s);
    t.equal(row.attempts, 5);
    t.same(
      row.attempts_json.map((a) => a.outcome),
      ['reset', 'timeout', 'status_503', 'status_401', 'status_500'],
    );
    t.equal(row.error_code, 'provider_error');
    await r.s.close();
  }
});

t.test('no attempt once a byte reached the client', async (t) => {
  const cases: [string, Behaviour, string][] = [
    ['reset after one content event', { resetAfterChunks: 1 }, 'committed_reset'],
    ['stall after one content event', { stallAfterChunks: 1 }, 'committed_timeout'],
    ['malformed frame after one content event', { malformedAfterChunks: 1 }, 'committed_malformed'],
  ];
  for (const [what, b, outcome] of cases) {
    // A fresh stack each: three broken streams in a row would trip aws's breaker.
    const r = await routingStack(t, { limits: LIMITS });
    r.s.sim.script('multi-aws', b, 1);
    const res = await r.chat({ stream: true });
    t.equal(res.status, 200, what);
    t.equal(res.headers.get('x-pi-provider'), 'aws');
    const events = parseSse(await res.text());
    t.ok(
      events.some((e) => /"content":"[^"]+"/.test(e.data)),
      `${what}: content reached the client`,
    );
    t.not(events.at(-1)?.data, '[DONE]', `${what}: no normal end`);
    t.match(events.at(-1)?.data, /error/, `${what}: the stream ends with an error event`);
    t.same(upstreams(r.s), ['multi-aws'], `${what}: nobody else was asked`);
    const row = lastLog(r.s);
    t.equal(row.attempts, 1);
    t.equal(row.attempts_json[0]?.outcome, outcome);
  }
  // Messages: the same once a content_block_delta went out.
  const r = await routingStack(t, { limits: LIMITS });
  r.s.sim.script('multi-aws', { resetAfterChunks: 1 }, 1);
  const res = await r.s.post(
    '/v1/messages',
    { model: 'acme/multi', max_tokens: 50, messages: USER, stream: true },
    { key: r.key },
  );
  const events = parseSse(await res.text());
  t.ok(events.some((e) => e.event === 'content_block_delta'));
  t.equal(events.at(-1)?.event, 'error');
  t.same(upstreams(r.s), ['multi-aws']);
});

t.test(
  'the commit point is the first content event on every protocol: a client never sees two preambles',
  async (t) => {
    const r = await routingStack(t, { limits: LIMITS });
    const failures: Mode[] = [
      ['in-band error', { inbandError: true }, 'inband_error'],
      ['preamble only', { preambleOnly: true }, 'empty'],
      ['reset after preamble', { reset: 'after_preamble' }, 'reset'],
      ['stall after preamble', { stallAfterChunks: 0 }, 'timeout'],
    ];
    const protocols: [string, Record<string, unknown>, (text: string) => number, (text: string) => boolean][] = [
      [
        '/v1/messages',
        { model: 'acme/multi', max_tokens: 50, messages: USER, stream: true },
        (x) => parseSse(x).filter((e) => e.event === 'message_start').length,
        (x) => parseSse(x).at(-1)?.event === 'message_stop',
      ],
      [
        '/v1/responses',
        { model: 'acme/multi', input: 'hi', stream: true },
        (x) => parseSse(x).filter((e) => e.event === 'response.created').length,
        (x) => parseSse(x).at(-1)?.event === 'response.completed',
      ],
      [
        CHAT,
        { model: 'acme/multi', messages: USER, stream: true },
        (x) => parseSse(x).filter((e) => e.data.includes('"role":"assistant"')).length,
        (x) => parseSse(x).at(-1)?.data === '[DONE]',
      ],
    ];
    for (const [path, body, preambles, ended] of protocols) {
      r.s.sim.clear();
      script(r, failures);
      const res = await r.s.post(path, body, { key: r.key });
      t.equal(res.status, 200, path);
      t.equal(res.headers.get('x-pi-provider'), 'lambda', `${path}: the fifth deployment answered`);
      const text = await res.text();
      t.equal(preambles(text), 1, `${path}: exactly one preamble`);
      t.ok(ended(text), `${path}: the normal end`);
      t.notMatch(text, /multi-aws|multi-gcp|multi-gemini|multi-kappa"/, `${path}: nothing from a failed attempt`);
      t.equal(upstreams(r.s).length, 5);
    }
  },
);

t.test('client-fault 4xx: returned with its status and provider headers, not retried', async (t) => {
  const r = await routingStack(t);
  for (const status of [400, 404, 413, 422]) {
    r.s.sim.clear();
    r.s.sim.script('multi-aws', { status, requestId: `req_${status}` }, 1);
    for (const stream of [false, true]) {
      if (stream) r.s.sim.script('multi-aws', { status, requestId: `req_${status}` }, 1);
      const res = await r.chat({ stream });
      t.equal(res.status, status, `${status} passed through`);
      t.equal(res.headers.get('x-pi-provider'), 'aws');
      t.equal(res.headers.get('x-pi-model'), 'acme/multi');
      t.equal(res.headers.get('x-pi-upstream-request-id'), `req_${status}`);
      const body = (await res.json()) as { error: { message: string } };
      t.type(body.error.message, 'string');
    }
    t.same(upstreams(r.s), ['multi-aws', 'multi-aws'], `${status}: one attempt per request`);
    t.equal(lastLog(r.s).attempts, 1);
  }
});

t.test('every attempt fails: what the client gets', async (t) => {
  t.test('the last attempt answered with an error: passed through with its status and provider headers', async (t) => {
    const r = await routingStack(t);
    r.s.sim.script('multi-aws', { status: 503 }, 1);
    r.s.sim.script('multi-gcp', { status: 429, headers: { 'retry-after': '7' }, requestId: 'req_gcp' }, 1);
    const res = await r.chat({ provider: { only: ['aws', 'gcp'] } });
    t.equal(res.status, 429);
    t.equal(res.headers.get('retry-after'), '7', "the provider's Retry-After reaches the client");
    t.equal(res.headers.get('x-pi-provider'), 'gcp');
    t.equal(res.headers.get('x-pi-upstream-request-id'), 'req_gcp');
    t.equal(
      ((await res.json()) as { error: { code: string } }).error.code,
      'rate_limit_exceeded',
      'the body is the provider error',
    );
  });

  t.test(
    'our credential refused by the last one: 503 provider_unavailable naming it, no X-Pi-Upstream-*',
    async (t) => {
      const r = await routingStack(t);
      for (const [only, statuses, refusing] of [
        [['aws'], [401], 'aws'],
        [['aws', 'gcp'], [500, 403], 'gcp'],
        [['aws', 'gcp', 'nu'], [401, 401, 401], 'nu'],
      ] as const) {
        r.s.sim.clear();
        const ids = ['multi-aws', 'multi-gcp', 'multi-nu'];
        for (const [i, status] of statuses.entries()) r.s.sim.script(ids[i] as string, { status }, 1);
        const res = await r.chat({ provider: { only: [...only] } });
        t.equal(res.status, 503);
        t.equal(res.headers.get('x-pi-provider'), refusing, 'names the refusing provider');
        t.equal(res.headers.get('x-pi-model'), 'acme/multi');
        t.equal(res.headers.get('x-pi-upstream-model'), null);
        t.equal(res.headers.get('x-pi-upstream-request-id'), null);
        const body = (await res.json()) as { error: { code: string; message: string } };
        t.equal(body.error.code, 'provider_unavailable');
        t.match(body.error.message, refusing);
        t.equal(upstreams(r.s).length, statuses.length);
      }
      // A refusal another provider takes over from is invisible (a fresh stack: aws has tripped by now).
      const fresh = await routingStack(t);
      fresh.s.sim.script('multi-aws', { status: 401 }, 1);
      const res = await fresh.chat({});
      t.equal(res.status, 200);
      t.equal(res.headers.get('x-pi-provider'), 'gcp');
      await res.text();
    },
  );

  t.test('no provider answered at all: 503 provider_unavailable with gateway headers only', async (t) => {
    const r = await routingStack(t, { limits: LIMITS });
    for (const b of [
      { reset: 'before_head' },
      { ttfbMs: LATE },
      { inbandError: true },
      { preambleOnly: true },
    ] as Behaviour[]) {
      r.s.sim.clear();
      const res = await r.chat({ stream: true, sim: b });
      const err = await gatewayError(t, res, 503, 'provider_unavailable');
      t.match(err.message, /5 attempts/);
      t.equal(upstreams(r.s).length, 5, `${JSON.stringify(b)}: five attempts`);
    }
  });

  t.test('connection refused everywhere: five connect failures, 503 with gateway headers only', async (t) => {
    const r = await routingStack(t);
    // Every upstream origin is replaced by the harness; point it at a port nothing listens on.
    r.s.gw.ctx.upstreamOverride = new URL('http://127.0.0.1:1');
    const res = await r.chat({});
    await gatewayError(t, res, 503, 'provider_unavailable');
    const row = lastLog(r.s);
    t.equal(row.attempts, 5);
    t.same(
      row.attempts_json.map((a) => a.outcome),
      ['connect', 'connect', 'connect', 'connect', 'connect'],
    );
    t.same(
      row.attempts_json.map((a) => a.status),
      [null, null, null, null, null],
    );
  });

  t.test(
    'an earlier provider error, then no answer at all: the last attempt decides (503, gateway headers)',
    async (t) => {
      const r = await routingStack(t, { limits: LIMITS });
      r.s.sim.script('multi-aws', { status: 500 }, 1);
      r.s.sim.script('multi-gcp', { reset: 'before_head' }, 1);
      const res = await r.chat({ provider: { only: ['aws', 'gcp'] } });
      await gatewayError(t, res, 503, 'provider_unavailable');
    },
  );
});

t.test('billing: only the attempt that answered is charged; failed attempts cost nothing but are logged', async (t) => {
  const check = async (t: Test, stream: boolean) => {
    const r = await routingStack(t, { limits: LIMITS });
    // Failed attempts that report (large) usage of their own: none of it may be billed.
    const usage = { prompt: 9999, completion: 9999 };
    const failures: Mode[] = stream
      ? [
          ['500', { status: 500, usage }, 'status_500'],
          ['in-band error', { inbandError: true, usage }, 'inband_error'],
          ['preamble only', { preambleOnly: true, usage }, 'empty'],
          ['reset', { reset: 'after_preamble', usage }, 'reset'],
        ]
      : [
          ['500', { status: 500, usage }, 'status_500'],
          ['JSON cut in half', { malformedAfterChunks: 0, usage }, 'malformed'],
          ['half a body, then reset', { reset: 'after_chunks', usage }, 'reset'],
          ['reset', { reset: 'after_head', usage }, 'reset'],
        ];
    script(r, failures);
    r.s.sim.script('multi-lambda', { usage: { prompt: 1000, completion: 100 } }, 1);
    const before = r.s.store.wallets.show('open', r.s.clock.now());
    const res = await r.chat({ stream, max_tokens: 200 });
    t.equal(res.status, 200);
    await res.text();
    // lambda's channel price: 0.000001 in, 0.000002 out → 1000 × 1e-6 + 100 × 2e-6 = 0.0012 USD.
    const cost = 1_200_000n;
    const after = r.s.store.wallets.show('open', r.s.clock.now());
    t.equal(before.balance - after.balance, cost, 'charged once, at the answering channel price');
    t.equal(after.held, 0n, 'the hold is settled');
    t.same(r.s.store.wallets.usage('open'), [{ model: 'acme/multi', provider: 'lambda', requests: 1, costNano: cost }]);
    const row = lastLog(r.s);
    t.equal(row.cost_nano, cost);
    t.equal(row.attempts, 5);
    t.same(
      row.attempts_json.map((a) => [a.provider, a.outcome]),
      [...failures.map(([, , o], i) => [['aws', 'gcp', 'gemini', 'kappa'][i], o]), ['lambda', 'ok']],
    );
    t.equal(row.prompt_tokens, 1000);
    t.equal(row.completion_tokens, 100);
    t.ok(r.s.store.wallets.verify().ok);

    // Every attempt fails: nothing charged, the hold released, still five attempts logged.
    r.s.sim.clear();
    const res2 = await r.chat({ stream, max_tokens: 200, sim: { status: 503 } });
    t.equal(res2.status, 503);
    await res2.text();
    const last = r.s.store.wallets.show('open', r.s.clock.now());
    t.equal(last.balance, after.balance, 'nothing charged');
    t.equal(last.held, 0n, 'the hold is released');
    const row2 = lastLog(r.s);
    t.equal(row2.cost_nano, null);
    t.equal(row2.attempts, 5);
    t.equal(row2.attempts_json.length, 5);
  };
  t.test('JSON', (t) => check(t, false));
  t.test('stream', (t) => check(t, true));
});
