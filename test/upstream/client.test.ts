// The upstream client over a raw-socket upstream: pausing withholds the answer and pushes back on the
// provider (TCP), resuming delivers the rest in order, an answer ended by closing the connection
// while paused ends properly (never undici's paused-parser assertion), interim heads are not
// answers, and an exception — in the caller's sink or in a listener of the connection — ends that
// exchange only.
import t, { type Test } from 'tap';
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import type { Socket } from 'node:net';
import { Readable } from 'node:stream';
import { UpstreamClient, type UpstreamControl, type UpstreamSink } from '../../src/upstream/client.ts';
import { rawHead, type RawExchange, rawUpstream } from '../helpers/raw-upstream.ts';
import { waitFor } from '../helpers/admission.ts';

interface Seen {
  heads: number[];
  bytes: number;
  text: string[];
  ended: boolean;
  errors: Error[];
}

function client(t: Test): UpstreamClient {
  const c = new UpstreamClient();
  t.teardown(() => c.destroy());
  return c;
}

/** Calls `url` and records what the sink hears; `onData` may act on the control. */
function call(
  c: UpstreamClient,
  url: string,
  onData?: (ctrl: UpstreamControl, seen: Seen) => void,
): { ctrl: UpstreamControl; seen: Seen } {
  const seen: Seen = { heads: [], bytes: 0, text: [], ended: false, errors: [] };
  let ctrl: UpstreamControl | null = null;
  const sink: UpstreamSink = {
    onHead: (s) => seen.heads.push(s),
    onData: (chunk) => {
      seen.bytes += chunk.length;
      seen.text.push(chunk.toString('latin1'));
      if (ctrl) onData?.(ctrl, seen);
    },
    onEnd: () => (seen.ended = true),
    onError: (e) => seen.errors.push(e),
  };
  ctrl = c.call({ url: `${url}/v1/x`, headers: { 'content-type': 'application/json' }, body: '{}' }, sink);
  return { ctrl, seen };
}

const SIZE = 8 * 1024 * 1024;

t.test(
  'a pause withholds the answer and pushes back on the provider; resume delivers the rest in order; a close while paused ends it',
  async (t) => {
    let upstream: RawExchange | null = null;
    let providerBlocked = false;
    const up = await rawUpstream(t, (ex) => {
      upstream = ex;
      ex.write(rawHead('200 OK', [['Content-Type', 'application/octet-stream']]));
      // Close-delimited: the provider closes once everything is written.
      providerBlocked = !ex.write(Buffer.alloc(SIZE, 0x61));
      ex.end();
    });
    const c = client(t);
    let paused = false;
    const { ctrl, seen } = call(c, up.url, (ctl) => {
      if (!paused) {
        paused = true;
        ctl.pause();
      }
    });
    t.ok(await waitFor(() => paused), 'paused on the first chunk');
    await new Promise((r) => setTimeout(r, 300));
    const atPause = seen.bytes;
    t.ok(atPause < SIZE, `nothing more after the pause (${atPause} bytes)`);
    t.ok(providerBlocked, 'the provider could not write everything');
    t.ok(
      ((upstream as RawExchange | null)?.socket.writableLength ?? 0) > 0,
      'the provider still holds unsent bytes: TCP pushed back',
    );
    t.notOk(seen.ended, 'not ended while paused');
    ctrl.resume();
    t.ok(await waitFor(() => seen.ended || seen.errors.length > 0, 10_000), 'ended');
    t.equal(seen.errors.length, 0, 'no error');
    t.equal(seen.bytes, SIZE, 'every byte');
    t.ok(
      seen.text.every((s) => /^a*$/.test(s)),
      'in order, nothing else',
    );
  },
);

t.test('pausing and resuming on every chunk of a close-delimited answer never breaks it', async (t) => {
  const up = await rawUpstream(t, (ex) => {
    ex.write(rawHead('200 OK', [['Content-Type', 'text/plain']]));
    ex.end(Buffer.alloc(2 * 1024 * 1024, 0x62));
  });
  const c = client(t);
  const { seen } = call(c, up.url, (ctl) => {
    ctl.pause();
    setImmediate(() => ctl.resume());
  });
  t.ok(await waitFor(() => seen.ended || seen.errors.length > 0, 10_000));
  t.equal(seen.bytes, 2 * 1024 * 1024);
  t.same(seen.errors, []);
});

