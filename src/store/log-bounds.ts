// Bounds on the request-log columns a client chooses the text of (the `model` it asked for, X-Title,
// the referer's origin, X-Pi-Session-Id), applied where a row is stored, on either store and every
// write path: a tenant's 60,000-character model string must not become 60,000 characters in every
// page, export and backup that shows the row. The bounds are documented in docs/console.md.
import type { RequestLogRow } from '../observe/request-row.ts';

/** Characters (code points) kept of each client-chosen column; a longer value keeps its first
 *  (bound − 1) characters and ends with "…", so a cut value never passes for a whole one. */
export const LOG_TEXT_BOUNDS = {
  model_requested: 256,
  app_title: 128,
  app_origin: 256,
  session_id: 256,
} as const satisfies Partial<Record<keyof RequestLogRow, number>>;

/** The bounds as a list, made once: every row a request logs goes through `boundedRow`. */
const BOUNDED_COLUMNS = Object.entries(LOG_TEXT_BOUNDS) as [keyof typeof LOG_TEXT_BOUNDS, number][];

/** ES2024's well-formed string methods (the project's TypeScript lib predates them). */
interface WellFormed {
  isWellFormed(): boolean;
  toWellFormed(): string;
}

/**
 * A client's text as every store can hold it: U+0000 (which a JSON string may carry, and which
 * PostgreSQL refuses in a text column) and a lone UTF-16 surrogate (a JSON `"\ud800"`, which no
 * UTF-8 text holds) become U+FFFD, the replacement character — what the SQLite driver writes for a
 * lone surrogate anyway. Applied to the bounded columns when a row is stored and to the console's
 * filters, so a filter finds what it names.
 */
export function storableText(text: string): string {
  const whole = (text as unknown as WellFormed).isWellFormed() ? text : (text as unknown as WellFormed).toWellFormed();
  return whole.includes('\u0000') ? whole.replaceAll('\u0000', '\uFFFD') : whole;
}

/** `text` within `max` code points (a surrogate pair is never split), storable; null stays null. */
export function boundedText(text: string | null, max: number): string | null {
  if (text === null) return text;
  const stored = storableText(text);
  // .length counts UTF-16 units, never fewer than code points: a short string needs no scan.
  if (stored.length <= max) return stored;
  const chars = Array.from(stored);
  return chars.length <= max ? stored : `${chars.slice(0, max - 1).join('')}…`;
}

/** The row as it is stored: every client-chosen text within its bound (the others as they are). */
export function boundedRow(r: RequestLogRow): RequestLogRow {
  let out = r;
  for (const [column, max] of BOUNDED_COLUMNS) {
    const v = r[column];
    const cut = boundedText(v, max);
    if (cut !== v) out = { ...out, [column]: cut };
  }
  return out;
}
