// The Bedrock adapter through the shared adapter suite: Messages to InvokeModel /
// InvokeModelWithResponseStream with the model id in the path (a colon encoded), Bedrock's body
// (no model/stream, anthropic_version, anthropic-beta as a list), Chat Completions to the
// OpenAI-compatible endpoint; AWS keys sign in authorize() (SigV4 scope from the resource region,
// session token), a Bedrock API key is a bearer token in request(); the event stream decodes to
// Messages SSE at every split point and errors map into the Messages error shape.
import { bedrock } from '../../src/platforms/bedrock.ts';
import { chunkMessage, exceptionMessage } from '../../src/simulator/event-stream-frames.ts';
import { runAdapterSuite } from './adapter-suite.ts';

const BASE = 'https://bedrock-runtime.us-east-1.amazonaws.com';
const KEYS = JSON.stringify({ access_key_id: 'AKIDTEST', secret_access_key: 'very-secret-key' });
const MODEL = `${BASE}/model/us.anthropic.claude-x-v1%3A0`;
const TURNS = [{ role: 'user', content: 'hi' }];
const JSON_ACCEPT: [string, string] = ['accept', 'application/json'];
const STREAM_ACCEPT: [string, string][] = [
  ['accept', 'application/vnd.amazon.eventstream'],
  ['x-amzn-bedrock-accept', 'application/json'],
];
const PING = '{"type": "ping"}';
const STOP = '{"type":"message_stop","amazon-bedrock-invocationMetrics":{"inputTokenCount":1}}';
const SIGNATURE =
  /^AWS4-HMAC-SHA256 Credential=AKIDTEST\/20260115\/us-east-1\/bedrock\/aws4_request, SignedHeaders=(accept;)?content-type;host;x-amz-content-sha256;x-amz-date(;x-amz-security-token)?(;x-amzn-bedrock-accept)?, Signature=[0-9a-f]{64}$/;

