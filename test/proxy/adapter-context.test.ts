// The adapter context's token-endpoint POST over the real upstream client: within the configured
// token timeout, and a request that got no answer told apart — the endpoint down (connection refused
// or reset: `unreachable`, with the system's code) or too slow (`timeout`, with the limit) — so that
// the token source can log which. Real sockets on 127.0.0.1; the slow endpoint is bounded by a short
// configured timeout, never a sleep.
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { ManualClock } from '../../src/clock.ts';
import { TokenEndpointError } from '../../src/platforms/types.ts';
import { adapterContext, tokenEndpointFailure } from '../../src/proxy/adapter-context.ts';
import { UpstreamClient } from '../../src/upstream/client.ts';
import { rawUpstream } from '../helpers/raw-upstream.ts';

function context(client: UpstreamClient, timeoutMs: number) {
  return adapterContext({
    clock: new ManualClock(),
    postForm: (url, form, ms) => client.postForm(url, form, ms),
    upstreamOverride: () => null,
    tokenTimeoutMs: () => timeoutMs,
    log: () => undefined,
  });
}

async function failure(p: Promise<unknown>): Promise<TokenEndpointError> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  if (!(err instanceof TokenEndpointError)) throw new Error(`expected a TokenEndpointError, got ${String(err)}`);
  return err;
}

t.test('down, reset and slow token endpoints are three different answers', async (t) => {
  const client = new UpstreamClient();
  t.teardown(() => client.destroy());

  // A port nobody listens on: connection refused.
  const closed = createServer();
  await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
  const port = (closed.address() as AddressInfo).port;
  await new Promise((r) => closed.close(r));
  const refused = await failure(context(client, 5000).postForm(`http://127.0.0.1:${port}/token`, { a: '1' }));
  t.same([refused.kind, refused.code], ['unreachable', 'ECONNREFUSED']);

  const reset = await rawUpstream(t, (ex) => ex.reset());
  const wasReset = await failure(context(client, 5000).postForm(`${reset.url}/token`, { a: '1' }));
  t.equal(wasReset.kind, 'unreachable');
  t.match(wasReset.code, /^(ECONNRESET|UND_ERR_SOCKET)$/);

  const silent = await rawUpstream(t, () => undefined);
  const started = performance.now();
  const slow = await failure(context(client, 150).postForm(`${silent.url}/token`, { a: '1' }));
  t.same([slow.kind, slow.timeoutMs], ['timeout', 150]);
  t.ok(performance.now() - started < 5000, "bounded by the configured timeout, not the client's default");
  t.equal(silent.exchanges.length, 1);
});

t.test('classification of the errors undici and AbortSignal raise', async (t) => {
  const timeout = new DOMException('The operation was aborted due to timeout', 'TimeoutError');
  t.same([tokenEndpointFailure(timeout, 9).kind, tokenEndpointFailure(timeout, 9).timeoutMs], ['timeout', 9]);
  const connectTimeout = Object.assign(new Error('Connect Timeout Error'), { code: 'UND_ERR_CONNECT_TIMEOUT' });
  t.equal(tokenEndpointFailure(connectTimeout, 9).kind, 'timeout');
  const socket = Object.assign(new Error('other side closed'), { code: 'UND_ERR_SOCKET' });
  t.same([tokenEndpointFailure(socket, 9).kind, tokenEndpointFailure(socket, 9).code], ['unreachable', 'ECONNRESET']);
  const dns = Object.assign(new Error('getaddrinfo ENOTFOUND login.example'), { code: 'ENOTFOUND' });
  t.same([tokenEndpointFailure(dns, 9).kind, tokenEndpointFailure(dns, 9).code], ['unreachable', 'ENOTFOUND']);
});
