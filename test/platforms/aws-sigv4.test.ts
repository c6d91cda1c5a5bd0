// SigV4: the gateway's signer (@smithy/signature-v4, src/platforms/aws-sigv4.ts) against the
// simulator's hand-written verifier (src/simulator/sigv4-verify.ts) — two implementations that
// must agree — plus AWS's published test vector for the verifier alone, and every way a request can
// fail verification: another secret, a changed body byte, path or signed header, an unknown key,
// clock skew beyond five minutes, a missing session token.
import { createHash, createHmac } from 'node:crypto';
import t from 'tap';
import { signSigV4 } from '../../src/platforms/aws-sigv4.ts';
import type { OutgoingRequest } from '../../src/platforms/types.ts';
import { type AwsSimKey, verifySigV4 } from '../../src/simulator/sigv4-verify.ts';

const NOW = Date.parse('2026-01-15T12:00:00Z');
const KEYS = new Map<string, AwsSimKey>([
  ['AKIDTEST', { secretAccessKey: 'secret/+key' }],
  ['AKIDTEMP', { secretAccessKey: 's2', sessionToken: 'tok' }],
]);
const URL_ =
  'https://bedrock-runtime.us-east-1.amazonaws.com/model/us.anthropic.claude-x-v1%3A0/invoke-with-response-stream';

async function signed(
  over: Partial<OutgoingRequest> = {},
  keys = { accessKeyId: 'AKIDTEST', secretAccessKey: 'secret/+key' } as {
    accessKeyId: string;
    secretAccessKey: string;
    sessionToken?: string;
  },
  now = NOW,
) {
  const out: OutgoingRequest = {
    url: URL_,
    headers: {
      'content-type': 'application/json',
      accept: 'application/vnd.amazon.eventstream',
      'x-title': 'My  App ',
    },
    body: '{"max_tokens":5}',
    ...over,
  };
  await signSigV4(out, keys, 'us-east-1', 'bedrock', now);
  const u = new URL(out.url);
  const headers: Record<string, string> = { ...out.headers, host: u.host };
  return {
    req: { method: 'POST', path: u.pathname, query: u.search.slice(1), headers },
    body: Buffer.from(out.body as string),
  };
}

t.test(
  'the SDK signer and the independent verifier agree (model ids with a colon, query strings, odd header spacing)',
  async (t) => {
    const a = await signed();
    t.same(verifySigV4(a.req, a.body, KEYS, 'bedrock', NOW), {
      ok: true,
      accessKeyId: 'AKIDTEST',
      region: 'us-east-1',
    });
    const q = await signed({ url: `${URL_}?b=2&a=1 x` });
    t.same(
      verifySigV4(q.req, q.body, KEYS, 'bedrock', NOW + 299_000),
      { ok: true, accessKeyId: 'AKIDTEST', region: 'us-east-1' },
      'sorted, encoded query; 299 s of skew',
    );
    const b = await signed({ body: Buffer.from('{"x":"é"}') });
    t.ok(verifySigV4(b.req, b.body, KEYS, 'bedrock', NOW).ok, 'a Buffer body');
    const s = await signed({}, { accessKeyId: 'AKIDTEMP', secretAccessKey: 's2', sessionToken: 'tok' });
    t.equal(s.req.headers['x-amz-security-token'], 'tok');
    t.ok(verifySigV4(s.req, s.body, KEYS, 'bedrock', NOW).ok, 'temporary credentials');
  },
);

t.test('every tampering is refused with the exception Bedrock names', async (t) => {
  const a = await signed();
  const exception = (r: ReturnType<typeof verifySigV4>) => (r.ok ? 'ok' : r.exception);
  t.equal(
    exception(verifySigV4(a.req, Buffer.from('{"max_tokens":6}'), KEYS, 'bedrock', NOW)),
    'InvalidSignatureException',
    'one body byte',
  );
  t.equal(
    exception(
      verifySigV4(
        { ...a.req, path: a.req.path.replace('invoke-with-response-stream', 'invoke') },
        a.body,
        KEYS,
        'bedrock',
        NOW,
      ),
    ),
    'InvalidSignatureException',
    'the path',
  );
  t.equal(
    exception(
      verifySigV4(
        { ...a.req, headers: { ...a.req.headers, accept: 'application/json' } },
        a.body,
        KEYS,
        'bedrock',
        NOW,
      ),
    ),
    'InvalidSignatureException',
    'a signed header',
  );
  t.equal(
    exception(verifySigV4(a.req, a.body, new Map([['AKIDTEST', { secretAccessKey: 'other' }]]), 'bedrock', NOW)),
    'InvalidSignatureException',
    'another secret',
  );
  t.equal(
    exception(verifySigV4(a.req, a.body, new Map(), 'bedrock', NOW)),
    'UnrecognizedClientException',
    'an unknown key',
  );
  t.equal(
    exception(verifySigV4(a.req, a.body, KEYS, 'bedrock', NOW + 301_000)),
    'InvalidSignatureException',
    'skew beyond five minutes',
  );
  t.equal(exception(verifySigV4(a.req, a.body, KEYS, 's3', NOW)), 'InvalidSignatureException', 'another service');
  const noToken = await signed({}, { accessKeyId: 'AKIDTEMP', secretAccessKey: 's2' });
  t.equal(
    exception(verifySigV4(noToken.req, noToken.body, KEYS, 'bedrock', NOW)),
    'UnrecognizedClientException',
    'a session key without its token',
  );
  t.equal(
    exception(
      verifySigV4({ ...a.req, headers: { ...a.req.headers, authorization: 'Bearer x' } }, a.body, KEYS, 'bedrock', NOW),
    ),
    'IncompleteSignatureException',
  );
});

t.test('the verifier alone matches a signature computed by the published algorithm', async (t) => {
  // AWS's documented example key and a request built step by step here, independently of both.
  const secret = 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY';
  const body = Buffer.from('{"a":1}');
  const hash = createHash('sha256').update(body).digest('hex');
  const headers = { host: 'bedrock-runtime.us-west-2.amazonaws.com', 'x-amz-date': '20260115T120000Z' };
  const canonical = `POST\n/model/m%253A0/invoke\n\nhost:${headers.host}\nx-amz-date:${headers['x-amz-date']}\n\nhost;x-amz-date\n${hash}`;
  const sts = `AWS4-HMAC-SHA256\n20260115T120000Z\n20260115/us-west-2/bedrock/aws4_request\n${createHash('sha256').update(canonical).digest('hex')}`;
  const h = (k: string | Buffer, d: string) => createHmac('sha256', k).update(d).digest();
  const sig = createHmac('sha256', h(h(h(h(`AWS4${secret}`, '20260115'), 'us-west-2'), 'bedrock'), 'aws4_request'))
    .update(sts)
    .digest('hex');
  const req = {
    method: 'POST',
    path: '/model/m%3A0/invoke',
    query: '',
    headers: {
      ...headers,
      authorization: `AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20260115/us-west-2/bedrock/aws4_request, SignedHeaders=host;x-amz-date, Signature=${sig}`,
    },
  };
  t.ok(verifySigV4(req, body, new Map([['AKIDEXAMPLE', { secretAccessKey: secret }]]), 'bedrock', NOW).ok);
});
