// Every answer says what it cost: `usage.cost` is the amount the ledger settled for the request, to
// the nano-dollar — in JSON answers and in the last usage event of a stream, on Chat Completions
// (the usage frame before [DONE]), Responses (response.completed's response.usage) and Messages
// (message_delta's usage), for a charge at the reported usage, a charge capped at the request's
// bound, and the gateway's own estimate; and the official SDKs still read the answers.
import t, { type Test } from 'tap';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { nanoToDecimal } from '../../../src/money.ts';
import { startStack, type Stack } from '../../helpers/stack.ts';
import { USER } from '../../helpers/admission.ts';

interface Proto {
  name: string;
  path: string;
  body: Record<string, unknown>;
  /** The event that carries the answer's final usage, and the one that must follow it. */
  usageEvent: RegExp;
  next: RegExp;
}

const PROTOCOLS: Proto[] = [
  {
    name: 'chat',
    path: '/v1/chat/completions',
    body: { model: 'acme/chat-small', messages: USER, max_tokens: 50, provider: { only: ['alpha'] } },
    usageEvent: /^data: \{"id"[^\n]*"choices":\[\],"usage":/,
    next: /^data: \[DONE\]$/,
  },
  {
    name: 'responses',
    path: '/v1/responses',
    body: { model: 'acme/chat-small', input: 'hi', max_output_tokens: 50, provider: { only: ['alpha'] } },
    usageEvent: /^event: response\.completed\n/,
    next: /^$/,
  },
  {
    name: 'messages',
    path: '/v1/messages',
    body: { model: 'beta-labs/sonnet-ish', messages: USER, max_tokens: 50, provider: { only: ['delta'] } },
    usageEvent: /^event: message_delta\n/,
    next: /^event: message_stop\n/,
  },
];

interface Settled {
  amount: bigint;
  details: Record<string, unknown> | null;
}

/** The ledger's settlement of a trace. */
function settlementOf(s: Stack, trace: string): Settled | undefined {
  s.gw.ctx.wallets.flush();
  return s.store.wallets.ledgerOf(trace).find((r) => r.kind === 'settle');
}

/** Every `"cost":<number>` member in the answer's bytes, as written. */
function costsIn(text: string): string[] {
  return [...text.matchAll(/"cost":(-?[0-9][0-9.eE+-]*)/g)].map((m) => m[1] as string);
}

async function ask(
  s: Stack,
  key: string,
  p: Proto,
  extra: Record<string, unknown>,
): Promise<{ text: string; trace: string; settled: Settled | undefined }> {
  const res = await s.post(p.path, { ...p.body, ...extra }, { key });
  const text = await res.text();
  const trace = res.headers.get('x-pi-trace-id') ?? '';
  return { text, trace, settled: res.status === 200 ? settlementOf(s, trace) : undefined };
}

/** Checks one answer: exactly one cost, equal to the ledger's settlement, where the protocol keeps its usage. */
function checkAnswer(
  t: Test,
  label: string,
  p: Proto,
  stream: boolean,
  text: string,
  settled: Settled | undefined,
): void {
  t.ok(settled, `${label}: settled`);
  const want = nanoToDecimal(settled?.amount ?? -1n);
  t.same(costsIn(text), [want], `${label}: usage.cost is the settled $${want}, written exactly`);
  if (!stream) {
    const usage = (JSON.parse(text) as { usage: { cost: number } }).usage;
    t.equal(usage.cost, Number(want), `${label}: a JSON number in the answer's usage`);
    return;
  }
  const events = text.split(/\r?\n\r?\n/);
  const at = events.findIndex((e) => e.includes('"cost":'));
  t.match(events[at] ?? '', p.usageEvent, `${label}: in the final usage event`);
  t.match(events[at + 1] ?? '', p.next, `${label}: which the end follows`);
  const data = JSON.parse((events[at] ?? '').replace(/^(event: .*\n)?data: /, '')) as {
    usage?: { cost: number };
    response?: { usage: { cost: number } };
  };
  t.equal((data.usage ?? data.response?.usage)?.cost, Number(want), `${label}: a JSON number in the event's usage`);
}

t.test('usage.cost equals the ledger settlement, JSON and stream, on every protocol', async (t) => {
  const s = await startStack(t);
  const key = s.key('open');
  s.credit('open', '100');
  for (const p of PROTOCOLS) {
    for (const stream of [false, true]) {
      const label = `${p.name}${stream ? ' stream' : ''}`;
      const { text, settled } = await ask(s, key, p, {
        stream,
        sim: { usage: { prompt: 12, completion: 7, cached: 4 } },
      });
      t.ok((settled?.amount ?? 0n) > 0n, `${label}: a non-zero charge`);
      t.notOk(settled?.details?.['capped'], `${label}: at the reported usage`);
      checkAnswer(t, label, p, stream, text, settled);
    }
  }
});

t.test('a provider report above the bound: usage.cost is the capped settlement, not the report', async (t) => {
  const s = await startStack(t);
  const key = s.key('open');
  s.credit('open', '1000');
  for (const p of PROTOCOLS) {
    for (const stream of [false, true]) {
      const label = `${p.name}${stream ? ' stream' : ''} (capped)`;
      const { text, settled } = await ask(s, key, p, { stream, sim: { usage: { prompt: 12, completion: 1e12 } } });
      t.match(
        settled?.details,
        { capped: true, cap: 'bound', completionTokens: 1e12 },
        `${label}: the ledger capped it`,
      );
      t.equal(
        String(settled?.amount),
        settled?.details?.['boundNano'],
        `${label}: charged the bound, not the $millions reported`,
      );
      checkAnswer(t, label, p, stream, text, settled);
    }
  }
});

t.test('a stream without the provider usage: the estimate frame carries the estimated settlement', async (t) => {
  const s = await startStack(t);
  const key = s.key('open');
  s.credit('open', '100');
  const chat = PROTOCOLS[0] as Proto;
  const { text, settled } = await ask(s, key, chat, { stream: true, sim: { noUsageInStream: true } });
  t.match(settled?.details, { estimated: true });
  t.match(text, /"estimated":true,"cost":/, 'in the frame the gateway wrote');
  checkAnswer(t, 'chat stream (estimated)', chat, true, text, settled);
});

t.test('image answers with a usage object carry the cost too', async (t) => {
  const s = await startStack(t);
  const key = s.key('open');
  s.credit('open', '100');
  const p: Proto = {
    name: 'images',
    path: '/v1/images/generations',
    body: { model: 'acme/painter', prompt: 'a red square', provider: { only: ['alpha'] } },
    usageEvent: /^event: image_generation\.completed\n/,
    next: /^$/,
  };
  const { text, settled } = await ask(s, key, p, { sim: { usage: { prompt: 10, completion: 544 } } });
  checkAnswer(t, 'images', p, false, text, settled);
});

function extra(body: Record<string, unknown>): Record<string, never> {
  return body as Record<string, never>;
}

t.test('the official SDKs read answers that carry the cost', async (t) => {
  const s = await startStack(t);
  const key = s.key('open');
  s.credit('open', '100');
  const openai = new OpenAI({ baseURL: s.v1, apiKey: key, maxRetries: 0 });
  const anthropic = new Anthropic({ baseURL: s.url, apiKey: key, maxRetries: 0 });
  // Routing and simulator fields the SDKs forward as they are.
  const sim = extra({ provider: { only: ['alpha'] }, sim: { usage: { prompt: 12, completion: 7 } } });
  const costOf = (trace: string | null) => Number(nanoToDecimal(settlementOf(s, trace ?? '')?.amount ?? -1n));
  type Costed = { cost?: number } | null | undefined;

  const chat = await openai.chat.completions
    .create({ model: 'acme/chat-small', messages: [{ role: 'user', content: 'hi' }], ...sim })
    .withResponse();
  t.equal(
    (chat.data.usage as Costed)?.cost,
    costOf(chat.response.headers.get('x-pi-trace-id')),
    'openai chat: usage.cost',
  );

  const chatStream = await openai.chat.completions
    .create({ model: 'acme/chat-small', messages: [{ role: 'user', content: 'hi' }], stream: true, ...sim })
    .withResponse();
  let streamed: Costed = null;
  for await (const chunk of chatStream.data) if (chunk.usage) streamed = chunk.usage as Costed;
  t.equal(
    streamed?.cost,
    costOf(chatStream.response.headers.get('x-pi-trace-id')),
    'openai chat stream: the usage chunk',
  );

  const resp = await openai.responses.create({ model: 'acme/chat-small', input: 'hi', ...sim }).withResponse();
  t.equal(
    (resp.data.usage as Costed)?.cost,
    costOf(resp.response.headers.get('x-pi-trace-id')),
    'openai responses: usage.cost',
  );

  const respStream = await openai.responses
    .create({ model: 'acme/chat-small', input: 'hi', stream: true, ...sim })
    .withResponse();
  let completed: Costed = null;
  for await (const ev of respStream.data) if (ev.type === 'response.completed') completed = ev.response.usage as Costed;
  t.equal(
    completed?.cost,
    costOf(respStream.response.headers.get('x-pi-trace-id')),
    'openai responses stream: response.completed',
  );

  const onDelta = extra({ provider: { only: ['delta'] }, sim: { usage: { prompt: 12, completion: 7 } } });
  const msg = await anthropic.messages
    .create({ model: 'beta-labs/sonnet-ish', max_tokens: 50, messages: [{ role: 'user', content: 'hi' }], ...onDelta })
    .withResponse();
  t.equal(
    (msg.data.usage as Costed)?.cost,
    costOf(msg.response.headers.get('x-pi-trace-id')),
    'anthropic messages: usage.cost',
  );

  const msgStream = anthropic.messages.stream({
    model: 'beta-labs/sonnet-ish',
    max_tokens: 50,
    messages: [{ role: 'user', content: 'hi' }],
    ...onDelta,
  });
  let delta: Costed = null;
  for await (const ev of msgStream) if (ev.type === 'message_delta') delta = ev.usage as Costed;
  const final = await msgStream.finalMessage();
  t.equal(final.usage.output_tokens, 7, 'anthropic stream: the SDK accumulated the message');
  const { response } = await msgStream.withResponse();
  t.equal(delta?.cost, costOf(response.headers.get('x-pi-trace-id')), 'anthropic stream: message_delta usage.cost');
});
