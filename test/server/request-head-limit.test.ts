// A request's line plus headers may carry 16 KiB (Node.js's default), not uWS's built-in 4 KiB: a long
// query or a large token reaches the handler, a head over the cap gets a 431 and a closed connection,
// and the server goes on answering. Raw sockets, so the bytes sent are exactly the ones counted.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import t, { type Test } from 'tap';
import { createHttpServer } from '../../src/server/http-server.ts';
import { MAX_REQUEST_HEAD_BYTES } from '../../src/server/uws-header-limit.ts';
import { parseResponses, rawExchange } from '../helpers/raw-client.ts';

async function echo(t: Test): Promise<number> {
  const server = createHttpServer([
    {
      method: 'get',
      pattern: '/h',
      handler: (req, reply) =>
        reply.sendJson(200, { query: req.query.length, header: (req.headers['x-big'] ?? '').length }),
    },
  ]);
  const port = await server.listen('127.0.0.1', 0);
  t.teardown(() => server.close());
  return port;
}

/** A request whose head is exactly `bytes` long, padded with a query or with an X-Big header. */
function head(bytes: number, pad: 'query' | 'header'): Buffer {
  const fixed = (q: string, h: string) =>
    `GET /h${q} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n${h ? `X-Big: ${h}\r\n` : ''}\r\n`;
  const base = pad === 'query' ? fixed('?q=', '') : fixed('', 'b');
  const fill = 'a'.repeat(bytes - base.length + (pad === 'query' ? 0 : 1));
  const text = pad === 'query' ? fixed(`?q=${fill}`, '') : fixed('', fill);
  return Buffer.from(text, 'latin1');
}

/** Status of a `bytes`-long head sent to a server started in a child process with `env`. */
async function inChild(t: Test, env: Record<string, string>, bytes: number): Promise<number | undefined> {
  const src = `import { createHttpServer } from ${JSON.stringify(new URL('../../src/server/http-server.ts', import.meta.url).href)};
const s = createHttpServer([{ method: 'get', pattern: '/h', handler: (req, reply) => reply.sendJson(200, {}) }]);
process.stdout.write(String(await s.listen('127.0.0.1', 0)) + '\\n');`;
  const { UWS_HTTP_MAX_HEADERS_SIZE: _, ...rest } = process.env;
  const child = spawn(process.execPath, ['--input-type=module', '-e', src], {
    env: { ...rest, ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  t.teardown(() => {
    child.kill('SIGKILL');
  });
  const [line] = (await once(child.stdout, 'data')) as [Buffer];
  const [answer] = parseResponses(await rawExchange(Number(line.toString().trim()), head(bytes, 'header')));
  return answer?.status;
}

t.test('an operator sets another cap in the environment; an empty value keeps 16 KiB', async (t) => {
  t.equal(MAX_REQUEST_HEAD_BYTES, 16 * 1024);
  t.equal(await inChild(t, { UWS_HTTP_MAX_HEADERS_SIZE: '32768' }, 24_000), 200, '24 KB under a 32 KiB cap');
  t.equal(await inChild(t, { UWS_HTTP_MAX_HEADERS_SIZE: '' }, 12_000), 200, 'empty: 12 KB under 16 KiB');
  t.equal(await inChild(t, { UWS_HTTP_MAX_HEADERS_SIZE: '' }, 20_000), 431, 'empty: 20 KB over 16 KiB');
  t.equal(await inChild(t, {}, 20_000), 431, 'unset: 20 KB over 16 KiB');
});

t.test('a 10,000-character query and a 12 KB header reach the handler', async (t) => {
  const port = await echo(t);
  for (const [bytes, pad] of [
    [10_100, 'query'],
    [12_000, 'header'],
    [MAX_REQUEST_HEAD_BYTES - 64, 'header'],
  ] as const) {
    const sent = head(bytes, pad);
    t.equal(sent.length, bytes);
    const [answer] = parseResponses(await rawExchange(port, sent));
    t.equal(answer?.status, 200, `${bytes} bytes of head, padded in the ${pad}`);
    const got = JSON.parse(answer?.body ?? '{}') as { query: number; header: number };
    t.ok(got[pad] > bytes - 100, 'the whole value arrived');
  }
});

t.test('a head over the cap gets a 431 and the server answers the next request', async (t) => {
  const port = await echo(t);
  for (const pad of ['query', 'header'] as const) {
    const [refused] = parseResponses(await rawExchange(port, head(MAX_REQUEST_HEAD_BYTES + 1024, pad)));
    t.equal(refused?.status, 431, `padded in the ${pad}`);
  }
  const [next] = parseResponses(await rawExchange(port, head(200, 'header')));
  t.equal(next?.status, 200, 'still serving');
});

t.test('uWS takes at most 98 header lines (a limit built into it), and refuses more with a 431', async (t) => {
  const port = await echo(t);
  const withLines = (n: number) =>
    Buffer.from(
      `GET /h HTTP/1.1\r\nHost: x\r\nConnection: close\r\n${Array.from({ length: n - 2 }, (_, i) => `X-H${i}: v\r\n`).join('')}\r\n`,
    );
  t.equal(parseResponses(await rawExchange(port, withLines(98)))[0]?.status, 200, '98 lines');
  t.equal(parseResponses(await rawExchange(port, withLines(99)))[0]?.status, 431, '99 lines');
});
