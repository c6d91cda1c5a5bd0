// Admission hold sizing: the most a request can cost before we know its usage, so the wallet hold
// is never below the real charge when the provider honours the output limit.
//
// Worst case = max over every price list the request may be billed at of
//     promptTokenBound     × the highest input-class price in any bracket
//   + completionTokenBound × the highest output-class price in any bracket
//   + the highest request fee in any bracket
//   + inputImages          × the highest per-image price in any bracket
// rounded UP to nano-USD. It dominates computeCharge because every input unit is billed at some
// input class (or its `prompt` fallback), every output unit at some output class (or
// `completion`), the bracket billed is one of those maximised over, and rounding up ≥ rounding
// half up.
//
// Not bounded here:
// - web search calls: a request can trigger any number of them and nothing in it caps the count;
//   their cost is settled after the fact and may exceed the hold.
// - whole input images: bounded only by the `inputImages` the caller counts in the request.
// - image tokens of images passed by URL, and tokens of files the provider expands (PDF pages
//   rendered to images): they are not proportional to body bytes, so `promptTokenBound` does not
//   cover them.
// - output beyond `completionTokenBound` when a provider ignores the output limit.
// A settlement may therefore exceed its hold; what it can never exceed is the wider bound of
// src/billing/bound.ts (the context length instead of the body size, web search included).
import type { PriceList } from '../config/compiled.ts';
import { attoToNanoCeil } from '../money.ts';
import { INPUT_TOKEN_CLASSES, OUTPUT_TOKEN_CLASSES } from './price-classes.ts';
import { allResolvedPrices } from './price.ts';

export interface HoldInput {
  /** Every price list the request may be billed at: all candidate deployments of the primary and fallback models. */
  pricings: PriceList[];
  promptTokenBound: number;
  completionTokenBound: number;
  inputImages?: number;
}

function nonNegativeInt(v: number, name: string): bigint {
  if (!Number.isSafeInteger(v) || v < 0) throw new RangeError(`${name} must be a non-negative integer, got ${v}`);
  return BigInt(v);
}

/** The highest price of each kind of unit a price list bills, over all its brackets, atto-USD. */
export interface UnitMaxima {
  /** Any input token class (or its `prompt` fallback). */
  input: bigint;
  /** Any output token class (or its `completion` fallback). */
  output: bigint;
  request: bigint;
  image: bigint;
  webSearch: bigint;
}

/** Highest unit prices of a price list over all its brackets, once per (immutable) list. */
const MAXIMA = new WeakMap<PriceList, UnitMaxima>();

export function priceMaxima(list: PriceList): UnitMaxima {
  let m = MAXIMA.get(list);
  if (m) return m;
  m = { input: 0n, output: 0n, request: 0n, image: 0n, webSearch: 0n };
  for (const prices of allResolvedPrices(list)) {
    // Unpriced token classes fall back to prompt/completion, which are always in the set.
    for (const cls of INPUT_TOKEN_CLASSES) m.input = max(m.input, prices[cls] ?? 0n);
    for (const cls of OUTPUT_TOKEN_CLASSES) m.output = max(m.output, prices[cls] ?? 0n);
    m.request = max(m.request, prices.request ?? 0n);
    m.image = max(m.image, prices.image ?? 0n);
    m.webSearch = max(m.webSearch, prices.web_search ?? 0n);
  }
  MAXIMA.set(list, m);
  return m;
}

/** The worst-case cost of one request under one price list, atto-USD. */
function worstCaseAtto(list: PriceList, prompt: bigint, completion: bigint, images: bigint): bigint {
  const m = priceMaxima(list);
  return prompt * m.input + completion * m.output + m.request + images * m.image;
}

function max(a: bigint, b: bigint): bigint {
  return a > b ? a : b;
}

/** Nano-USD to hold at admission; 0 when there is no price list to bill at. */
export function worstCaseHoldNano(h: HoldInput): bigint {
  const prompt = nonNegativeInt(h.promptTokenBound, 'promptTokenBound');
  const completion = nonNegativeInt(h.completionTokenBound, 'completionTokenBound');
  const images = nonNegativeInt(h.inputImages ?? 0, 'inputImages');
  let worst = 0n;
  for (const list of h.pricings) worst = max(worst, worstCaseAtto(list, prompt, completion, images));
  return attoToNanoCeil(worst);
}

/**
 * Upper bound on the prompt tokens a request body of `bodyBytes` can produce: one token per byte.
 * Why it holds for text: byte-level BPE tokenizers (GPT, Claude, Llama, Gemini families) have a
 * token for every single byte and every other token is a merge of at least one byte, so UTF-8 text
 * of n bytes never takes more than n tokens; the text is carried inside the JSON body, which adds
 * quotes, keys and escapes (an escape is more bytes than the character it encodes), so text bytes ≤
 * body bytes. Chat-template tokens the provider adds per message (role markers) are paid for by
 * the JSON syntax of each message (`{"role":"user","content":""}` alone is ~30 bytes).
 * Not covered: image/file tokens (see the header), and fixed system prompts a provider injects
 * (e.g. for tool use), which can exceed a very small body's syntax overhead.
 */
export function promptTokenBound(bodyBytes: number): number {
  if (!Number.isSafeInteger(bodyBytes) || bodyBytes < 0)
    throw new RangeError(`bodyBytes must be a non-negative integer, got ${bodyBytes}`);
  return bodyBytes;
}
