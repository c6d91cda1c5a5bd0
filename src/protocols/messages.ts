// Messages (POST /v1/messages): forwarded unchanged but for `model` (routing fields were removed
// before); the answer stays in Messages shape, with `model` set to the slug in the body and in
// message_start so that X-Pi-Model equals the body's model.
import { inputSide, type InputUsage, usageFromMessages, type Usage } from '../billing/usage.ts';
import { validationFailed } from '../errors.ts';
import { findStringValue, findValueBytes, hasNonNullKey, readString, sseDataStart } from '../stream/json-key.ts';
import { dataLooksWhole, parseSseEvent, sseEventName } from '../stream/sse-splitter.ts';
import { slugModel, slugParsedModel } from './model-field.ts';
import { readJsonRequest } from './json-request.ts';
import { providerErrorObject } from './provider-error.ts';
import { requestedOutputLimit } from './output-bound.ts';
import { checkPositiveInt } from './positive-int.ts';
import { missingField } from './routing-fields.ts';
import {
  isObject,
  jsonObjectOf,
  type JsonAnswer,
  type JsonObject,
  type ProtocolModule,
  type StreamTap,
  type TappedEvent,
} from './types.ts';

class MessagesTap implements StreamTap {
  upstreamModel: string | null = null;
  completed = false;
  contentEvents = 0;
  contentBytes = 0;
  private committed = false;
  private startUsage: unknown = undefined;
  private deltaUsage: unknown = undefined;
  private readonly slugJson: Buffer;
  constructor(slugJson: Buffer) {
    this.slugJson = slugJson;
  }

  /** Final once message_delta brought its usage (cumulative, the answer's own count); message_start's
   *  `output_tokens` (1) is provisional and never billed as the answer's output. */
  usage(): Usage | null {
    return this.deltaUsage === undefined ? null : usageFromMessages(this.startUsage, this.deltaUsage);
  }

  inputUsage(): InputUsage | null {
    if (this.startUsage === undefined) return null;
    const u = usageFromMessages(this.startUsage, undefined);
    return u === null ? null : inputSide(u);
  }

  private dataOf(ev: Buffer): JsonObject | null {
    return jsonObjectOf(parseSseEvent(ev).data ?? '');
  }

  onEvent(ev: Buffer): TappedEvent {
    // Deltas are relayed without a parse; a frame cut midway must still end the stream as broken.
    if (!dataLooksWhole(ev)) return { kind: 'malformed', out: ev };
    const name = sseEventName(ev);
    switch (name) {
      case 'content_block_delta':
        this.committed = true;
        this.contentEvents++;
        this.contentBytes += ev.length;
        return { kind: 'content', out: ev };
      case 'ping':
        return { kind: 'preamble', out: ev };
      case 'message_start': {
        const obj = this.dataOf(ev);
        if (!obj) return { kind: 'malformed', out: ev };
        const msg = isObject(obj['message']) ? obj['message'] : null;
        if (msg && typeof msg['model'] === 'string' && this.upstreamModel === null) this.upstreamModel = msg['model'];
        if (msg) this.startUsage = msg['usage'];
        const { out } = slugModel(ev, this.slugJson, sseDataStart(ev), 2, 'message');
        return { kind: this.committed ? 'content' : 'preamble', out };
      }
      case 'content_block_start': {
        // An empty text block is still preamble; a tool_use/thinking block is output.
        const obj = this.dataOf(ev);
        if (!obj) return { kind: 'malformed', out: ev };
        const block = isObject(obj['content_block']) ? obj['content_block'] : null;
        if (!this.committed && block && block['type'] === 'text' && !block['text'])
          return { kind: 'preamble', out: ev };
        this.committed = true;
        return { kind: 'content', out: ev };
      }
      case 'message_delta': {
        const obj = this.dataOf(ev);
        if (!obj) return { kind: 'malformed', out: ev };
        if (obj['usage'] !== undefined) this.deltaUsage = obj['usage'];
        this.committed = true;
        return isObject(obj['usage']) ? { kind: 'content', out: ev, usage: true } : { kind: 'content', out: ev };
      }
      case 'message_stop':
        this.completed = true;
        return { kind: this.committed ? 'terminal' : 'content', out: ev };
      case 'error':
        return { kind: 'error', out: ev };
      default:
        // content_block_stop and future event types: output once committed, preamble before.
        if (!this.committed) return { kind: 'preamble', out: ev };
        return { kind: 'content', out: ev };
    }
  }
}

