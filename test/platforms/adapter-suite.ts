// The conformance suite every platform adapter passes (in the style of Hono's `runTest({ newRouter })`):
// a test file per adapter describes its fixture and what it expects as data, and runAdapterSuite runs
// the same checks on it: registered under its id, the endpoints it can call, the URL and exact headers
// of every endpoint and stream flag, client credentials never sent, the body patches, option
// validation, inputs left untouched, authorize() (request signing, tokens from a token source, what a
// 401 drops), answer decoding (a platform stream format turned into SSE at every split point), the
// platform's own error bodies read into the gateway's error model and, for adapters that can count
// tokens, the count call (URL, headers, body, the answer and errors in Messages' shape). To extend it, add an optional field to AdapterSpec and
// one entry to CHECKS. The registry-wide checks (every adapter a platform YAML names is registered)
// are in ./index.test.ts.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import tap, { type Test } from 'tap';
import { parse } from 'yaml';
import { ManualClock } from '../../src/clock.ts';
import { adapterFor, ADAPTERS } from '../../src/platforms/index.ts';
import type { ProviderError } from '../../src/errors.ts';
import { messages } from '../../src/protocols/messages.ts';
import { renderProviderError } from '../../src/protocols/provider-error.ts';
import type {
  AdapterContext,
  AdapterOptions,
  AdapterRequest,
  FormAnswer,
  OutgoingRequest,
  PlatformAdapter,
  UpstreamTarget,
} from '../../src/platforms/types.ts';
import { deployment, platform, resource } from '../routing/fixtures.ts';

/** The platform, resource and deployment an adapter's cases run against. */
export interface AdapterFixture {
  /** The platform's `adapter_options` (they must validate clean). */
  adapterOptions: AdapterOptions;
  /** The resource's base URL (written without a trailing slash; the suite also tries it with one). */
  baseUrl: string;
  /** The deployment's upstream model id. */
  upstreamModel: string;
  /** The unsealed upstream credential. */
  credential: string;
}

/** One call: what request() must answer for an endpoint and stream flag. */
export interface CallCase {
  endpoint: string;
  /** Omitted: the same expectation holds with and without streaming. */
  stream?: boolean;
  /** Client headers of this case, sent on top of the client's credentials (CLIENT_CREDENTIALS). */
  clientHeaders?: Record<string, string>;
  /** The platform's `adapter_options` for this case, when not the fixture's. */
  adapterOptions?: AdapterOptions;
  url: string;
  /** Every header the adapter adds, in order (the caller adds content-type and the rest). */
  headers: [string, string][];
}

/** One body: what patchBody makes of a rewritten body (no case: the body must stay as it is). */
export interface BodyCase {
  endpoint: string;
  stream?: boolean;
  body: Record<string, unknown>;
  patched: Record<string, unknown>;
}

/** One `adapter_options` value and the exact problems validateOptions reports for it. */
export interface OptionsCase {
  options: AdapterOptions;
  problems: string[];
}

/** A token endpoint as a test plays it: every form POST is recorded and answered by `answer`. */
export interface TokenEndpoint {
  answer(url: string, form: Record<string, string>, n: number): FormAnswer;
}

/** One authorize() call: the credential it runs with, what it must add, what it must never send. */
export interface AuthorizeCase {
  endpoint: string;
  stream?: boolean;
  /** The unsealed credential (default: the fixture's). */
  credential?: string;
  /** Headers authorize() must set: exact values, or patterns. */
  adds: Record<string, string | RegExp>;
  /** Strings (secrets) that must appear in no header and not in the URL afterwards. */
  neverSent?: string[];
  /** The token endpoint it may call; its POSTs must match `tokenCalls`. */
  tokens?: TokenEndpoint;
  /** The token endpoint calls expected, in order (URL and form keys). */
  tokenCalls?: { url: string; form: Record<string, string | RegExp> }[];
  /** After a 401, refused() must answer this (absent: the adapter has no refused()). */
  refusedRetries?: boolean;
  /** The clock's time (default 2026-01-15T12:00:00Z). */
  now?: string;
}

