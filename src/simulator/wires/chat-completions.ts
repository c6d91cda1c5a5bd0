// OpenAI Chat Completions: the indented JSON completion, and the `data:` chunk stream (role chunk,
// content deltas, finish chunk, optional usage chunk, [DONE]) with OpenAI's field order.
import { chatCompletionId, obfuscationPool, systemFingerprint } from '../ids.ts';
import { compileTemplate, slot } from '../json-template.ts';
import { customErrorBody, openaiErrorDetails } from '../wire-errors.ts';
import {
  type Body,
  type ReplyContext,
  type StreamEvents,
  type Wire,
  intField,
  missingParameter,
  objectField,
} from '../wire.ts';

const FINGERPRINT = systemFingerprint();
const OBFUSCATION = obfuscationPool();

function shape(withModel: boolean): unknown {
  return {
    id: slot('id'),
    object: 'chat.completion',
    created: slot('created'),
    ...(withModel ? { model: slot('model') } : {}),
    choices: [
      {
        index: 0,
        message: { role: 'assistant', content: slot('content'), refusal: null, annotations: [] },
        logprobs: null,
        finish_reason: slot('finish'),
      },
    ],
    usage: {
      prompt_tokens: slot('pt'),
      completion_tokens: slot('ct'),
      total_tokens: slot('tt'),
      prompt_tokens_details: { cached_tokens: slot('cached'), audio_tokens: 0 },
      completion_tokens_details: {
        reasoning_tokens: slot('rt'),
        audio_tokens: 0,
        accepted_prediction_tokens: 0,
        rejected_prediction_tokens: 0,
      },
    },
    service_tier: 'default',
    system_fingerprint: FINGERPRINT,
  };
}

const JSON_BODY = [compileTemplate(shape(false), 2), compileTemplate(shape(true), 2)] as const;

const ROLE_CHOICE =
  '{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}';

function usageJson(ctx: ReplyContext): string {
  const u = ctx.usage;
  return (
    `{"prompt_tokens":${u.prompt},"completion_tokens":${u.completion},"total_tokens":${u.prompt + u.completion},` +
    `"prompt_tokens_details":{"cached_tokens":${u.cached},"audio_tokens":0},` +
    `"completion_tokens_details":{"reasoning_tokens":${u.reasoning},"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}}`
  );
}

function chunkHead(id: string, ctx: ReplyContext): string {
  const model = ctx.reportModel === null ? '' : `,"model":${JSON.stringify(ctx.reportModel)}`;
  return `data: {"id":"${id}","object":"chat.completion.chunk","created":${ctx.created}${model},"service_tier":"default","system_fingerprint":"${FINGERPRINT}","choices":[`;
}

export const chatCompletions: Wire = {
  family: 'openai',

  validate(body, route) {
    if (route.urlModel === undefined && typeof body['model'] !== 'string') return missingParameter('model');
    if (!Array.isArray(body['messages'])) return missingParameter('messages');
    return null;
  },

  isStream(body) {
    return body['stream'] === true;
  },

  maxTokens(body: Body) {
    return intField(body, 'max_completion_tokens') ?? intField(body, 'max_tokens');
  },

  json(ctx) {
    const u = ctx.usage;
    return JSON_BODY[ctx.reportModel === null ? 0 : 1].render({
      id: chatCompletionId(),
      created: ctx.created,
      model: ctx.reportModel,
      content: ctx.text.full,
      finish: ctx.text.truncated ? 'length' : 'stop',
      pt: u.prompt,
      ct: u.completion,
      tt: u.prompt + u.completion,
      cached: u.cached,
      rt: u.reasoning,
    });
  },

  events(ctx): StreamEvents {
    const opts = objectField(ctx.body, 'stream_options');
    const includeUsage = opts?.['include_usage'] === true;
    const obfuscate = opts?.['include_obfuscation'] !== false;
    const head = chunkHead(chatCompletionId(), ctx);
    const usageNull = includeUsage ? ',"usage":null' : '';
    let n = 0;
    const end = () =>
      obfuscate ? `${usageNull},"obfuscation":"${OBFUSCATION[n++ % OBFUSCATION.length]}"}\n\n` : `${usageNull}}\n\n`;
    const preamble = [head + ROLE_CHOICE + ']' + end()];
    const content = ctx.text.pieces.map(
      (p) =>
        head +
        '{"index":0,"delta":{"content":' +
        JSON.stringify(p) +
        '},"logprobs":null,"finish_reason":null}]' +
        end(),
    );
    const finish = ctx.text.truncated ? 'length' : 'stop';
    const tail = [head + `{"index":0,"delta":{},"logprobs":null,"finish_reason":"${finish}"}]` + end()];
    if (includeUsage && !ctx.behaviour.noUsageInStream) {
      const obf = obfuscate ? `,"obfuscation":"${OBFUSCATION[n++ % OBFUSCATION.length]}"` : '';
      tail.push(head + '],"usage":' + usageJson(ctx) + obf + '}\n\n');
    }
    tail.push('data: [DONE]\n\n');
    return { preamble, content, tail };
  },

  inbandError(ctx) {
    const b = ctx.behaviour;
    if (b.errorBody !== undefined) return [`data: ${customErrorBody(b.errorBody)}\n\n`];
    const d = openaiErrorDetails(500, ctx.model);
    return [
      `data: ${JSON.stringify({ error: { message: d.message, type: d.type, param: d.param, code: d.code } })}\n\n`,
    ];
  },

  malformed(ctx) {
    return `data: {"id":"chatcmpl-malformed","object":"chat.completion.chunk","created":${ctx.created},"choices":[{"index":0,"delta":{"content":"\n\n`;
  },
};
