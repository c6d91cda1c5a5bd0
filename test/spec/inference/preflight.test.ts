// Browser preflight (spec: Browser preflight) through a real server: OPTIONS on every inference path
// answers 204 without a key, with the fixed allow-lists, `X-Stainless-*` echoed, anything else not
// allowed back, and no body or Content-Length.
import net from 'node:net';
import t from 'tap';
import { startStack } from '../../helpers/stack.ts';

const INFERENCE_PATHS = [
  '/v1/chat/completions',
  '/v1/responses',
  '/v1/messages',
  '/v1/images/generations',
  '/v1/images/edits',
];
const FIXED_ALLOWED = [
  'authorization',
  'x-api-key',
  'x-goog-api-key',
  'content-type',
  'anthropic-version',
  'anthropic-beta',
  'anthropic-dangerous-direct-browser-access',
  'x-title',
  'http-referer',
  'x-pi-session-id',
  'openai-organization',
  'openai-project',
];

function allowedHeaders(res: Response): string[] {
  return (res.headers.get('access-control-allow-headers') ?? '')
    .split(',')
    .map((h) => h.trim().toLowerCase())
    .filter((h) => h !== '');
}

function preflight(url: string, requested?: string, extra: Record<string, string> = {}): Promise<Response> {
  const headers: Record<string, string> = {
    origin: 'https://app.example',
    'access-control-request-method': 'POST',
    ...extra,
  };
  if (requested !== undefined) headers['access-control-request-headers'] = requested;
  return fetch(url, { method: 'OPTIONS', headers });
}

t.test('204 on every inference path, no key needed, fixed allow-lists', async (t) => {
  const s = await startStack(t);
  for (const path of INFERENCE_PATHS) {
    const auths: Record<string, string>[] = [{}, { authorization: 'Bearer sk-pi-bogus' }, { 'x-api-key': 'not-a-key' }];
    for (const auth of auths) {
      const res = await preflight(`${s.url}${path}`, 'content-type, authorization', auth);
      const body = await res.arrayBuffer();
      const w = `${path} ${JSON.stringify(auth)}`;
      t.equal(res.status, 204, `${w}: 204`);
      t.equal(body.byteLength, 0, `${w}: no body`);
      t.equal(res.headers.get('access-control-allow-methods'), 'POST, GET, OPTIONS', `${w}: methods`);
      t.equal(res.headers.get('access-control-max-age'), '86400', `${w}: max age`);
      t.equal(res.headers.get('access-control-allow-origin'), '*', `${w}: origin`);
      t.same(allowedHeaders(res), FIXED_ALLOWED, `${w}: exactly the fixed list`);
      t.ok(res.headers.get('x-pi-trace-id'), `${w}: trace id`);
      t.equal(res.headers.get('x-frame-options'), 'DENY', `${w}: security headers`);
    }
  }
});

t.test('X-Stainless-* headers are echoed; anything outside the list is not allowed back', async (t) => {
  const s = await startStack(t);
  const requested =
    'X-Stainless-Lang, x-stainless-os, X-Stainless-Retry-Count, X-Custom-Thing, Cookie, x-stainless-os, x-stainless-, X-Pi-Session-Id, anthropic-version';
  const res = await preflight(`${s.url}/v1/chat/completions`, requested);
  await res.arrayBuffer();
  const allowed = allowedHeaders(res);
  t.same(
    allowed,
    [...FIXED_ALLOWED, 'x-stainless-lang', 'x-stainless-os', 'x-stainless-retry-count'],
    'fixed list + each requested X-Stainless-* once',
  );
  for (const bad of ['x-custom-thing', 'cookie', 'x-stainless-'])
    t.notOk(allowed.includes(bad), `${bad} not allowed, so a browser fails the preflight`);

  // What a browser does: every requested header must be in the allow list, case-insensitively.
  const browserPasses = (req: string, allow: string[]) =>
    req
      .split(',')
      .map((h) => h.trim().toLowerCase())
      .every((h) => allow.includes(h));
  const sdk = 'authorization, content-type, x-stainless-arch, x-stainless-package-version, openai-organization';
  const ok = await preflight(`${s.url}/v1/responses`, sdk);
  await ok.arrayBuffer();
  t.ok(browserPasses(sdk, allowedHeaders(ok)), 'an OpenAI SDK preflight passes');
  const anth =
    'x-api-key, anthropic-version, anthropic-dangerous-direct-browser-access, content-type, x-stainless-timeout';
  const ok2 = await preflight(`${s.url}/v1/messages`, anth);
  await ok2.arrayBuffer();
  t.ok(browserPasses(anth, allowedHeaders(ok2)), 'an Anthropic SDK preflight passes');
  const bad = await preflight(`${s.url}/v1/messages`, 'x-api-key, x-evil');
  await bad.arrayBuffer();
  t.notOk(browserPasses('x-api-key, x-evil', allowedHeaders(bad)), 'a preflight asking for another header fails');

  const none = await preflight(`${s.url}/v1/messages`);
  await none.arrayBuffer();
  t.same(allowedHeaders(none), FIXED_ALLOWED, 'no Access-Control-Request-Headers: the fixed list');
});

t.test('on the wire: 204 has no Content-Length, no Transfer-Encoding and no body bytes', async (t) => {
  const s = await startStack(t);
  // Two requests on one connection: if the 204 carried body bytes, the second response would be garbled.
  const raw = await new Promise<string>((resolve, reject) => {
    const sock = net.connect(s.gw.port, '127.0.0.1');
    let out = '';
    sock.on('data', (d) => {
      out += d.toString('latin1');
      if ((out.match(/HTTP\/1\.1 /g) ?? []).length === 2 && out.endsWith('\r\n\r\n')) sock.destroy();
    });
    sock.on('close', () => resolve(out));
    sock.on('error', reject);
    const req = `OPTIONS /v1/chat/completions HTTP/1.1\r\nHost: x\r\nOrigin: https://app.example\r\nAccess-Control-Request-Method: POST\r\n\r\n`;
    sock.write(req + req);
  });
  const responses = raw.split(/(?=HTTP\/1\.1 )/);
  t.equal(responses.length, 2, 'two responses on one connection');
  for (const r of responses) {
    t.match(r, /^HTTP\/1\.1 204 /);
    t.notMatch(r, /\r\ncontent-length:/i, 'no Content-Length');
    t.notMatch(r, /\r\ntransfer-encoding:/i, 'no Transfer-Encoding');
    t.ok(r.endsWith('\r\n\r\n'), 'nothing after the header block');
  }
});
