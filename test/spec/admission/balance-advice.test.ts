// A 402 that helps: `insufficient_balance` keeps its status and code, and its message says what the
// wallet has available and the largest output limit (`max_tokens`, `max_output_tokens`) the balance
// can hold for this request — exactly: the request sent again with that limit is admitted, with one
// more token it is refused — or that not even zero output tokens fit, and what its input alone holds.
import t, { type Test } from 'tap';
import { nanoToDecimal } from '../../../src/money.ts';
import { startStack, type Stack } from '../../helpers/stack.ts';
import { USER } from '../../helpers/admission.ts';

interface Refusal {
  status: number;
  code: string | undefined;
  message: string;
}

async function send(s: Stack, key: string, path: string, body: Record<string, unknown>): Promise<Refusal> {
  const res = await s.post(path, body, { key });
  const text = await res.text();
  const parsed = res.status === 402 ? (JSON.parse(text) as { error: { code: string; message: string } }).error : null;
  return { status: res.status, code: parsed?.code, message: parsed?.message ?? '' };
}

/** The advised output limit in a 402's message: the field it names and its value. */
function advice(message: string): { field: string; tokens: number } | null {
  const m = /; it fits with (\w+) at most (\d+)$/.exec(message);
  return m ? { field: m[1] as string, tokens: Number(m[2]) } : null;
}

const CASES = [
  {
    name: 'chat',
    path: '/v1/chat/completions',
    field: 'max_tokens',
    body: { model: 'acme/chat-small', messages: USER, max_tokens: 4000 },
    credit: '0.003',
  },
  {
    name: 'chat (max_completion_tokens)',
    path: '/v1/chat/completions',
    field: 'max_completion_tokens',
    body: { model: 'acme/chat-small', messages: USER, max_completion_tokens: 4000, stream: true },
    credit: '0.0025',
  },
  {
    name: 'responses',
    path: '/v1/responses',
    field: 'max_output_tokens',
    body: { model: 'acme/chat-small', input: 'hi', max_output_tokens: 4000 },
    credit: '0.002',
  },
  {
    name: 'messages',
    path: '/v1/messages',
    field: 'max_tokens',
    body: { model: 'beta-labs/sonnet-ish', messages: USER, max_tokens: 8000 },
    credit: '0.05',
  },
] as const;

async function stackWith(t: Test, credit: string | null): Promise<{ s: Stack; key: string }> {
  const s = await startStack(t);
  const key = s.key('open');
  if (credit !== null) s.credit('open', credit);
  return { s, key };
}

t.test('the 402 names the available amount and the largest output limit the balance holds, exactly', async (t) => {
  for (const c of CASES) {
    const { s, key } = await stackWith(t, c.credit);
    const refused = await send(s, key, c.path, c.body);
    t.equal(refused.status, 402, `${c.name}: refused`);
    t.equal(refused.code, 'insufficient_balance', `${c.name}: the same code`);
    t.match(
      refused.message,
      new RegExp(
        `^insufficient balance: this request needs up to \\$[0-9.]+ held and the wallet has \\$${c.credit.replace('.', '\\.')} available; `,
      ),
      `${c.name}: what the wallet has`,
    );
    const advised = advice(refused.message);
    t.equal(advised?.field, c.field, `${c.name}: names the request's own field`);
    const n = advised?.tokens ?? 0;
    t.ok(
      n >= 1 && n < Number((c.body as Record<string, unknown>)[c.field]),
      `${c.name}: advises ${n}, less than it asked for`,
    );
    const oneMore = await send(s, key, c.path, { ...c.body, [c.field]: n + 1 });
    t.equal(oneMore.status, 402, `${c.name}: ${c.field} ${n + 1} is still refused`);
    t.equal(advice(oneMore.message)?.tokens, n, `${c.name}: and advised the same`);
    const fits = await send(s, key, c.path, { ...c.body, [c.field]: n });
    t.equal(fits.status, 200, `${c.name}: ${c.field} ${n} is admitted`);
  }
});

t.test('a request that set no output limit is advised one that is admitted once added', async (t) => {
  const { s, key } = await stackWith(t, '0.003');
  const body = { model: 'acme/chat-small', messages: USER };
  const refused = await send(s, key, '/v1/chat/completions', body);
  t.equal(refused.status, 402);
  const advised = advice(refused.message);
  t.equal(advised?.field, 'max_tokens', 'the field a Chat request adds');
  const fits = await send(s, key, '/v1/chat/completions', { ...body, max_tokens: advised?.tokens });
  t.equal(fits.status, 200, `max_tokens ${advised?.tokens} added: admitted`);
});

t.test('when not even zero output tokens fit, the 402 says so and what the input alone holds', async (t) => {
  for (const credit of [null, '0.000001']) {
    const { s, key } = await stackWith(t, credit);
    for (const c of CASES) {
      const body = { ...c.body, provider: { only: ['alpha'] } };
      const refused = await send(s, key, c.path, body);
      t.equal(refused.status, 402, `${c.name}: refused`);
      t.equal(refused.code, 'insufficient_balance');
      // On alpha the dearest input class costs as much as `prompt` for chat-small ($1/M) and twice it
      // for sonnet-ish (its one-hour cache writes, $6/M); the prompt bound is one token a body byte.
      const perToken = c.name === 'messages' ? 6000n : 1000n;
      const input = BigInt(Buffer.byteLength(JSON.stringify(body))) * perToken;
      t.match(
        refused.message,
        `the wallet has $${credit ?? '0'} available; it does not fit even with no output tokens: its input alone needs up to $${nanoToDecimal(input)} held`,
        `${c.name}: ${refused.message}`,
      );
    }
  }
});

t.test('image requests, which set no output limit, keep the plain message', async (t) => {
  const { s, key } = await stackWith(t, '0.000001');
  const refused = await send(s, key, '/v1/images/generations', { model: 'acme/painter', prompt: 'a red square' });
  t.equal(refused.status, 402);
  t.match(
    refused.message,
    /^insufficient balance: this request needs up to \$[0-9.]+ held and the wallet has \$0\.000001 available$/,
  );
});
