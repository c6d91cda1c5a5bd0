// Model lifecycle (docs/api.md: "Lifecycle rule"): routing refuses a model from its expiration date (00:00 UTC
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

/** An enabled model whose expiration date is near (or already here), for operators' warnings. */
export interface ExpiringModel {
  id: string;
  expirationDate: string;
  /** Whole days from the start of today (UTC) to the expiration date; 0 or less: routing refuses it. */
  daysLeft: number;
}

/**
 * Enabled models whose expiration date falls within `days` days of `nowMs` (UTC days; a date on the
 * horizon day counts), including those already past it, soonest first. Disabled models are skipped:
 * neither listed nor routed, their dates concern nobody.
 */
export function expiringWithin(models: readonly CompiledModel[], nowMs: number, days: number): ExpiringModel[] {
  const today = Math.floor(nowMs / DAY_MS) * DAY_MS;
  const out: ExpiringModel[] = [];
  for (const m of models) {
    if (!m.enabled || m.expirationDate === null) continue;
    const daysLeft = Math.round((dayStartMs(m.expirationDate) - today) / DAY_MS);
    if (daysLeft <= days) out.push({ id: m.id, expirationDate: m.expirationDate, daysLeft });
  }
  return out.sort((a, b) => a.daysLeft - b.daysLeft || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}
