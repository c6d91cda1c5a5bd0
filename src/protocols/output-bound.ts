// Output-token bounds for the wallet hold (spec: the hold covers the worst case): the limit a request
// sets in its protocol's own fields, else the model's, else a documented default.
import type { CompiledModel } from '../config/compiled.ts';
import type { JsonObject } from './types.ts';

/** Output-token bound when neither the request nor the model states one. */
export const DEFAULT_OUTPUT_BOUND = 32_768;

/** The model's own output bound: its completion limit, else its context length, else the default. */
export function modelOutputBound(model: CompiledModel): number {
  return model.maxCompletionTokens ?? model.contextLength ?? DEFAULT_OUTPUT_BOUND;
}

/** The first of `fields` the request sets to a positive integer, else the model's bound. */
export function requestedOutputLimit(body: JsonObject, fields: readonly string[], model: CompiledModel): number {
  for (const f of fields) {
    const v = body[f];
    if (typeof v === 'number' && Number.isInteger(v) && v > 0) return v;
  }
  return modelOutputBound(model);
}

/** An image count (`n`) when it is a positive integer, else 1 (what the provider defaults to). */
export function imageCount(n: unknown): number {
  return typeof n === 'number' && Number.isInteger(n) && n > 0 ? n : 1;
}
