// Money units and conversions. Money is never a float:
// - prices are exact bigint atto-USD (1e-18 USD) per unit, parsed once from decimal strings;
// - wallet amounts are integer nano-USD (1e-9 USD), which fits SQLite's 64-bit INTEGER up to $9.2e9.
// A request's cost is summed exactly in atto-USD and rounded once, half up, to nano-USD.

export const ATTO_PER_USD = 10n ** 18n;
export const NANO_PER_USD = 10n ** 9n;
export const ATTO_PER_NANO = 10n ** 9n;
/** The most a wallet can hold, nano-USD: SQLite's INTEGER is a signed 64-bit number (2^63 − 1 nano-USD
 *  is 9,223,372,036.854775807 USD). Amounts above it are refused, never rounded or stored as REAL. */
export const MAX_WALLET_NANO = 2n ** 63n - 1n;

const DECIMAL = /^(0|[1-9][0-9]*)(?:\.([0-9]{1,18}))?$/;

/** "0.0000025" → 2_500_000_000_000n atto-USD. Throws on anything but a plain non-negative decimal. */
export function decimalToAtto(s: string): bigint {
  const m = DECIMAL.exec(s);
  if (!m) throw new RangeError(`not a decimal USD string: ${JSON.stringify(s)}`);
  const whole = BigInt(m[1] as string);
  const frac = (m[2] ?? '').padEnd(18, '0');
  return whole * ATTO_PER_USD + BigInt(frac);
}

/** Exact decimal rendering of an integer amount with `scale` decimals, trailing zeros trimmed ("0" for zero). */
function render(amount: bigint, scale: number): string {
  const neg = amount < 0n;
  const abs = neg ? -amount : amount;
  const unit = 10n ** BigInt(scale);
  const whole = abs / unit;
  const frac = (abs % unit).toString().padStart(scale, '0').replace(/0+$/, '');
  return (neg ? '-' : '') + whole.toString() + (frac ? '.' + frac : '');
}

/** 2_500_000_000_000n → "0.0000025". */
export function attoToDecimal(atto: bigint): string {
  return render(atto, 18);
}

/** Nano-USD integer → "12.345678901" (trimmed). */
export function nanoToDecimal(nano: bigint | number): string {
  return render(BigInt(nano), 9);
}

/** "10.50" → 10_500_000_000n nano-USD. Rejects more than 9 decimals (a wallet cannot hold less than 1 nano-USD). */
export function decimalToNano(s: string): bigint {
  const m = /^(-)?(0|[1-9][0-9]*)(?:\.([0-9]{1,9}))?$/.exec(s);
  if (!m) throw new RangeError(`not a USD amount with at most 9 decimals: ${JSON.stringify(s)}`);
  const v = BigInt(m[2] as string) * NANO_PER_USD + BigInt((m[3] ?? '').padEnd(9, '0'));
  return m[1] ? -v : v;
}

/** Round an atto-USD amount to nano-USD, half up (away from zero for positives). */
export function attoToNanoRounded(atto: bigint): bigint {
  if (atto < 0n) return -attoToNanoRounded(-atto);
  return (atto + ATTO_PER_NANO / 2n) / ATTO_PER_NANO;
}

/** Round an atto-USD amount up to whole nano-USD (holds round up so they always cover the cost). */
export function attoToNanoCeil(atto: bigint): bigint {
  if (atto <= 0n) return -(-atto / ATTO_PER_NANO);
  return (atto + ATTO_PER_NANO - 1n) / ATTO_PER_NANO;
}