/** How one call's answers are read when they are not the protocol's own wire. */
export interface DecodingCase {
  endpoint: string;
  stream: boolean;
  streamType: string;
  /** A streamed answer in the platform's format, and the SSE it must decode to at every split. */
  answer?: { bytes: Buffer; sse: string };
}

/** One error answer of the platform and what readError() makes of it (null: already the protocol's
 *  error shape, passed on as it is). */
export interface ErrorCase {
  endpoint: string;
  status: number;
  headers?: Record<string, string>;
  body: string;
  read: ProviderError | null;
}

/** Token counting (PlatformAdapter.countTokens): the count call, its body and how its answers read. */
export interface CountingSpec {
  /** What the count call's request() answers (client headers on top of CLIENT_CREDENTIALS). */
  calls: { clientHeaders?: Record<string, string>; url: string; headers: [string, string][] }[];
  /** What patchBody makes of a count body (`model` already the upstream id); absent: left as it is. */
  bodies: { clientHeaders?: Record<string, string>; body: Record<string, unknown>; patched: Record<string, unknown> }[];
  /** The platform's 2xx answer and the Messages count it becomes (absent: passed on as it is). */
  answer?: { body: string; mapped: unknown };
  /** Answers that carry no count: refused (null), so the attempt fails over. */
  unusable?: string[];
  /** An error answer and its body in the Messages error shape (absent: no mapping). */
  error?: { status: number; headers: Record<string, string>; body: string; mapped: unknown };
}

/** An adapter and everything it is expected to do, as data. */
export interface AdapterSpec {
  adapter: PlatformAdapter;
  /** The id platform YAML names it by. */
  id: string;
  fixture: AdapterFixture;
  /** Exactly the endpoints it can call, in its order (config error messages list them so). */
  endpoints: string[];
  /** At least one case per endpoint and stream flag. */
  calls: CallCase[];
  /** Header names it must never send, whatever the client sent (cookie is never sent by any). */
  neverSends: string[];
  bodies: BodyCase[];
  options: OptionsCase[];
  /** Where the credential goes: request()'s headers (default), or authorize() (signatures, tokens). */
  credentialIn?: 'request' | 'authorize';
  authorizations?: AuthorizeCase[];
  /** Every endpoint and stream flag without a case here must have no decoding. */
  decodings?: DecodingCase[];
  /** Present exactly when the adapter can count tokens. */
  counting?: CountingSpec;
  /** How its platform's error bodies are read (no cases: the adapter has no readError()). */
  errors?: ErrorCase[];
}

/** Credentials a client may send the gateway; none of them, name or value, may reach an upstream. */
export const CLIENT_CREDENTIALS: Readonly<Record<string, string>> = {
  authorization: 'Bearer sk-pi-client-authorization',
  'x-api-key': 'sk-pi-client-x-api-key',
  'x-goog-api-key': 'sk-pi-client-x-goog-api-key',
  'api-key': 'sk-pi-client-api-key',
  cookie: 'session=sk-pi-client-cookie',
};
const CLIENT_SECRET = 'sk-pi-client';

const VOCABULARIES = fileURLToPath(new URL('../../config/vocabularies.yaml', import.meta.url));

/** Runs every check on one adapter, as subtests of `t` (the file's root test by default). */
export function runAdapterSuite(spec: AdapterSpec, t: Test = tap): void {
  for (const check of CHECKS) t.test(`${spec.id}: ${check.name}`, async (t) => check.run(t, spec));
  for (const check of ASYNC_CHECKS) t.test(`${spec.id}: ${check.name}`, (t) => check.run(t, spec));
}

const CHECKS: { name: string; run: (t: Test, spec: AdapterSpec) => void }[] = [
  { name: 'registered under its id', run: checkRegistered },
  { name: 'the endpoints it can call', run: checkEndpoints },
  { name: 'URL and headers per endpoint and stream flag', run: checkCalls },
  { name: 'client credentials never reach the upstream', run: checkNeverSends },
  { name: 'body patches', run: checkBodies },
  { name: 'adapter_options validation', run: checkOptions },
  { name: 'token counting', run: checkCounting },
  { name: "platform error bodies read into the gateway's error model", run: checkErrors },
];

