// Chat Completions (POST /v1/chat/completions): request checks, the five rewrites of docs/api.md applied by
// patching a copy of the original body (never rebuilding it, so unknown fields pass through), and
// the reading of `chat.completion` bodies and `chat.completion.chunk` streams.
import { REASONING_LEVELS, type ReasoningLevel } from '../config/compiled.ts';
import { usageFromChatCompletions } from '../billing/usage.ts';
import { validationFailed } from '../errors.ts';
import {
  depthAt,
  hasNonNullKey,
  isNullAt,
  readString,
  spliceBytes,
  sseDataStart,
  withoutNullMember,
} from '../stream/json-key.ts';
import { asciiAt, dataLooksWhole, parseSseEvent } from '../stream/sse-splitter.ts';
import { editEvent, nullMemberCut, TopMembers } from '../stream/top-members.ts';
import { slugModel, slugParsedModel } from './model-field.ts';
import { splitBudget } from './reasoning-budget.ts';
import { readJsonRequest } from './json-request.ts';
import { requestedOutputLimit } from './output-bound.ts';
import { checkPositiveInt } from './positive-int.ts';
import { missingField } from './routing-fields.ts';
import {
  isObject,
  jsonObjectOf,
  type JsonAnswer,
  type JsonObject,
  type PrepareTarget,
  type ProtocolModule,
  type StreamTap,
  type TappedEvent,
  type TapHints,
} from './types.ts';
import type { Usage } from '../billing/usage.ts';

const LEVELS = new Set<string>(REASONING_LEVELS);
/** Where a request sets its output limit, the first one set winning. */
const OUTPUT_LIMIT_FIELDS = ['max_completion_tokens', 'max_tokens'];

function checkNumber(body: JsonObject, field: string): void {
  const v = body[field];
  if (v !== undefined && v !== null && typeof v !== 'number') throw validationFailed(`${field} must be a number`);
}

export function validateChat(body: JsonObject): void {
  const messages = body['messages'];
  if (messages === undefined || messages === null) throw missingField('messages');
  if (!Array.isArray(messages) || messages.length === 0) throw validationFailed('messages must be a non-empty array');
  messages.forEach((m, i) => {
    if (!isObject(m)) throw validationFailed(`messages[${i}] must be an object`);
    if (typeof m['role'] !== 'string') throw validationFailed(`messages[${i}].role must be a string`);
  });
  if (body['stream'] !== undefined && body['stream'] !== null && typeof body['stream'] !== 'boolean')
    throw validationFailed('stream must be a boolean');
  const so = body['stream_options'];
  if (so !== undefined && so !== null && !isObject(so)) throw validationFailed('stream_options must be an object');
  if (isObject(so) && so['include_usage'] !== undefined && typeof so['include_usage'] !== 'boolean')
    throw validationFailed('stream_options.include_usage must be a boolean');
  checkPositiveInt(body, 'max_tokens');
  checkPositiveInt(body, 'max_completion_tokens');
  checkNumber(body, 'temperature');
  checkNumber(body, 'top_p');
  const effort = body['reasoning_effort'];
  if (effort !== undefined && effort !== null && !(typeof effort === 'string' && LEVELS.has(effort))) {
    throw validationFailed(`reasoning_effort must be one of: ${REASONING_LEVELS.join(', ')}`);
  }
  const thinking = body['thinking'];
  if (thinking !== undefined && thinking !== null && !(isObject(thinking) && typeof thinking['type'] === 'string')) {
    throw validationFailed('thinking must be an object with a string type');
  }
  const reasoning = body['reasoning'];
  if (reasoning !== undefined && reasoning !== null && !isObject(reasoning))
    throw validationFailed('reasoning must be an object');
}

/** The level a request asks for, from `reasoning_effort` or `reasoning.effort`. */
function requestedLevel(body: JsonObject): ReasoningLevel | null {
  const e = body['reasoning_effort'];
  if (typeof e === 'string' && LEVELS.has(e)) return e as ReasoningLevel;
  const r = body['reasoning'];
  if (isObject(r) && typeof r['effort'] === 'string' && LEVELS.has(r['effort'])) return r['effort'] as ReasoningLevel;
  return null;
}

