// Charges the request could never have cost are never billed: a provider reporting 10^12 output
// tokens (in a JSON answer or at the end of a stream) is charged the request's bound — its prompt at
// the model's context, its output at the request's limit, at the channel's dearest prices — flagged
// `capped` in the ledger with what it reported, logged once and counted in
// pi_gateway_usage_capped_total; a report above the hold but within the bound is billed in full; and
// the gateway's own estimate for an answer without usage (its bytes / 4) is held to the hold.
import t from 'tap';
import { type RawExchange, rawHead, rawJson, rawUpstream } from '../../helpers/raw-upstream.ts';
import { parseMetrics, sampleValue } from '../../helpers/metrics.ts';
import { USER } from '../../helpers/admission.ts';
import { startStack, type Stack } from '../../helpers/stack.ts';

const CHAT = '/v1/chat/completions';
/** acme/chat-small on alpha: $1 / $2 per million tokens (1000 / 2000 nano-USD a token), a 32,000-token context. */
const PROMPT_NANO = 1000n;
const COMPLETION_NANO = 2000n;
const CONTEXT = 32_000n;

type Usage = { prompt_tokens: number; completion_tokens: number } | null;

function jsonAnswer(usage: Usage, content = 'hello'): Buffer {
  return rawJson(
    '200 OK',
    JSON.stringify({
      id: 'chatcmpl-raw',
      object: 'chat.completion',
      created: 1,
      model: 'upstream-model',
      choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }],
      ...(usage ? { usage: { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens } } : {}),
    }),
  );
}

