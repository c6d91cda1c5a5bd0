// The operator token must be hard to guess: at least 128 bits by a cautious estimate of what its
// characters could carry — length × log2 of the alphabet its characters come from (hex, or the
// classes present: lower case, upper case, digits, symbols) — and not built from a handful of
// repeated characters. `openssl rand -base64 32` (256 bits) or 32 random hex digits pass; a word,
// `changeme` or `a` do not.

export const MIN_TOKEN_BITS = 128;
/** A random token of 22+ characters has far more distinct ones; fewer means a pattern. */
const MIN_DISTINCT = 8;

export const TOKEN_HOWTO =
  "generate one with `openssl rand -base64 32` or `node -e \"console.log(require('node:crypto').randomBytes(32).toString('base64url'))\"`";

/** An estimate of the bits a token's characters can carry. */
export function tokenBits(token: string): number {
  const chars = [...token];
  let alphabet: number;
  if (/^[0-9a-f]+$/.test(token) || /^[0-9A-F]+$/.test(token)) alphabet = 16;
  else {
    alphabet = 0;
    if (/[a-z]/.test(token)) alphabet += 26;
    if (/[A-Z]/.test(token)) alphabet += 26;
    if (/[0-9]/.test(token)) alphabet += 10;
    if (/[^a-zA-Z0-9]/.test(token)) alphabet += 33;
  }
  if (new Set(chars).size < MIN_DISTINCT) return 0;
  return Math.floor(chars.length * Math.log2(Math.max(alphabet, 1)));
}

/** Why the operator token is refused, or null when it is strong enough. */
export function tokenStrengthProblem(token: string, name = 'PI_ADMIN_TOKEN'): string | null {
  const bits = tokenBits(token);
  if (bits >= MIN_TOKEN_BITS) return null;
  return `${name} is too easy to guess (about ${bits} bits; at least ${MIN_TOKEN_BITS} are needed, e.g. 22 random base64url characters or 32 hex digits): ${TOKEN_HOWTO}`;
}
