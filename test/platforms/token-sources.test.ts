// Token sources on an injected clock (never a sleep): the first call fetches once for 100 concurrent
// callers (single flight); a cached token is served synchronously; inside the early window the old
// token is still served while exactly one background refresh runs; after expiry callers wait for a
// new one; a refused (401) token is dropped, the next call fetches; a failed fetch is held for a
// short while (the next deployment of the credential does not wait again), logged with why (down,
// slow, refused) and names no secret; deployments on different resources share one fetch. Vertex service accounts: the JWT is RS256 over the claims Google checks, verified
// here with the public key. Entra: the client-credentials form to the tenant's token endpoint.
import { generateKeyPairSync, verify } from 'node:crypto';
import t from 'tap';
import { azureOpenai } from '../../src/platforms/azure-openai.ts';
import { FAILURE_HOLD_MS } from '../../src/platforms/token-cache.ts';
import {
  type AdapterContext,
  CredentialError,
  type FormAnswer,
  type OutgoingRequest,
  TokenEndpointError,
  type UpstreamTarget,
} from '../../src/platforms/types.ts';
import { vertex } from '../../src/platforms/vertex.ts';
import { deployment, platform, resource } from '../routing/fixtures.ts';
import { testContext } from './adapter-suite.ts';

const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const SA = JSON.stringify({
  type: 'service_account',
  project_id: 'p',
  private_key_id: 'kid-1',
  private_key: privateKey.export({ type: 'pkcs8', format: 'pem' }),
  client_email: 'gw@p.iam.gserviceaccount.com',
  token_uri: 'https://oauth2.googleapis.com/token',
});
const NOW = '2026-01-15T12:00:00Z';

function target(adapter: 'vertex' | 'azure-openai', credential: string): UpstreamTarget {
  const options: Record<string, string> = adapter === 'azure-openai' ? { api_version: '2024-10-21' } : {};
  return {
    platform: platform('p', { adapter, adapterOptions: options }),
    resource: resource('p-main', 'p', { baseUrl: 'https://x.example' }),
    deployment: deployment('d', 'acme/m', 'p', { upstreamModel: 'm' }),
    credential,
  };
}

/** A token endpoint handing out tok-1, tok-2, … valid `lifetime` seconds; `fail` answers 400. */
function endpoint(lifetime = 3600) {
  const state = { fail: false };
  return {
    state,
    answer: (_url: string, _form: Record<string, string>, n: number) =>
      state.fail
        ? { status: 400, body: Buffer.from('{"error":"invalid_grant","error_description":"secret-ish detail"}') }
        : {
            status: 200,
            body: Buffer.from(JSON.stringify({ access_token: `tok-${n}`, expires_in: lifetime, token_type: 'Bearer' })),
          },
  };
}

function out(): OutgoingRequest {
  return { url: 'https://x.example/v', headers: {}, body: '{}' };
}

async function auth(
  tg: UpstreamTarget,
  ctx: ReturnType<typeof testContext>['ctx'],
  adapter = vertex,
): Promise<{ o: OutgoingRequest; sync: boolean }> {
  const o = out();
  const r = adapter.authorize?.(o, tg, { endpoint: 'chat_completions', stream: false, clientHeaders: {} }, ctx);
  const sync = r === undefined;
  await r;
  return { o, sync };
}

t.test(
  'single flight: 100 concurrent first calls make exactly one token request; then it is served synchronously',
  async (t) => {
    const ep = endpoint();
    const { ctx, posts } = testContext(NOW, ep);
    const tg = target('vertex', SA);
    const all = await Promise.all(Array.from({ length: 100 }, () => auth(tg, ctx)));
    t.equal(posts.length, 1, 'one token request');
    t.ok(all.every((a) => a.o.headers['authorization'] === 'Bearer tok-1'));
    const again = await auth(tg, ctx);
    t.ok(again.sync, 'a cached token needs no promise');
    t.equal(again.o.headers['authorization'], 'Bearer tok-1');
  },
);

t.test('the JWT assertion: RS256 with the key id, claims Google checks, verified with the public key', async (t) => {
  const { ctx, posts } = testContext(NOW, endpoint());
  await auth(target('vertex', SA), ctx);
  const form = posts[0]?.form ?? {};
  t.equal(posts[0]?.url, 'https://oauth2.googleapis.com/token');
  t.equal(form['grant_type'], 'urn:ietf:params:oauth:grant-type:jwt-bearer');
  const [h, c, s] = (form['assertion'] ?? '').split('.');
  t.same(JSON.parse(Buffer.from(h ?? '', 'base64url').toString()), { alg: 'RS256', typ: 'JWT', kid: 'kid-1' });
  const iat = Date.parse(NOW) / 1000;
  t.same(JSON.parse(Buffer.from(c ?? '', 'base64url').toString()), {
    iss: 'gw@p.iam.gserviceaccount.com',
    scope: 'https://www.googleapis.com/auth/cloud-platform',
    aud: 'https://oauth2.googleapis.com/token',
    iat,
    exp: iat + 3600,
  });
  t.ok(
    verify('sha256', Buffer.from(`${h}.${c}`), publicKey, Buffer.from(s ?? '', 'base64url')),
    'the signature verifies',
  );
});