/** Where a request sets its output limit (required on this protocol). */
const OUTPUT_LIMIT_FIELDS = ['max_tokens'];

/** The statuses Anthropic's API answers its error types with (its errors documentation). */
const ERROR_STATUS: Readonly<Record<string, number>> = {
  invalid_request_error: 400,
  authentication_error: 401,
  permission_error: 403,
  not_found_error: 404,
  request_too_large: 413,
  rate_limit_error: 429,
  api_error: 500,
  overloaded_error: 529,
};

/** An error body of a type not in the table (or of none): the provider failed in a way the gateway
 *  cannot classify, which is what 502 Bad Gateway says. */
const UNCLASSIFIED_ERROR_STATUS = 502;

/** The status of a Messages error body (`{"type":"error","error":{type, message}}`, or `{"error":{…}}`
 *  without the top-level type) sent with a 2xx status; null for any other body. */
export function messagesErrorStatus(body: Buffer): number | null {
  // A usable answer has neither a top-level `error` member nor `"type":"error"`: most bodies are
  // told apart without a parse.
  const type = findStringValue(body, 'type', 1);
  if (!hasNonNullKey(body, 'error', 1) && (type === null || readString(body, type) !== 'error')) return null;
  let obj: unknown;
  try {
    obj = JSON.parse(body.toString('utf8'));
  } catch {
    return null;
  }
  if (!isObject(obj)) return null;
  const error = isObject(obj['error']) ? obj['error'] : null;
  if (obj['type'] !== 'error' && error === null) return null;
  const errorType = error !== null && typeof error['type'] === 'string' ? error['type'] : '';
  return Object.hasOwn(ERROR_STATUS, errorType) ? (ERROR_STATUS[errorType] as number) : UNCLASSIFIED_ERROR_STATUS;
}

export const messages: ProtocolModule = {
  endpoints: ['messages'],
  bodyDelivery: () => 'buffer',
  read: (req, endpoint) => readJsonRequest(req, endpoint, messages),
  validate(body) {
    const msgs = body['messages'];
    if (msgs === undefined || msgs === null) throw missingField('messages');
    if (!Array.isArray(msgs)) throw validationFailed('messages must be an array');
    const mt = body['max_tokens'];
    if (mt === undefined || mt === null) throw missingField('max_tokens');
    checkPositiveInt(body, 'max_tokens');
    if (body['stream'] !== undefined && body['stream'] !== null && typeof body['stream'] !== 'boolean')
      throw validationFailed('stream must be a boolean');
  },
  wantsStream: (body) => body['stream'] === true,
  outputBound: (body, _endpoint, model) => requestedOutputLimit(body, OUTPUT_LIMIT_FIELDS, model),
  outputLimitFields: OUTPUT_LIMIT_FIELDS,
  prepare: (original, target) => ({ ...original, model: target.deployment.upstreamModel }),
  tap: (slugJson) => new MessagesTap(slugJson),
  readJson(body, slugJson): JsonAnswer | null {
    let obj: unknown;
    try {
      obj = JSON.parse(body.toString('utf8'));
    } catch {
      return null;
    }
    if (!isObject(obj) || obj['type'] === 'error') return null;
    const { out, reported } = slugParsedModel(body, slugJson, obj);
    const usageBytes = findValueBytes(body, 'usage', 1);
    return {
      body: out,
      upstreamModel: reported,
      usage: usageBytes ? usageFromMessages(JSON.parse(usageBytes.toString('utf8')), undefined) : null,
    };
  },
  // A Messages provider answering `200 {"type":"error",…}` is answering an error.
  inbandErrorStatus: messagesErrorStatus,
  // The Messages protocol's error body is `{"type":"error","error":{type, message}}`; its SDKs check
  // the top-level type (@ai-sdk/anthropic's schema requires it, else it shows only the status text).
  // The API's error object stays whole beside it (code included).
  errorBody: (err) => ({ type: 'error', ...err.toBody() }),
  // A cloud's error (a Vertex 429 in Google's shape, a Bedrock exception) in the same envelope.
  providerErrorBody: (err) => ({ type: 'error', error: providerErrorObject(err) }),
  streamErrorEvent(message) {
    return Buffer.from(
      `event: error\ndata: ${JSON.stringify({ type: 'error', error: { type: 'api_error', message } })}\n\n`,
    );
  },
};
