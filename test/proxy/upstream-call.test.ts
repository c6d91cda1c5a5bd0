// Building one attempt's upstream call from a resolver, without a server: the adapter's URL and
// auth, the forwarded client headers, the protocol's rewrite or the streamed upload, and the
// gateway resolver's credential and override rules.
import t from 'tap';
import { Readable } from 'node:stream';
import { messages } from '../../src/protocols/messages.ts';
import type { InboundBody } from '../../src/protocols/types.ts';
import { ManualClock } from '../../src/clock.ts';
import { adapterContext } from '../../src/proxy/adapter-context.ts';
import { configuredTargets as configuredTargetsOf, type TargetSources } from '../../src/proxy/targets.ts';
import {
  buildCall as build,
  type CallBuild,
  type CallInput,
  type CallResolver,
} from '../../src/proxy/upstream-call.ts';
import type { UpstreamCall } from '../../src/upstream/client.ts';
import type { CompiledDeployment, CompiledModel } from '../../src/config/compiled.ts';
import type { ProtocolModule } from '../../src/protocols/types.ts';
import { buildIndex, deployment, model, platform } from '../routing/fixtures.ts';

const m1 = model('acme/m1');
const d1 = deployment('d1', 'acme/m1', 'p1');
/** On a platform whose YAML names an adapter that is not registered. */
const d2 = deployment('d2', 'acme/m1', 'p2');
const index = buildIndex({
  models: [m1],
  platforms: [platform('p1'), platform('p2', { adapter: 'nowhere' })],
  deployments: [d1, d2],
});

function input(body: InboundBody, headers: Record<string, string> = {}): CallInput {
  return { endpoint: 'messages', stream: false, clientHeaders: headers, body };
}

const context = adapterContext({
  clock: new ManualClock(),
  postForm: () => Promise.reject(new Error('no token endpoint in these tests')),
  upstreamOverride: () => null,
  tokenTimeoutMs: () => 5000,
  log: () => undefined,
});

/** The gateway resolver over the fixture index (the adapter context is the same for every test). */
function configuredTargets(sources: Omit<TargetSources, 'context'>): CallResolver {
  return configuredTargetsOf({ ...sources, context });
}

/** buildCall for adapters that authorize synchronously: the call, or null when it was skipped. */
function buildCall(
  targets: CallResolver,
  protocol: ProtocolModule,
  inp: CallInput,
  m: CompiledModel,
  d: CompiledDeployment,
): UpstreamCall | null {
  const built: CallBuild | Promise<CallBuild> = build(targets, protocol, inp, m, d);
  if (built instanceof Promise) throw new Error('these adapters build synchronously');
  if (built.kind === 'unauthorized') throw new Error(`unexpected: ${built.detail}`);
  return built.kind === 'skip' ? null : built.call;
}

const json: InboundBody = { kind: 'json', original: { model: 'acme/m1', max_tokens: 5, messages: [] } };

t.test('a JSON call: adapter URL and auth, rewritten body, forwarded client headers only', async (t) => {
  const targets = configuredTargets({ index, reveal: (c) => `secret-of-${c}`, upstreamOverride: () => null });
  const call = buildCall(
    targets,
    messages,
    input(json, {
      authorization: 'Bearer sk-pi-client',
      'x-title': 'My App',
      'http-referer': 'https://app.example',
      'x-pi-session-id': 's1',
      'x-other': 'no',
    }),
    m1,
    d1,
  );
  if (!call) throw new Error('no call');
  t.equal(call.url, 'https://p1-main.example/messages');
  t.equal(
    call.headers['authorization'],
    'Bearer secret-of-cred-p1-main',
    'the gateway credential, never the client key',
  );
  t.equal(call.headers['content-type'], 'application/json');
  t.equal(call.headers['x-title'], 'My App');
  t.equal(call.headers['http-referer'], 'https://app.example');
  t.equal(call.headers['x-pi-session-id'], 's1');
  t.notOk('x-other' in call.headers, 'other client headers stay behind');
  t.same(
    JSON.parse(call.body as string),
    { model: 'm1', max_tokens: 5, messages: [] },
    'model rewritten to the upstream name',
  );
});

t.test('a session id over 256 characters is not forwarded', async (t) => {
  const targets = configuredTargets({ index, reveal: () => 'k', upstreamOverride: () => null });
  const call = buildCall(targets, messages, input(json, { 'x-pi-session-id': 'x'.repeat(257) }), m1, d1);
  t.notOk(call && 'x-pi-session-id' in call.headers);
});

t.test('an upload call streams the upload with its own content type', async (t) => {
  const targets = configuredTargets({ index, reveal: () => 'k', upstreamOverride: () => null });
  const asked: string[] = [];
  const upload: InboundBody = {
    kind: 'upload',
    upload: {
      contentType: 'multipart/form-data; boundary=b',
      body: (upstreamModel) => {
        asked.push(upstreamModel);
        return Readable.from([Buffer.from('x')]);
      },
      replayable: true,
    },
  };
  const call = buildCall(targets, messages, input(upload), m1, d1);
  t.equal(call?.headers['content-type'], 'multipart/form-data; boundary=b');
  t.ok(call?.body instanceof Readable);
  t.same(asked, ['m1'], 'the upload gets the upstream model name');
});

t.test('no call without a credential or an adapter', async (t) => {
  const none = configuredTargets({ index, reveal: () => null, upstreamOverride: () => null });
  t.equal(buildCall(none, messages, input(json), m1, d1), null, 'unreadable credential');
  const some = configuredTargets({ index, reveal: () => 'k', upstreamOverride: () => null });
  t.equal(buildCall(some, messages, input(json), m1, d2), null, 'platform names no registered adapter');
});

t.test('the upstream override replaces scheme, host and port, read at each call', async (t) => {
  let override: URL | null = new URL('http://127.0.0.1:9999');
  const targets = configuredTargets({ index, reveal: () => 'k', upstreamOverride: () => override });
  t.equal(targets.target(d1)?.resource.baseUrl, 'http://127.0.0.1:9999');
  override = null;
  t.equal(targets.target(d1)?.resource.baseUrl, 'https://p1-main.example');
});
