// The one check for an integer field the gateway computes with (output limits, image counts): a
// positive integer inside JavaScript's safe range. JSON numbers such as 1e300 or 99999999999999999999
// parse as integers but are beyond 2^53 − 1, where arithmetic on them is no longer exact; they are the
// client's mistake (422 naming the field), never a 500 from the hold arithmetic.
import { type GatewayError, validationFailed } from '../errors.ts';
import type { JsonObject } from './types.ts';

/** The largest value an integer field may take: 2^53 − 1. */
export const MAX_INT_FIELD = Number.MAX_SAFE_INTEGER;

/** True for a positive integer within the safe range. */
export function isPositiveInt(v: unknown): v is number {
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= 1;
}

/** 422 unless `body[field]` is absent, null or a positive safe integer. */
export function checkPositiveInt(body: JsonObject, field: string): void {
  const v = body[field];
  if (v !== undefined && v !== null && !isPositiveInt(v)) throw positiveIntRequired(field);
}

/** The 422 for an integer field outside 1 … 2^53 − 1 (or not an integer at all). */
export function positiveIntRequired(field: string): GatewayError {
  return validationFailed(`${field} must be a positive integer no larger than ${MAX_INT_FIELD}`);
}
