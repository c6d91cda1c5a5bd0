// The bundled config's cloud deployments answer in the demo: Claude on Amazon Bedrock natively
// (SigV4 with the demo's AWS keys, the event stream relayed as Messages SSE), Claude and Gemini on
// Vertex AI with the demo's generated service account (tokens from the simulator's Google token
// endpoint), GPT-6 Luna on Azure OpenAI with the demo's Entra client credentials. First in-process, on
// the credentials the demo seals (src/cli/demo-credentials.ts) and a recording simulator, so each
// upstream path, signature and token exchange is checked; then `pi-gateway demo` itself as a process.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { sealDemoCredentials } from '../../src/cli/demo-credentials.ts';
import { ManualClock } from '../../src/clock.ts';
import type { RecordedRequest } from '../../src/simulator/recorder.ts';
import { openStore } from '../../src/store/sqlite/store.ts';
import { DEFAULT_NOW, fixtureConfig, startStack, type Stack } from '../helpers/stack.ts';
import { REPO } from './fixtures/run-cli.ts';

t.setTimeout(180_000);

const only = (p: string): Record<string, never> => ({ provider: { only: [p] } }) as unknown as Record<string, never>;
const HELLO = [{ role: 'user' as const, content: 'Hello' }];

async function demoStack(t: Test): Promise<{ s: Stack; key: string }> {
  // One clock for both sides: SigV4 allows 5 minutes of skew and tokens expire on the simulator's clock.
  const clock = new ManualClock(DEFAULT_NOW);
  const store = openStore(':memory:', {
    clock,
    masterKey: Buffer.alloc(32, 7).toString('base64'),
    requestLog: { flushIntervalMs: 10 },
  });
  t.teardown(() => store.close());
  const auth = sealDemoCredentials(fixtureConfig('bundled'), store.secrets);
  const s = await startStack(t, { config: 'bundled', clock, store, simulator: { clock, ...auth } });
  s.credit('acme', '10');
  return { s, key: s.key('acme') };
}

const tokenCalls = (s: Stack) => s.sim.requests.filter((r) => r.path.endsWith('/token'));
const inference = (s: Stack) => s.sim.requests.filter((r) => !r.path.endsWith('/token'));
const bodyOf = (r: RecordedRequest | undefined): Record<string, unknown> => (r?.body ?? {}) as Record<string, unknown>;

t.test(
  'the demo seals one credential of its adapter’s kind per resource and tells the simulator about each',
  async (t) => {
    const store = openStore(':memory:', { masterKey: Buffer.alloc(32, 7).toString('base64') });
    t.teardown(() => store.close());
    const config = fixtureConfig('bundled');
    const auth = sealDemoCredentials(config, store.secrets);
    t.same(Object.keys(auth.awsKeys), ['AKIAPIGATEWAYDEMO000']);
    t.same(Object.keys(auth.serviceAccounts), ['gcp-vertex-service-account@pi-gateway-demo.iam.gserviceaccount.com']);
    t.same(Object.keys(auth.entraClients), ['sim-demo-azure-entra-app']);
    t.match(store.secrets.reveal('gcp-vertex-service-account'), /"type":"service_account"/);
    t.equal(store.secrets.reveal('openai-prod'), 'sim-demo-openai-prod', 'other platforms keep an opaque demo key');
    const sa = store.secrets.reveal('gcp-vertex-service-account');
    const again = sealDemoCredentials(config, store.secrets);
    t.equal(store.secrets.reveal('gcp-vertex-service-account'), sa, 'a second start keeps the sealed service account');
    t.same(again, auth, 'and tells the simulator the same public key');
  },
);

t.test(
  'Claude on Bedrock: SigV4-signed InvokeModelWithResponseStream, streamed through the Anthropic SDK',
  async (t) => {
    const { s, key } = await demoStack(t);
    const anthropic = new Anthropic({ baseURL: s.url, apiKey: key, maxRetries: 0 });
    const { data: stream, response } = await anthropic.messages
      .stream({ model: 'anthropic/claude-sonnet-5.5', max_tokens: 32, messages: HELLO, ...only('aws') })
      .withResponse();
    t.equal(response.status, 200);
    t.equal(response.headers.get('x-pi-provider'), 'aws');
    const msg = await stream.finalMessage();
    t.equal(msg.model, 'anthropic/claude-sonnet-5.5');
    t.equal(msg.stop_reason, 'end_turn');
    t.ok(msg.usage.output_tokens > 0, 'usage came through the event stream');
    const [call] = inference(s);
    t.match(call?.path, /^\/model\/us\.anthropic\.claude-sonnet-5-5\/invoke-with-response-stream$/);
    t.match(
      call?.headers['authorization'],
      /^AWS4-HMAC-SHA256 Credential=AKIAPIGATEWAYDEMO000\/\d{8}\/us-east-1\/bedrock\/aws4_request, /,
    );
    t.equal(bodyOf(call)['anthropic_version'], 'bedrock-2023-05-31');
    t.equal(tokenCalls(s).length, 0);

    const oss = await new OpenAI({ baseURL: s.v1, apiKey: key, maxRetries: 0 }).chat.completions.create({
      model: 'openai/gpt-oss-120b',
      messages: HELLO,
      ...only('aws'),
    });
    t.equal(oss.model, 'openai/gpt-oss-120b');
    const chat = inference(s).at(-1);
    t.equal(chat?.path, '/openai/v1/chat/completions', 'gpt-oss: Bedrock’s OpenAI-compatible endpoint');
    t.match(
      chat?.headers['authorization'],
      /\/us-west-2\/bedrock\/aws4_request, /,
      'signed for the other region with the same keys',
    );
  },
);

