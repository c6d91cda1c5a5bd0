// Sets the request-head cap uWebSockets.js reads when it loads (see uws.ts); a module of its own so
// that it runs before the addon's import is evaluated.

/** Bytes of request line plus headers a request may carry: Node.js's default. */
export const MAX_REQUEST_HEAD_BYTES = 16 * 1024;

// An empty value counts as unset (uWS would read it as 0).
process.env.UWS_HTTP_MAX_HEADERS_SIZE ||= String(MAX_REQUEST_HEAD_BYTES);
