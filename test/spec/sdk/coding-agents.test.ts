// What coding agents send, replayed against the bundled catalog over real servers (the gateway and the
// simulator, with the demo's cloud credentials so every bundled platform answers): the requests
// recorded in test/fixtures/clients/*.json, each modelled on a client's published documentation or
// open source (the fixture names which). Claude Code's streamed Messages call (`?beta=true`, its
// anthropic-beta list and x-stainless-* headers, system blocks with cache_control, tools, thinking,
// metadata.user_id, max_tokens 32000) with either credential variable; its token count; its bare
// built-in model names (404 pointing at /v1/models) and its model discovery; its 32000-token hold on a
// small wallet (a 402 whose advice, applied, is admitted). Codex's Responses calls (input items,
// instructions, reasoning, store false, include, a tool round trip, the same request sent again after
// a dropped stream, the body zstd-compressed). opencode's Chat Completions stream with tools and
// stream_options. Each answer is checked for what its client needs: the status, the protocol's
// events, the slug as the model, usage with the settled cost.
import { readFileSync } from 'node:fs';
import { zstdCompressSync } from 'node:zlib';
import t, { type Test } from 'tap';
import { sealDemoCredentials } from '../../../src/cli/demo-credentials.ts';
import { ManualClock } from '../../../src/clock.ts';
import { nanoToDecimal } from '../../../src/money.ts';
import { openStore } from '../../../src/store/sqlite/store.ts';
import { DEFAULT_NOW, fixtureConfig, startStack, type Stack } from '../../helpers/stack.ts';
import { parseSse } from '../../helpers/inference.ts';

t.setTimeout(120_000);

interface Recorded {
  client: string;
  source: string;
  compression?: { content_encoding: string; when: string };
  request: { method: string; path: string; headers: Record<string, string>; body: Record<string, unknown> };
}

const FIXTURES = new URL('../../fixtures/clients/', import.meta.url);
const fixture = (name: string): Recorded =>
  JSON.parse(readFileSync(new URL(`${name}.json`, FIXTURES), 'utf8')) as Recorded;

const CLAUDE_CODE = fixture('claude-code-messages');
const CLAUDE_CODE_COUNT = fixture('claude-code-count-tokens');
const CODEX = fixture('codex-responses');
const CODEX_TOOL_TURN = fixture('codex-responses-tool-turn');
const OPENCODE = fixture('opencode-chat');

async function bundledStack(t: Test, usd = '10'): Promise<{ s: Stack; key: string }> {
  // One clock for both sides: SigV4 allows 5 minutes of skew and tokens expire on the simulator's clock.
  const clock = new ManualClock(DEFAULT_NOW);
  const store = openStore(':memory:', {
    clock,
    masterKey: Buffer.alloc(32, 7).toString('base64'),
    requestLog: { flushIntervalMs: 10 },
  });
  t.teardown(() => store.close());
  const auth = sealDemoCredentials(fixtureConfig('bundled'), store.secrets);
  const s = await startStack(t, { config: 'bundled', clock, store, simulator: { clock, ...auth } });
  if (usd !== '0') s.credit('acme', usd);
  return { s, key: s.key('acme') };
}

interface Replay {
  headers?: Record<string, string | null>;
  body?: Record<string, unknown>;
  encode?: (json: Buffer) => { bytes: Buffer; encoding: string };
}

/** Sends a recorded request as its client would: its headers (the key filled in), its body, its path and query. */
function replay(s: Stack, rec: Recorded, key: string, o: Replay = {}): Promise<Response> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries({ ...rec.request.headers, ...o.headers })) {
    if (value !== null) headers[name] = value.replace('{{GATEWAY_KEY}}', key);
  }
  const json = Buffer.from(JSON.stringify(o.body ?? rec.request.body));
  const sent = o.encode ? o.encode(json) : { bytes: json, encoding: '' };
  if (sent.encoding) headers['content-encoding'] = sent.encoding;
  return fetch(`${s.url}${rec.request.path}`, { method: rec.request.method, headers, body: sent.bytes });
}

/** The ledger's settled amount for a trace, as the decimal `usage.cost` must spell it. */
function settledCost(s: Stack, trace: string | null): string | undefined {
  s.gw.ctx.wallets.flush();
  const row = s.store.wallets.ledgerOf(trace ?? '').find((r) => r.kind === 'settle');
  return row ? nanoToDecimal(row.amount) : undefined;
}

const costsIn = (text: string): string[] =>
  [...text.matchAll(/"cost":(-?[0-9][0-9.eE+-]*)/g)].map((m) => m[1] as string);