export function prepareChat(original: JsonObject, target: PrepareTarget): JsonObject {
  const body: JsonObject = { ...original, model: target.deployment.upstreamModel };
  const { platform, model } = target;

  // 1. A stream always reports usage, even when the client sent include_usage: false.
  if (body['stream'] === true) {
    const so = isObject(body['stream_options']) ? body['stream_options'] : {};
    body['stream_options'] = { ...so, include_usage: true };
  } else if ('stream_options' in body) {
    // The API says stream_options is ignored when not streaming; OpenAI-style providers refuse it
    // without `stream: true` (400), so it is dropped rather than forwarded.
    delete body['stream_options'];
  }

  // 2. thinking {type: disabled} → reasoning_effort none, unless the request also named a level.
  const thinking = original['thinking'];
  const hadLevelField = original['reasoning_effort'] !== undefined || original['reasoning'] !== undefined;
  if (isObject(thinking) && thinking['type'] === 'disabled') {
    delete body['thinking'];
    if (!hadLevelField) body['reasoning_effort'] = 'none';
  }

  // 3. The platform's default level when the request carries no reasoning field at all.
  if (
    platform.reasoningDefaultEffort !== null &&
    model.reasoning !== null &&
    original['reasoning_effort'] === undefined &&
    original['reasoning'] === undefined &&
    original['thinking'] === undefined
  ) {
    body['reasoning_effort'] = platform.reasoningDefaultEffort;
  }

  // 4. Sampling parameters the platform does not accept are dropped without an error.
  if (platform.samplingAccept !== null) {
    const accept = new Set(platform.samplingAccept);
    for (const p of target.vocabularies.samplingParameters) if (!accept.has(p) && p in body) delete body[p];
  }

  // 5. Budget-only platforms: level → token budget, output limit split between reasoning and reply.
  if (platform.reasoningBudget !== null) {
    const level = requestedLevel(body);
    if (level !== null) {
      const limitField = body['max_completion_tokens'] !== undefined ? 'max_completion_tokens' : 'max_tokens';
      const rawLimit = body[limitField];
      const limit = typeof rawLimit === 'number' ? rawLimit : null;
      const split = splitBudget(level, limit, platform.reasoningBudget);
      if (split !== null) {
        delete body['reasoning_effort'];
        const prev = isObject(body['reasoning']) ? { ...body['reasoning'] } : {};
        delete prev['effort'];
        body['reasoning'] =
          split.reasoningTokens > 0 ? { ...prev, max_tokens: split.reasoningTokens } : { ...prev, enabled: false };
        if (split.replyLimit !== null) body[limitField] = split.replyLimit;
      }
    }
  }
  return body;
}

/** Whether a chunk carries real output (or ends the answer), as opposed to a role-only preamble. */
function chunkHasContent(obj: JsonObject): boolean {
  const choices = obj['choices'];
  if (Array.isArray(choices) && choices.length > 0) {
    for (const c of choices) {
      if (!isObject(c)) continue;
      if (c['finish_reason'] !== null && c['finish_reason'] !== undefined) return true;
      const d = c['delta'];
      if (!isObject(d)) continue;
      for (const [k, v] of Object.entries(d)) {
        if (k === 'role') continue;
        if (v === null || v === undefined || v === '') continue;
        if (Array.isArray(v) && v.length === 0) continue;
        return true;
      }
    }
    return false;
  }
  return obj['usage'] !== null && obj['usage'] !== undefined;
}

const DONE = /^data: ?\[DONE\]\s*$/;
const MODEL_KEY = Buffer.from('"model"');
const UNICODE_ESCAPE = Buffer.from('\\u');

class ChatTap implements StreamTap {
  upstreamModel: string | null = null;
  completed = false;
  contentEvents = 0;
  contentBytes = 0;
  private committed = false;
  private lastUsage: Usage | null = null;
  /** `id` and `created` of the stream's chunks, reused by a synthesised usage frame. */
  private streamId: unknown = null;
  private created: unknown = null;
  private readonly slugJson: Buffer;
  private readonly hints: TapHints;
  /** The gateway asked for usage on the client's behalf (rewrite 1): chunks go out as they would
   *  without include_usage, with no `"usage": null` (SDKs that never asked may refuse a null). */
  private readonly unaskedUsage: boolean;
  constructor(slugJson: Buffer, hints: TapHints = {}) {
    this.slugJson = slugJson;
    this.hints = hints;
    const so = hints.request?.['stream_options'];
    this.unaskedUsage = !(isObject(so) && so['include_usage'] === true);
  }

  /** The chunk as the client asked for it. */
  private shaped(ev: Buffer): Buffer {
    return this.unaskedUsage ? withoutNullMember(ev, 'usage', 1) : ev;
  }

