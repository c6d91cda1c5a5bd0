// The gateway's own headers on every kind of response through a real server: X-Pi-Trace-Id
// (unique per request), CORS (Allow-Origin, Expose-Headers) and the six security headers with exact
// values — on catalog 200s and 404s, inference 401s, unserved-path 400s, preflight 204s, 413s and
// 500s — and gateway-raised errors without provider headers.
import { randomBytes } from 'node:crypto';
import net from 'node:net';
import t, { type Test } from 'tap';
import { ManualClock } from '../../../src/clock.ts';
import { openStore } from '../../../src/store/sqlite/store.ts';
import { DEFAULT_NOW, startStack } from '../../helpers/stack.ts';

const SECURITY: [string, string][] = [
  ['x-content-type-options', 'nosniff'],
  ['x-frame-options', 'DENY'],
  ['referrer-policy', 'strict-origin-when-cross-origin'],
  ['content-security-policy', "frame-ancestors 'none'"],
  ['permissions-policy', 'camera=(), microphone=(), geolocation=()'],
  ['strict-transport-security', 'max-age=31536000; includeSubDomains'],
];
const X_PI_RESPONSE_HEADERS = [
  'x-pi-trace-id',
  'x-pi-provider',
  'x-pi-model',
  'x-pi-upstream-model',
  'x-pi-upstream-request-id',
];
const PROVIDER_HEADERS = ['x-pi-provider', 'x-pi-model', 'x-pi-upstream-model', 'x-pi-upstream-request-id'];
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

function exposed(h: Headers): string[] {
  return (h.get('access-control-expose-headers') ?? '').split(',').map((x) => x.trim().toLowerCase());
}

/** The gateway's fixed headers; returns the trace id. */
function checkGatewayHeaders(t: Test, h: Headers, where: string): string {
  const trace = h.get('x-pi-trace-id') ?? '';
  t.ok(UUID.test(trace), `${where}: X-Pi-Trace-Id minted (${trace})`);
  t.equal(h.get('access-control-allow-origin'), '*', `${where}: Allow-Origin *`);
  const exp = exposed(h);
  for (const x of [...X_PI_RESPONSE_HEADERS, 'retry-after', 'content-encoding'])
    t.ok(exp.includes(x), `${where}: ${x} exposed`);
  for (const [k, v] of SECURITY) t.equal(h.get(k), v, `${where}: ${k}`);
  return trace;
}

t.test('every kind of response carries the gateway headers; trace ids are unique', async (t) => {
  const s = await startStack(t);
  const key = s.key('open');
  const cases: { name: string; status: number; req: () => Promise<Response>; gatewayError?: boolean }[] = [
    { name: 'catalog list 200', status: 200, req: () => fetch(`${s.url}/v1/models`) },
    { name: 'single model 200', status: 200, req: () => fetch(`${s.url}/v1/models/acme/chat-small`) },
    { name: 'endpoints view 200', status: 200, req: () => fetch(`${s.url}/v1/models/acme/chat-small/endpoints`) },
    { name: 'single model 404', status: 404, req: () => fetch(`${s.url}/v1/models/acme/nope`), gatewayError: true },
    {
      name: 'endpoints view 404',
      status: 404,
      req: () => fetch(`${s.url}/v1/models/acme/nope/endpoints`),
      gatewayError: true,
    },
    { name: 'extra segments 404', status: 404, req: () => fetch(`${s.url}/v1/models/a/b/c`), gatewayError: true },
    {
      name: 'POST /v1/embeddings 400',
      status: 400,
      req: () => s.post('/v1/embeddings', { model: 'acme/embedder', input: 'x' }, { key }),
      gatewayError: true,
    },
    {
      name: 'GET /v1/responses/resp_123 400',
      status: 400,
      req: () => fetch(`${s.url}/v1/responses/resp_123`, { headers: { authorization: `Bearer ${key}` } }),
      gatewayError: true,
    },
    {
      name: 'preflight 204',
      status: 204,
      req: () =>
        fetch(`${s.url}/v1/chat/completions`, {
          method: 'OPTIONS',
          headers: { origin: 'https://app.example', 'access-control-request-method': 'POST' },
        }),
    },
    {
      name: 'chat 422',
      status: 422,
      req: () => s.post('/v1/chat/completions', { model: 'acme/chat-small', preset: 'x', messages: [] }, { key }),
      gatewayError: true,
    },
    {
      name: 'chat 404 model',
      status: 404,
      req: () =>
        s.post('/v1/chat/completions', { model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] }, { key }),
      gatewayError: true,
    },
  ];
  for (const path of [
    '/v1/chat/completions',
    '/v1/responses',
    '/v1/messages',
    '/v1/images/generations',
    '/v1/images/edits',
  ]) {
    cases.push({
      name: `${path} without key 401`,
      status: 401,
      req: () => s.post(path, { model: 'acme/chat-small' }),
      gatewayError: true,
    });
    cases.push({
      name: `${path} bad key 401`,
      status: 401,
      req: () => s.post(path, { model: 'acme/chat-small' }, { key: 'sk-pi-unknown-key' }),
      gatewayError: true,
    });
  }
  // 402: a workspace without credit; 429: the 3-per-minute workspace's fourth request.
  const poor = s.key('strict');
  cases.push({
    name: 'chat 402',
    status: 402,
    req: () =>
      s.post(
        '/v1/chat/completions',
        { model: 'acme/chat-small', messages: [{ role: 'user', content: 'hi' }] },
        { key: poor },
      ),
    gatewayError: true,
  });
  const slow = s.key('slow');
  s.credit('slow', '10');
  for (let i = 0; i < 3; i++)
    (
      await s.post(
        '/v1/chat/completions',
        { model: 'acme/chat-small', messages: [{ role: 'user', content: 'hi' }] },
        { key: slow },
      )
    ).body?.cancel();
  cases.push({
    name: 'chat 429',
    status: 429,
    req: () =>
      s.post(
        '/v1/chat/completions',
        { model: 'acme/chat-small', messages: [{ role: 'user', content: 'hi' }] },
        { key: slow },
      ),
    gatewayError: true,
  });
  const traces = new Set<string>();
  for (const c of cases) {
    const res = await c.req();
    const text = await res.text();
    t.equal(res.status, c.status, `${c.name}: status`);
    traces.add(checkGatewayHeaders(t, res.headers, c.name));
    if (c.gatewayError) {
      for (const h of PROVIDER_HEADERS) t.equal(res.headers.get(h), null, `${c.name}: gateway error carries no ${h}`);
      const body = JSON.parse(text) as { error: Record<string, unknown> };
      t.same(Object.keys(body.error).sort(), ['code', 'message', 'type'], `${c.name}: error object`);
    }
    if (c.status === 429)
      t.equal(
        res.headers.get('retry-after'),
        '60',
        `${c.name}: Retry-After counts to the next full minute (clock at 12:00:00.000)`,
      );
    if (c.name.includes('400'))
      t.same(
        JSON.parse(text),
        { error: { message: 'model is required', type: 'invalid_request_error', code: 'invalid_request' } },
        `${c.name}: the unserved-path error`,
      );
  }
  t.equal(traces.size, cases.length, 'one distinct trace id per response');

  // Repeating the same request still mints a new id each time.
  const again = await Promise.all(Array.from({ length: 20 }, () => fetch(`${s.url}/v1/models/acme/chat-small`)));
  const ids = new Set(again.map((r) => r.headers.get('x-pi-trace-id')));
  await Promise.all(again.map((r) => r.arrayBuffer()));
  t.equal(ids.size, 20, 'identical requests get distinct trace ids');
});

