// The Vertex AI adapter through the shared adapter suite: an OAuth bearer token; Messages go to the
// Anthropic publisher's rawPredict (streamRawPredict when streaming) with the model in the URL and
// `anthropic_version` in the body instead of `model`; Chat Completions go to the OpenAI-compatible
// endpoint with the body untouched. Token counts go to the publisher's count-tokens:rawPredict with
// the model kept in the body and `anthropic_version` added; the answer is Messages' own.
import { vertex } from '../../src/platforms/vertex.ts';
import { runAdapterSuite } from './adapter-suite.ts';

const BASE = 'https://us-east5-aiplatform.example/v1/projects/p/locations/us-east5';
const AUTH: [string, string] = ['authorization', 'Bearer upstream-secret-gcp'];
const MODEL = `${BASE}/publishers/anthropic/models/claude-x%4020250101`;
const TURNS = [{ role: 'user', content: 'hi' }];

runAdapterSuite({
  adapter: vertex,
  id: 'vertex',
  fixture: { adapterOptions: {}, baseUrl: BASE, upstreamModel: 'claude-x@20250101', credential: 'upstream-secret-gcp' },
  endpoints: ['messages', 'chat_completions'],
  calls: [
    { endpoint: 'messages', stream: false, url: `${MODEL}:rawPredict`, headers: [AUTH] },
    { endpoint: 'messages', stream: true, url: `${MODEL}:streamRawPredict`, headers: [AUTH] },
    {
      endpoint: 'messages',
      stream: true,
      clientHeaders: { 'anthropic-version': '2024-01-01', 'anthropic-beta': 'prompt-caching-2024-07-31' },
      url: `${MODEL}:streamRawPredict`,
      headers: [AUTH, ['anthropic-beta', 'prompt-caching-2024-07-31']],
    },
    { endpoint: 'chat_completions', url: `${BASE}/endpoints/openapi/chat/completions`, headers: [AUTH] },
  ],
  neverSends: ['x-api-key', 'api-key', 'x-goog-api-key', 'anthropic-version'],
  bodies: [
    {
      endpoint: 'messages',
      body: { model: 'claude-x@20250101', max_tokens: 10, messages: TURNS },
      patched: { max_tokens: 10, messages: TURNS, anthropic_version: 'vertex-2023-10-16' },
    },
  ],
  options: [
    { options: {}, problems: [] },
    { options: { project: 'p' }, problems: ['adapter "vertex" has no option "project"'] },
  ],
  counting: {
    calls: [
      { url: `${BASE}/publishers/anthropic/models/count-tokens:rawPredict`, headers: [AUTH] },
      {
        clientHeaders: { 'anthropic-beta': 'context-1m-2025-08-07' },
        url: `${BASE}/publishers/anthropic/models/count-tokens:rawPredict`,
        headers: [AUTH, ['anthropic-beta', 'context-1m-2025-08-07']],
      },
    ],
    bodies: [
      {
        body: { model: 'claude-x@20250101', messages: TURNS },
        patched: { model: 'claude-x@20250101', messages: TURNS, anthropic_version: 'vertex-2023-10-16' },
      },
    ],
  },
  errors: [
    // Vertex's own errors (quota, permissions) come in Google's shape, on both endpoints.
    {
      endpoint: 'messages',
      status: 429,
      body: '{"error":{"code":429,"message":"Quota exceeded for aiplatform.googleapis.com/online_prediction_requests_per_base_model.","status":"RESOURCE_EXHAUSTED"}}',
      read: {
        status: 429,
        type: 'rate_limit_error',
        code: 'RESOURCE_EXHAUSTED',
        message: 'Quota exceeded for aiplatform.googleapis.com/online_prediction_requests_per_base_model.',
      },
    },
    {
      endpoint: 'chat_completions',
      status: 403,
      body: '[{"error":{"code":403,"message":"Permission denied on resource project p.","status":"PERMISSION_DENIED"}}]',
      read: {
        status: 403,
        type: 'permission_error',
        code: 'PERMISSION_DENIED',
        message: 'Permission denied on resource project p.',
      },
    },
    {
      endpoint: 'messages',
      status: 502,
      body: '<html>Bad Gateway</html>',
      read: { status: 502, type: 'api_error', code: null, message: 'Vertex AI answered HTTP 502' },
    },
    // Claude's own errors are already Messages errors; an OpenAI-shaped one already Chat's.
    {
      endpoint: 'messages',
      status: 529,
      body: '{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}',
      read: null,
    },
    {
      endpoint: 'chat_completions',
      status: 400,
      body: '{"error":{"message":"bad","type":"invalid_request_error","code":null}}',
      read: null,
    },
  ],
});
