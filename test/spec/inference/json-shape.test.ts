// What a JSON request body may hold besides its bytes: members per object, elements per array, values
// in all and the length of member names, checked by the same forward scan as the nesting depth before
// anything parses the body. A body past one limit is the client's 400 invalid_request naming it, on
// every JSON endpoint, refused after one scan (a body of 200,000 top-level keys used to cost over a
// second of the event loop); a body exactly at every limit is forwarded as sent.
import t, { type Test } from 'tap';
import { JSON_LIMITS } from '../../../src/protocols/json-request.ts';
import { startStack, type Stack } from '../../helpers/stack.ts';
import { expectGatewayError } from '../../helpers/admission.ts';

/** The JSON endpoints, each with a valid body's opening (no closing brace). */
const PREFIXES: [string, string][] = [
  ['/v1/chat/completions', '{"model":"acme/chat-small","messages":[{"role":"user","content":"hi"}]'],
  ['/v1/responses', '{"model":"acme/chat-small","input":"hi"'],
  ['/v1/messages', '{"model":"beta-labs/sonnet-ish","max_tokens":5,"messages":[{"role":"user","content":"hi"}]'],
  ['/v1/images/generations', '{"model":"acme/painter","prompt":"a cat"'],
];

const repeat = (n: number, item: (i: number) => string): string =>
  Array.from({ length: n }, (_, i) => item(i)).join(',');
const zeros = (n: number): string => `[${repeat(n, () => '0')}]`;

function nothingHeld(t: Test, s: Stack, label: string): void {
  t.equal(s.sim.requests.length, 0, `${label}: nothing reached a provider`);
  t.equal(s.store.wallets.show('open', s.clock.now()).openHolds, 0, `${label}: nothing held`);
}

t.test('200,000 top-level keys: 400 naming the member limit, after one scan', async (t) => {
  const s = await startStack(t, { limits: { maxBodyBytes: 8 << 20 } });
  const key = s.key('open');
  s.credit('open', '1000');
  const body = `{"model":"acme/chat-small","messages":[{"role":"user","content":"hi"}],${repeat(200_000, (i) => `"k${i}":0`)}}`;
  const cpu = process.cpuUsage();
  const res = await s.post('/v1/chat/completions', body, { key });
  const err = await expectGatewayError(t, res, 400, 'invalid_request', '200,000 keys');
  const used = process.cpuUsage(cpu);
  t.equal(err.error.message, `the request body has an object with more than ${JSON_LIMITS.members} members`);
  // Before the limit this request took 1.1–1.5 s of CPU in this process (parse, copies, the splice).
  const ms = (used.user + used.system) / 1000;
  t.ok(ms < 500, `refused within ${Math.round(ms)} ms of CPU (client and server together)`);
  nothingHeld(t, s, '200,000 keys');
});

t.test('every shape limit, on every JSON endpoint: 400 invalid_request naming it', async (t) => {
  const s = await startStack(t, { limits: { maxBodyBytes: 8 << 20 } });
  const key = s.key('open');
  s.credit('open', '1000');
  const over: [string, string, RegExp][] = [
    [
      'members',
      `"x":{${repeat(JSON_LIMITS.members + 1, (i) => `"k${i}":0`)}}`,
      new RegExp(`an object with more than ${JSON_LIMITS.members} members$`),
    ],
    [
      'elements',
      `"x":${zeros(JSON_LIMITS.elements + 1)}`,
      new RegExp(`an array with more than ${JSON_LIMITS.elements} elements$`),
    ],
    [
      'values',
      `"x":[${repeat(6, () => zeros(JSON_LIMITS.elements - 10))}]`,
      new RegExp(`holds more than ${JSON_LIMITS.values} values`),
    ],
    [
      'name',
      `"${'n'.repeat(JSON_LIMITS.nameBytes + 1)}":1`,
      new RegExp(`a member name longer than ${JSON_LIMITS.nameBytes} bytes$`),
    ],
    [
      'nested name',
      `"x":[{"${'n'.repeat(JSON_LIMITS.nameBytes + 1)}":1}]`,
      new RegExp(`a member name longer than ${JSON_LIMITS.nameBytes} bytes$`),
    ],
  ];
  for (const [path, prefix] of PREFIXES) {
    for (const [label, extra, message] of over) {
      const res = await s.post(path, `${prefix},${extra}}`, { key });
      const err = await expectGatewayError(t, res, 400, 'invalid_request', `${path} ${label}`);
      t.match(err.error.message, message, `${path} ${label}: names the limit`);
    }
  }
  nothingHeld(t, s, 'every limit');
});

t.test('a body exactly at every limit is forwarded as sent', async (t) => {
  const s = await startStack(t, { limits: { maxBodyBytes: 8 << 20 } });
  const key = s.key('open');
  s.credit('open', '1000');
  // Chat's opening holds 6 values (model, messages, its one message, role, content, and x below).
  const name = 'n'.repeat(JSON_LIMITS.nameBytes);
  const wide = `{${repeat(JSON_LIMITS.members - 1, (i) => `"k${i}":0`)},"${name}":1}`;
  const rest = JSON_LIMITS.values - 6 - 1 - JSON_LIMITS.members - 1;
  const arrays = Math.ceil(rest / (JSON_LIMITS.elements + 1));
  const per = Math.floor((rest - arrays) / arrays);
  const left = rest - arrays - per * arrays;
  const body = `{"model":"acme/chat-small","messages":[{"role":"user","content":"hi"}],"x":[${wide},[${repeat(arrays, (i) => zeros(per + (i < left ? 1 : 0)))}]]}`;
  const res = await s.post('/v1/chat/completions', body, { key });
  t.equal(res.status, 200, 'answered');
  await res.text();
  const sent = s.sim.requests.at(-1)?.body as { x: [Record<string, number>, number[][]] };
  t.equal(Object.keys(sent.x[0]).length, JSON_LIMITS.members, `an object of ${JSON_LIMITS.members} members`);
  t.equal(sent.x[0][name], 1, `a member name of ${JSON_LIMITS.nameBytes} bytes`);
  t.equal(
    sent.x[1].reduce((n, a) => n + a.length, 0) + sent.x[1].length + JSON_LIMITS.members + 2 + 6,
    JSON_LIMITS.values,
    `${JSON_LIMITS.values} values in all`,
  );
  const elements = `{"model":"acme/chat-small","messages":[{"role":"user","content":"hi"}],"x":${zeros(JSON_LIMITS.elements)}}`;
  const r2 = await s.post('/v1/chat/completions', elements, { key });
  t.equal(r2.status, 200, `an array of ${JSON_LIMITS.elements} elements is answered`);
  await r2.text();
  t.equal((s.sim.requests.at(-1)!.body as { x: number[] }).x.length, JSON_LIMITS.elements);
});