function streamAnswer(usage: Usage): Buffer {
  const chunk = (delta: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
    `data: ${JSON.stringify({ id: 'chatcmpl-raw', object: 'chat.completion.chunk', created: 1, model: 'upstream-model', choices: [{ index: 0, delta, finish_reason: null }], ...extra })}\n\n`;
  const body = Buffer.from(
    chunk({ role: 'assistant', content: 'hel' }) +
      chunk({ content: 'lo' }) +
      `data: ${JSON.stringify({ id: 'chatcmpl-raw', object: 'chat.completion.chunk', created: 1, model: 'upstream-model', choices: [], usage })}\n\n` +
      'data: [DONE]\n\n',
  );
  return Buffer.concat([
    Buffer.from(
      rawHead('200 OK', [
        ['Content-Type', 'text/event-stream'],
        ['Content-Length', String(body.length)],
      ]),
      'latin1',
    ),
    body,
  ]);
}

interface Logged {
  event: string;
  fields: Record<string, unknown>;
}

async function stack(
  t: Parameters<typeof startStack>[0],
  answer: (ex: RawExchange) => Buffer,
): Promise<{ s: Stack; key: string; logs: Logged[] }> {
  const logs: Logged[] = [];
  const s = await startStack(t, {
    admin: true,
    telemetry: { metrics: { processMetrics: false } },
    log: (event, fields = {}) => logs.push({ event, fields }),
  });
  const up = await rawUpstream(t, (ex) => ex.end(answer(ex)));
  s.gw.ctx.upstreamOverride = new URL(up.url);
  const key = s.key('open');
  s.credit('open', '1000');
  return { s, key, logs };
}

async function ask(
  s: Stack,
  key: string,
  body: Record<string, unknown>,
): Promise<{ status: number; trace: string; text: string }> {
  const res = await s.post(
    CHAT,
    { model: 'acme/chat-small', messages: USER, provider: { only: ['alpha'] }, ...body },
    { key },
  );
  const text = await res.text();
  return { status: res.status, trace: res.headers.get('x-pi-trace-id') ?? '', text };
}

function settleOf(s: Stack, trace: string) {
  s.gw.ctx.wallets.flush();
  const rows = s.store.wallets.ledgerOf(trace);
  return { hold: rows.find((r) => r.kind === 'hold'), settle: rows.find((r) => r.kind === 'settle') };
}

t.test(
  'a provider reporting 10^12 output tokens is charged what the request could have cost, flagged, logged and counted',
  async (t) => {
    const { s, key, logs } = await stack(t, (ex) => {
      const body = JSON.parse(ex.body.toString()) as { stream?: boolean };
      const usage = { prompt_tokens: 12, completion_tokens: 1e12 };
      return body.stream ? streamAnswer(usage) : jsonAnswer(usage);
    });
    const bound = CONTEXT * PROMPT_NANO + 50n * COMPLETION_NANO;
    for (const stream of [false, true]) {
      const label = stream ? 'stream' : 'JSON answer';
      const r = await ask(s, key, { max_tokens: 50, stream });
      t.equal(r.status, 200, `${label}: answered`);
      const { settle } = settleOf(s, r.trace);
      t.equal(settle?.amount, bound, `${label}: charged the bound, $0.0321, not $2,000,000`);
      t.match(
        settle?.details,
        {
          capped: true,
          cap: 'bound',
          promptTokens: 12,
          completionTokens: 1e12,
          boundNano: String(bound),
          reportedCostAtto: String((12n * PROMPT_NANO + 10n ** 12n * COMPLETION_NANO) * 10n ** 9n),
        },
        `${label}: flagged, with the reported figures`,
      );
      const line = logs.find((l) => l.event === 'usage_capped' && l.fields['trace_id'] === r.trace);
      t.match(
        line?.fields,
        {
          workspace: 'open',
          model: 'acme/chat-small',
          provider: 'alpha',
          deployment: 'alpha/chat-small',
          cap: 'bound',
          prompt_tokens: 12,
          completion_tokens: 1e12,
          reported_usd: '2000000.000012',
          charged_usd: '0.0321',
          bound_usd: '0.0321',
        },
        `${label}: one log line`,
      );
      t.notMatch(JSON.stringify(line), /sk-pi-/, `${label}: no key in it`);
    }
    t.equal(logs.filter((l) => l.event === 'usage_capped').length, 2, 'one line per capped request');
    t.equal(
      s.store.wallets.show('open', s.clock.now()).balance,
      1000n * 10n ** 9n - 2n * bound,
      'the wallet paid the bounds only',
    );
    const metrics = parseMetrics(await (await fetch(`${(s.admin as NonNullable<typeof s.admin>).url}/metrics`)).text());
    t.equal(sampleValue(metrics, 'pi_gateway_usage_capped_total', { provider: 'alpha', cap: 'bound' }), 2, 'counted');
    t.same(s.store.wallets.verify(), { ok: true, problems: [] });
  },
);

t.test('a report above the hold but within the bound is billed in full, unflagged', async (t) => {
  // The provider ignored max_tokens: 2 and wrote 400 tokens, reading a prompt larger than the body.
  const { s, key, logs } = await stack(t, () => jsonAnswer({ prompt_tokens: 5000, completion_tokens: 400 }));
  const r = await ask(s, key, { max_tokens: 2 });
  const { hold, settle } = settleOf(s, r.trace);
  const cost = 5000n * PROMPT_NANO + 400n * COMPLETION_NANO;
  t.ok(hold && hold.amount < cost, `more than the hold (${hold?.amount} nano-USD)`);
  t.equal(settle?.amount, cost, 'billed as reported');
  t.notOk(settle?.details?.['capped'], 'not flagged');
  t.equal(logs.filter((l) => l.event === 'usage_capped').length, 0, 'nothing logged');
});

t.test('an answer without usage: the estimate (its bytes / 4) is held to the hold', async (t) => {
  const { s, key } = await stack(t, () => jsonAnswer(null, 'x'.repeat(1 << 20)));
  const r = await ask(s, key, { max_tokens: 16 });
  t.equal(r.status, 200);
  const { hold, settle } = settleOf(s, r.trace);
  t.ok(hold, 'held');
  t.equal(
    settle?.amount,
    hold?.amount,
    `charged the hold (${hold?.amount} nano-USD), not 262,144 estimated output tokens ($0.52)`,
  );
  t.match(settle?.details, { estimated: true, capped: true, cap: 'hold' });
  t.ok((settle?.details?.['completionTokens'] as number) > 262_000, 'the estimate is recorded as it was');
  const metrics = parseMetrics(await (await fetch(`${(s.admin as NonNullable<typeof s.admin>).url}/metrics`)).text());
  t.equal(
    sampleValue(metrics, 'pi_gateway_usage_capped_total', { provider: 'alpha', cap: 'hold' }),
    1,
    'counted apart from provider reports',
  );
});
