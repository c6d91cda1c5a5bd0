// Table tests for the usage extractors: real-shaped payloads from each wire format, and the
// malformed reports each extractor must refuse.
import t from 'tap';
import {
  type Usage,
  usageFromChatCompletions,
  usageFromImages,
  usageFromMessages,
  usageFromResponses,
} from '../../src/billing/usage.ts';

type Case<G> = [string, { given: G; want: Usage | null }];

const chatCases: Case<unknown>[] = [
  [
    'plain chat completion',
    {
      given: { prompt_tokens: 19, completion_tokens: 10, total_tokens: 29 },
      want: { promptTokens: 19, completionTokens: 10 },
    },
  ],
  [
    'OpenAI with cached and reasoning details',
    {
      given: {
        prompt_tokens: 2006,
        completion_tokens: 300,
        total_tokens: 2306,
        prompt_tokens_details: { cached_tokens: 1920, audio_tokens: 0 },
        completion_tokens_details: {
          reasoning_tokens: 192,
          audio_tokens: 0,
          accepted_prediction_tokens: 0,
          rejected_prediction_tokens: 0,
        },
      },
      want: {
        promptTokens: 2006,
        completionTokens: 300,
        cacheReadTokens: 1920,
        audioInputTokens: 0,
        reasoningTokens: 192,
        audioOutputTokens: 0,
      },
    },
  ],
  [
    'audio model in and out',
    {
      given: {
        prompt_tokens: 120,
        completion_tokens: 400,
        total_tokens: 520,
        prompt_tokens_details: { cached_tokens: 0, audio_tokens: 100 },
        completion_tokens_details: { reasoning_tokens: 0, audio_tokens: 350 },
      },
      want: {
        promptTokens: 120,
        completionTokens: 400,
        cacheReadTokens: 0,
        audioInputTokens: 100,
        reasoningTokens: 0,
        audioOutputTokens: 350,
      },
    },
  ],
  [
    'details null (Azure-style) count as not reported',
    {
      given: {
        prompt_tokens: 5,
        completion_tokens: 6,
        total_tokens: 11,
        prompt_tokens_details: null,
        completion_tokens_details: null,
      },
      want: { promptTokens: 5, completionTokens: 6 },
    },
  ],
  [
    'DeepSeek cache hit fields',
    {
      given: {
        prompt_tokens: 21530,
        completion_tokens: 9,
        total_tokens: 21539,
        prompt_cache_hit_tokens: 320,
        prompt_cache_miss_tokens: 21210,
      },
      want: { promptTokens: 21530, completionTokens: 9, cacheReadTokens: 320 },
    },
  ],
  [
    'cached_tokens wins over prompt_cache_hit_tokens',
    {
      given: {
        prompt_tokens: 100,
        completion_tokens: 1,
        prompt_tokens_details: { cached_tokens: 64 },
        prompt_cache_hit_tokens: 64,
        prompt_cache_miss_tokens: 36,
      },
      want: { promptTokens: 100, completionTokens: 1, cacheReadTokens: 64 },
    },
  ],
  [
    'relay carrying Anthropic cache counts',
    {
      given: {
        prompt_tokens: 98805,
        completion_tokens: 5120,
        total_tokens: 103925,
        prompt_tokens_details: { cached_tokens: 66360 },
        cache_read_input_tokens: 66360,
        cache_creation_input_tokens: 32435,
        completion_tokens_details: { reasoning_tokens: 1710 },
      },
      want: {
        promptTokens: 98805,
        completionTokens: 5120,
        cacheReadTokens: 66360,
        cacheWriteTokens: 32435,
        reasoningTokens: 1710,
      },
    },
  ],
  [
    'zero usage',
    {
      given: { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 },
      want: { promptTokens: 0, completionTokens: 0 },
    },
  ],
  ['missing completion_tokens', { given: { prompt_tokens: 5, total_tokens: 5 }, want: null }],
  ['missing prompt_tokens', { given: { completion_tokens: 5 }, want: null }],
  ['negative count', { given: { prompt_tokens: -1, completion_tokens: 5 }, want: null }],
  ['fractional count', { given: { prompt_tokens: 1.5, completion_tokens: 5 }, want: null }],
  ['string count', { given: { prompt_tokens: '12', completion_tokens: 5 }, want: null }],
  [
    'malformed optional detail',
    { given: { prompt_tokens: 12, completion_tokens: 5, prompt_tokens_details: { cached_tokens: -3 } }, want: null },
  ],
  [
    'details not an object',
    { given: { prompt_tokens: 12, completion_tokens: 5, completion_tokens_details: 7 }, want: null },
  ],
  ['unsafe integer', { given: { prompt_tokens: 2 ** 53, completion_tokens: 5 }, want: null }],
  ['not an object', { given: 'usage', want: null }],
  ['null', { given: null, want: null }],
  ['array', { given: [1, 2], want: null }],
];

