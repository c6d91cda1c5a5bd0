// The conformance suite every platform adapter passes (in the style of Hono's `runTest({ newRouter })`):
// a test file per adapter describes its fixture and what it expects as data, and runAdapterSuite runs
// the same checks on it: registered under its id, the endpoints it can call, the URL and exact headers
// of every endpoint and stream flag, client credentials never sent, the body patches, option
// validation, and inputs left untouched. To extend it (credential refresh, request signing, response
// decoding), add an optional field to AdapterSpec and one entry to CHECKS. The registry-wide checks
// (every adapter a platform YAML names is registered) are in ./index.test.ts.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import tap, { type Test } from 'tap';
import { parse } from 'yaml';
import { adapterFor, ADAPTERS } from '../../src/platforms/index.ts';
import type { AdapterOptions, AdapterRequest, PlatformAdapter, UpstreamTarget } from '../../src/platforms/types.ts';
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
}

const CHECKS: { name: string; run: (t: Test, spec: AdapterSpec) => void }[] = [
  { name: 'registered under its id', run: checkRegistered },
  { name: 'the endpoints it can call', run: checkEndpoints },
  { name: 'URL and headers per endpoint and stream flag', run: checkCalls },
  { name: 'client credentials never reach the upstream', run: checkNeverSends },
  { name: 'body patches', run: checkBodies },
  { name: 'adapter_options validation', run: checkOptions },
];

function checkRegistered(t: Test, spec: AdapterSpec): void {
  t.equal(spec.adapter.id, spec.id);
  t.equal(ADAPTERS.get(spec.id), spec.adapter, 'ADAPTERS holds it under its id');
  t.equal(adapterFor(spec.id), spec.adapter, 'adapterFor finds it');
}

function checkEndpoints(t: Test, spec: AdapterSpec): void {
  t.same(spec.adapter.endpoints, spec.endpoints);
  t.equal(new Set(spec.adapter.endpoints).size, spec.adapter.endpoints.length, 'no endpoint twice');
  const vocabulary = (parse(readFileSync(VOCABULARIES, 'utf8')) as { endpoints: { id: string }[] }).endpoints.map((e) => e.id);
  t.same(spec.adapter.endpoints.filter((e) => !vocabulary.includes(e)), [], 'every endpoint is in config/vocabularies.yaml');
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
    const misnamed = got.headers.filter(([name]) => name !== name.toLowerCase() || name === 'content-type').map(([n]) => n);
    t.same(misnamed, [], `${label}: lowercase names, no content-type (the caller adds it)`);
    const credential = spec.fixture.credential;
    t.ok(got.headers.some(([, v]) => v.includes(credential)), `${label}: the upstream credential is sent in a header`);
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
    t.same(got.headers.filter(([name]) => never.has(name)).map(([n]) => n), [], `${label}: none of ${[...never].join(', ')}`);
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
      const original = { model: spec.fixture.upstreamModel, messages: [{ role: 'user', content: 'hi' }], max_tokens: 5, stream };
      const body = structuredClone(original);
      spec.adapter.patchBody?.(body, targetOf(spec), requestOf({ endpoint, stream }));
      t.same(body, original, `${endpoint} stream=${stream}: body left as the protocol wrote it`);
    }
  }
}

function checkOptions(t: Test, spec: AdapterSpec): void {
  t.same(spec.adapter.validateOptions(deepFreeze({ ...spec.fixture.adapterOptions })), [], 'the fixture options are valid');
  for (const o of spec.options) {
    t.same(spec.adapter.validateOptions(deepFreeze({ ...o.options })), o.problems, JSON.stringify(o.options));
  }
}

/** Cases without a stream flag stand for both flags. */
function expand<T extends { stream?: boolean }>(cases: T[]): (T & { stream: boolean })[] {
  return cases.flatMap((c) => (c.stream === undefined ? [false, true] : [c.stream]).map((stream) => ({ ...c, stream })));
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
  return deepFreeze({ endpoint: c.endpoint, stream: c.stream, clientHeaders: { ...CLIENT_CREDENTIALS, ...c.clientHeaders } });
}

/** A frozen target on the fixture: an adapter that edits its target throws (ES modules are strict). */
function targetOf(spec: AdapterSpec, adapterOptions = spec.fixture.adapterOptions, baseUrl = spec.fixture.baseUrl): UpstreamTarget {
  const f = spec.fixture;
  const set = (e: [string, string | number | boolean | undefined]): e is [string, string | number | boolean] => e[1] !== undefined;
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