t.test('early refresh: inside the window the old token is served while one background refresh runs', async (t) => {
  const { ctx, posts, clock } = testContext(NOW, endpoint(3600));
  const tg = target('vertex', SA);
  await auth(tg, ctx);
  clock.advance(3600_000 - 300_000 - 1);
  t.equal((await auth(tg, ctx)).o.headers['authorization'], 'Bearer tok-1');
  t.equal(posts.length, 1, 'not yet in the window');
  clock.advance(2);
  const inWindow = await Promise.all(Array.from({ length: 10 }, () => auth(tg, ctx)));
  t.ok(
    inWindow.every((a) => a.sync && a.o.headers['authorization'] === 'Bearer tok-1'),
    'served at once, the old token',
  );
  t.equal(posts.length, 2, 'exactly one refresh started');
  await new Promise((r) => setImmediate(r));
  t.equal((await auth(tg, ctx)).o.headers['authorization'], 'Bearer tok-2', 'then the new one');
});

t.test('a short-lived token refreshes at half its life; an expired one is waited for', async (t) => {
  const { ctx, posts, clock } = testContext(NOW, endpoint(60));
  const tg = target('vertex', SA);
  await auth(tg, ctx);
  clock.advance(29_000);
  await auth(tg, ctx);
  t.equal(posts.length, 1);
  clock.advance(31_000 + 1);
  const late = await auth(tg, ctx);
  t.notOk(late.sync, 'expired: the caller waits');
  t.equal(late.o.headers['authorization'], 'Bearer tok-2');
});

t.test('a 401 drops the refused token: the next call fetches a new one', async (t) => {
  const { ctx, posts } = testContext(NOW, endpoint());
  const tg = target('vertex', SA);
  const first = await auth(tg, ctx);
  t.equal(vertex.refused?.(first.o, tg, ctx), true, 'a retry may succeed');
  const second = await auth(tg, ctx);
  t.equal(second.o.headers['authorization'], 'Bearer tok-2');
  t.equal(posts.length, 2);
  t.equal(vertex.refused?.(first.o, tg, ctx), true);
  t.equal(
    (await auth(tg, ctx)).o.headers['authorization'],
    'Bearer tok-2',
    'dropping a token already replaced keeps the new one',
  );
  t.equal(vertex.refused?.(out(), target('vertex', 'static-token'), ctx), false, 'a static token: a 401 is final');
});

