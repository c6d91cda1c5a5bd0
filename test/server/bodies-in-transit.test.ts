// The server's budget for request bodies in transit (src/server/body-budget.ts), on real sockets:
// bodies read whole (before the key) are refused 503 with Retry-After once their sum would pass it;
// a body alone always proceeds; a streamed body (read by its handler after the key) is not counted;
// every way a body ends (whole, over its cap, answered early, the client leaving) gives its bytes back.
import t, { type Test } from 'tap';
import { budgetLog } from '../../src/server/app.ts';
import { BodyBudget } from '../../src/server/body-budget.ts';
import { ManualClock } from '../../src/clock.ts';
import type { GatewaySettings } from '../../src/config/compiled.ts';
import { createHttpServer, type HttpServer, type RouteDef } from '../../src/server/http-server.ts';
import { waitFor } from '../helpers/admission.ts';
import { parseResponses, type RawConnection, rawConnect } from '../helpers/raw-client.ts';

const KIB = 1024;
const BUDGET = 1024 * KIB;
const CAP = 4 * 1024 * KIB;

t.test('BodyBudget: a body is refused only while others hold part of the budget', async (t) => {
  let limit = 100;
  const b = new BodyBudget(() => limit);
  t.ok(b.take(60, 0), 'within the budget');
  t.notOk(b.take(50, 0), 'another body past it is refused');
  t.equal(b.bytes, 60, 'a refusal counts nothing');
  t.ok(b.take(30, 60), 'the first body grows within it');
  b.give(90);
  t.ok(b.take(250, 0), 'a body alone passes the budget (its own cap bounds it)');
  t.ok(b.take(250, 250), 'and keeps growing while it is alone');
  t.notOk(b.take(1, 0), 'nothing else while it holds more than the budget');
  b.give(500);
  limit = 10;
  t.notOk(b.take(5, 0) && b.take(6, 0), 'the limit is read at each take');
  t.equal(b.bytes, 5);
});

async function serve(t: Test, routes: RouteDef[]): Promise<{ port: number; server: HttpServer }> {
  const server = createHttpServer(routes, { bodyBytesInTransit: () => BUDGET });
  const port = await server.listen('127.0.0.1', 0);
  t.teardown(() => server.close());
  return { port, server };
}

const echoLength: RouteDef['handler'] = (req, reply) => reply.send(200, [], String(req.body.byteLength));

async function partial(t: Test, port: number, path: string, declared: number, sent: number): Promise<RawConnection> {
  const c = await rawConnect(port);
  t.teardown(() => c.destroy());
  await c.write(`POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Length: ${declared}\r\n\r\n`);
  await c.write(Buffer.alloc(sent, 0x61));
  return c;
}

t.test('bodies read whole: past the budget a body still arriving is 503, the others go on', async (t) => {
  const s = await serve(t, [
    { method: 'post', pattern: '/json', body: 'buffer', maxBodyBytes: CAP, handler: echoLength },
  ]);
  const a = await partial(t, s.port, '/json', 900 * KIB, 700 * KIB);
  t.ok(await waitFor(() => s.server.bodyBytesInTransit() === 700 * KIB), 'the first body holds what arrived');
  const b = await partial(t, s.port, '/json', 900 * KIB, 400 * KIB);
  const refused = parseResponses(await b.until(/\r\n\r\n\{.*\}$/s))[0];
  t.equal(refused?.status, 503, 'the second body passes the budget: refused');
  t.equal(refused?.header('retry-after'), '1');
  t.match(JSON.parse(refused?.body ?? '{}'), { error: { code: 'provider_unavailable', message: /request bodies/ } });
  t.ok(refused?.header('x-pi-trace-id'), 'with its trace id');
  t.ok(await waitFor(() => s.server.bodyBytesInTransit() === 700 * KIB), 'the refused body gave back what it held');
  await a.write(Buffer.alloc(200 * KIB, 0x61));
  t.match(await a.until(/\r\n\r\n\d+$/), /HTTP\/1\.1 200 [\s\S]*\r\n\r\n921600$/, 'the first body was read whole');
  t.ok(await waitFor(() => s.server.bodyBytesInTransit() === 0), 'a whole body holds nothing');
  const c = await partial(t, s.port, '/json', 900 * KIB, 900 * KIB);
  t.match(await c.until(/\r\n\r\n\d+$/), /HTTP\/1\.1 200 /, 'the budget is free again');
});

