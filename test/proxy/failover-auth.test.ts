// The failover loop with adapters that authenticate per call (no server): an adapter that cannot
// authenticate fails its attempt as `credential` and the next deployment is tried; a 401 on a token
// adapter drops the token and retries the SAME deployment once (that 401 is no health signal); a
// second 401 moves on; credentials failing everywhere end in 503 naming the provider; the loop
// notices a client that left while a token was being fetched; and static-key adapters never make
// the build asynchronous.
import t from 'tap';
import { ManualClock } from '../../src/clock.ts';
import type { CompiledDeployment } from '../../src/config/compiled.ts';
import {
  type AdapterRequest,
  CredentialError,
  type OutgoingRequest,
  type PlatformAdapter,
  type UpstreamTarget,
} from '../../src/platforms/types.ts';
import type { Outcome } from '../../src/routing/health.ts';
import { adapterContext } from '../../src/proxy/adapter-context.ts';
import { type PlanItem, runWithFailover } from '../../src/proxy/failover.ts';
import { buildCall, type CallResolver } from '../../src/proxy/upstream-call.ts';
import type { UpstreamCall, UpstreamControl, UpstreamSink } from '../../src/upstream/client.ts';
import { buildIndex, deployment, model, platform, resource } from '../routing/fixtures.ts';
import { FakeControl, FakeReply, fakeProtocol, LIMITS } from './attempt-fakes.ts';

const m = model('acme/m');
const dA = deployment('a/m', 'acme/m', 'pa');
const dB = deployment('b/m', 'acme/m', 'pb');
const index = buildIndex({
  models: [m],
  platforms: [platform('pa', { adapter: 'tokens' }), platform('pb', { adapter: 'tokens' })],
  resources: [resource('pa-main', 'pa'), resource('pb-main', 'pb')],
  deployments: [dA, dB],
});

/** A token adapter: bearer tokens tok-<platform>-<n>, minted synchronously or after a tick. */
class TokenAdapter implements PlatformAdapter {
  readonly id = 'tokens';
  readonly endpoints = ['messages'];
  minted = new Map<string, number>();
  dropped: string[] = [];
  /** Platforms whose credential cannot be used. */
  broken = new Set<string>();
  async = false;

  validateOptions(): string[] {
    return [];
  }

  request(target: UpstreamTarget, _req: AdapterRequest) {
    return { url: `${target.resource.baseUrl}/messages`, headers: [] as [string, string][] };
  }

  authorize(out: OutgoingRequest, target: UpstreamTarget): void | Promise<void> {
    const id = target.platform.id;
    const apply = () => {
      if (this.broken.has(id))
        throw new CredentialError(`provider "${id}": the token endpoint refused the gateway's credential`);
      const n = this.minted.get(id) ?? 1;
      out.headers['authorization'] = `Bearer tok-${id}-${n}`;
    };
    if (!this.async) return apply();
    return Promise.resolve().then(apply);
  }

  refused(out: OutgoingRequest, target: UpstreamTarget): boolean {
    this.dropped.push(out.headers['authorization'] ?? '');
    const id = target.platform.id;
    this.minted.set(id, (this.minted.get(id) ?? 1) + 1);
    return true;
  }
}

/** Answers each call from a script: a status (JSON body) per call, in order, per URL. */
function scriptedClient(script: Record<string, number[]>) {
  const seen: { url: string; auth: string }[] = [];
  return {
    seen,
    call(call: UpstreamCall, sink: UpstreamSink): UpstreamControl {
      seen.push({ url: call.url, auth: call.headers['authorization'] ?? '' });
      const status = script[call.url]?.shift() ?? 500;
      queueMicrotask(() => {
        sink.onHead(status, { 'content-type': 'application/json' });
        sink.onData(Buffer.from(status === 200 ? '{"model":"up","ok":true}' : '{"error":{"message":"no"}}'));
        sink.onEnd();
      });
      return new FakeControl();
    },
  };
}

function resolverWith(adapter: PlatformAdapter): CallResolver {
  return {
    vocabularies: index.config.vocabularies,
    context: adapterContext({
      clock: new ManualClock(),
      postForm: () => Promise.reject(new Error('unused')),
      upstreamOverride: () => null,
      tokenTimeoutMs: () => 5000,
      log: () => undefined,
    }),
    adapter: (id) => (id === adapter.id ? adapter : undefined),
    target(d: CompiledDeployment): UpstreamTarget | null {
      const res = index.resourceById.get(d.resource);
      const plat = index.platformById.get(d.platform);
      return res && plat ? { platform: plat, resource: res, deployment: d, credential: 'sealed' } : null;
    },
  };
}

async function run(
  adapter: TokenAdapter,
  script: Record<string, number[]>,
  reply = new FakeReply(),
  items: PlanItem[] = [
    { model: m, deployment: dA },
    { model: m, deployment: dB },
  ],
) {
  const client = scriptedClient(script);
  const health: [string, Outcome][] = [];
  const result = await runWithFailover({
    client,
    protocol: fakeProtocol,
    reply,
    limits: LIMITS,
    items,
    maxAttempts: 5,
    request: {
      endpoint: 'messages',
      stream: false,
      clientHeaders: {},
      body: { kind: 'json', original: { messages: [] } },
    },
    targets: resolverWith(adapter),
    health: { record: (id, o) => health.push([id, o]) },
  });
  return { result, client, health, reply };
}