const ASYNC_CHECKS: { name: string; run: (t: Test, spec: AdapterSpec) => Promise<void> }[] = [
  { name: 'authorize() over the request as sent', run: checkAuthorize },
  { name: 'answer decoding', run: async (t, spec) => checkDecodings(t, spec) },
];

function checkRegistered(t: Test, spec: AdapterSpec): void {
  t.equal(spec.adapter.id, spec.id);
  t.equal(ADAPTERS.get(spec.id), spec.adapter, 'ADAPTERS holds it under its id');
  t.equal(adapterFor(spec.id), spec.adapter, 'adapterFor finds it');
}

function checkEndpoints(t: Test, spec: AdapterSpec): void {
  t.same(spec.adapter.endpoints, spec.endpoints);
  t.equal(new Set(spec.adapter.endpoints).size, spec.adapter.endpoints.length, 'no endpoint twice');
  const vocabulary = (parse(readFileSync(VOCABULARIES, 'utf8')) as { endpoints: { id: string }[] }).endpoints.map(
    (e) => e.id,
  );
  t.same(
    spec.adapter.endpoints.filter((e) => !vocabulary.includes(e)),
    [],
    'every endpoint is in config/vocabularies.yaml',
  );
  const missing = spec.endpoints.flatMap((endpoint) =>
    [false, true]
      .filter((stream) => !spec.calls.some((c) => c.endpoint === endpoint && (c.stream ?? stream) === stream))
      .map((stream) => `${endpoint} stream=${stream}`),
  );
  t.same(missing, [], 'the spec has a call case for every endpoint and stream flag');
  const foreign = spec.calls.filter((c) => !spec.endpoints.includes(c.endpoint)).map((c) => c.endpoint);
  t.same(foreign, [], 'no call case for an endpoint it cannot call');
}

function checkCalls(t: Test, spec: AdapterSpec): void {
  for (const c of expand(spec.calls)) {
    const label = caseLabel(c);
    const target = targetOf(spec, c.adapterOptions);
    const req = requestOf(c);
    const got = spec.adapter.request(target, req);
    t.equal(got.url, c.url, `${label}: URL`);
    t.same(got.headers, c.headers, `${label}: headers`);
    const misnamed = got.headers
      .filter(([name]) => name !== name.toLowerCase() || name === 'content-type')
      .map(([n]) => n);
    t.same(misnamed, [], `${label}: lowercase names, no content-type (the caller adds it)`);
    const credential = spec.fixture.credential;
    if (spec.credentialIn === 'authorize')
      t.notOk(
        got.headers.some(([, v]) => v.includes(credential)),
        `${label}: the credential is left to authorize()`,
      );
    else
      t.ok(
        got.headers.some(([, v]) => v.includes(credential)),
        `${label}: the upstream credential is sent in a header`,
      );
    t.notOk(got.url.includes(credential), `${label}: never in the URL`);
    t.same(spec.adapter.request(target, req), got, `${label}: the same answer twice`);
    const slashed = spec.adapter.request(targetOf(spec, c.adapterOptions, `${spec.fixture.baseUrl}/`), req);
    t.equal(slashed.url, c.url, `${label}: a base URL ending in / gives the same URL`);
  }
}

function checkNeverSends(t: Test, spec: AdapterSpec): void {
  const never = new Set(['cookie', ...spec.neverSends]);
  for (const c of expand(spec.calls)) {
    const label = caseLabel(c);
    const got = spec.adapter.request(targetOf(spec, c.adapterOptions), requestOf(c));
    t.same(
      got.headers.filter(([name]) => never.has(name)).map(([n]) => n),
      [],
      `${label}: none of ${[...never].join(', ')}`,
    );
    const leaked = got.url.includes(CLIENT_SECRET) || got.headers.some(([, v]) => v.includes(CLIENT_SECRET));
    t.notOk(leaked, `${label}: no client credential value in the URL or any header`);
  }
}