t.test(
  'Vertex AI with the demo service account: Claude on streamRawPredict and Gemini on Chat Completions, one token',
  async (t) => {
    const { s, key } = await demoStack(t);
    const anthropic = new Anthropic({ baseURL: s.url, apiKey: key, maxRetries: 0 });
    const msg = await anthropic.messages
      .stream({ model: 'anthropic/claude-sonnet-5.5', max_tokens: 32, messages: HELLO, ...only('gcp') })
      .finalMessage();
    t.equal(msg.stop_reason, 'end_turn');
    const gemini = await new OpenAI({ baseURL: s.v1, apiKey: key, maxRetries: 0 }).chat.completions.create({
      model: 'google/gemini-3.8-flash',
      messages: HELLO,
      ...only('gcp'),
    });
    t.equal(gemini.model, 'google/gemini-3.8-flash');
    const base = '/v1/projects/pi-gateway-demo/locations/us-east5';
    const [claude, chat] = inference(s);
    t.match(claude?.path, new RegExp(`^${base}/publishers/anthropic/models/claude-sonnet-5-5:streamRawPredict$`));
    t.equal(chat?.path, `${base}/endpoints/openapi/chat/completions`);
    t.equal(bodyOf(chat)['model'], 'google/gemini-3.8-flash');
    t.same(
      tokenCalls(s).map((r) => r.path),
      ['/token'],
      'one JWT-bearer exchange at the re-pointed token_uri',
    );
    t.match(claude?.headers['authorization'], /^Bearer sim-token-/);
    t.equal(chat?.headers['authorization'], claude?.headers['authorization'], 'the cached token serves both');
  },
);

t.test('Azure OpenAI with the demo Entra client credentials', async (t) => {
  const { s, key } = await demoStack(t);
  const chat = await new OpenAI({ baseURL: s.v1, apiKey: key, maxRetries: 0 }).chat.completions.create({
    model: 'openai/gpt-6-luna',
    messages: HELLO,
    ...only('azure'),
  });
  t.equal(chat.model, 'openai/gpt-6-luna');
  t.same(
    tokenCalls(s).map((r) => r.path),
    ['/pi-gateway-demo/oauth2/v2.0/token'],
  );
  const [call] = inference(s);
  t.equal(call?.path, '/openai/deployments/gpt-6-luna/chat/completions');
  t.equal(call?.query, 'api-version=2024-10-21');
  t.match(call?.headers['authorization'], /^Bearer sim-token-/);
  t.equal(call?.headers['api-key'], undefined);
});

async function freePort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const port = (srv.address() as { port: number }).port;
  await new Promise<void>((r) => srv.close(() => r()));
  return port;
}

t.test('`pi-gateway demo` answers on Bedrock, Vertex and Azure, also after a restart on the same state', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'pi-demo-clouds-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  for (const round of ['first start', 'restart']) {
    const [port, simPort] = [await freePort(), await freePort()];
    const env = { ...process.env };
    delete env['PI_CONFIG'];
    const demo = spawn(
      process.execPath,
      ['src/cli/main.ts', 'demo', '--dir', dir, '--port', String(port), '--sim-port', String(simPort)],
      { cwd: REPO, env, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    const exited = new Promise((r) => demo.on('close', r));
    let out = '';
    demo.stdout.on('data', (d: Buffer) => (out += d.toString()));
    demo.stderr.on('data', () => undefined);
    try {
      const until = Date.now() + 90_000;
      while (!out.includes('stops both.') && Date.now() < until) await new Promise((r) => setTimeout(r, 100));
      const key = /API key \(workspace acme\): (sk-pi-\S+)/.exec(out)?.[1] ?? '';
      t.not(key, '', `${round}: the demo started`);
      const post = (path: string, body: object) =>
        fetch(`http://127.0.0.1:${port}${path}`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          body: JSON.stringify(body),
        });
      const calls: Array<[string, string, object]> = [
        [
          'aws',
          '/v1/messages',
          { model: 'anthropic/claude-sonnet-5.5', max_tokens: 16, stream: true, messages: HELLO },
        ],
        ['gcp', '/v1/messages', { model: 'anthropic/claude-haiku-5.5', max_tokens: 16, messages: HELLO }],
        ['gcp', '/v1/chat/completions', { model: 'google/gemini-3.8-flash', messages: HELLO }],
        ['azure', '/v1/chat/completions', { model: 'openai/gpt-6-luna', messages: HELLO }],
      ];
      for (const [provider, path, body] of calls) {
        const res = await post(path, { ...body, provider: { only: [provider] } });
        const text = await res.text();
        t.equal(res.status, 200, `${round}: ${provider} ${path} ${res.status === 200 ? '' : text}`);
        t.equal(res.headers.get('x-pi-provider'), provider);
      }
    } finally {
      demo.kill('SIGTERM');
      await exited;
    }
  }
});
