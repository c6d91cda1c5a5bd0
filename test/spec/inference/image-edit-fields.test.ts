// Image edits check every field the gateway reads (`model`, `n`, `prompt`, the file parts) wherever it
// comes in the form. A field in the held prefix (up to `model` and the text fields right after it) is
// judged before anything is sent; one after a file part streams through and is judged as it passes:
// a refused one fails the request with the client's error before the provider has the whole form, no
// hold stays open and no deployment's health hears of it. A valid later field is forwarded as sent,
// and the hold, taken before it arrived, covered the most it may ask for.
import t, { type Test } from 'tap';
import { request as httpRequest } from 'node:http';
import { startStack, type Stack } from '../../helpers/stack.ts';
import { handUpstream, type HandUpstream, spyWallet, waitFor } from '../../helpers/inference.ts';

const BOUNDARY = '----pi-edit-fields-boundary';

function part(name: string, value: string): Buffer {
  return Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`);
}
function file(name: string, bytes: Buffer): Buffer {
  return Buffer.concat([
    Buffer.from(
      `--${BOUNDARY}\r\nContent-Disposition: form-data; name="${name}"; filename="a.png"\r\nContent-Type: image/png\r\n\r\n`,
    ),
    bytes,
    Buffer.from('\r\n'),
  ]);
}
const CLOSE = Buffer.from(`--${BOUNDARY}--\r\n`);
const IMAGE = Buffer.alloc(200_000, 7);

interface Answer {
  status: number;
  body: string;
}

/** Sends `head`, waits until the upstream has bytes of the request (the prefix went out: the hold is
 *  taken and the rest streams), then sends `tail`. */
async function uploadInTwo(s: Stack, key: string, up: HandUpstream, head: Buffer, tail: Buffer): Promise<Answer> {
  const before = up.seen.length;
  const req = httpRequest(`${s.url}/v1/images/edits`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${key}`,
      'content-type': `multipart/form-data; boundary=${BOUNDARY}`,
      'transfer-encoding': 'chunked',
    },
    agent: false,
  });
  const answer = new Promise<Answer>((resolve, reject) => {
    req.on('response', (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
  });
  req.write(head);
  const got = () => up.seen[before]?.chunks.reduce((n, c) => n + c.bytes, 0) ?? 0;
  if (!(await waitFor(() => got() > 0, 5000))) throw new Error('the upstream got nothing of the prefix');
  req.end(tail);
  return answer;
}

/** An upstream that answers an edit once it has read the whole request; `ended[i]`: request i arrived whole. */
async function editUpstream(t: Test, s: Stack): Promise<{ up: HandUpstream; ended: boolean[] }> {
  const ended: boolean[] = [];
  const up = await handUpstream(t, (req, res, index) => {
    ended[index] = false;
    req.on('error', () => undefined);
    req.on('end', () => {
      ended[index] = true;
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"created":1,"data":[{"b64_json":"iVBORw0KGgo="}],"usage":{"input_tokens":5,"output_tokens":10}}');
    });
  });
  s.gw.ctx.upstreamOverride = new URL(up.url);
  return { up, ended };
}

function errorOf(a: Answer): { code: string; message: string } {
  return (JSON.parse(a.body) as { error: { code: string; message: string } }).error;
}

function noHealthSignal(t: Test, s: Stack, label: string): void {
  for (const id of ['alpha/painter', 'zeta/painter'])
    t.equal(s.gw.ctx.health.state(id).consecutiveFailures, 0, `${label}: no failure recorded for ${id}`);
}

const HEAD = Buffer.concat([
  part('model', 'acme/painter'),
  part('prompt', 'make it blue'),
  file('image', IMAGE).subarray(0, 100_000),
]);
const REST_OF_IMAGE = file('image', IMAGE).subarray(100_000);

t.test(
  "a field after a file that breaks a rule: the client's error, before the provider has the whole form",
  async (t) => {
    const s = await startStack(t);
    const key = s.key('open');
    s.credit('open', '100');
    const { up, ended } = await editUpstream(t, s);
    const cases: { label: string; tail: Buffer; status: number; code: string; message: RegExp }[] = [
      {
        label: 'n="-1"',
        tail: Buffer.concat([REST_OF_IMAGE, part('n', '-1'), CLOSE]),
        status: 422,
        code: 'validation_failed',
        message: /^n must be a positive integer/,
      },
      {
        label: 'n beyond what the hold assumed',
        tail: Buffer.concat([REST_OF_IMAGE, part('n', '11'), CLOSE]),
        status: 422,
        code: 'validation_failed',
        message: /^n must be at most 10 when it comes after a file part/,
      },
      {
        label: 'a second model',
        tail: Buffer.concat([REST_OF_IMAGE, part('model', 'acme/other'), CLOSE]),
        status: 400,
        code: 'invalid_request',
        message: /^model is sent twice/,
      },
      {
        label: 'a second prompt',
        tail: Buffer.concat([REST_OF_IMAGE, part('prompt', 'make it red'), CLOSE]),
        status: 400,
        code: 'invalid_request',
        message: /^prompt is sent twice/,
      },
      {
        label: 'more files than an edit may carry',
        tail: Buffer.concat([
          REST_OF_IMAGE,
          ...Array.from({ length: 17 }, () => file('image', Buffer.from('PNG'))),
          CLOSE,
        ]),
        status: 422,
        code: 'validation_failed',
        message: /at most 17 files/,
      },
      {
        label: 'a form cut before its closing boundary',
        tail: REST_OF_IMAGE,
        status: 400,
        code: 'invalid_request',
        message: /ended before its closing boundary/,
      },
    ];
    for (const c of cases) {
      const index = up.seen.length;
      const res = await uploadInTwo(s, key, up, HEAD, c.tail);
      t.equal(res.status, c.status, `${c.label}: ${res.body.slice(0, 200)}`);
      const err = errorOf(res);
      t.equal(err.code, c.code, c.label);
      t.match(err.message, c.message, `${c.label}: says why`);
      t.equal(ended[index], false, `${c.label}: the provider never received the whole request`);
    }
    t.ok(await waitFor(() => s.store.wallets.show('open', s.clock.now()).held === 0n), 'nothing stays held');
    noHealthSignal(t, s, 'after every refusal');
  },
);