const responsesCases: Case<unknown>[] = [
  [
    'Responses with cached and reasoning details',
    {
      given: {
        input_tokens: 36,
        input_tokens_details: { cached_tokens: 0 },
        output_tokens: 87,
        output_tokens_details: { reasoning_tokens: 64 },
        total_tokens: 123,
      },
      want: { promptTokens: 36, completionTokens: 87, cacheReadTokens: 0, reasoningTokens: 64 },
    },
  ],
  [
    'Responses long cached prompt',
    {
      given: {
        input_tokens: 150_000,
        input_tokens_details: { cached_tokens: 140_032 },
        output_tokens: 2_000,
        output_tokens_details: { reasoning_tokens: 0 },
        total_tokens: 152_000,
      },
      want: { promptTokens: 150_000, completionTokens: 2_000, cacheReadTokens: 140_032, reasoningTokens: 0 },
    },
  ],
  [
    'Responses without details',
    { given: { input_tokens: 3, output_tokens: 4, total_tokens: 7 }, want: { promptTokens: 3, completionTokens: 4 } },
  ],
  ['chat-shaped usage is not Responses usage', { given: { prompt_tokens: 3, completion_tokens: 4 }, want: null }],
  ['negative output', { given: { input_tokens: 3, output_tokens: -4 }, want: null }],
];

const messagesCases: Case<[unknown, unknown]>[] = [
  [
    'non-stream body usage',
    {
      given: [
        {
          input_tokens: 2095,
          output_tokens: 503,
          cache_creation_input_tokens: null,
          cache_read_input_tokens: null,
          server_tool_use: null,
          service_tier: 'standard',
        },
        undefined,
      ],
      want: { promptTokens: 2095, completionTokens: 503 },
    },
  ],
  [
    'stream start + delta: output from the delta (cumulative)',
    {
      given: [
        {
          input_tokens: 472,
          output_tokens: 2,
          cache_creation_input_tokens: 0,
          cache_read_input_tokens: 0,
          service_tier: 'standard',
        },
        { output_tokens: 89 },
      ],
      want: { promptTokens: 472, completionTokens: 89, cacheReadTokens: 0, cacheWriteTokens: 0 },
    },
  ],
  [
    'stream cut before message_delta: output from the start',
    {
      given: [{ input_tokens: 472, output_tokens: 1 }, undefined],
      want: { promptTokens: 472, completionTokens: 1 },
    },
  ],
  [
    'cache reads and writes are added to input_tokens',
    {
      given: [
        {
          input_tokens: 12,
          output_tokens: 1,
          cache_creation_input_tokens: 1800,
          cache_read_input_tokens: 2495,
          cache_creation: { ephemeral_5m_input_tokens: 1800, ephemeral_1h_input_tokens: 0 },
        },
        { output_tokens: 240 },
      ],
      want: {
        promptTokens: 4307,
        completionTokens: 240,
        cacheReadTokens: 2495,
        cacheWriteTokens: 1800,
        cacheWrite1hTokens: 0,
      },
    },
  ],
  [
    'write tiers split 5m / 1h',
    {
      given: [
        {
          input_tokens: 50,
          output_tokens: 1,
          cache_creation_input_tokens: 10_000,
          cache_read_input_tokens: 0,
          cache_creation: { ephemeral_5m_input_tokens: 4_000, ephemeral_1h_input_tokens: 6_000 },
        },
        { output_tokens: 300 },
      ],
      want: {
        promptTokens: 10_050,
        completionTokens: 300,
        cacheReadTokens: 0,
        cacheWriteTokens: 4_000,
        cacheWrite1hTokens: 6_000,
      },
    },
  ],
  [
    'split reported without the total',
    {
      given: [
        {
          input_tokens: 50,
          output_tokens: 7,
          cache_creation: { ephemeral_5m_input_tokens: 100, ephemeral_1h_input_tokens: 200 },
        },
        undefined,
      ],
      want: { promptTokens: 350, completionTokens: 7, cacheWriteTokens: 100, cacheWrite1hTokens: 200 },
    },
  ],
  [
    'web search requests from the final delta',
    {
      given: [
        {
          input_tokens: 2679,
          output_tokens: 3,
          cache_creation_input_tokens: 0,
          cache_read_input_tokens: 0,
          server_tool_use: { web_search_requests: 0 },
        },
        {
          input_tokens: 10682,
          output_tokens: 510,
          cache_creation_input_tokens: 0,
          cache_read_input_tokens: 0,
          server_tool_use: { web_search_requests: 1, web_fetch_requests: 0 },
        },
      ],
      want: { promptTokens: 10682, completionTokens: 510, cacheReadTokens: 0, cacheWriteTokens: 0, webSearchCalls: 1 },
    },
  ],
  [
    'delta nulls fall back to the start',
    {
      given: [
        { input_tokens: 100, output_tokens: 1, cache_read_input_tokens: 900, cache_creation_input_tokens: 0 },
        {
          input_tokens: null,
          cache_read_input_tokens: null,
          cache_creation_input_tokens: null,
          output_tokens: 42,
          server_tool_use: null,
        },
      ],
      want: { promptTokens: 1000, completionTokens: 42, cacheReadTokens: 900, cacheWriteTokens: 0 },
    },
  ],
  [
    'thinking tokens breakdown',
    {
      given: [
        { input_tokens: 40, output_tokens: 1 },
        { output_tokens: 1200, output_tokens_details: { thinking_tokens: 900 } },
      ],
      want: { promptTokens: 40, completionTokens: 1200, reasoningTokens: 900 },
    },
  ],
  ['nothing', { given: [undefined, undefined], want: null }],
  ['start without input_tokens', { given: [{ output_tokens: 3 }, { output_tokens: 9 }], want: null }],
  ['start not an object', { given: ['x', { output_tokens: 9 }], want: null }],
  ['malformed delta count', { given: [{ input_tokens: 5, output_tokens: 1 }, { output_tokens: 2.5 }], want: null }],
  [
    'malformed server_tool_use',
    {
      given: [{ input_tokens: 5, output_tokens: 1, server_tool_use: { web_search_requests: -1 } }, undefined],
      want: null,
    },
  ],
];

