// The normalised usage record every billing rule reads, and one extractor per upstream wire format.
//
// Semantics of `Usage` (what `computeCharge` relies on):
// - `promptTokens` is the whole input as the provider counts it, and every input sub-count is a
//   disjoint part of it; `completionTokens` is the whole output, and every output sub-count is a
//   disjoint part of it. Whatever the sub-counts leave over is plain text.
// - Absent ≠ zero: an optional field is left out when the provider did not report it, and is 0
//   when the provider reported 0. (Billing treats both alike; logs and audits do not.)
// - Extractors copy what the provider said and validate it; they do not repair inconsistencies
//   (a sub-count larger than its total is clamped in `computeCharge`, where the money is).
//
// Mapping per wire format (→ Usage field):
//
// Chat Completions `usage` (OpenAI and OpenAI-compatible upstreams):
//   prompt_tokens                               → promptTokens (required)
//   completion_tokens                           → completionTokens (required)
//   prompt_tokens_details.cached_tokens         → cacheReadTokens
//     else prompt_cache_hit_tokens              → cacheReadTokens   (DeepSeek: hit + miss = prompt_tokens)
//     else cache_read_input_tokens              → cacheReadTokens   (relays passing Anthropic counts through)
//   cache_creation_input_tokens                 → cacheWriteTokens  (relays passing Anthropic counts through)
//   prompt_tokens_details.audio_tokens          → audioInputTokens
//   completion_tokens_details.reasoning_tokens  → reasoningTokens
//   completion_tokens_details.audio_tokens      → audioOutputTokens
//   total_tokens, accepted/rejected_prediction_tokens: ignored (rejected predictions are already
//   inside completion_tokens and billed as output, as OpenAI documents).
//
// Responses `usage`:
//   input_tokens                                → promptTokens (required)
//   output_tokens                               → completionTokens (required)
//   input_tokens_details.cached_tokens          → cacheReadTokens
//   output_tokens_details.reasoning_tokens      → reasoningTokens
//   Built-in tool calls (web search) are output items, not usage; they are not counted here.
//
// Messages (Anthropic) — message_start.message.usage, then message_delta.usage, whose counts are
// cumulative and final, so each count is taken from the delta when it reports it, else the start:
//   input_tokens + cache_read_input_tokens + cache_creation_input_tokens → promptTokens
//     (on this wire input_tokens EXCLUDES cache reads and writes)
//   output_tokens                               → completionTokens (required)
//   cache_read_input_tokens                     → cacheReadTokens
//   cache_creation_input_tokens                 → split by cache_creation.ephemeral_1h_input_tokens:
//       1h part → cacheWrite1hTokens, the rest → cacheWriteTokens (no split reported: all default tier);
//       with only the split reported, writes = ephemeral_5m + ephemeral_1h
//   output_tokens_details.thinking_tokens       → reasoningTokens
//   server_tool_use.web_search_requests         → webSearchCalls
//   A non-stream body's `usage` is passed as `start` with `delta` undefined.
//
// Images (gpt-image) `usage`:
//   input_tokens                                → promptTokens (required)
//   input_tokens_details.image_tokens           → imageInputTokens (text_tokens are the remainder)
//   output_tokens                               → completionTokens (required)
//   output_tokens_details.image_tokens          → imageOutputTokens
//     else output_tokens                        → imageOutputTokens (gpt-image-1 documents output
//                                                   tokens as the output image's tokens)
//
// Validation: every count read must be a non-negative safe integer; `null` counts as not reported
// (Anthropic sends null for absent counts); anything else makes the whole record unusable (null),
// because a half-trusted report is worse than an obviously missing one.
//
// New wire format checklist:
//   1. Find what the provider's "input" total includes (cache reads? writes? images?) and make
//      promptTokens the WHOLE input; derive it by addition when the wire reports parts.
//   2. Map every billable sub-count to exactly one Usage field, disjoint from the others.
//   3. Decide, per field, where the final value lives in a stream (first event, last event,
//      cumulative or incremental) and say so here.
//   4. Keep absent fields absent; never default to 0.
//   5. Add a table test with a real-shaped payload (streamed and not) to test/billing/usage.test.ts.

