// Image endpoints: generations (JSON) and edits (multipart). The edit upload is streamed through:
// the upstream receives the first bytes while the client is still sending, the model field is
// swapped for the upstream id without touching any other byte, a slow upstream slows the client's
// upload down (the gateway does not soak it up), and the upload limit holds.
import t from 'tap';
import { request as httpRequest, type ClientRequest, type IncomingMessage } from 'node:http';
import { startStack } from '../../helpers/stack.ts';
import { handUpstream, lastSim, logRow, spyWallet, waitFor } from '../../helpers/inference.ts';

const BOUNDARY = '----pi-test-boundary-7MA4YWxkTrZu0gW';

function part(name: string, value: string): Buffer {
  return Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`);
}
function fileHead(name: string, filename: string): Buffer {
  return Buffer.from(
    `--${BOUNDARY}\r\nContent-Disposition: form-data; name="${name}"; filename="${filename}"\r\nContent-Type: image/png\r\n\r\n`,
  );
}
const CLOSE = Buffer.from(`--${BOUNDARY}--\r\n`);

function openUpload(
  url: string,
  key: string,
  contentLength?: number,
): { req: ClientRequest; response: Promise<{ status: number; body: string }> } {
  const headers: Record<string, string> = {
    authorization: `Bearer ${key}`,
    'content-type': `multipart/form-data; boundary=${BOUNDARY}`,
  };
  if (contentLength !== undefined) headers['content-length'] = String(contentLength);
  else headers['transfer-encoding'] = 'chunked';
  const req = httpRequest(url, { method: 'POST', headers, agent: false });
  const response = new Promise<{ status: number; body: string }>((resolve, reject) => {
    req.on('response', (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
  });
  return { req, response };
}

t.test('images generations: model replaced, answer passed through, billed from usage', async (t) => {
  const s = await startStack(t);
  const key = s.key('open');
  s.credit('open', '100');
  const w = spyWallet(s);
  for (const provider of ['alpha', 'zeta']) {
    const res = await s.post(
      '/v1/images/generations',
      {
        model: 'acme/painter',
        prompt: 'a red square',
        n: 2,
        quality: 'low',
        provider: { only: [provider] },
        sim: { usage: { prompt: 10, completion: 544 } },
      },
      { key },
    );
    t.equal(res.status, 200, provider);
    t.equal(res.headers.get('x-pi-provider'), provider);
    t.equal(res.headers.get('x-pi-model'), 'acme/painter');
    const body = (await res.json()) as { data: { b64_json: string }[] };
    t.equal(body.data.length, 2);
    t.match(body.data[0]?.b64_json, /^iVBOR/, 'a PNG');
    t.same(lastSim(s).body, {
      model: provider === 'alpha' ? 'painter-v1' : 'painter-deployment',
      prompt: 'a red square',
      n: 2,
      quality: 'low',
      sim: { usage: { prompt: 10, completion: 544 } },
    });
    // painter: prompt 5000 nano per token, output image tokens 40000 nano.
    const trace = res.headers.get('x-pi-trace-id') ?? '';
    await logRow(s, trace);
    t.equal(w.settles.get(trace)?.cost, 10n * 5000n + 544n * 40000n);
  }
});

t.test('images edits through the simulator: the multipart body arrives intact but for the model', async (t) => {
  const s = await startStack(t);
  const key = s.key('open');
  s.credit('open', '100');
  const image = Buffer.alloc(300_000);
  for (let i = 0; i < image.length; i++) image[i] = (i * 31) & 0xff;
  for (const modelFirst of [true, false]) {
    const fields = [
      part('prompt', 'make it blue'),
      fileHead('image', 'in.png'),
      image,
      Buffer.from('\r\n'),
      part('n', '1'),
      part('size', '1024x1024'),
    ];
    const body = Buffer.concat(
      modelFirst
        ? [part('model', 'acme/painter'), ...fields, CLOSE]
        : [...fields, part('model', 'acme/painter'), CLOSE],
    );
    const { req, response } = openUpload(`${s.url}/v1/images/edits`, key, body.length);
    req.end(body);
    const res = await response;
    t.equal(res.status, 200, `model ${modelFirst ? 'first' : 'last'}: ${res.body.slice(0, 200)}`);
    const rec = lastSim(s);
    const upstreamModel = rec.path.includes('/openai/deployments/') ? 'painter-deployment' : 'painter-v1';
    t.equal(
      rec.path,
      upstreamModel === 'painter-v1' ? '/v1/images/edits' : '/openai/deployments/painter-deployment/images/edits',
    );
    const expected = Buffer.from(
      body.toString('latin1').replace('\r\n\r\nacme/painter\r\n', `\r\n\r\n${upstreamModel}\r\n`),
      'latin1',
    );
    t.equal(rec.rawBody.length, expected.length);
    t.ok(rec.rawBody.equals(expected), 'byte for byte the client body, model swapped');
    t.match(rec.body, {
      fields: { model: upstreamModel, prompt: 'make it blue', n: '1' },
      files: [{ name: 'image', filename: 'in.png', size: image.length }],
    });
    t.match(rec.headers['content-type'], `boundary=${BOUNDARY}`);
  }
});

t.test('images edits: the upload is streamed through, not buffered whole', async (t) => {
  const s = await startStack(t, {
    limits: { maxUploadBytes: 64 * 1024 * 1024, firstByteTimeoutMs: 10_000, streamIdleTimeoutMs: 10_000 },
  });
  const key = s.key('open');
  s.credit('open', '100');
  let readUpstream = true;
  let pausedReq: IncomingMessage | null = null;
  const up = await handUpstream(t, (req, res) => {
    if (!readUpstream) {
      req.pause();
      pausedReq = req;
    }
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"created":1,"data":[{"b64_json":"iVBORw0KGgo="}],"usage":{"input_tokens":5,"output_tokens":10}}');
    });
  });
  s.gw.ctx.upstreamOverride = new URL(up.url);

  // 1. The upstream sees the upload while the client is still sending it.
  const { req, response } = openUpload(`${s.url}/v1/images/edits`, key);
  const head = Buffer.concat([
    part('model', 'acme/painter'),
    part('prompt', 'p'),
    fileHead('image', 'a.png'),
    Buffer.alloc(200_000, 1),
  ]);
  const tail = Buffer.concat([Buffer.alloc(300_000, 2), Buffer.from('\r\n'), CLOSE]);
  req.write(head);
  const got = () => up.seen[0]?.chunks.reduce((n, c) => n + c.bytes, 0) ?? 0;
  t.ok(await waitFor(() => got() > 150_000, 3000), `the upstream got ${got()} bytes before the client finished`);
  req.end(tail);
  const res = await response;
  t.equal(res.status, 200, res.body);
  const sent = Buffer.concat(up.seen[0]?.body ?? []);
  t.equal(sent.length, got());
  t.ok(sent.includes(Buffer.from('\r\n\r\npainter-')), 'the model field names the upstream id');
  t.equal(sent.indexOf(Buffer.from('acme/painter')), -1);
  t.ok(sent.subarray(sent.length - CLOSE.length).equals(CLOSE), 'the whole body arrived');
  const upstreamModel = up.seen[0]?.path.includes('/openai/deployments/') ? 'painter-deployment' : 'painter-v1';
  const expected = Buffer.concat([head, tail])
    .toString('latin1')
    .replace('\r\n\r\nacme/painter\r\n', `\r\n\r\n${upstreamModel}\r\n`);
  t.ok(sent.equals(Buffer.from(expected, 'latin1')), 'byte for byte the client body with the model swapped');

  // 2. A slow upstream slows the client down: the gateway does not soak the upload up.
  readUpstream = false;
  const big = openUpload(`${s.url}/v1/images/edits`, key);
  big.req.write(Buffer.concat([part('model', 'acme/painter'), part('prompt', 'p'), fileHead('image', 'a.png')]));
  const total = 48 * 1024 * 1024;
  const piece = Buffer.alloc(256 * 1024, 3);
  let flushed = 0;
  let offered = 0;
  const pump = async () => {
    while (offered < total) {
      offered += piece.length;
      const ok = big.req.write(piece, () => (flushed += piece.length));
      if (!ok) await new Promise((r) => big.req.once('drain', r));
    }
    big.req.end(Buffer.concat([Buffer.from('\r\n'), CLOSE]));
  };
  const pumping = pump();
  await new Promise((r) => setTimeout(r, 1500));
  // Loopback socket buffers autotune to several MB each, and the path has two connections (client →
  // gateway, gateway → upstream, four buffers): up to ~20 MB can sit in the kernel. The gateway's own
  // share is its 256-KB stream buffer; without backpressure all 48 MB would be through in 1.5 s.
  t.ok(
    flushed < (total * 2) / 3,
    `with the upstream not reading, the client could only send ${Math.round(flushed / 1024 / 1024)} of ${total / 1024 / 1024} MB`,
  );
  t.ok(pausedReq, 'the upstream has the request (and is not reading it)');
  // Let the upstream read again: everything arrives.
  readUpstream = true;
  (pausedReq as IncomingMessage | null)?.resume();
  await pumping;
  const r2 = await big.response;
  t.equal(r2.status, 200, r2.body);
  const arrived = up.seen[1]?.chunks.reduce((n, c) => n + c.bytes, 0) ?? 0;
  t.ok(arrived > total, `all ${Math.round(arrived / 1024 / 1024)} MB arrived`);
});

t.test('images edits: the upload limit holds', async (t) => {
  const s = await startStack(t);
  const key = s.key('open');
  s.credit('open', '100');
  const body = Buffer.concat([
    part('model', 'acme/painter'),
    part('prompt', 'p'),
    fileHead('image', 'a.png'),
    Buffer.alloc(1_100_000),
    Buffer.from('\r\n'),
    CLOSE,
  ]);
  let up = openUpload(`${s.url}/v1/images/edits`, key, body.length);
  up.req.on('error', () => undefined);
  up.req.end(body);
  let res = await up.response;
  t.equal(res.status, 413, 'declared over the 1 MiB upload limit');
  t.equal((JSON.parse(res.body) as { error: { code: string } }).error.code, 'request_too_large');

  up = openUpload(`${s.url}/v1/images/edits`, key);
  up.req.on('error', () => undefined);
  up.req.end(body);
  res = await up.response.catch(() => ({ status: 0, body: '' }));
  t.equal(res.status, 413, 'chunked over the limit');
  t.equal(s.store.wallets.show('open', s.clock.now()).held, 0n);
});