function checkBodies(t: Test, spec: AdapterSpec): void {
  for (const b of expand(spec.bodies)) {
    const body = structuredClone(b.body);
    spec.adapter.patchBody?.(body, targetOf(spec), requestOf(b));
    t.same(body, b.patched, `${caseLabel(b)}: patched body`);
  }
  for (const endpoint of spec.endpoints) {
    for (const stream of [false, true]) {
      if (spec.bodies.some((b) => b.endpoint === endpoint && (b.stream ?? stream) === stream)) continue;
      const original = {
        model: spec.fixture.upstreamModel,
        messages: [{ role: 'user', content: 'hi' }],
        max_tokens: 5,
        stream,
      };
      const body = structuredClone(original);
      spec.adapter.patchBody?.(body, targetOf(spec), requestOf({ endpoint, stream }));
      t.same(body, original, `${endpoint} stream=${stream}: body left as the protocol wrote it`);
    }
  }
}

function checkOptions(t: Test, spec: AdapterSpec): void {
  t.same(
    spec.adapter.validateOptions(deepFreeze({ ...spec.fixture.adapterOptions })),
    [],
    'the fixture options are valid',
  );
  for (const o of spec.options) {
    t.same(spec.adapter.validateOptions(deepFreeze({ ...o.options })), o.problems, JSON.stringify(o.options));
  }
}

/** A context on a manual clock whose token endpoint is `tokens` (none: every POST fails). */
export function testContext(
  now: string,
  tokens?: TokenEndpoint,
): {
  ctx: AdapterContext;
  clock: ManualClock;
  posts: { url: string; form: Record<string, string> }[];
  logs: { event: string; fields: Record<string, unknown> }[];
} {
  const clock = new ManualClock(now);
  const posts: { url: string; form: Record<string, string> }[] = [];
  const logs: { event: string; fields: Record<string, unknown> }[] = [];
  const ctx: AdapterContext = {
    clock,
    postForm(url, form) {
      posts.push({ url, form });
      if (!tokens) return Promise.reject(new Error('no token endpoint in this case'));
      return Promise.resolve(tokens.answer(url, form, posts.length));
    },
    endpointUrl: (url) => url,
    log: (event, fields) => logs.push({ event, fields }),
  };
  return { ctx, clock, posts, logs };
}

async function checkAuthorize(t: Test, spec: AdapterSpec): Promise<void> {
  const authorize = spec.adapter.authorize;
  if (!spec.authorizations || spec.authorizations.length === 0) {
    t.equal(
      spec.credentialIn ?? 'request',
      'request',
      'an adapter that leaves the credential to authorize() has authorize cases',
    );
    return;
  }
  t.ok(authorize, 'authorize() exists');
  if (!authorize) return;
  for (const c of expand(spec.authorizations)) {
    const label = caseLabel(c);
    const target = { ...targetOf(spec), credential: c.credential ?? spec.fixture.credential };
    const req = requestOf(c);
    const { url, headers } = spec.adapter.request(target, req);
    const out: OutgoingRequest = {
      url,
      headers: { 'content-type': 'application/json', ...Object.fromEntries(headers) },
      body: '{"max_tokens":5}',
    };
    const { ctx, posts } = testContext(c.now ?? '2026-01-15T12:00:00Z', c.tokens);
    await authorize.call(spec.adapter, out, target, req, ctx);
    for (const [name, want] of Object.entries(c.adds)) {
      if (typeof want === 'string') t.equal(out.headers[name], want, `${label}: ${name}`);
      else t.match(out.headers[name], want, `${label}: ${name}`);
    }
    for (const secret of c.neverSent ?? []) {
      t.notOk(
        out.url.includes(secret) || Object.values(out.headers).some((v) => v.includes(secret)),
        `${label}: a secret is never sent`,
      );
    }
    if (c.tokenCalls) {
      t.same(
        posts.map((p) => p.url),
        c.tokenCalls.map((p) => p.url),
        `${label}: token endpoint calls`,
      );
      for (const [i, want] of c.tokenCalls.entries())
        t.match(posts[i]?.form, want.form, `${label}: token request ${i + 1}`);
    }
    if (c.refusedRetries !== undefined)
      t.equal(spec.adapter.refused?.(out, target, ctx) ?? false, c.refusedRetries, `${label}: refused()`);
  }
}

