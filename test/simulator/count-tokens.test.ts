// The simulator's token counting on its three routes: Anthropic's /v1/messages/count_tokens, Vertex's
// count-tokens:rawPredict and Bedrock's CountTokens (with a Bedrock API key here; SigV4 is covered
// through the gateway). The count is deterministic — the prompt estimate a reply reports for the same
// body, or the scripted usage.prompt — and each route checks its body as the platform does.
import t from 'tap';
import { classify } from '../../src/simulator/routes.ts';
import { post, startSim } from './helpers.ts';

const MESSAGES = [{ role: 'user', content: [{ type: 'text', text: 'abcdefghij' }] }];
/** 10 characters of text + 6 of system: ceil(16 / 4). */
const COUNT = 4;

function b64(body: unknown): string {
  return Buffer.from(JSON.stringify(body)).toString('base64');
}

t.test('count routes are told apart from inference routes', async (t) => {
  t.same(classify('/v1/messages/count_tokens'), { kind: 'count', form: 'plain' });
  t.same(classify('/v1/projects/p/locations/l/publishers/anthropic/models/count-tokens:rawPredict'), {
    kind: 'count',
    form: 'vertex',
  });
  t.same(classify('/model/us.anthropic.claude-x-v1%3A0/count-tokens'), {
    kind: 'count',
    form: 'bedrock',
    urlModel: 'us.anthropic.claude-x-v1:0',
  });
  t.same(classify('/v1/messages'), { kind: 'inference', endpoint: 'messages', form: 'plain' });
});

t.test('the same deterministic count on every route, the same as a reply reports as input_tokens', async (t) => {
  const sim = await startSim(t);
  const body = { model: 'claude-x', messages: MESSAGES, system: 'system' };
  const anthropic = await post(`${sim.url}/v1/messages/count_tokens`, body);
  t.equal(anthropic.status, 200);
  t.same(await anthropic.json(), { input_tokens: COUNT });
  t.ok(anthropic.headers.get('request-id'), "Anthropic's request id header");
  const vertex = await post(
    `${sim.url}/v1/projects/p/locations/l/publishers/anthropic/models/count-tokens:rawPredict`,
    { ...body, anthropic_version: 'vertex-2023-10-16' },
  );
  t.same(await vertex.json(), { input_tokens: COUNT });
  const inner = { anthropic_version: 'bedrock-2023-05-31', max_tokens: 1, messages: MESSAGES, system: 'system' };
  const bedrock = await post(`${sim.url}/model/anthropic.claude-x-v1%3A0/count-tokens`, {
    input: { invokeModel: { body: b64(inner) } },
  });
  t.equal(bedrock.status, 200);
  t.same(await bedrock.json(), { inputTokens: COUNT });
  t.ok(bedrock.headers.get('x-amzn-requestid'));
  const reply = await post(`${sim.url}/v1/messages`, { ...body, max_tokens: 5 });
  t.match(await reply.json(), { usage: { input_tokens: COUNT } }, 'what the reply to the same body reports');
  t.same(
    sim.requests.map((r) => r.path),
    [
      '/v1/messages/count_tokens',
      '/v1/projects/p/locations/l/publishers/anthropic/models/count-tokens:rawPredict',
      '/model/anthropic.claude-x-v1%3A0/count-tokens',
      '/v1/messages',
    ],
    'recorded',
  );
});

t.test('scripts apply: usage.prompt is the count, a status is the error in the wire shape', async (t) => {
  const sim = await startSim(t);
  sim.script('claude-x', { usage: { prompt: 777 } }, 1);
  t.same(await (await post(`${sim.url}/v1/messages/count_tokens`, { model: 'claude-x', messages: MESSAGES })).json(), {
    input_tokens: 777,
  });
  sim.script('claude-x', { status: 529 }, 1);
  const overloaded = await post(`${sim.url}/v1/messages/count_tokens`, { model: 'claude-x', messages: MESSAGES });
  t.equal(overloaded.status, 529);
  t.match(await overloaded.json(), { type: 'error', error: { type: 'overloaded_error' } });
  sim.script('anthropic.claude-x-v1:0', { status: 429 }, 1);
  const inner = { anthropic_version: 'bedrock-2023-05-31', max_tokens: 1, messages: MESSAGES };
  const throttled = await post(`${sim.url}/model/anthropic.claude-x-v1%3A0/count-tokens`, {
    input: { invokeModel: { body: b64(inner) } },
  });
  t.equal(throttled.status, 429);
  t.match(throttled.headers.get('x-amzn-errortype'), /^ThrottlingException:/);
});

t.test('bodies are checked as each platform checks them', async (t) => {
  const sim = await startSim(t, { apiKey: 'k' });
  const noKey = await post(`${sim.url}/v1/messages/count_tokens`, { model: 'claude-x', messages: MESSAGES });
  t.equal(noKey.status, 401);
  const ok = { 'x-api-key': 'k' };
  const noModel = await post(`${sim.url}/v1/messages/count_tokens`, { messages: MESSAGES }, ok);
  t.equal(noModel.status, 400);
  t.match(await noModel.json(), { error: { message: 'model: Field required' } });
  const noVersion = await post(
    `${sim.url}/v1/projects/p/locations/l/publishers/anthropic/models/count-tokens:rawPredict`,
    { model: 'claude-x', messages: MESSAGES },
    ok,
  );
  t.equal(noVersion.status, 400);
  t.match(await noVersion.json(), { error: { message: 'anthropic_version: Field required' } });
  const bearer = { authorization: 'Bearer k' };
  const cases: [unknown, RegExp][] = [
    [{ messages: MESSAGES }, /invokeModel\.body/],
    [
      { input: { invokeModel: { body: b64({ anthropic_version: 'bedrock-2023-05-31', messages: MESSAGES }) } } },
      /max_tokens/,
    ],
    [
      {
        input: {
          invokeModel: {
            body: b64({ model: 'x', anthropic_version: 'bedrock-2023-05-31', max_tokens: 1, messages: MESSAGES }),
          },
        },
      },
      /extraneous key \[model\]/,
    ],
    [{ input: { invokeModel: { body: b64({ max_tokens: 1, messages: MESSAGES }) } } }, /anthropic_version/],
  ];
  for (const [body, message] of cases) {
    const res = await post(`${sim.url}/model/m/count-tokens`, body, bearer);
    t.equal(res.status, 400, JSON.stringify(body).slice(0, 80));
    t.match(res.headers.get('x-amzn-errortype'), /^ValidationException/);
    t.match(((await res.json()) as { message: string }).message, message);
  }
  const get = await fetch(`${sim.url}/v1/messages/count_tokens`);
  t.equal(get.status, 404, 'POST only');
});
