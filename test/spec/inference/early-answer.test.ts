// Answers sent before the request body was read (a missing or unknown key, a wrong content type, a
// body over the limit, a refusal after the model part of an upload): the rest of the upload keeps
// arriving after the answer, and the gateway neither touches the finished response (a uWS response
// used after its end stops the process) nor leaves the connection stuck. A body that declared its
// length is read to its end and dropped, and the next request on the connection is answered; a body
// of unknown length (chunked) ends the connection right after the answer.
import t, { type Test } from 'tap';
import { join } from 'node:path';
import { DROPPED_BODY_BYTES } from '../../../src/server/read-body.ts';
import { parseResponses, rawConnect, type RawConnection } from '../../helpers/raw-client.ts';
import { prepareDb, startServe } from '../../helpers/serve-process.ts';
import { FIXTURES, startStack } from '../../helpers/stack.ts';

const BOUNDARY = 'early-answer-boundary';
const MULTIPART = `multipart/form-data; boundary=${BOUNDARY}`;
/** Under the fixture's 1 MiB upload limit, far over the 256 KiB the server buffers before it pauses the socket. */
const BODY_BYTES = 1_000_000;

function uploadBody(model = 'acme/painter'): Buffer {
  const head = Buffer.from(
    `--${BOUNDARY}\r\nContent-Disposition: form-data; name="model"\r\n\r\n${model}\r\n` +
      `--${BOUNDARY}\r\nContent-Disposition: form-data; name="image"; filename="a.png"\r\nContent-Type: image/png\r\n\r\n`,
  );
  const tail = Buffer.from(`\r\n--${BOUNDARY}--\r\n`);
  return Buffer.concat([head, Buffer.alloc(BODY_BYTES - head.length - tail.length, 0x5a), tail]);
}

function chunk(bytes: Buffer): Buffer {
  return Buffer.concat([Buffer.from(`${bytes.length.toString(16)}\r\n`), bytes, Buffer.from('\r\n')]);
}

interface EarlyCase {
  name: string;
  headers: (key: string) => string;
  status: number;
  code: string;
  /** The model part the upload starts with. */
  model?: string;
}

const CASES: EarlyCase[] = [
  {
    name: 'an unknown key',
    headers: () => `Authorization: Bearer sk-pi-not-a-key\r\nContent-Type: ${MULTIPART}\r\n`,
    status: 401,
    code: 'invalid_api_key',
  },
  { name: 'no key', headers: () => `Content-Type: ${MULTIPART}\r\n`, status: 401, code: 'invalid_api_key' },
  {
    name: 'a wrong content type',
    headers: (key) => `Authorization: Bearer ${key}\r\nContent-Type: application/json\r\n`,
    status: 400,
    code: 'invalid_request',
  },
];

/**
 * Sends the head and the first bytes of an upload, waits for the early answer, then sends the rest of
 * the body in 64 KiB pieces (all of it arriving after the answer). With a declared length, follows
 * with `GET /v1/models` on the same connection and waits for its answer; chunked, waits for the
 * server to close the connection.
 */
async function uploadAfterAnswer(
  t: Test,
  port: number,
  c: EarlyCase,
  key: string,
  chunked: boolean,
): Promise<RawConnection> {
  const body = uploadBody(c.model);
  const conn = await rawConnect(port);
  t.teardown(() => conn.destroy());
  const framing = chunked ? 'Transfer-Encoding: chunked\r\n' : `Content-Length: ${body.length}\r\n`;
  const first = body.subarray(0, 1024);
  await conn.write(`POST /v1/images/edits HTTP/1.1\r\nHost: x\r\n${c.headers(key)}${framing}\r\n`);
  await conn.write(chunked ? chunk(first) : first);
  await conn.until(/\r\n\r\n\{[\s\S]*\}$/);
  for (let i = first.length; i < body.length && !conn.closed; i += 64 * 1024) {
    const piece = body.subarray(i, i + 64 * 1024);
    await conn.write(chunked ? chunk(piece) : piece);
  }
  if (chunked) {
    await conn.closedWithin(5000);
    return conn;
  }
  await conn.write('GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n');
  await conn.until(/^HTTP\/1\.1 [\s\S]*HTTP\/1\.1 200 [\s\S]*\r\n\r\n\{[\s\S]*\]\}$/);
  return conn;
}