  usage(): Usage | null {
    return this.lastUsage;
  }

  /** This wire reports usage only at the end of a stream. */
  inputUsage(): null {
    return null;
  }

  /** `"model":"<upstream id>"` once the upstream id is known: most chunks then take one indexOf. */
  private knownModelField: Buffer | null = null;

  private rewrite(ev: Buffer): Buffer {
    const known = this.knownModelField;
    if (known !== null) {
      // Fast path: the provider repeats the same compact `"model":"…"` in every chunk. It is
      // trusted only at the top level of the chunk's object (depth 1), and only when no other
      // member can be named `model`: no second `"model"` and no \u escape (the only way to spell
      // `model` otherwise) anywhere in the event; the general path handles the rest.
      const at = ev.indexOf(known);
      if (
        at !== -1 &&
        ev.indexOf(MODEL_KEY) === at &&
        ev.indexOf(MODEL_KEY, at + 1) === -1 &&
        ev.indexOf(UNICODE_ESCAPE) === -1 &&
        depthAt(ev, at) === 1
      ) {
        return spliceBytes(ev, at, at + known.length, this.slugField);
      }
    }
    const { out, reported } = slugModel(ev, this.slugJson, sseDataStart(ev), 1);
    if (reported !== null) this.learnModel(reported);
    return out;
  }

  private get slugField(): Buffer {
    return (this.slugFieldBuf ??= Buffer.concat([Buffer.from('"model":'), this.slugJson]));
  }
  private slugFieldBuf: Buffer | null = null;

  onEvent(ev: Buffer): TappedEvent {
    if (!this.committed) return this.beforeCommit(ev);
    // Hot path after the commit point: no JSON parse unless the event carries usage or an error.
    if (asciiAt(ev, 0, 'data: [DONE]') || asciiAt(ev, 0, 'data:[DONE]')) {
      this.completed = true;
      // Without the provider's usage, the frame written for it is the usage the settlement billed.
      return this.lastUsage === null
        ? { kind: 'terminal', out: Buffer.concat([this.estimatedUsageFrame(), ev]), usage: true }
        : { kind: 'terminal', out: ev };
    }
    if (!asciiAt(ev, 0, 'data:')) return { kind: 'preamble', out: ev }; // comments, keep-alives
    if (this.members.scan(ev)) {
      const plain = this.plainEvent(ev, this.members);
      if (plain !== null) return plain;
    }
    if (!dataLooksWhole(ev)) return { kind: 'malformed', out: ev };
    if (hasNonNullKey(ev, 'error', 1)) return { kind: 'error', out: ev };
    const usage = hasNonNullKey(ev, 'usage', 1);
    if (usage) this.readUsage(ev);
    this.contentEvents++;
    this.contentBytes += ev.length;
    const out = this.shaped(this.rewrite(ev));
    return usage ? { kind: 'content', out, usage } : { kind: 'content', out };
  }

  /** The members of the event being read (reused: one scan per event, no allocation). */
  private readonly members = new TopMembers();

  /**
   * A plain chunk (top-members.ts) with one `model` and at most one `usage`: read and rewritten from
   * the one scan, with the same result as the general path below; null for the general path.
   */
  private plainEvent(ev: Buffer, m: TopMembers): TappedEvent | null {
    if (m.modelCount !== 1 || m.usageCount > 1) return null;
    if (m.errorNonNull) return { kind: 'error', out: ev };
    const usage = m.usageCount === 1 && !isNullAt(ev, m.usageValueStart);
    if (usage) this.readUsage(ev);
    this.contentEvents++;
    this.contentBytes += ev.length;
    if ((this.upstreamModel === null || this.knownModelField === null) && ev[m.modelValueStart] === 0x22) {
      this.learnModel(readString(ev, { start: m.modelValueStart, end: m.modelValueEnd }));
    }
    let cutStart = -1;
    let cutEnd = -1;
    if (m.usageCount === 1 && !usage && this.unaskedUsage) {
      [cutStart, cutEnd] = nullMemberCut(ev, m.usageNameStart, m.usageValueStart);
    }
    const out = editEvent(ev, m.modelValueStart, m.modelValueEnd, this.slugJson, cutStart, cutEnd);
    return usage ? { kind: 'content', out, usage } : { kind: 'content', out };
  }