function checkDecodings(t: Test, spec: AdapterSpec): void {
  const cases = spec.decodings ?? [];
  for (const endpoint of spec.endpoints) {
    for (const stream of [false, true]) {
      const c = cases.find((d) => d.endpoint === endpoint && d.stream === stream);
      const decoding = spec.adapter.decoding?.(targetOf(spec), requestOf({ endpoint, stream })) ?? null;
      const label = `${endpoint} stream=${stream}`;
      if (!c) {
        t.equal(decoding, null, `${label}: the protocol's own wire`);
        continue;
      }
      t.equal(decoding?.streamType, c.streamType, `${label}: stream type`);
      if (!decoding) continue;
      if (c.answer) {
        const { bytes, sse } = c.answer;
        let bad = 0;
        for (let i = 0; i <= bytes.length; i++) {
          const d = decoding.decoder();
          const out = Buffer.concat([d.push(bytes.subarray(0, i)), d.push(bytes.subarray(i))]).toString('utf8');
          if (out !== sse || d.pendingBytes !== 0 || d.failure !== null) bad++;
        }
        t.equal(bad, 0, `${label}: the same SSE at all ${bytes.length + 1} split points`);
      }
    }
  }
}

function checkErrors(t: Test, spec: AdapterSpec): void {
  const cases = spec.errors ?? [];
  if (cases.length === 0) {
    t.equal(spec.adapter.readError, undefined, "no cases: the platform answers errors in the protocol's own shape");
    return;
  }
  for (const c of cases) {
    for (const stream of [false, true]) {
      const read = spec.adapter.readError?.(
        c.status,
        c.headers ?? {},
        Buffer.from(c.body),
        requestOf({ endpoint: c.endpoint, stream }),
      );
      t.same(read, c.read, `${c.endpoint} stream=${stream}: HTTP ${c.status} ${c.body.slice(0, 60)}`);
    }
  }
}

const COUNT_ENDPOINT = 'count_tokens';

