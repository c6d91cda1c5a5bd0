// The Anthropic adapter through the shared adapter suite: `x-api-key` and `anthropic-version` (the
// client's, else the platform's `version` option, else 2023-06-01), the client's beta header
// forwarded, Messages only, bodies left as the protocol wrote them. Counts tokens at
// /v1/messages/count_tokens with the same headers, the body and the answer as they are.
import { anthropic } from '../../src/platforms/anthropic.ts';
import { runAdapterSuite } from './adapter-suite.ts';

const URL = 'https://api.anthropic.example/v1/messages';
const KEY: [string, string] = ['x-api-key', 'upstream-secret-anthropic'];
const DATE_PROBLEM = 'adapter "anthropic" option "version" must be a date like 2023-06-01';

runAdapterSuite({
  adapter: anthropic,
  id: 'anthropic',
  fixture: {
    adapterOptions: { version: '2024-10-22' },
    baseUrl: 'https://api.anthropic.example',
    upstreamModel: 'claude-x-20250101',
    credential: 'upstream-secret-anthropic',
  },
  endpoints: ['messages'],
  calls: [
    { endpoint: 'messages', url: URL, headers: [KEY, ['anthropic-version', '2024-10-22']] },
    { endpoint: 'messages', adapterOptions: {}, url: URL, headers: [KEY, ['anthropic-version', '2023-06-01']] },
    {
      endpoint: 'messages',
      clientHeaders: { 'anthropic-version': '2024-01-01', 'anthropic-beta': 'prompt-caching-2024-07-31' },
      url: URL,
      headers: [KEY, ['anthropic-version', '2024-01-01'], ['anthropic-beta', 'prompt-caching-2024-07-31']],
    },
  ],
  neverSends: ['authorization', 'api-key', 'x-goog-api-key'],
  bodies: [],
  counting: {
    calls: [
      { url: `${URL}/count_tokens`, headers: [KEY, ['anthropic-version', '2024-10-22']] },
      {
        clientHeaders: { 'anthropic-version': '2024-01-01', 'anthropic-beta': 'token-counting-2024-11-01' },
        url: `${URL}/count_tokens`,
        headers: [KEY, ['anthropic-version', '2024-01-01'], ['anthropic-beta', 'token-counting-2024-11-01']],
      },
    ],
    bodies: [
      {
        body: { model: 'claude-x-20250101', messages: [{ role: 'user', content: 'hi' }] },
        patched: { model: 'claude-x-20250101', messages: [{ role: 'user', content: 'hi' }] },
      },
    ],
  },
  options: [
    { options: {}, problems: [] },
    { options: { version: '2023-06-01' }, problems: [] },
    {
      options: { region: 'eu', version: 'June' },
      problems: ['adapter "anthropic" has no option "region"', DATE_PROBLEM],
    },
    { options: { version: 20230601 }, problems: [DATE_PROBLEM] },
  ],
});