function checkAnswers(t: Test, conn: RawConnection, c: EarlyCase, label: string, chunked: boolean): void {
  const [early, next] = parseResponses(conn.text());
  t.equal(early?.status, c.status, `${label}: answered ${c.status} before the body was read`);
  t.match(early?.body, new RegExp(`"code":"${c.code}"`), `${label}: the error object`);
  t.match(early?.header('x-pi-trace-id') ?? '', /^[0-9a-f-]{36}$/, `${label}: X-Pi-Trace-Id`);
  if (chunked) {
    t.equal(early?.header('connection'), 'close', `${label}: the answer says the connection ends`);
    t.ok(conn.closed, `${label}: and the server closed it`);
    return;
  }
  t.equal(early?.header('connection'), undefined, `${label}: the connection stays open`);
  t.equal(next?.status, 200, `${label}: the next request on the connection is answered`);
  t.match(next?.body, /"data":\[/, `${label}: with the catalog`);
}

t.test(
  'a child serve: uploads that keep arriving after an early answer never stop the process',
  { timeout: 60_000 },
  async (t) => {
    const db = prepareDb(t);
    const p = await startServe(t, { config: join(FIXTURES, 'gateway'), db });
    let exited = false;
    void p.exited.then(() => (exited = true));
    for (const c of CASES) {
      for (const chunked of [false, true]) {
        const label = `${c.name}, ${chunked ? 'chunked' : 'Content-Length'}`;
        const conn = await uploadAfterAnswer(t, p.port, c, db.key, chunked);
        checkAnswers(t, conn, c, label, chunked);
        conn.destroy();
        t.notOk(exited, `${label}: the process is still running`);
      }
    }
    const res = await fetch(`${p.url}/v1/models`);
    t.equal(res.status, 200, 'a new connection is answered');
    await res.arrayBuffer();
    t.notOk(exited, 'the process never exited');
    t.notMatch(
      p.stderr(),
      /must not be accessed|uncaught|unexpected_error/i,
      'no uWS misuse or unexpected error was reported',
    );
  },
);

/** Refusals that come after the model part was read: the upload is then held, not yet forwarded. */
const AFTER_MODEL: EarlyCase[] = [
  {
    name: 'an unknown model',
    headers: (key) => `Authorization: Bearer ${key}\r\nContent-Type: ${MULTIPART}\r\n`,
    status: 404,
    code: 'model_not_found',
    model: 'acme/no-such-model',
  },
  {
    name: 'a wallet without credit',
    headers: (key) => `Authorization: Bearer ${key}\r\nContent-Type: ${MULTIPART}\r\n`,
    status: 402,
    code: 'insufficient_balance',
  },
];

t.test('in process: every early answer on an upload leaves the connection usable', async (t) => {
  const s = await startStack(t);
  // No credit: the hold is refused once the model part is read.
  const key = s.key('open');
  const errors: unknown[] = [];
  s.gw.ctx.log = ((event: string, fields?: Record<string, unknown>) => {
    if (event === 'unexpected_error' || event === 'request_failed') errors.push({ event, fields });
  }) as typeof s.gw.ctx.log;
  for (const c of [...CASES, ...AFTER_MODEL]) {
    for (const chunked of [false, true]) {
      const conn = await uploadAfterAnswer(t, s.gw.port, c, key, chunked);
      checkAnswers(t, conn, c, `${c.name}, ${chunked ? 'chunked' : 'Content-Length'}`, chunked);
      conn.destroy();
    }
  }
  t.same(errors, [], 'no unexpected error');
});

t.test('in process: uploads over the limit are answered 413 and their connection closed', async (t) => {
  const s = await startStack(t);
  const key = s.key('open');
  s.credit('open', '10');
  const cap = s.gw.ctx.settings.limits.maxUploadBytes;
  const head = (framing: string): string =>
    `POST /v1/images/edits HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: ${MULTIPART}\r\n${framing}\r\n`;
  // Declared further past the limit than the gateway reads to drop (a body just past it is read to
  // its end: test/server/request-body.test.ts): answered from the head, the body never read.
  const declared = await rawConnect(s.gw.port);
  t.teardown(() => declared.destroy());
  await declared.write(head(`Content-Length: ${cap + DROPPED_BODY_BYTES + 1}\r\n`));
  await declared.write(uploadBody().subarray(0, 64 * 1024));
  await declared.closedWithin(5000);
  const [d] = parseResponses(declared.text());
  t.equal(d?.status, 413, 'declared: 413');
  t.match(d?.body, /"code":"request_too_large"/);
  t.equal(d?.header('connection'), 'close', 'declared: the connection ends');
  // Chunked past the limit while the upload is being forwarded: 413 (nothing was answered yet).
  const chunked = await rawConnect(s.gw.port);
  t.teardown(() => chunked.destroy());
  await chunked.write(head('Transfer-Encoding: chunked\r\n'));
  const body = uploadBody();
  await chunked.write(chunk(body));
  for (let sent = body.length; sent <= cap + 64 * 1024 && !chunked.closed; sent += 64 * 1024)
    await chunked.write(chunk(Buffer.alloc(64 * 1024, 0x5a)));
  await chunked.closedWithin(5000);
  const answers = parseResponses(chunked.text());
  t.equal(answers.length, 1, 'one answer');
  t.ok(
    answers[0] !== undefined && answers[0].status >= 400,
    `chunked past the limit: refused (${answers[0]?.status}), then closed`,
  );
  const res = await fetch(`${s.url}/v1/models`);
  t.equal(res.status, 200, 'the gateway still answers');
  await res.arrayBuffer();
});