function checkCounting(t: Test, spec: AdapterSpec): void {
  const counter = spec.adapter.countTokens;
  const c = spec.counting;
  if (!c) {
    t.equal(counter, undefined, 'cannot count: no countTokens capability');
    return;
  }
  t.ok(counter, 'countTokens is there');
  if (!counter) return;
  const credential = spec.fixture.credential;
  for (const call of c.calls) {
    const label = `count, client ${JSON.stringify(call.clientHeaders ?? {})}`;
    const req = requestOf({
      endpoint: COUNT_ENDPOINT,
      stream: false,
      ...(call.clientHeaders ? { clientHeaders: call.clientHeaders } : {}),
    });
    const got = counter.request(targetOf(spec), req);
    t.equal(got.url, call.url, `${label}: URL`);
    t.same(got.headers, call.headers, `${label}: headers`);
    t.equal(
      counter.request(targetOf(spec, spec.fixture.adapterOptions, `${spec.fixture.baseUrl}/`), req).url,
      call.url,
      `${label}: a base URL ending in / gives the same URL`,
    );
    if (spec.credentialIn === 'authorize')
      t.notOk(
        got.headers.some(([, v]) => v.includes(credential)),
        `${label}: the credential is left to authorize()`,
      );
    else
      t.ok(
        got.headers.some(([, v]) => v.includes(credential)),
        `${label}: the upstream credential is sent in a header`,
      );
    t.notOk(got.url.includes(credential), `${label}: never in the URL`);
    const never = new Set(['cookie', ...spec.neverSends]);
    t.same(
      got.headers.filter(([name]) => never.has(name)).map(([n]) => n),
      [],
      `${label}: none of ${[...never].join(', ')}`,
    );
    t.notOk(
      got.url.includes(CLIENT_SECRET) || got.headers.some(([, v]) => v.includes(CLIENT_SECRET)),
      `${label}: no client credential value`,
    );
  }
  for (const b of c.bodies) {
    const body = structuredClone(b.body);
    counter.patchBody?.(
      body,
      targetOf(spec),
      requestOf({
        endpoint: COUNT_ENDPOINT,
        stream: false,
        ...(b.clientHeaders ? { clientHeaders: b.clientHeaders } : {}),
      }),
    );
    t.same(body, b.patched, `count body ${JSON.stringify(b.body).slice(0, 60)}: patched`);
  }
  const decoding = counter.decoding?.(targetOf(spec), requestOf({ endpoint: COUNT_ENDPOINT, stream: false })) ?? null;
  if (c.answer) {
    const mapped = decoding?.answerBody?.(Buffer.from(c.answer.body));
    t.same(
      mapped ? (JSON.parse(mapped.toString('utf8')) as unknown) : null,
      c.answer.mapped,
      "the platform's count answer in Messages' shape",
    );
  } else t.equal(decoding?.answerBody, undefined, "the count answer is Messages' own");
  for (const body of c.unusable ?? [])
    t.equal(decoding?.answerBody?.(Buffer.from(body)) ?? null, null, `no count in ${body}: refused`);
  // A count's errors are read like any of the platform's errors (readError) and rendered by Messages.
  if (c.error) {
    const read = spec.adapter.readError?.(
      c.error.status,
      c.error.headers,
      Buffer.from(c.error.body),
      requestOf({ endpoint: 'messages', stream: false }),
    );
    const mapped = read ? renderProviderError(messages, read) : null;
    t.same(
      mapped ? (JSON.parse(mapped.toString('utf8')) as unknown) : null,
      c.error.mapped,
      `count error ${c.error.status} in the Messages shape`,
    );
  }
}

/** Cases without a stream flag stand for both flags. */
function expand<T extends { stream?: boolean }>(cases: T[]): (T & { stream: boolean })[] {
  return cases.flatMap((c) =>
    (c.stream === undefined ? [false, true] : [c.stream]).map((stream) => ({ ...c, stream })),
  );
}

interface CaseKey {
  endpoint: string;
  stream: boolean;
  clientHeaders?: Record<string, string>;
  adapterOptions?: AdapterOptions;
}

function caseLabel(c: CaseKey): string {
  const parts = [`${c.endpoint} stream=${c.stream}`];
  if (c.clientHeaders) parts.push(`client ${JSON.stringify(c.clientHeaders)}`);
  if (c.adapterOptions) parts.push(`options ${JSON.stringify(c.adapterOptions)}`);
  return parts.join(', ');
}

/** A frozen request carrying the client's credentials, so an adapter can neither keep nor edit them. */
function requestOf(c: CaseKey): AdapterRequest {
  return deepFreeze({
    endpoint: c.endpoint,
    stream: c.stream,
    clientHeaders: { ...CLIENT_CREDENTIALS, ...c.clientHeaders },
  });
}

/** A frozen target on the fixture: an adapter that edits its target throws (ES modules are strict). */
function targetOf(
  spec: AdapterSpec,
  adapterOptions = spec.fixture.adapterOptions,
  baseUrl = spec.fixture.baseUrl,
): UpstreamTarget {
  const f = spec.fixture;
  const set = (e: [string, string | number | boolean | undefined]): e is [string, string | number | boolean] =>
    e[1] !== undefined;
  const options = Object.fromEntries(Object.entries(adapterOptions).filter(set));
  return deepFreeze({
    platform: platform('p', { adapter: spec.id, adapterOptions: options }),
    resource: resource('p-main', 'p', { baseUrl }),
    deployment: deployment('d', 'acme/m', 'p', { upstreamModel: f.upstreamModel }),
    credential: f.credential,
  });
}

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object') {
    for (const v of Object.values(value)) deepFreeze(v);
    Object.freeze(value);
  }
  return value;
}
