// Bedrock's errors in the Messages protocol's shape. Bedrock answers errors as `{"message": …}` with
// the exception name in the `x-amzn-errortype` header, and reports failures inside a stream as
// `exception` messages named e.g. `throttlingException`; a Messages client expects
// `{"type":"error","error":{"type":…,"message":…}}` for both. The message text is Bedrock's own.

/** Bedrock exception name (either case of the first letter) → Anthropic error type. */
const TYPES: Record<string, string> = {
  validationexception: 'invalid_request_error',
  accessdeniedexception: 'permission_error',
  unrecognizedclientexception: 'authentication_error',
  invalidsignatureexception: 'authentication_error',
  expiredtokenexception: 'authentication_error',
  resourcenotfoundexception: 'not_found_error',
  throttlingexception: 'rate_limit_error',
  servicequotaexceededexception: 'rate_limit_error',
  serviceunavailableexception: 'overloaded_error',
  modelnotreadyexception: 'overloaded_error',
  internalserverexception: 'api_error',
  modelstreamerrorexception: 'api_error',
  modeltimeoutexception: 'api_error',
  modelerrorexception: 'api_error',
};

/** The Anthropic error type for a Bedrock exception name (a header value may carry `:<namespace>`). */
export function anthropicErrorType(exception: string, status: number | null): string {
  const name = exception.split(':')[0]?.trim().toLowerCase() ?? '';
  const known = TYPES[name];
  if (known) return known;
  if (status === 429) return 'rate_limit_error';
  if (status === 401) return 'authentication_error';
  if (status === 403) return 'permission_error';
  if (status === 404) return 'not_found_error';
  if (status !== null && status >= 400 && status < 500) return 'invalid_request_error';
  return status === 503 || status === 529 ? 'overloaded_error' : 'api_error';
}

/** Bedrock's `message` (or `Message`) field of an error payload, if there is one. */
export function bedrockMessage(payload: Buffer): string | null {
  try {
    const obj: unknown = JSON.parse(payload.toString('utf8'));
    if (typeof obj !== 'object' || obj === null) return null;
    const rec = obj as Record<string, unknown>;
    const m = rec['message'] ?? rec['Message'];
    return typeof m === 'string' ? m : null;
  } catch {
    return null;
  }
}

/** The Messages error JSON for a Bedrock error. */
export function messagesError(type: string, message: string): string {
  return JSON.stringify({ type: 'error', error: { type, message } });
}

/** A non-2xx InvokeModel answer as the Messages protocol's error body. */
export function bedrockErrorBody(status: number, headers: Record<string, string>, body: Buffer): Buffer {
  const exception = headers['x-amzn-errortype'] ?? '';
  const name = exception.split(':')[0] ?? '';
  const message = bedrockMessage(body) ?? `Amazon Bedrock answered HTTP ${status}${name ? ` (${name})` : ''}`;
  return Buffer.from(messagesError(anthropicErrorType(exception, status), message));
}