runAdapterSuite({
  adapter: bedrock,
  id: 'bedrock',
  fixture: { adapterOptions: {}, baseUrl: BASE, upstreamModel: 'us.anthropic.claude-x-v1:0', credential: KEYS },
  endpoints: ['messages', 'chat_completions'],
  credentialIn: 'authorize',
  calls: [
    { endpoint: 'messages', stream: false, url: `${MODEL}/invoke`, headers: [JSON_ACCEPT] },
    { endpoint: 'messages', stream: true, url: `${MODEL}/invoke-with-response-stream`, headers: STREAM_ACCEPT },
    { endpoint: 'chat_completions', url: `${BASE}/openai/v1/chat/completions`, headers: [] },
  ],
  neverSends: ['x-api-key', 'api-key', 'x-goog-api-key', 'anthropic-version', 'anthropic-beta'],
  bodies: [
    {
      endpoint: 'messages',
      body: { model: 'us.anthropic.claude-x-v1:0', max_tokens: 10, messages: TURNS, stream: true },
      patched: { max_tokens: 10, messages: TURNS, anthropic_version: 'bedrock-2023-05-31' },
    },
  ],
  options: [
    { options: {}, problems: [] },
    { options: { region: 'us-east-1' }, problems: ['adapter "bedrock" has no option "region"'] },
  ],
  authorizations: [
    {
      endpoint: 'messages',
      adds: { authorization: SIGNATURE, 'x-amz-date': '20260115T120000Z' },
      neverSent: ['very-secret-key'],
    },
    {
      endpoint: 'messages',
      stream: true,
      credential: JSON.stringify({
        access_key_id: 'AKIDTEST',
        secret_access_key: 'very-secret-key',
        session_token: 'sess-token',
      }),
      adds: { authorization: SIGNATURE, 'x-amz-security-token': 'sess-token' },
      neverSent: ['very-secret-key'],
    },
    { endpoint: 'chat_completions', adds: { authorization: SIGNATURE }, neverSent: ['very-secret-key'] },
    { endpoint: 'messages', credential: 'ABSKbedrock-api-key', adds: { authorization: 'Bearer ABSKbedrock-api-key' } },
  ],
  decodings: [
    {
      endpoint: 'messages',
      stream: false,
      streamType: 'application/vnd.amazon.eventstream',
    },
    {
      endpoint: 'messages',
      stream: true,
      streamType: 'application/vnd.amazon.eventstream',
      answer: {
        bytes: Buffer.concat([
          chunkMessage(PING),
          chunkMessage(STOP),
          exceptionMessage('throttlingException', 'slow down'),
        ]),
        sse: `event: ping\ndata: ${PING}\n\nevent: message_stop\ndata: ${STOP}\n\nevent: error\ndata: {"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}\n\n`,
      },
    },
  ],
  errors: [
    {
      endpoint: 'messages',
      status: 429,
      headers: { 'x-amzn-errortype': 'ThrottlingException:http://internal.amazon.com/coral/com.amazon.bedrock/' },
      body: '{"message":"Too many requests, please wait before trying again."}',
      read: {
        status: 429,
        type: 'rate_limit_error',
        code: 'ThrottlingException',
        message: 'Too many requests, please wait before trying again.',
      },
    },
    {
      endpoint: 'messages',
      status: 500,
      body: 'upstream exploded',
      read: { status: 500, type: 'api_error', code: null, message: 'Amazon Bedrock answered HTTP 500' },
    },
    {
      endpoint: 'messages',
      status: 400,
      headers: { 'x-amzn-errortype': 'ValidationException' },
      body: '{"message":"invalid beta flag"}',
      read: { status: 400, type: 'invalid_request_error', code: 'ValidationException', message: 'invalid beta flag' },
    },
    {
      endpoint: 'chat_completions',
      status: 429,
      body: '{"error":{"message":"slow down","type":"rate_limit_error","code":null}}',
      read: null,
    },
    {
      endpoint: 'chat_completions',
      status: 403,
      headers: { 'x-amzn-errortype': 'AccessDeniedException' },
      body: '{"message":"not authorized"}',
      read: { status: 403, type: 'permission_error', code: 'AccessDeniedException', message: 'not authorized' },
    },
  ],
  counting: {
    // CountTokens takes the foundation model: the inference profile's `us.` is dropped.
    calls: [
      {
        clientHeaders: { 'anthropic-beta': 'context-1m-2025-08-07' },
        url: `${BASE}/model/anthropic.claude-x-v1%3A0/count-tokens`,
        headers: [JSON_ACCEPT],
      },
    ],
    bodies: [
      {
        clientHeaders: { 'anthropic-beta': 'context-1m-2025-08-07' },
        body: { model: 'us.anthropic.claude-x-v1:0', messages: TURNS, system: 'terse' },
        patched: {
          input: {
            invokeModel: {
              body: base64({
                messages: TURNS,
                system: 'terse',
                anthropic_version: 'bedrock-2023-05-31',
                anthropic_beta: ['context-1m-2025-08-07'],
                max_tokens: 1,
              }),
            },
          },
        },
      },
      {
        // InvokeModel needs max_tokens above an extended-thinking budget.
        body: {
          model: 'us.anthropic.claude-x-v1:0',
          messages: TURNS,
          thinking: { type: 'enabled', budget_tokens: 2048 },
        },
        patched: {
          input: {
            invokeModel: {
              body: base64({
                messages: TURNS,
                thinking: { type: 'enabled', budget_tokens: 2048 },
                anthropic_version: 'bedrock-2023-05-31',
                max_tokens: 2049,
              }),
            },
          },
        },
      },
    ],
    answer: { body: '{"inputTokens":1234}', mapped: { input_tokens: 1234 } },
    unusable: ['{"input_tokens":12}', '{"inputTokens":-1}', '{"inputTokens":"12"}', 'not json', '[]'],
    error: {
      status: 400,
      headers: { 'x-amzn-errortype': 'ValidationException:http://internal.amazon.com/coral/com.amazon.bedrock/' },
      body: '{"message":"The provided model doesn\'t support counting tokens."}',
      mapped: {
        type: 'error',
        error: {
          type: 'invalid_request_error',
          code: 'ValidationException',
          message: "The provided model doesn't support counting tokens.",
        },
      },
    },
  },
});

function base64(body: unknown): string {
  return Buffer.from(JSON.stringify(body)).toString('base64');
}
