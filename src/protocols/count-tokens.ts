// Messages token counting (POST /v1/messages/count_tokens): a Messages body without `max_tokens`
// (the Anthropic SDK's `messages.countTokens()`), forwarded as it is but for `model`; the answer is
// `{"input_tokens": n}`, passed on as the provider sent it. Never streamed, never billed. Errors on
// this path are in the Messages shape.
import { validationFailed } from '../errors.ts';
import { COUNT_TOKENS_ENDPOINT } from '../observe/request-row.ts';
import { readJsonRequest } from './json-request.ts';
import { messages } from './messages.ts';
import { missingField } from './routing-fields.ts';
import { isObject, type JsonAnswer, type ProtocolModule, type StreamTap } from './types.ts';

/** A provider that answers a count with an event stream answers nothing usable: every event is
 *  malformed, so the attempt fails over (nothing is committed). */
const NO_STREAM: Omit<StreamTap, 'onEvent'> = {
  upstreamModel: null,
  completed: false,
  contentEvents: 0,
  contentBytes: 0,
  usage: () => null,
  inputUsage: () => null,
};

export const countTokens: ProtocolModule = {
  endpoints: [COUNT_TOKENS_ENDPOINT],
  bodyDelivery: () => 'buffer',
  read: (req, endpoint) => readJsonRequest(req, endpoint, countTokens),
  validate(body) {
    const msgs = body['messages'];
    if (msgs === undefined || msgs === null) throw missingField('messages');
    if (!Array.isArray(msgs)) throw validationFailed('messages must be an array');
  },
  wantsStream: () => false,
  // Nothing is held or billed: a count has no output.
  outputBound: () => 0,
  prepare: (original, target) => ({ ...original, model: target.deployment.upstreamModel }),
  tap: () => ({ ...NO_STREAM, onEvent: (ev) => ({ kind: 'malformed', out: ev }) }),
  readJson(body): JsonAnswer | null {
    let obj: unknown;
    try {
      obj = JSON.parse(body.toString('utf8'));
    } catch {
      return null;
    }
    if (!isObject(obj)) return null;
    const n = obj['input_tokens'];
    if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < 0) return null;
    return { body, upstreamModel: null, usage: null };
  },
  inbandErrorStatus: messages.inbandErrorStatus,
  errorBody: messages.errorBody,
  providerErrorBody: messages.providerErrorBody,
  streamErrorEvent: messages.streamErrorEvent,
};