export interface Usage {
  /** Total prompt context tokens as the provider counts the whole input (incl. cached reads, cache writes, audio/image
   *  tokens); selects the bracket. */
  promptTokens: number;
  /** Total output tokens incl. reasoning/audio/image output. */
  completionTokens: number;
  /** Text tokens read from the prompt cache. */
  cacheReadTokens?: number;
  /** Tokens written to the prompt cache at the vendor's default TTL. */
  cacheWriteTokens?: number;
  /** Tokens written to the prompt cache at a one-hour TTL. */
  cacheWrite1hTokens?: number;
  reasoningTokens?: number;
  /** Uncached audio input tokens. */
  audioInputTokens?: number;
  /** Audio input tokens read from the cache (not also in cacheReadTokens or audioInputTokens). */
  cachedAudioInputTokens?: number;
  audioOutputTokens?: number;
  /** Token-priced image input (image_token class). */
  imageInputTokens?: number;
  /** Whole input images (image class). */
  inputImages?: number;
  imageOutputTokens?: number;
  webSearchCalls?: number;
}

/** Output-side fields of a Usage: a provider knows them only when its answer ends. */
const OUTPUT_FIELDS = [
  'completionTokens',
  'reasoningTokens',
  'audioOutputTokens',
  'imageOutputTokens',
  'webSearchCalls',
] as const;

/**
 * The input side of a usage record: what a provider can state exactly before its answer ends (the
 * whole prompt and its cached/written parts, as in Messages' message_start). A stream cut before its
 * final usage is billed on this plus an estimated output (src/billing/settlement.ts).
 */
export type InputUsage = Omit<Usage, (typeof OUTPUT_FIELDS)[number]>;

const OUTPUT_FIELD_SET: ReadonlySet<string> = new Set(OUTPUT_FIELDS);

/** The input side of `u` (every output count dropped). Built by copying what stays rather than
 *  deleting what goes: a deleted property turns a V8 object into a slower dictionary. */
export function inputSide(u: Usage): InputUsage {
  const out: Partial<Record<keyof Usage, number>> = {};
  for (const k in u) {
    const v = u[k as keyof Usage];
    if (v !== undefined && !OUTPUT_FIELD_SET.has(k)) out[k as keyof Usage] = v;
  }
  return out as InputUsage;
}

type Json = Record<string, unknown>;

function isObject(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Reads counts along key paths and remembers whether any value was malformed. */
class CountReader {
  bad = false;

  /** undefined when absent or null anywhere along the path; marks `bad` on a malformed value. */
  count(root: unknown, ...path: string[]): number | undefined {
    let v: unknown = root;
    for (const key of path) {
      if (v === undefined || v === null) return undefined;
      if (!isObject(v)) {
        this.bad = true;
        return undefined;
      }
      v = v[key];
    }
    if (v === undefined || v === null) return undefined;
    if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) {
      this.bad = true;
      return undefined;
    }
    return v === 0 ? 0 : v; // normalise -0
  }
}

/** Drops keys whose value is undefined, so "not reported" is a missing key, not a key set to undefined
 *  (copied rather than deleted: a deleted property turns a V8 object into a slower dictionary). */
function compact(u: Usage): Usage {
  const out: Partial<Record<keyof Usage, number>> = {};
  for (const k in u) {
    const v = u[k as keyof Usage];
    if (v !== undefined) out[k as keyof Usage] = v;
  }
  return out as Usage;
}