t.test(
  'a refused, slow or unreachable token endpoint: CredentialError and a log line saying which, naming no secret',
  async (t) => {
    const ep = endpoint();
    ep.state.fail = true;
    const { ctx, posts, logs, clock } = testContext(NOW, ep);
    const tg = target('vertex', SA);
    await t.rejects(
      auth(tg, ctx),
      new CredentialError('provider "p" refused the gateway\'s credential: its token endpoint answered HTTP 400'),
    );
    t.same(logs, [
      {
        event: 'token_fetch_failed',
        fields: { provider: 'p', reason: 'refused', endpoint: 'https://oauth2.googleapis.com/token', status: 400 },
      },
    ]);
    ep.state.fail = false;
    await t.rejects(
      auth(tg, ctx),
      new CredentialError('provider "p" refused the gateway\'s credential: its token endpoint answered HTTP 400'),
      'within the hold: the same failure at once',
    );
    t.equal(posts.length, 1, 'without asking the endpoint again');
    clock.advance(FAILURE_HOLD_MS);
    t.equal(
      (await auth(tg, ctx)).o.headers['authorization'],
      'Bearer tok-2',
      'after the hold the endpoint is asked again',
    );
    t.equal(posts.length, 2);

    const down = testContext(NOW, {
      answer: () => {
        throw new TokenEndpointError('unreachable', 'ECONNREFUSED', 5000);
      },
    });
    await t.rejects(
      auth(tg, down.ctx),
      new CredentialError(
        'provider "p" could not authenticate the gateway: its token endpoint could not be reached (ECONNREFUSED)',
      ),
    );
    t.same(
      down.logs.map((l) => l.fields),
      [
        {
          provider: 'p',
          reason: 'unreachable',
          endpoint: 'https://oauth2.googleapis.com/token',
          error_code: 'ECONNREFUSED',
        },
      ],
    );
    const slow = testContext(NOW, {
      answer: () => {
        throw new TokenEndpointError('timeout', null, 250);
      },
    });
    await t.rejects(
      auth(tg, slow.ctx),
      new CredentialError(
        'provider "p" could not authenticate the gateway: its token endpoint gave no answer within 250 ms',
      ),
    );
    t.same(
      slow.logs.map((l) => l.fields),
      [{ provider: 'p', reason: 'timeout', endpoint: 'https://oauth2.googleapis.com/token', timeout_ms: 250 }],
    );
    const broken = testContext(NOW, { answer: () => ({ status: 503, body: Buffer.from('try later') }) });
    await t.rejects(
      auth(tg, broken.ctx),
      new CredentialError('provider "p" could not authenticate the gateway: its token endpoint failed (HTTP 503)'),
    );
    const empty = testContext(NOW, { answer: () => ({ status: 200, body: Buffer.from('{"token_type":"Bearer"}') }) });
    await t.rejects(
      auth(tg, empty.ctx),
      new CredentialError(
        'provider "p" could not authenticate the gateway: its token endpoint answered without a usable access token',
      ),
    );
    t.same(
      [broken, empty].map((c) => c.logs[0]?.fields['reason']),
      ['failed', 'no_token'],
    );
    for (const c of [{ logs }, down, slow, broken, empty])
      t.notMatch(
        JSON.stringify(c.logs),
        /BEGIN|private_key|secret-ish|entra-secret/,
        'no secret and no endpoint text in the log',
      );

    await t.rejects(
      auth(target('vertex', '{"type":"service_account","client_email":"x"}'), ctx),
      new CredentialError('provider "p": the sealed service account has no "private_key"'),
    );
    await t.rejects(
      auth(target('vertex', '{"type":"service_account"'), ctx),
      new CredentialError('provider "p": the sealed credential starts like JSON but is not valid JSON'),
    );
  },
);

t.test('one credential, many deployments: they share one fetch and one failure', async (t) => {
  const cred = JSON.stringify({ tenant_id: 'tenant-1', client_id: 'client-1', client_secret: 'entra-secret' });
  let release: (a: FormAnswer) => void = () => undefined;
  const posts: string[] = [];
  const { ctx } = testContext(NOW, { answer: () => ({ status: 0, body: Buffer.alloc(0) }) });
  const slowCtx: AdapterContext = {
    ...ctx,
    postForm: (url) => {
      posts.push(url);
      return new Promise((r) => (release = r));
    },
  };
  const east = {
    ...target('azure-openai', cred),
    resource: resource('east', 'p', { baseUrl: 'https://east.example' }),
  };
  const west = {
    ...target('azure-openai', cred),
    resource: resource('west', 'p', { baseUrl: 'https://west.example' }),
  };
  const both = Promise.all([auth(east, slowCtx, azureOpenai), auth(west, slowCtx, azureOpenai)]);
  await new Promise((r) => setImmediate(r));
  t.equal(posts.length, 1, 'two resources, one token request');
  release({ status: 200, body: Buffer.from('{"access_token":"shared","expires_in":3600}') });
  t.same(
    (await both).map((a) => a.o.headers['authorization']),
    ['Bearer shared', 'Bearer shared'],
  );
});

t.test('Entra: client credentials to the tenant endpoint with the Cognitive Services scope', async (t) => {
  const { ctx, posts } = testContext(NOW, endpoint());
  const cred = JSON.stringify({ tenant_id: 'tenant-1', client_id: 'client-1', client_secret: 'entra-secret' });
  const { o } = await auth(target('azure-openai', cred), ctx, azureOpenai);
  t.equal(o.headers['authorization'], 'Bearer tok-1');
  t.same(posts, [
    {
      url: 'https://login.microsoftonline.com/tenant-1/oauth2/v2.0/token',
      form: {
        grant_type: 'client_credentials',
        client_id: 'client-1',
        client_secret: 'entra-secret',
        scope: 'https://cognitiveservices.azure.com/.default',
      },
    },
  ]);
  t.same(
    azureOpenai.request(target('azure-openai', cred), {
      endpoint: 'chat_completions',
      stream: false,
      clientHeaders: {},
    }).headers,
    [],
    'no api-key header',
  );
  t.equal(azureOpenai.refused?.(o, target('azure-openai', cred), ctx), true);
});
