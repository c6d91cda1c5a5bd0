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

/** A share as a percentage: whole percents, or two decimals within 1% of 0% or 100%, so a share that
 *  is neither is never shown as "0%" or "100%" (a deployment failing 999 attempts of 1,000 is not
 *  failing them all). */
export const pct = (x: number | null | undefined): string => {
  if (x === null || x === undefined) return '—';
  const p = x * 100;
  if (p <= 0 || p >= 100 || (p >= 1 && p <= 99)) return `${p.toFixed(0)}%`;
  const s = p.toFixed(2);
  return s === '0.00' ? '<0.01%' : s === '100.00' ? '>99.99%' : `${s}%`;
};

export const ms = (n: number | null | undefined): string => (n === null || n === undefined ? '—' : `${num(n)} ms`);

/** A decimal USD string as a number, for chart lengths only. */
export const usdNumber = (s: string): number => Number(s);