/** The simulator's requests for inference (not the cloud platforms' token exchanges). */
const upstream = (s: Stack) => s.sim.requests.filter((r) => !r.path.endsWith('/token'));

function json(text: string): Record<string, unknown> {
  return JSON.parse(text) as Record<string, unknown>;
}

t.test('every fixture names its client and where its shape comes from', async (t) => {
  for (const rec of [CLAUDE_CODE, CLAUDE_CODE_COUNT, CODEX, CODEX_TOOL_TURN, OPENCODE]) {
    t.ok(rec.client.length > 10, `client: ${rec.client}`);
    t.ok(rec.source.length > 40, 'source named');
    t.match(rec.request, { method: 'POST', path: /^\/v1\// });
    t.ok(
      Object.values(rec.request.headers).some((v) => v.includes('{{GATEWAY_KEY}}')),
      'the key travels in a header',
    );
  }
});

t.test(
  'Claude Code: its streamed Messages call with ?beta=true answers 200 with the Messages events, the slug and the settled cost',
  async (t) => {
    const { s, key } = await bundledStack(t);
    const res = await replay(s, CLAUDE_CODE, key);
    const text = await res.text();
    t.equal(res.status, 200, 'no refusal of any field or header Claude Code sends');
    t.match(res.headers.get('content-type'), /^text\/event-stream/);
    const events = parseSse(text);
    const names = events.map((e) => e.event);
    t.equal(names[0], 'message_start');
    t.ok(names.includes('content_block_delta'), 'content streams');
    t.same(names.slice(-2), ['message_delta', 'message_stop'], 'the final usage, then the end');
    const start = json(events[0]?.data ?? '{}') as { message?: { model?: string } };
    t.equal(start.message?.model, 'anthropic/claude-sonnet-5.5', 'the slug as the model');
    const delta = json(events.at(-2)?.data ?? '{}') as { usage?: { output_tokens?: number; cost?: number } };
    t.ok((delta.usage?.output_tokens ?? 0) > 0, 'output tokens in the last message_delta');
    t.same(costsIn(text), [settledCost(s, res.headers.get('x-pi-trace-id'))], 'usage.cost is the ledger settlement');
    t.equal(res.headers.get('x-pi-model'), 'anthropic/claude-sonnet-5.5');

    const call = upstream(s).at(-1);
    const body = (call?.body ?? {}) as Record<string, unknown>;
    t.not(body.model, 'anthropic/claude-sonnet-5.5', 'the provider gets its own model name, never the slug');
    for (const field of [
      'system',
      'tools',
      'messages',
      'thinking',
      'metadata',
      'context_management',
      'output_config',
    ] as const) {
      t.same(body[field], CLAUDE_CODE.request.body[field], `${field} reaches the provider unchanged`);
    }
    t.notOk(call?.headers.authorization?.includes(key), "the client's key is never forwarded");
    t.equal(call?.headers['x-stainless-lang'], undefined, 'SDK telemetry headers stay at the gateway');
  },
);

t.test(
  'Claude Code: ANTHROPIC_API_KEY (x-api-key) works as well as ANTHROPIC_AUTH_TOKEN (Authorization: Bearer)',
  async (t) => {
    const { s, key } = await bundledStack(t);
    const res = await replay(s, CLAUDE_CODE, key, { headers: { authorization: null, 'x-api-key': key } });
    t.equal(res.status, 200);
    await res.text();
    const haiku = await replay(s, CLAUDE_CODE, key, {
      body: { ...CLAUDE_CODE.request.body, model: 'anthropic/claude-haiku-5.5' },
    });
    t.equal(haiku.status, 200, 'the model ANTHROPIC_DEFAULT_HAIKU_MODEL names for background work');
    t.match(await haiku.text(), /"model":"anthropic\/claude-haiku-5\.5"/);
  },
);

t.test("Claude Code: its token count (?beta=true) answers the provider's count, on an empty wallet", async (t) => {
  const { s, key } = await bundledStack(t, '0');
  const res = await replay(s, CLAUDE_CODE_COUNT, key);
  t.equal(res.status, 200);
  const body = json(await res.text());
  t.same(Object.keys(body), ['input_tokens']);
  t.ok(Number.isInteger(body.input_tokens) && (body.input_tokens as number) > 0, 'a count');
  t.match(res.headers.get('x-pi-provider'), /^(anthropic|gcp|aws)$/, 'a platform that can count counted');
  t.equal(res.headers.get('x-pi-model'), 'anthropic/claude-sonnet-5.5');
});

t.test(
  'Claude Code: a built-in bare model name is 404 model_not_found in the Messages shape, pointing at /v1/models',
  async (t) => {
    const { s, key } = await bundledStack(t);
    for (const rec of [CLAUDE_CODE, CLAUDE_CODE_COUNT]) {
      const res = await replay(s, rec, key, { body: { ...rec.request.body, model: 'claude-opus-4-8' } });
      t.equal(res.status, 404, rec.request.path);
      const body = json(await res.text()) as {
        type?: string;
        error?: { type?: string; code?: string; message?: string };
      };
      t.equal(body.type, 'error', 'the Messages envelope the Anthropic SDK reads');
      t.match(body.error, {
        type: 'not_found_error',
        code: 'model_not_found',
        message: /"claude-opus-4-8".*vendor-qualified.*GET \/v1\/models/,
      });
    }
    t.equal(upstream(s).length, 0, 'nothing reached a provider');
  },
);

t.test(
  "Claude Code's model discovery (GET /v1/models?limit=1000 with its key) lists slugs it keeps: ids that begin with anthropic",
  async (t) => {
    const { s, key } = await bundledStack(t);
    const res = await fetch(`${s.v1}/models?limit=1000`, {
      headers: { 'x-api-key': key, 'anthropic-version': '2023-06-01' },
    });
    t.equal(res.status, 200);
    const ids = ((await res.json()) as { data: { id: string }[] }).data.map((m) => m.id);
    const kept = ids.filter((id) => id.startsWith('claude') || id.startsWith('anthropic'));
    t.same(kept.sort(), ['anthropic/claude-haiku-5.5', 'anthropic/claude-sonnet-5.5']);
  },
);

t.test(
  "Claude Code's max_tokens 32000 on a small wallet: a 402 naming the max_tokens that fits, and that value is admitted",
  async (t) => {
    const { s, key } = await bundledStack(t, '0.05');
    const res = await replay(s, CLAUDE_CODE, key);
    t.equal(res.status, 402);
    const body = json(await res.text()) as {
      type?: string;
      error?: { type?: string; code?: string; message?: string };
    };
    t.equal(body.type, 'error', 'the Messages envelope');
    t.match(body.error, { type: 'payment_required_error', code: 'insufficient_balance' });
    const fits = /it fits with max_tokens at most (\d+)$/.exec(body.error?.message ?? '');
    t.ok(fits, `the advice: ${body.error?.message}`);
    const n = Number(fits?.[1]);
    t.ok(n > 0 && n < 32000, `a smaller max_tokens (${n}), as CLAUDE_CODE_MAX_OUTPUT_TOKENS would send`);
    const again = await replay(s, CLAUDE_CODE, key, { body: { ...CLAUDE_CODE.request.body, max_tokens: n } });
    t.equal(again.status, 200, 'the advised value is admitted against the same balance');
    await again.text();
  },
);

async function checkResponsesStream(t: Test, s: Stack, res: Response, label: string): Promise<void> {
  const text = await res.text();
  t.equal(res.status, 200, `${label}: 200`);
  t.match(res.headers.get('content-type'), /^text\/event-stream/);
  const events = parseSse(text);
  t.equal(events[0]?.event, 'response.created', `${label}: starts with response.created`);
  const done = events.find((e) => e.event === 'response.completed');
  t.ok(done, `${label}: ends with response.completed`);
  const response = (
    json(done?.data ?? '{}') as { response?: { model?: string; usage?: { output_tokens?: number; cost?: number } } }
  ).response;
  t.equal(response?.model, 'openai/gpt-6.2-sol', `${label}: the slug as the model`);
  t.ok((response?.usage?.output_tokens ?? 0) > 0, `${label}: usage`);
  t.same(
    costsIn(text),
    [settledCost(s, res.headers.get('x-pi-trace-id'))],
    `${label}: usage.cost is the ledger settlement`,
  );
}

t.test(
  'Codex: its Responses stream (input items, instructions, reasoning, store false, include) answers with the Responses events and the cost',
  async (t) => {
    const { s, key } = await bundledStack(t);
    await checkResponsesStream(t, s, await replay(s, CODEX, key), 'first request');
    const body = (upstream(s).at(-1)?.body ?? {}) as Record<string, unknown>;
    t.not(body.model, 'openai/gpt-6.2-sol', "the provider's own model name");
    for (const field of [
      'instructions',
      'input',
      'tools',
      'tool_choice',
      'parallel_tool_calls',
      'reasoning',
      'store',
      'include',
      'prompt_cache_key',
    ] as const) {
      t.same(body[field], CODEX.request.body[field], `${field} reaches the provider unchanged`);
    }
    await checkResponsesStream(t, s, await replay(s, CODEX_TOOL_TURN, key), 'tool round trip');
    const replayed = (upstream(s).at(-1)?.body ?? {}) as { input?: unknown };
    t.same(
      replayed.input,
      CODEX_TOOL_TURN.request.body.input,
      'the reasoning item with its encrypted_content, the call and its output, unchanged',
    );
  },
);

t.test('Codex: the same request sent again after a dropped stream is answered and billed on its own', async (t) => {
  const { s, key } = await bundledStack(t);
  const first = await replay(s, CODEX, key);
  // A client that loses the stream mid-answer drops the connection and posts the same body again.
  const reader = first.body?.getReader();
  await reader?.read();
  await reader?.cancel();
  const again = await replay(s, CODEX, key);
  await checkResponsesStream(t, s, again, 'the retry');
  t.not(again.headers.get('x-pi-trace-id'), first.headers.get('x-pi-trace-id'), 'a request of its own');
});

t.test('Codex: a zstd-compressed body (Content-Encoding: zstd) is decoded and served like the plain one', async (t) => {
  t.equal(CODEX.compression?.content_encoding, 'zstd', 'the fixture records how Codex compresses');
  const { s, key } = await bundledStack(t);
  const res = await replay(s, CODEX, key, { encode: (b) => ({ bytes: zstdCompressSync(b), encoding: 'zstd' }) });
  await checkResponsesStream(t, s, res, 'zstd');
  const call = upstream(s).at(-1);
  t.same((call!.body as Record<string, unknown>).input, CODEX.request.body.input, 'the provider gets the decoded JSON');
  t.equal(call!.headers['content-encoding'], undefined, 'forwarded uncompressed');
});

t.test(
  'opencode: its Chat Completions stream with tools and stream_options ends with one usage frame carrying the cost',
  async (t) => {
    const { s, key } = await bundledStack(t);
    const res = await replay(s, OPENCODE, key);
    const text = await res.text();
    t.equal(res.status, 200);
    const events = parseSse(text);
    t.equal(events.at(-1)?.data, '[DONE]', 'ends with [DONE]');
    const chunks = events
      .filter((e) => e.data !== '[DONE]')
      .map((e) => json(e.data) as { model?: string; usage?: { cost?: number } | null });
    t.ok(
      chunks.every((c) => c.model === 'openai/gpt-6-luna'),
      'the slug in every chunk',
    );
    const withUsage = chunks.filter((c) => c.usage);
    t.equal(withUsage.length, 1, 'one usage frame');
    t.equal(withUsage[0], chunks.at(-1), 'the last chunk before [DONE]');
    t.same(costsIn(text), [settledCost(s, res.headers.get('x-pi-trace-id'))], 'usage.cost is the ledger settlement');
    const body = (upstream(s).at(-1)?.body ?? {}) as Record<string, unknown>;
    t.same(body.tools, OPENCODE.request.body.tools, 'tools reach the provider unchanged');
    t.same(body.messages, OPENCODE.request.body.messages, 'the tool call and its result too');
    t.match(body, { stream: true, stream_options: { include_usage: true } });
  },
);

t.test(
  "Claude Code's call through each platform that serves Claude: Anthropic, Vertex AI, Bedrock (only the betas it accepts), the local simulator",
  async (t) => {
    const { s, key } = await bundledStack(t);
    const betas = CLAUDE_CODE.request.headers['anthropic-beta'];
    // Claude Code cannot send provider preferences; a workspace's routing (order, allow_fallbacks) does the same.
    for (const p of ['anthropic', 'gcp', 'aws', 'local']) {
      const res = await replay(s, CLAUDE_CODE, key, { body: { ...CLAUDE_CODE.request.body, provider: { only: [p] } } });
      const text = await res.text();
      t.equal(res.status, 200, `${p}: 200`);
      t.equal(res.headers.get('x-pi-provider'), p);
      t.same(
        parseSse(text)
          .map((e) => e.event)
          .slice(-2),
        ['message_delta', 'message_stop'],
        `${p}: the Messages events`,
      );
      t.same(
        costsIn(text),
        [settledCost(s, res.headers.get('x-pi-trace-id'))],
        `${p}: usage.cost is the ledger settlement`,
      );
      const call = upstream(s).at(-1);
      const body = (call?.body ?? {}) as Record<string, unknown>;
      if (p === 'aws') {
        t.equal(call?.headers['anthropic-beta'], undefined, 'aws: no beta header on InvokeModel');
        t.same(
          body.anthropic_beta,
          ['interleaved-thinking-2025-05-14'],
          'aws: only the betas Bedrock documents, in the body',
        );
      } else {
        t.equal(call?.headers['anthropic-beta'], betas, `${p}: Claude Code's beta list, as sent`);
      }
      t.same(body.thinking, CLAUDE_CODE.request.body.thinking, `${p}: thinking unchanged`);
    }
  },
);