  /** The provider's own model id, from a chunk's `model`. */
  private learnModel(reported: string): void {
    if (this.upstreamModel === null) this.upstreamModel = reported;
    if (this.knownModelField === null) this.knownModelField = Buffer.from(`"model":${JSON.stringify(reported)}`);
  }

  /**
   * Chat Completions rewrite 1 (docs/api.md): a usage frame always precedes [DONE]. A provider that ignored
   * include_usage gets one written for it, holding the gateway's estimate (what settlement bills
   * when usage is missing: request bytes / 4 for the prompt, one token per content chunk), marked
   * `estimated: true` so nobody mistakes it for the provider's count.
   */
  private estimatedUsageFrame(): Buffer {
    const prompt = this.hints.promptTokensEstimate ?? 0;
    const completion = this.contentEvents;
    const frame = {
      id: this.streamId,
      object: 'chat.completion.chunk',
      created: this.created,
      model: JSON.parse(this.slugJson.toString('utf8')) as string,
      choices: [],
      usage: {
        prompt_tokens: prompt,
        completion_tokens: completion,
        total_tokens: prompt + completion,
        estimated: true,
      },
    };
    return Buffer.from(`data: ${JSON.stringify(frame)}\n\n`);
  }

  private readUsage(ev: Buffer): void {
    // A usage frame that does not parse is reported by the structural check, not here.
    const obj = jsonObjectOf(parseSseEvent(ev).data ?? '');
    if (obj !== null) this.lastUsage = usageFromChatCompletions(obj['usage']) ?? this.lastUsage;
  }

  private beforeCommit(ev: Buffer): TappedEvent {
    const { data } = parseSseEvent(ev);
    if (data === null) return { kind: 'preamble', out: ev };
    if (DONE.test(`data: ${data}`)) return { kind: 'terminal', out: ev };
    const obj = jsonObjectOf(data);
    if (obj === null) return { kind: 'malformed', out: ev };
    if (obj['error'] !== undefined && obj['error'] !== null) return { kind: 'error', out: ev };
    if (this.upstreamModel === null && typeof obj['model'] === 'string') this.upstreamModel = obj['model'];
    if (this.streamId === null && obj['id'] !== undefined) this.streamId = obj['id'];
    if (this.created === null && obj['created'] !== undefined) this.created = obj['created'];
    if (obj['usage'] !== null && obj['usage'] !== undefined)
      this.lastUsage = usageFromChatCompletions(obj['usage']) ?? this.lastUsage;
    const out = this.shaped(this.rewrite(ev));
    if (!chunkHasContent(obj)) return { kind: 'preamble', out };
    this.committed = true;
    this.contentEvents++;
    this.contentBytes += ev.length;
    return obj['usage'] !== null && obj['usage'] !== undefined
      ? { kind: 'content', out, usage: true }
      : { kind: 'content', out };
  }
}

/** Reads a non-streamed body: the top-level `model` is rewritten in place; `usage` is read. */
export function readJsonBody(
  body: Buffer,
  slugJson: Buffer,
  readUsage: (u: unknown) => Usage | null,
): JsonAnswer | null {
  let obj: unknown;
  try {
    obj = JSON.parse(body.toString('utf8'));
  } catch {
    return null;
  }
  if (!isObject(obj)) return null;
  if (obj['error'] !== undefined && obj['error'] !== null) return null;
  const { out, reported } = slugParsedModel(body, slugJson, obj);
  return {
    body: out,
    upstreamModel: reported,
    usage: obj['usage'] === undefined || obj['usage'] === null ? null : readUsage(obj['usage']),
  };
}

export const chatCompletions: ProtocolModule = {
  endpoints: ['chat_completions'],
  bodyDelivery: () => 'buffer',
  read: (req, endpoint) => readJsonRequest(req, endpoint, chatCompletions),
  validate: validateChat,
  wantsStream: (body) => body['stream'] === true,
  outputBound: (body, _endpoint, model) => requestedOutputLimit(body, OUTPUT_LIMIT_FIELDS, model),
  outputLimitFields: OUTPUT_LIMIT_FIELDS,
  prepare: (original, target) => prepareChat(original, target),
  tap: (slugJson, hints) => new ChatTap(slugJson, hints),
  readJson: (body, slugJson) => readJsonBody(body, slugJson, usageFromChatCompletions),
  streamErrorEvent(message, code) {
    return Buffer.from(`data: ${JSON.stringify({ error: { message, type: 'upstream_error', code } })}\n\n`);
  },
};