const imagesCases: Case<unknown>[] = [
  [
    'gpt-image generation',
    {
      given: {
        total_tokens: 4210,
        input_tokens: 50,
        output_tokens: 4160,
        input_tokens_details: { text_tokens: 50, image_tokens: 0 },
      },
      want: { promptTokens: 50, completionTokens: 4160, imageInputTokens: 0, imageOutputTokens: 4160 },
    },
  ],
  [
    'gpt-image edit with an input image',
    {
      given: {
        total_tokens: 5560,
        input_tokens: 1400,
        output_tokens: 4160,
        input_tokens_details: { text_tokens: 40, image_tokens: 1360 },
      },
      want: { promptTokens: 1400, completionTokens: 4160, imageInputTokens: 1360, imageOutputTokens: 4160 },
    },
  ],
  [
    'output breakdown present',
    {
      given: {
        total_tokens: 1300,
        input_tokens: 100,
        output_tokens: 1200,
        input_tokens_details: { text_tokens: 100, image_tokens: 0 },
        output_tokens_details: { image_tokens: 1056, text_tokens: 144 },
      },
      want: { promptTokens: 100, completionTokens: 1200, imageInputTokens: 0, imageOutputTokens: 1056 },
    },
  ],
  ['dall-e response has no usage', { given: undefined, want: null }],
  [
    'missing output_tokens',
    { given: { input_tokens: 50, input_tokens_details: { text_tokens: 50, image_tokens: 0 } }, want: null },
  ],
];

function run<G>(name: string, cases: Case<G>[], fn: (g: G) => Usage | null): void {
  t.test(name, async (t) => {
    for (const [caseName, { given, want }] of cases) t.strictSame(fn(given), want, caseName);
  });
}

run('usageFromChatCompletions', chatCases, usageFromChatCompletions);
run('usageFromResponses', responsesCases, usageFromResponses);
run('usageFromMessages', messagesCases, ([start, delta]) => usageFromMessages(start, delta));
run('usageFromImages', imagesCases, usageFromImages);

t.test('absent is not zero: unreported fields are missing keys', async (t) => {
  const u = usageFromChatCompletions({ prompt_tokens: 1, completion_tokens: 2 });
  t.ok(u);
  t.notOk(u !== null && 'cacheReadTokens' in u, 'no cacheReadTokens key');
  const z = usageFromChatCompletions({
    prompt_tokens: 1,
    completion_tokens: 2,
    prompt_tokens_details: { cached_tokens: 0 },
  });
  t.equal(z?.cacheReadTokens, 0, 'reported zero stays zero');
});
