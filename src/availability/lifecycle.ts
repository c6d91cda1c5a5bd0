// Model lifecycle (spec: "Lifecycle rule"): routing refuses a model from its expiration date (00:00 UTC
// of that day); the catalog keeps listing it for 30 more days, then it disappears.
import type { CompiledModel } from '../config/compiled.ts';

const DAY_MS = 86_400_000;
export const CATALOG_GRACE_DAYS = 30;

const DAY_STARTS = new Map<string, number>();

/** Midnight UTC of a `YYYY-MM-DD` date, in ms (memoised: routing checks expiry on every request). */
export function dayStartMs(date: string): number {
  let ms = DAY_STARTS.get(date);
  if (ms === undefined) DAY_STARTS.set(date, (ms = Date.parse(`${date}T00:00:00Z`)));
  return ms;
}

/** True once the expiration date has begun: routing refuses the model. */
export function isExpired(model: CompiledModel, nowMs: number): boolean {
  return model.expirationDate !== null && nowMs >= dayStartMs(model.expirationDate);
}

/** Listed in the catalog: enabled and not more than 30 days past its expiration date. */
export function isListed(model: CompiledModel, nowMs: number): boolean {
  if (!model.enabled) return false;
  if (model.expirationDate === null) return true;
  return nowMs < dayStartMs(model.expirationDate) + CATALOG_GRACE_DAYS * DAY_MS;
}

/** The next instant after `nowMs` at which any model's listing changes (for cache expiry), or Infinity. */
export function nextListingChange(models: readonly CompiledModel[], nowMs: number): number {
  let next = Infinity;
  for (const m of models) {
    if (!m.enabled || m.expirationDate === null) continue;
    const end = dayStartMs(m.expirationDate) + CATALOG_GRACE_DAYS * DAY_MS;
    if (end > nowMs && end < next) next = end;
  }
  return next;
}
