// Responses (POST /v1/responses): the body is forwarded as sent except `model` (no forced usage
// option on streams, docs/api.md); `model` is rewritten to the slug in the body and in every streamed
// event that carries the response object.
import { inputSide, type InputUsage, usageFromResponses, type Usage } from '../billing/usage.ts';
import { validationFailed } from '../errors.ts';
import { sseDataStart } from '../stream/json-key.ts';
import { dataLooksWhole, parseSseEvent, sseEventName } from '../stream/sse-splitter.ts';
import { readJsonBody } from './chat-completions.ts';
import { slugModel } from './model-field.ts';
import { readJsonRequest } from './json-request.ts';
import { requestedOutputLimit } from './output-bound.ts';
import { checkPositiveInt } from './positive-int.ts';
import { missingField } from './routing-fields.ts';
import {
  isObject,
  jsonObjectOf,
  type JsonObject,
  type ProtocolModule,
  type StreamTap,
  type TappedEvent,
} from './types.ts';

/** Events before any output: held until content arrives (commit point). */
const PREAMBLE = new Set([
  'response.created',
  'response.in_progress',
  'response.queued',
  'response.output_item.added',
  'response.content_part.added',
]);
/** Provider-side failure events. */
const FAILURE = new Set(['error', 'response.failed']);
/** Where a request sets its output limit. */
const OUTPUT_LIMIT_FIELDS = ['max_output_tokens'];
/** The normal ends of a Responses stream. */
const FINAL = new Set(['response.completed', 'response.incomplete']);

// Encoded once: a string needle is encoded again on every Buffer.indexOf call, for every event.
const MODEL_NAME = Buffer.from('"model"');
const RESPONSE_NAME = Buffer.from('"response"');
const UNICODE_ESCAPE = Buffer.from('\\u');

class ResponsesTap implements StreamTap {
  upstreamModel: string | null = null;
  completed = false;
  contentEvents = 0;
  contentBytes = 0;
  private committed = false;
  private lastUsage: Usage | null = null;
  private readonly slugJson: Buffer;
  constructor(slugJson: Buffer) {
    this.slugJson = slugJson;
  }

  /** Only response.completed/incomplete carry the answer's count; a usage on an earlier event is
   *  provisional (see inputUsage). */
  usage(): Usage | null {
    return this.lastUsage;
  }

  inputUsage(): InputUsage | null {
    return this.startInput;
  }

  /** Input counts from a usage on response.created/in_progress (providers normally send null there). */
  private startInput: InputUsage | null = null;

  onEvent(ev: Buffer): TappedEvent {
    // Only events carrying the response object have a model (at depth 2); deltas skip the scan
    // unless a \u escape could spell either name.
    let out = ev;
    if (ev.indexOf(MODEL_NAME) !== -1 || ev.indexOf(RESPONSE_NAME) !== -1 || ev.indexOf(UNICODE_ESCAPE) !== -1) {
      const r = slugModel(ev, this.slugJson, sseDataStart(ev), 2, 'response');
      if (this.upstreamModel === null && r.reported !== null) this.upstreamModel = r.reported;
      out = r.out;
    }
    // After the commit point a delta is recognised by its event line alone; the JSON is parsed only
    // when there is no event line or the event matters (model, usage, failure).
    const quick = this.committed && out === ev ? sseEventName(ev) : null;
    const skipParse = quick !== null && !FINAL.has(quick) && !FAILURE.has(quick);
    // The unparsed path still refuses a frame cut midway (it would break the client's parser).
    if (skipParse && !dataLooksWhole(ev)) return { kind: 'malformed', out };
    const { event, data } = skipParse ? { event: quick, data: null } : parseSseEvent(ev);
    let type = event;
    let obj: JsonObject | null = null;
    if (data !== null) {
      obj = jsonObjectOf(data);
      if (obj === null) return { kind: 'malformed', out };
      if (typeof obj['type'] === 'string') type = obj['type'];
    }
    if (type === null) return { kind: 'preamble', out };
    if (FAILURE.has(type)) return { kind: 'error', out };
    if (FINAL.has(type)) {
      const parsed = obj ?? this.parse(ev);
      const resp = parsed && isObject(parsed['response']) ? parsed['response'] : null;
      if (resp && resp['usage'] !== undefined && resp['usage'] !== null)
        this.lastUsage = usageFromResponses(resp['usage']);
      this.completed = true;
      const wasCommitted = this.committed;
      this.committed = true;
      return { kind: wasCommitted ? 'terminal' : 'content', out, usage: resp !== null && isObject(resp['usage']) };
    }
    if (!this.committed && PREAMBLE.has(type)) {
      if (obj !== null && (type === 'response.created' || type === 'response.in_progress')) this.readStartUsage(obj);
      return { kind: 'preamble', out };
    }
    this.committed = true;
    this.contentEvents++;
    this.contentBytes += ev.length;
    return { kind: 'content', out };
  }

  private readStartUsage(obj: JsonObject): void {
    const resp = isObject(obj['response']) ? obj['response'] : null;
    const u = resp && isObject(resp['usage']) ? usageFromResponses(resp['usage']) : null;
    if (u !== null) this.startInput = inputSide(u);
  }

  private parse(ev: Buffer): JsonObject | null {
    return jsonObjectOf(parseSseEvent(ev).data ?? '');
  }
}

export const responses: ProtocolModule = {
  endpoints: ['responses'],
  bodyDelivery: () => 'buffer',
  read: (req, endpoint) => readJsonRequest(req, endpoint, responses),
  validate(body) {
    const input = body['input'];
    if (input === undefined || input === null) throw missingField('input');
    if (typeof input !== 'string' && !Array.isArray(input))
      throw validationFailed('input must be a string or an array of input items');
    checkPositiveInt(body, 'max_output_tokens');
    if (body['stream'] !== undefined && body['stream'] !== null && typeof body['stream'] !== 'boolean')
      throw validationFailed('stream must be a boolean');
    const r = body['reasoning'];
    if (r !== undefined && r !== null && !isObject(r)) throw validationFailed('reasoning must be an object');
  },
  wantsStream: (body) => body['stream'] === true,
  outputBound: (body, _endpoint, model) => requestedOutputLimit(body, OUTPUT_LIMIT_FIELDS, model),
  outputLimitFields: OUTPUT_LIMIT_FIELDS,
  prepare: (original, target) => ({ ...original, model: target.deployment.upstreamModel }),
  tap: (slugJson) => new ResponsesTap(slugJson),
  usageEventContainer: 'response',
  readJson(body, slugJson) {
    const answer = readJsonBody(body, slugJson, usageFromResponses);
    // A 200 body whose status is `failed` is an in-band error: not a usable answer.
    if (answer && /"status"\s*:\s*"failed"/.test(body.toString('latin1', 0, Math.min(body.length, 4096)))) return null;
    return answer;
  },
  streamErrorEvent(message, code) {
    return Buffer.from(`event: error\ndata: ${JSON.stringify({ type: 'error', code, message, param: null })}\n\n`);
  },
};
