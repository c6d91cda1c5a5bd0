// The Azure OpenAI adapter through the shared adapter suite: the deployment name (the upstream model
// id) in the path, the required `api_version` option as a query parameter, Responses on the v1 API,
// the key in `api-key` and never a bearer header; bodies left as the protocol wrote them.
import { azureOpenai } from '../../src/platforms/azure-openai.ts';
import { runAdapterSuite } from './adapter-suite.ts';

const BASE = 'https://acme.openai.azure.example';
const DEPLOYMENT = `${BASE}/openai/deployments/small-deployment`;
const KEY: [string, string] = ['api-key', 'upstream-secret-azure'];
const NEEDS_VERSION = 'adapter "azure-openai" needs option "api_version" (a string such as "2024-10-21")';

runAdapterSuite({
  adapter: azureOpenai,
  id: 'azure-openai',
  fixture: {
    adapterOptions: { api_version: '2024-10-21' },
    baseUrl: BASE,
    upstreamModel: 'small-deployment',
    credential: 'upstream-secret-azure',
  },
  endpoints: ['chat_completions', 'responses', 'images_generations', 'images_edits'],
  calls: [
    { endpoint: 'chat_completions', url: `${DEPLOYMENT}/chat/completions?api-version=2024-10-21`, headers: [KEY] },
    {
      endpoint: 'chat_completions',
      adapterOptions: { api_version: '2025-01-01 preview' },
      url: `${DEPLOYMENT}/chat/completions?api-version=2025-01-01%20preview`,
      headers: [KEY],
    },
    // The v1 API: no deployment in the path (the body's model names it), no api-version.
    { endpoint: 'responses', url: `${BASE}/openai/v1/responses`, headers: [KEY] },
    { endpoint: 'images_generations', url: `${DEPLOYMENT}/images/generations?api-version=2024-10-21`, headers: [KEY] },
    { endpoint: 'images_edits', url: `${DEPLOYMENT}/images/edits?api-version=2024-10-21`, headers: [KEY] },
  ],
  neverSends: ['authorization', 'x-api-key', 'x-goog-api-key'],
  bodies: [],
  options: [
    { options: {}, problems: [NEEDS_VERSION] },
    { options: { api_version: '2024-10-21' }, problems: [] },
    { options: { api_version: 20241021 }, problems: [NEEDS_VERSION] },
    {
      options: { api_version: '2024-10-21', region: 'eu' },
      problems: ['adapter "azure-openai" has no option "region"'],
    },
  ],
  errors: [
    {
      endpoint: 'chat_completions',
      status: 429,
      body: '{"error":{"code":"429","message":"Requests to the ChatCompletions_Create Operation have exceeded token rate limit. Please retry after 6 seconds."}}',
      read: {
        status: 429,
        type: 'rate_limit_error',
        code: null,
        message:
          'Requests to the ChatCompletions_Create Operation have exceeded token rate limit. Please retry after 6 seconds.',
      },
    },
    {
      endpoint: 'chat_completions',
      status: 400,
      body: '{"error":{"message":"The response was filtered","type":null,"param":"prompt","code":"content_filter","status":400,"innererror":{"code":"ResponsibleAIPolicyViolation"}}}',
      read: {
        status: 400,
        type: 'invalid_request_error',
        code: 'content_filter',
        message: 'The response was filtered',
        extra: { param: 'prompt', innererror: { code: 'ResponsibleAIPolicyViolation' } },
      },
    },
    {
      endpoint: 'images_generations',
      status: 401,
      body: '{"statusCode":401,"message":"Unauthorized. Access token is missing, invalid, audience is incorrect, or have expired."}',
      read: {
        status: 401,
        type: 'authentication_error',
        code: null,
        message: 'Unauthorized. Access token is missing, invalid, audience is incorrect, or have expired.',
      },
    },
    {
      endpoint: 'chat_completions',
      status: 404,
      body: '{"error":{"message":"no such deployment","type":"invalid_request_error","code":"DeploymentNotFound"}}',
      read: null,
    },
    {
      endpoint: 'responses',
      status: 429,
      body: '{"error":{"code":"too_many_requests","message":"Rate limit is exceeded. Try again in 6 seconds."}}',
      read: {
        status: 429,
        type: 'rate_limit_error',
        code: 'too_many_requests',
        message: 'Rate limit is exceeded. Try again in 6 seconds.',
      },
    },
  ],
});
