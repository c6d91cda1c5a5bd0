// Anthropic Messages (also Vertex rawPredict/streamRawPredict): the compact message JSON, and the
// named-event stream message_start, content_block_start, ping, content_block_delta…,
// content_block_stop, message_delta, message_stop.
import { anthropicMessageId } from '../ids.ts';
import { RawJson, compileTemplate, slot } from '../json-template.ts';
import { customErrorBody } from '../wire-errors.ts';
import { type ReplyContext, type StreamEvents, type Wire, intField } from '../wire.ts';

function shape(withModel: boolean, forStart: boolean): unknown {
  return {
    id: slot('id'),
    type: 'message',
    role: 'assistant',
    ...(withModel ? { model: slot('model') } : {}),
    content: forStart ? [] : [{ type: 'text', text: slot('text') }],
    stop_reason: forStart ? null : slot('stop_reason'),
    stop_sequence: null,
    usage: slot('usage'),
  };
}

const BODY = [compileTemplate(shape(false, false)), compileTemplate(shape(true, false))] as const;
const START = [compileTemplate(shape(false, true)), compileTemplate(shape(true, true))] as const;

function usageJson(ctx: ReplyContext, output: number): RawJson {
  const u = ctx.usage;
  return new RawJson(
    `{"input_tokens":${u.prompt},"cache_creation_input_tokens":${u.cacheWrite},"cache_read_input_tokens":${u.cached},` +
      `"cache_creation":{"ephemeral_5m_input_tokens":${u.cacheWrite},"ephemeral_1h_input_tokens":0},"output_tokens":${output},"service_tier":"standard"}`,
  );
}

const BLOCK_START =
  'event: content_block_start\ndata: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}\n\n';
const PING = 'event: ping\ndata: {"type": "ping"}\n\n';
const BLOCK_STOP = 'event: content_block_stop\ndata: {"type":"content_block_stop","index":0}\n\n';
const MESSAGE_STOP = 'event: message_stop\ndata: {"type":"message_stop"}\n\n';

export const messages: Wire = {
  family: 'anthropic',

  validate(body, route) {
    if (route.form === 'vertex' || route.form === 'bedrock') {
      if (typeof body['anthropic_version'] !== 'string')
        return { message: 'anthropic_version: Field required', type: 'invalid_request_error' };
    } else if (typeof body['model'] !== 'string')
      return { message: 'model: Field required', type: 'invalid_request_error' };
    if (!Array.isArray(body['messages'])) return { message: 'messages: Field required', type: 'invalid_request_error' };
    if (intField(body, 'max_tokens') === undefined)
      return { message: 'max_tokens: Field required', type: 'invalid_request_error' };
    return null;
  },

  isStream(body, route) {
    return route.form === 'vertex' || route.form === 'bedrock' ? route.urlStream === true : body['stream'] === true;
  },

  maxTokens(body) {
    return intField(body, 'max_tokens');
  },

  json(ctx) {
    return BODY[ctx.reportModel === null ? 0 : 1].render({
      id: anthropicMessageId(),
      model: ctx.reportModel,
      text: ctx.text.full,
      stop_reason: ctx.text.truncated ? 'max_tokens' : 'end_turn',
      usage: usageJson(ctx, ctx.usage.completion),
    });
  },

  events(ctx): StreamEvents {
    const message = START[ctx.reportModel === null ? 0 : 1].render({
      id: anthropicMessageId(),
      model: ctx.reportModel,
      usage: usageJson(ctx, 1),
    });
    const preamble = [
      `event: message_start\ndata: {"type":"message_start","message":${message}}\n\n`,
      BLOCK_START,
      PING,
    ];
    const content = ctx.text.pieces.map(
      (p) =>
        `event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":${JSON.stringify(p)}}}\n\n`,
    );
    const u = ctx.usage;
    const usage = ctx.behaviour.noUsageInStream
      ? ''
      : `,"usage":{"input_tokens":${u.prompt},"cache_creation_input_tokens":${u.cacheWrite},"cache_read_input_tokens":${u.cached},"output_tokens":${u.completion}}`;
    const stop = ctx.text.truncated ? 'max_tokens' : 'end_turn';
    const tail = [
      BLOCK_STOP,
      `event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"${stop}","stop_sequence":null}${usage}}\n\n`,
      MESSAGE_STOP,
    ];
    return { preamble, content, tail };
  },

  inbandError(ctx) {
    const data =
      ctx.behaviour.errorBody !== undefined
        ? customErrorBody(ctx.behaviour.errorBody)
        : '{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}';
    return [`event: error\ndata: ${data}\n\n`];
  },

  malformed() {
    return 'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"\n\n';
  },
};