t.test('a body alone passes the budget; a streamed body is not counted, nor refused by it', async (t) => {
  const s = await serve(t, [
    { method: 'post', pattern: '/json', body: 'buffer', maxBodyBytes: CAP, handler: echoLength },
    {
      method: 'post',
      pattern: '/upload',
      body: 'stream',
      maxBodyBytes: CAP,
      handler: async (req, reply) => {
        let n = 0;
        for await (const chunk of req.bodyStream ?? []) n += (chunk as Buffer).byteLength;
        reply.send(200, [], String(n));
      },
    },
  ]);
  const big = await partial(t, s.port, '/json', 2048 * KIB, 2048 * KIB);
  t.match(await big.until(/\r\n\r\n\d+$/), /HTTP\/1\.1 200 [\s\S]*\r\n\r\n2097152$/, 'twice the budget, alone: read');
  const json = await partial(t, s.port, '/json', 1000 * KIB, 900 * KIB);
  t.ok(await waitFor(() => s.server.bodyBytesInTransit() === 900 * KIB), 'a body read whole counts as it arrives');
  // Its handler checks the key before reading; the server holds at most the stream's buffer of it.
  const up = await partial(t, s.port, '/upload', 2048 * KIB, 2048 * KIB);
  t.match(await up.until(/\r\n\r\n\d+$/), /HTTP\/1\.1 200 [\s\S]*\r\n\r\n2097152$/, 'an upload beside it goes through');
  t.equal(s.server.bodyBytesInTransit(), 900 * KIB, 'and was not counted');
  await json.write(Buffer.alloc(100 * KIB, 0x61));
  t.match(await json.until(/\r\n\r\n\d+$/), /HTTP\/1\.1 200 /);
  t.ok(await waitFor(() => s.server.bodyBytesInTransit() === 0));
});

t.test('every way a body ends gives its bytes back', async (t) => {
  const s = await serve(t, [
    { method: 'post', pattern: '/json', body: 'buffer', maxBodyBytes: 512 * KIB, handler: echoLength },
  ]);
  const gone = await partial(t, s.port, '/json', 400 * KIB, 300 * KIB);
  t.ok(await waitFor(() => s.server.bodyBytesInTransit() === 300 * KIB));
  gone.destroy();
  t.ok(await waitFor(() => s.server.bodyBytesInTransit() === 0), 'the client left: given back');
  const c = await rawConnect(s.port);
  t.teardown(() => c.destroy());
  await c.write('POST /json HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n');
  await c.write(`${(600 * KIB).toString(16)}\r\n${'a'.repeat(600 * KIB)}\r\n`);
  t.match(await c.until(/\r\n\r\n\{.*\}$/s), /HTTP\/1\.1 413 /, 'past its cap');
  t.ok(await waitFor(() => s.server.bodyBytesInTransit() === 0), 'a body over its cap: given back');
  // Bytes that are not gzip: answered 400 before the body is whole.
  const bad = await rawConnect(s.port);
  t.teardown(() => bad.destroy());
  await bad.write(`POST /json HTTP/1.1\r\nHost: x\r\nContent-Encoding: gzip\r\nContent-Length: ${400 * KIB}\r\n\r\n`);
  await bad.write(Buffer.alloc(300 * KIB, 0x61));
  t.match(await bad.until(/\r\n\r\n\{.*\}$/s), /HTTP\/1\.1 400 /, 'answered before the body was whole');
  t.ok(await waitFor(() => s.server.bodyBytesInTransit() === 0), 'given back');
});

t.test('the budget log line: one a second at most, the refusals after it written when its second ends', async (t) => {
  const clock = new ManualClock('2026-01-15T12:00:00Z');
  const lines: Record<string, unknown>[] = [];
  const timers: { fn: () => void; ms: number }[] = [];
  const settings = { limits: { maxBodyBytesInTransit: 1024 } } as unknown as GatewaySettings;
  const refused = budgetLog(
    { clock, settings, log: (event, fields) => void lines.push({ event, ...fields }) },
    (fn, ms) => void timers.push({ fn, ms }),
  );
  refused();
  t.same(lines, [{ event: 'body_budget_spent', refused: 1, limit_bytes: 1024 }], 'the first at once');
  clock.advance(200);
  refused();
  refused();
  clock.advance(300);
  refused();
  t.equal(lines.length, 1, 'nothing more within its second');
  t.same(
    timers.map((x) => x.ms),
    [800],
    'one line is due when the second ends',
  );
  clock.advance(500);
  timers[0]?.fn();
  t.same(lines[1], { event: 'body_budget_spent', refused: 3, limit_bytes: 1024 }, 'the three after it');
  clock.advance(1_000);
  refused();
  t.same(lines[2], { event: 'body_budget_spent', refused: 1, limit_bytes: 1024 }, 'a second later: at once again');
  t.equal(timers.length, 1);
});
