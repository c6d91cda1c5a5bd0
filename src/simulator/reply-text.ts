// The reply text of one simulated completion: which text, how many "tokens" (whitespace-separated
// words), the cap from max_tokens, and how it is cut into content deltas. Also the prompt-size estimate.
import type { Behaviour } from './behaviour.ts';

export interface PlannedText {
  /** The whole reply (what the JSON body carries). */
  full: string;
  /** One string per content delta; empty when the reply is empty. */
  pieces: string[];
  /** Output tokens: the number of words emitted. */
  tokens: number;
  /** True when max_tokens cut the reply short (finish_reason `length`, stop_reason `max_tokens`). */
  truncated: boolean;
}

export const DEFAULT_TEXT = 'This is a simulated reply from the pi-gateway upstream simulator.';
const FILLER = ['alpha', 'bravo', 'charlie', 'delta', 'echo', 'foxtrot', 'golf', 'hotel', 'india', 'juliet'];
export const DEFAULT_CHUNKS = 3;

/** Splits before every word that follows whitespace: "a b  c" → ["a ", "b  ", "c"]. */
function words(text: string): string[] {
  return text.length === 0 ? [] : text.split(/(?<=\s)(?=\S)/);
}

/** The default sentence, extended with filler words when more chunks than words are asked for. */
function defaultWords(chunks: number): string[] {
  const w = words(DEFAULT_TEXT);
  if (chunks <= w.length) return w;
  const out = w.slice();
  out[out.length - 1] += ' ';
  for (let i = 0; out.length < chunks; i++) out.push(FILLER[i % FILLER.length] + (out.length + 1 < chunks ? ' ' : ''));
  return out;
}

/** Groups `parts` into `n` contiguous non-empty pieces as evenly as possible. */
function group(parts: string[], n: number): string[] {
  const out: string[] = [];
  for (let k = 0; k < n; k++) {
    const from = Math.floor((k * parts.length) / n);
    const to = Math.floor(((k + 1) * parts.length) / n);
    out.push(parts.slice(from, to).join(''));
  }
  return out;
}

const defaultCache = new Map<string, PlannedText>();

/**
 * Plans the reply. `echoText` is the received body (used when `b.echo`). `maxTokens` (max_tokens &
 * co.) caps the words emitted, except for echo, whose JSON would otherwise be cut. A text with fewer
 * words than chunks is cut by characters instead.
 */
export function planText(b: Behaviour, echoText: string | undefined, maxTokens: number | undefined): PlannedText {
  const capped = !b.echo && maxTokens !== undefined && maxTokens >= 0;
  // The cap limits both the words and the number of deltas (one token per delta at most).
  const chunks = capped ? Math.min(b.chunks ?? DEFAULT_CHUNKS, maxTokens) : (b.chunks ?? DEFAULT_CHUNKS);
  const fromDefault = b.text === undefined && !b.echo;
  const key = fromDefault ? `${chunks}|${maxTokens ?? ''}` : '';
  if (fromDefault) {
    const hit = defaultCache.get(key);
    if (hit) return hit;
  }
  let w = fromDefault ? defaultWords(chunks) : words(b.echo ? (echoText ?? '') : (b.text as string));
  let truncated = false;
  if (capped && w.length > (maxTokens as number)) {
    w = w.slice(0, maxTokens);
    truncated = true;
  }
  const full = w.join('');
  let pieces: string[];
  if (full.length === 0 || chunks === 0) pieces = [];
  else if (w.length >= chunks) pieces = group(w, chunks);
  else {
    const chars = Array.from(full);
    pieces = group(chars, Math.min(chunks, chars.length));
  }
  const plan: PlannedText = { full, pieces, tokens: w.length, truncated };
  if (fromDefault && defaultCache.size < 256) defaultCache.set(key, plan);
  return plan;
}

const TEXT_KEYS = new Set(['content', 'text', 'input', 'prompt', 'system', 'instructions']);

function countChars(v: unknown, countable: boolean, depth: number): number {
  if (typeof v === 'string') return countable ? v.length : 0;
  if (depth > 32 || typeof v !== 'object' || v === null) return 0;
  let n = 0;
  if (Array.isArray(v)) {
    for (const x of v) n += countChars(x, countable, depth + 1);
    return n;
  }
  for (const k in v) {
    if (k === 'sim') continue;
    n += countChars((v as Record<string, unknown>)[k], TEXT_KEYS.has(k), depth + 1);
  }
  return n;
}

/** Prompt tokens when not scripted: about one per four characters of message text, at least 1. */
export function estimatePromptTokens(body: unknown): number {
  return Math.max(1, Math.ceil(countChars(body, false, 0) / 4));
}