export function usageFromChatCompletions(u: unknown): Usage | null {
  if (!isObject(u)) return null;
  const r = new CountReader();
  const promptTokens = r.count(u, 'prompt_tokens');
  const completionTokens = r.count(u, 'completion_tokens');
  const cached = r.count(u, 'prompt_tokens_details', 'cached_tokens');
  // DeepSeek reports cache hits only here; its prompt_tokens = hit + miss, so hits are a part of it.
  const deepseekHit = r.count(u, 'prompt_cache_hit_tokens');
  // Relays (e.g. LiteLLM) that carry Anthropic's counts onto this wire keep the OpenAI meaning of
  // prompt_tokens (the whole input), so the read/write counts are parts of it. A relay following
  // Anthropic's meaning instead shows up as parts exceeding the total, which the charge clamps.
  const relayRead = r.count(u, 'cache_read_input_tokens');
  const relayWrite = r.count(u, 'cache_creation_input_tokens');
  const audioIn = r.count(u, 'prompt_tokens_details', 'audio_tokens');
  const reasoning = r.count(u, 'completion_tokens_details', 'reasoning_tokens');
  const audioOut = r.count(u, 'completion_tokens_details', 'audio_tokens');
  if (r.bad || promptTokens === undefined || completionTokens === undefined) return null;
  return compact({
    promptTokens,
    completionTokens,
    cacheReadTokens: cached ?? deepseekHit ?? relayRead,
    cacheWriteTokens: relayWrite,
    reasoningTokens: reasoning,
    audioInputTokens: audioIn,
    audioOutputTokens: audioOut,
  });
}

export function usageFromResponses(u: unknown): Usage | null {
  if (!isObject(u)) return null;
  const r = new CountReader();
  const promptTokens = r.count(u, 'input_tokens');
  const completionTokens = r.count(u, 'output_tokens');
  const cached = r.count(u, 'input_tokens_details', 'cached_tokens');
  const reasoning = r.count(u, 'output_tokens_details', 'reasoning_tokens');
  if (r.bad || promptTokens === undefined || completionTokens === undefined) return null;
  return compact({ promptTokens, completionTokens, cacheReadTokens: cached, reasoningTokens: reasoning });
}

export function usageFromMessages(start: unknown, delta: unknown): Usage | null {
  const hasStart = start !== undefined && start !== null;
  const hasDelta = delta !== undefined && delta !== null;
  if ((hasStart && !isObject(start)) || (hasDelta && !isObject(delta))) return null;
  if (!hasStart && !hasDelta) return null;
  const r = new CountReader();
  // message_delta counts are cumulative: when the delta states a count it is the final one.
  const pick = (...path: string[]): number | undefined => r.count(delta, ...path) ?? r.count(start, ...path);
  const input = pick('input_tokens');
  const output = pick('output_tokens');
  const read = pick('cache_read_input_tokens');
  const writeTotal = pick('cache_creation_input_tokens');
  const write5m = pick('cache_creation', 'ephemeral_5m_input_tokens');
  const write1h = pick('cache_creation', 'ephemeral_1h_input_tokens');
  const thinking = pick('output_tokens_details', 'thinking_tokens');
  const webSearch = pick('server_tool_use', 'web_search_requests');
  if (r.bad || input === undefined || output === undefined) return null;

  // The total write count is authoritative for the prompt size; the TTL split only divides it.
  const split = write5m !== undefined || write1h !== undefined;
  const writes = writeTotal ?? (split ? (write5m ?? 0) + (write1h ?? 0) : undefined);
  let cacheWriteTokens = writes;
  let cacheWrite1hTokens: number | undefined;
  if (writes !== undefined && write1h !== undefined) {
    cacheWrite1hTokens = Math.min(write1h, writes);
    cacheWriteTokens = writes - cacheWrite1hTokens;
  }
  const promptTokens = input + (read ?? 0) + (writes ?? 0);
  if (!Number.isSafeInteger(promptTokens)) return null;
  return compact({
    promptTokens,
    completionTokens: output,
    cacheReadTokens: read,
    cacheWriteTokens,
    cacheWrite1hTokens,
    reasoningTokens: thinking,
    webSearchCalls: webSearch,
  });
}

export function usageFromImages(u: unknown): Usage | null {
  if (!isObject(u)) return null;
  const r = new CountReader();
  const promptTokens = r.count(u, 'input_tokens');
  const completionTokens = r.count(u, 'output_tokens');
  const imageIn = r.count(u, 'input_tokens_details', 'image_tokens');
  const imageOut = r.count(u, 'output_tokens_details', 'image_tokens');
  if (r.bad || promptTokens === undefined || completionTokens === undefined) return null;
  return compact({
    promptTokens,
    completionTokens,
    imageInputTokens: imageIn,
    // Without an output breakdown every output token is an image token (gpt-image-1's definition).
    imageOutputTokens: imageOut ?? completionTokens,
  });
}
