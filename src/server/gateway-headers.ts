// Headers the gateway puts on every response (docs/api.md: Response headers, security headers, CORS).

/** Every X-Pi-* header plus Retry-After and Content-Encoding, so browsers may read them. */
export const EXPOSED_HEADERS = [
  'X-Pi-Trace-Id',
  'X-Pi-Provider',
  'X-Pi-Model',
  'X-Pi-Upstream-Model',
  'X-Pi-Upstream-Request-Id',
  'Retry-After',
  'Content-Encoding',
].join(', ');

export const SECURITY_HEADERS: ReadonlyArray<readonly [string, string]> = [
  ['X-Content-Type-Options', 'nosniff'],
  ['X-Frame-Options', 'DENY'],
  ['Referrer-Policy', 'strict-origin-when-cross-origin'],
  ['Content-Security-Policy', "frame-ancestors 'none'"],
  ['Permissions-Policy', 'camera=(), microphone=(), geolocation=()'],
  ['Strict-Transport-Security', 'max-age=31536000; includeSubDomains'],
];

export const CORS_HEADERS: ReadonlyArray<readonly [string, string]> = [
  ['Access-Control-Allow-Origin', '*'],
  ['Access-Control-Expose-Headers', EXPOSED_HEADERS],
];

/** Headers present on every response, in wire order (after X-Pi-Trace-Id). */
export const FIXED_HEADERS: ReadonlyArray<readonly [string, string]> = [...CORS_HEADERS, ...SECURITY_HEADERS];