const A = 'https://pa-main.example/messages';
const B = 'https://pb-main.example/messages';

t.test(
  'an adapter that cannot authenticate fails that attempt as `credential`; the next deployment answers',
  async (t) => {
    for (const async of [false, true]) {
      const adapter = new TokenAdapter();
      adapter.async = async;
      adapter.broken.add('pa');
      const { result, client, health } = await run(adapter, { [B]: [200] });
      t.equal(result.final.kind, 'committed', `async=${async}`);
      t.same(
        result.attempts.map((a) => [a.deployment, a.outcome, a.status]),
        [
          ['a/m', 'credential', null],
          ['b/m', 'ok', 200],
        ],
      );
      t.same(
        client.seen.map((s) => s.url),
        [B],
        'nothing was sent for the deployment without a usable credential',
      );
      t.same(
        health.map(([id, o]) => [id, o.ok ? 'ok' : o.reason]),
        [
          ['a/m', 'auth'],
          ['b/m', 'ok'],
        ],
        'an unusable credential is an auth signal',
      );
    }
  },
);

t.test('a 401 drops the token and retries the same deployment once with a fresh one', async (t) => {
  for (const async of [false, true]) {
    const adapter = new TokenAdapter();
    adapter.async = async;
    const { result, client, health } = await run(adapter, { [A]: [401, 200] });
    t.equal(result.final.kind, 'committed', `async=${async}`);
    t.same(
      client.seen,
      [
        { url: A, auth: 'Bearer tok-pa-1' },
        { url: A, auth: 'Bearer tok-pa-2' },
      ],
      'the retry carries the new token',
    );
    t.same(adapter.dropped, ['Bearer tok-pa-1'], 'refused() was told which token was refused');
    t.same(
      result.attempts.map((a) => [a.deployment, a.outcome]),
      [
        ['a/m', 'status_401'],
        ['a/m', 'ok'],
      ],
      'both attempts are recorded',
    );
    t.same(
      health.map(([id, o]) => [id, o.ok]),
      [['a/m', true]],
      'the refused token is no health signal; the answer is',
    );
  }
});

t.test('a second 401 on the fresh token moves on (one retry only)', async (t) => {
  const adapter = new TokenAdapter();
  const { result, client, health } = await run(adapter, { [A]: [401, 401], [B]: [200] });
  t.equal(result.final.kind, 'committed');
  t.same(
    client.seen.map((s) => s.url),
    [A, A, B],
  );
  t.same(
    health.map(([id, o]) => [id, o.ok ? 'ok' : o.reason]),
    [
      ['a/m', 'auth'],
      ['b/m', 'ok'],
    ],
  );
});

t.test('a 403 is not retried on the same deployment (a fresh token would not change a permission)', async (t) => {
  const adapter = new TokenAdapter();
  const { client } = await run(adapter, { [A]: [403], [B]: [200] });
  t.same(
    client.seen.map((s) => s.url),
    [A, B],
  );
  t.same(adapter.dropped, []);
});

t.test('credentials unusable everywhere: 503 provider_unavailable naming the last provider', async (t) => {
  const adapter = new TokenAdapter();
  adapter.broken.add('pa');
  adapter.broken.add('pb');
  const { result, reply, client } = await run(adapter, {});
  t.equal(result.final.kind, 'gateway_error');
  t.same(client.seen, []);
  t.match(reply.wire[0], /^send 503 /);
  t.match(
    reply.wire[0],
    /provider \\"pb\\": the token endpoint refused the gateway's credential, and no other provider could take over/,
    "the adapter's reason",
  );
  t.same(reply.headers, [
    ['X-Pi-Provider', 'pb'],
    ['X-Pi-Model', 'acme/m'],
  ]);
});

t.test('a client that leaves while the adapter waits for its token gets nothing sent upstream', async (t) => {
  const adapter = new TokenAdapter();
  adapter.async = true;
  const reply = new FakeReply();
  const pending = run(adapter, { [A]: [200] }, reply);
  reply.abort();
  const { result, client } = await pending;
  t.equal(result.final.kind, 'client_aborted');
  t.same(client.seen, []);
});

t.test('buildCall: static keys build at once, a waiting authorize() makes a promise', async (t) => {
  const adapter = new TokenAdapter();
  const request = {
    endpoint: 'messages',
    stream: false,
    clientHeaders: {},
    body: { kind: 'json' as const, original: { messages: [] } },
  };
  const now = buildCall(resolverWith(adapter), fakeProtocol, request, m, dA);
  t.notOk(now instanceof Promise, 'a synchronous authorize() builds synchronously');
  adapter.async = true;
  const later = buildCall(resolverWith(adapter), fakeProtocol, request, m, dA);
  t.ok(later instanceof Promise);
  const built = await later;
  t.equal(built.kind, 'call');
  if (built.kind === 'call') t.equal(built.call.headers['authorization'], 'Bearer tok-pa-1');
});
