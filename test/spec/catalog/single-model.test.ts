// GET /v1/models/{vendor}/{model}: the list entry itself (top-level fields, as OpenAI's retrieve
// answers), exact slug match only, the slug also accepted as one percent-encoded segment
// (`acme%2Fchat-small`, what openai-node sends), and the catalog's 404 for everything else under
// /v1/models/ (aliases, canonical slugs, case variants, extra or missing segments).
import t from 'tap';
import { startStack } from '../../helpers/stack.ts';
import { arr, checkModelNotFound, getJson, obj } from './catalog-checks.ts';

t.test('every listed model: the list entry itself, byte for byte', async (t) => {
  for (const config of ['gateway', 'catalog-select']) {
    const s = await startStack(t, { config });
    const list = arr((await getJson(`${s.url}/v1/models`)).body['data']).map(obj);
    t.ok(list.length > 0);
    for (const m of list) {
      const details = obj(m['links'])['details'] as string;
      const r = await getJson(`${s.url}${details}`);
      t.equal(r.status, 200, `${details}: 200`);
      t.equal(r.body['id'], m['id'], `${details}: id at the top level`);
      t.strictSame(r.body, m, `${details}: equal to the list entry`);
      t.equal(r.text, JSON.stringify(m), `${details}: same serialisation as the list`);
      const encoded = await getJson(`${s.url}/v1/models/${encodeURIComponent(m['id'] as string)}`);
      t.equal(encoded.text, r.text, `${details}: the same answer for the slug as one encoded segment`);
    }
  }
});

t.test('exact match only', async (t) => {
  const s = await startStack(t);
  const notFound: [string, string][] = [
    ['/v1/models/acme/small', 'an alias'],
    ['/v1/models/acme/chat-small-2025-06-01', 'the canonical slug of another id'],
    ['/v1/models/ACME/chat-small', 'vendor case variant'],
    ['/v1/models/acme/Chat-Small', 'model case variant'],
    ['/v1/models/Acme/chat-small/endpoints', 'case variant on the endpoints view'],
    ['/v1/models/chat-small', 'bare model name'],
    ['/v1/models/small-v1', 'provider-native upstream name'],
    ['/v1/models/acme', 'vendor only'],
    ['/v1/models/acme/', 'empty model half'],
    ['/v1/models//chat-small', 'empty vendor half'],
    ['/v1/models/', 'nothing after the prefix'],
    ['/v1/models/acme/chat-small/', 'trailing slash'],
    ['/v1/models/acme/chat-small/extra', 'extra segment'],
    ['/v1/models/acme/chat-small/endpoints/', 'trailing slash on the endpoints view'],
    ['/v1/models/acme/chat-small/endpoints/extra', 'extra segment after endpoints'],
    ['/v1/models/a/b/c/d/e', 'many segments'],
    [
      '/v1/models/acme%2Fchat-small/endpoints',
      'encoded slash before endpoints (the endpoints view takes two segments)',
    ],
    ['/v1/models/acme%2Fsmall', 'an alias as one encoded segment'],
    ['/v1/models/ACME%2Fchat-small', 'case variant as one encoded segment'],
    ['/v1/models/acme%2Fchat-small%2Fextra', 'three halves in one segment'],
    ['/v1/models/acme%2Fchat-small%2F', 'trailing encoded slash'],
    ['/v1/models/%2Fchat-small', 'empty vendor half, encoded'],
    ['/v1/models/acme%2F', 'empty model half, encoded'],
    ['/v1/models/acme%2Fdisabled', 'disabled model, encoded'],
    ['/v1/models/acme%2F%E0%A4%A', 'undecodable escape after an encoded slash'],
    ['/v1/models/acme/chat-small%20', 'trailing encoded space'],
    ['/v1/models/acme/%E0%A4%A', 'undecodable escape'],
    ['/v1/models/acme/nope', 'unknown model'],
    ['/v1/models/acme/disabled', 'disabled model'],
  ];
  for (const [path, why] of notFound) checkModelNotFound(t, await getJson(`${s.url}${path}`), `${why} (${path})`);

  // Decision: percent-decoding is URL syntax (RFC 3986 6.2.2.2), not a second name; a segment that
  // decodes to exactly the vendor or model half is the same path.
  for (const path of [
    '/v1/models/acme/chat%2Dsmall',
    '/v1/models/%61cme/chat-small',
    '/v1/models/acme%2Fchat-small',
    '/v1/models/acme%2fchat-small',
    '/v1/models/%61cme%2Fchat%2Dsmall',
  ]) {
    const r = await getJson(`${s.url}${path}`);
    t.equal(r.status, 200, `${path}: decodes to the exact slug`);
    t.equal(r.body['id'], 'acme/chat-small');
  }
  const q = await getJson(`${s.url}/v1/models/acme/chat-small?foo=bar`);
  t.equal(q.status, 200, 'a query string is not part of the slug');
});

t.test('the 404 names what was asked for', async (t) => {
  const s = await startStack(t);
  const r = await getJson(`${s.url}/v1/models/acme/nope`);
  t.match(obj(r.body['error'])['message'], /"acme\/nope"/);
  const extra = await getJson(`${s.url}/v1/models/acme/chat-small/extra`);
  t.match(obj(extra.body['error'])['message'], /"acme\/chat-small\/extra"/);
  const encoded = await getJson(`${s.url}/v1/models/acme%2Fnope`);
  t.match(obj(encoded.body['error'])['message'], /"acme\/nope"/, 'an encoded slug is named decoded');
});

t.test('other methods on catalog paths are not the catalog', async (t) => {
  const s = await startStack(t);
  // POST/PUT/DELETE under /v1/models are unserved paths (spec: 400 invalid_request "model is required").
  for (const method of ['POST', 'PUT', 'DELETE']) {
    const res = await fetch(`${s.url}/v1/models/acme/chat-small`, { method });
    const body = obj(await res.json());
    t.equal(res.status, 400, `${method}: 400`);
    t.equal(obj(body['error'])['code'], 'invalid_request');
  }
});
