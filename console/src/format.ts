// Display formatting: USD as the server's exact decimal strings (never re-rounded through floats for
// the figures an operator reconciles), times in UTC, percentages and token counts.

/** "$0.004" from the server's exact decimal string. */
export const usd = (s: string | null | undefined): string =>
  s === null || s === undefined ? '—' : s.startsWith('-') ? `−$${s.slice(1)}` : `$${s}`;

/** "2026-01-15 12:00:03" (UTC). */
export const utc = (iso: string | null | undefined): string =>
  iso ? iso.replace('T', ' ').replace(/\.\d+Z$|Z$/, '') : '—';

export const num = (n: number | null | undefined): string =>
  n === null || n === undefined ? '—' : n.toLocaleString('en-US');

export const pct = (x: number | null | undefined): string =>
  x === null || x === undefined ? '—' : `${(x * 100).toFixed(x > 0 && x < 0.01 ? 2 : 0)}%`;

export const ms = (n: number | null | undefined): string => (n === null || n === undefined ? '—' : `${num(n)} ms`);

/** A decimal USD string as a number, for chart lengths only. */
export const usdNumber = (s: string): number => Number(s);