t.test('a later prompt: required, and no longer than the hold assumed', async (t) => {
  const s = await startStack(t);
  const key = s.key('open');
  s.credit('open', '100');
  const { up, ended } = await editUpstream(t, s);
  const head = Buffer.concat([part('model', 'acme/painter'), file('image', IMAGE).subarray(0, 100_000)]);
  let index = up.seen.length;
  let res = await uploadInTwo(
    s,
    key,
    up,
    head,
    Buffer.concat([REST_OF_IMAGE, part('prompt', 'x'.repeat(32_001)), CLOSE]),
  );
  t.equal(res.status, 422, res.body.slice(0, 200));
  t.match(errorOf(res).message, /^prompt must be at most 32000 bytes when it comes after a file part/);
  t.equal(ended[index], false, 'too long: the provider never received the whole request');

  index = up.seen.length;
  res = await uploadInTwo(s, key, up, head, Buffer.concat([REST_OF_IMAGE, part('size', '1024x1024'), CLOSE]));
  t.equal(res.status, 400, res.body.slice(0, 200));
  t.match(errorOf(res).message, /^prompt is required$/);
  t.equal(ended[index], false, 'missing: the provider never received the whole request');

  res = await uploadInTwo(s, key, up, head, Buffer.concat([REST_OF_IMAGE, part('prompt', 'x'.repeat(32_000)), CLOSE]));
  t.equal(res.status, 200, `at the bound: answered (${res.body.slice(0, 100)})`);
  noHealthSignal(t, s, 'after the refusals');
});

t.test('fields right after model are judged before anything is sent', async (t) => {
  const s = await startStack(t);
  const key = s.key('open');
  s.credit('open', '100');
  const { up } = await editUpstream(t, s);
  for (const [label, fields, message] of [
    [
      'n="-1" after model',
      [part('model', 'acme/painter'), part('n', '-1'), part('prompt', 'p')],
      /^n must be a positive integer/,
    ],
    [
      'a second model',
      [part('model', 'acme/painter'), part('prompt', 'p'), part('model', 'acme/other')],
      /^model is sent twice/,
    ],
    [
      'model as a file',
      [file('model', Buffer.from('acme/painter')), part('prompt', 'p')],
      /^model must be a text field/,
    ],
  ] as const) {
    const body = Buffer.concat([...fields, file('image', Buffer.from('PNG')), CLOSE]);
    const res = await fetch(`${s.url}/v1/images/edits`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': `multipart/form-data; boundary=${BOUNDARY}` },
      body,
    });
    const text = await res.text();
    t.ok(res.status === 400 || res.status === 422, `${label}: ${res.status} ${text.slice(0, 200)}`);
    t.match(errorOf({ status: res.status, body: text }).message, message, `${label}: says why`);
  }
  t.equal(up.seen.length, 0, 'no provider was called');
});

t.test('a valid n after a file is forwarded as sent; the hold covered the most a later n may ask for', async (t) => {
  const s = await startStack(t);
  const key = s.key('open');
  s.credit('open', '100');
  const w = spyWallet(s);
  const { up, ended } = await editUpstream(t, s);
  const later = await uploadInTwo(s, key, up, HEAD, Buffer.concat([REST_OF_IMAGE, part('n', '4'), CLOSE]));
  t.equal(later.status, 200, later.body.slice(0, 200));
  t.equal(ended[0], true, 'the provider received the whole request');
  const sent = Buffer.concat(up.seen[0]?.body ?? []);
  t.ok(sent.includes(part('n', '4')), 'n forwarded as sent');
  // The same form with n = 10 before the file: the hold is the same.
  const first = await uploadInTwo(
    s,
    key,
    up,
    Buffer.concat([
      part('model', 'acme/painter'),
      part('prompt', 'make it blue'),
      part('n', '10'),
      file('image', IMAGE).subarray(0, 100_000),
    ]),
    Buffer.concat([REST_OF_IMAGE, CLOSE]),
  );
  t.equal(first.status, 200, first.body.slice(0, 200));
  const holds = [...w.holds.values()];
  t.equal(holds.length, 2);
  t.equal(holds[0], holds[1], 'held for 10 images when n came after the file');
});
