// The OpenAI-style adapter through the shared adapter suite: a bearer credential, endpoint paths
// appended to the base URL, and the Messages protocol's version/beta headers for Messages-speaking
// OpenAI-style servers; it takes no options and leaves bodies as the protocol wrote them.
import { openai } from '../../src/platforms/openai.ts';
import { runAdapterSuite } from './adapter-suite.ts';

const BASE = 'https://api.openai.example/v1';
const AUTH: [string, string] = ['authorization', 'Bearer upstream-secret-openai'];

runAdapterSuite({
  adapter: openai,
  id: 'openai',
  fixture: { adapterOptions: {}, baseUrl: BASE, upstreamModel: 'gpt-x', credential: 'upstream-secret-openai' },
  endpoints: ['chat_completions', 'responses', 'messages', 'images_generations', 'images_edits'],
  calls: [
    { endpoint: 'chat_completions', url: `${BASE}/chat/completions`, headers: [AUTH] },
    { endpoint: 'responses', url: `${BASE}/responses`, headers: [AUTH] },
    { endpoint: 'messages', url: `${BASE}/messages`, headers: [AUTH, ['anthropic-version', '2023-06-01']] },
    {
      endpoint: 'messages',
      clientHeaders: { 'anthropic-version': '2024-01-01', 'anthropic-beta': 'prompt-caching-2024-07-31' },
      url: `${BASE}/messages`,
      headers: [AUTH, ['anthropic-version', '2024-01-01'], ['anthropic-beta', 'prompt-caching-2024-07-31']],
    },
    {
      endpoint: 'chat_completions',
      clientHeaders: { 'anthropic-beta': 'b', 'openai-organization': 'org-client' },
      url: `${BASE}/chat/completions`,
      headers: [AUTH],
    },
    { endpoint: 'images_generations', url: `${BASE}/images/generations`, headers: [AUTH] },
    { endpoint: 'images_edits', url: `${BASE}/images/edits`, headers: [AUTH] },
  ],
  neverSends: ['x-api-key', 'api-key', 'x-goog-api-key', 'openai-organization'],
  bodies: [],
  options: [
    { options: {}, problems: [] },
    { options: { region: 'eu' }, problems: ['adapter "openai" has no option "region"'] },
  ],
});