t.test('Expose-Headers covers every X-Pi-* header the gateway actually sends', async (t) => {
  const s = await startStack(t);
  const key = s.key('open');
  s.credit('open', '10');
  const res = await s.post(
    '/v1/chat/completions',
    { model: 'acme/chat-small', messages: [{ role: 'user', content: 'hi' }] },
    { key },
  );
  await res.arrayBuffer();
  t.equal(res.status, 200);
  checkGatewayHeaders(t, res.headers, 'provider 200');
  const sent = [...res.headers.keys()].filter((k) => k.startsWith('x-pi-'));
  t.same(sent.sort(), [...X_PI_RESPONSE_HEADERS].sort(), 'a provider answer carries all five X-Pi-* headers');
  const exp = exposed(res.headers);
  for (const h of sent) t.ok(exp.includes(h), `${h} is exposed`);
  t.equal(exposed(res.headers).length, new Set(exposed(res.headers)).size, 'no duplicates in Expose-Headers');
});

t.test('413 request_too_large carries the gateway headers', async (t) => {
  const s = await startStack(t);
  const key = s.key('open');
  const body = JSON.stringify({ model: 'acme/chat-small', messages: [{ role: 'user', content: 'x'.repeat(70_000) }] });
  const raw = await new Promise<string>((resolve, reject) => {
    const sock = net.connect(s.gw.port, '127.0.0.1');
    let out = '';
    sock.on('data', (d) => {
      out += d.toString('latin1');
      if (out.includes('\r\n\r\n') && /"code":"request_too_large"\}\}/.test(out)) sock.destroy();
    });
    sock.on('close', () => resolve(out));
    sock.on('error', reject);
    sock.write(
      `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`,
    );
    sock.write(body);
  });
  t.match(raw, /^HTTP\/1\.1 413 /);
  const headers = new Headers();
  for (const line of raw.split('\r\n\r\n')[0]?.split('\r\n').slice(1) ?? []) {
    const i = line.indexOf(':');
    headers.append(line.slice(0, i), line.slice(i + 1).trim());
  }
  checkGatewayHeaders(t, headers, '413');
});

/** A clock that can be told to fail: the catalog handlers read it first, so a failure there is a handler throwing. */
class FailingClock extends ManualClock {
  failing = false;
  override now(): number {
    if (this.failing) throw new Error('injected clock failure');
    return super.now();
  }
}

t.test('500 internal_error is the default for catalog failures, headers included', async (t) => {
  // Seam: an injected clock that throws (the catalog handlers' first read). The store gets its own
  // clock so nothing else trips over the failure.
  const clock = new FailingClock(DEFAULT_NOW);
  const store = openStore(':memory:', {
    clock: new ManualClock(DEFAULT_NOW),
    masterKey: randomBytes(32).toString('base64'),
  });
  const s = await startStack(t, { clock, store });
  t.teardown(() => store.close());
  for (const path of ['/v1/models', '/v1/models/acme/chat-small', '/v1/models/acme/chat-small/endpoints']) {
    clock.failing = true;
    const res = await fetch(`${s.url}${path}`);
    clock.failing = false;
    const body = (await res.json()) as unknown;
    t.equal(res.status, 500, `${path}: 500`);
    t.same(
      body,
      {
        error: {
          message: 'internal error; quote the X-Pi-Trace-Id when reporting',
          type: 'api_error',
          code: 'internal_error',
        },
      },
      `${path}: internal_error object`,
    );
    checkGatewayHeaders(t, res.headers, `${path} 500`);
    const ok = await fetch(`${s.url}${path}`);
    await ok.arrayBuffer();
    t.equal(ok.status, 200, `${path}: the next request is served normally`);
  }
});