t.test('interim heads are not answers; an unsolicited 100 Continue is read past', async (t) => {
  for (const interim of [
    'HTTP/1.1 100 Continue\r\n\r\n',
    'HTTP/1.1 102 Processing\r\n\r\n',
    'HTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\nHTTP/1.1 100 Continue\r\n\r\n',
  ]) {
    const up = await rawUpstream(t, (ex) => {
      ex.write(interim);
      setTimeout(() => ex.write(rawHead('200 OK', [['Content-Length', '2']]) + 'ok'), 20);
    });
    const c = client(t);
    const { seen } = call(c, up.url);
    t.ok(await waitFor(() => seen.ended || seen.errors.length > 0), JSON.stringify(interim));
    t.same(seen.heads, [200], 'one head: the final one');
    t.equal(seen.text.join(''), 'ok');
    t.same(seen.errors, []);
    // The connection is reused for the next request, which starts a new answer.
    const again = call(c, up.url);
    t.ok(await waitFor(() => again.seen.ended || again.seen.errors.length > 0));
    t.same(again.seen.heads, [200]);
    t.equal(up.exchanges.length, 2);
  }
});

t.test('a sink that throws ends its exchange with the error, once', async (t) => {
  const up = await rawUpstream(t, (ex) => {
    ex.write(rawHead('200 OK', [['Content-Type', 'text/plain']]));
    ex.write('one');
    setTimeout(() => ex.write('two'), 20);
  });
  const c = client(t);
  const errors: Error[] = [];
  c.call(
    { url: `${up.url}/x`, headers: {}, body: '{}' },
    {
      onHead: () => undefined,
      onData: () => {
        throw new Error('a bug in the relay');
      },
      onEnd: () => t.fail('no end'),
      onError: (e) => errors.push(e),
    },
  );
  t.ok(await waitFor(() => errors.length > 0));
  await new Promise((r) => setTimeout(r, 100));
  t.equal(errors.length, 1);
  t.equal(errors[0]?.message, 'a bug in the relay');
  t.ok(await waitFor(() => up.exchanges.every((ex) => ex.socket.destroyed)), 'the upstream connection was dropped');
});

t.test(
  "an exception inside the HTTP client's handling of a connection ends that exchange, not the process",
  async (t) => {
    const up = await rawUpstream(t, (ex) => {
      ex.write(rawHead('200 OK', [['Content-Type', 'text/plain']]));
      ex.write('partial');
    });
    // Plant a failing listener on the connection the request is written on (as an assertion inside
    // undici's parser would fail).
    let planted = false;
    const plant = (message: unknown): void => {
      const socket = (message as { socket: Socket }).socket;
      if (planted) return;
      planted = true;
      socket.on('readable', () => {
        throw new Error('planted failure');
      });
    };
    subscribe('undici:client:sendHeaders', plant);
    t.teardown(() => unsubscribe('undici:client:sendHeaders', plant));
    const uncaught: unknown[] = [];
    const onUncaught = (e: unknown): void => void uncaught.push(e);
    process.prependListener('uncaughtException', onUncaught);
    t.teardown(() => process.off('uncaughtException', onUncaught));
    const c = client(t);
    const { seen } = call(c, up.url);
    t.ok(await waitFor(() => seen.errors.length > 0 || seen.ended), 'the exchange ended');
    t.match(seen.errors[0]?.message ?? '', /planted failure/);
    t.notOk(seen.ended);
    t.same(uncaught, [], 'nothing escaped');
    t.ok(await waitFor(() => up.exchanges.every((ex) => ex.socket.destroyed)), 'the connection was dropped');
    // The client goes on with new connections.
    const again = call(c, up.url);
    t.ok(await waitFor(() => again.seen.heads.length > 0));
    t.same(again.seen.heads, [200]);
  },
);

t.test('a streamed request body tells the sink when it was sent whole; an in-memory one does not', async (t) => {
  const up = await rawUpstream(t, (ex) => ex.end(rawHead('200 OK', [['Content-Length', '2']]) + 'ok'));
  const c = client(t);
  for (const [name, body, expect] of [
    [
      'streamed',
      Readable.from([Buffer.from('a'.repeat(1000)), Buffer.from('b'.repeat(1000))]),
      ['sent', 'head', 'end'],
    ],
    ['in memory', '{}', ['head', 'end']],
  ] as const) {
    const order: string[] = [];
    c.call(
      { url: `${up.url}/x`, headers: {}, body },
      {
        onHead: () => order.push('head'),
        onData: () => undefined,
        onEnd: () => order.push('end'),
        onError: (e) => order.push(`error ${e.message}`),
        onRequestSent: () => order.push('sent'),
      },
    );
    t.ok(await waitFor(() => order.includes('end') || order.some((o) => o.startsWith('error'))));
    t.same(order, expect, name);
  }
  t.equal(up.exchanges[0]?.body.length, 2000, 'the whole body arrived');
});
