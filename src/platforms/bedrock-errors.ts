// Bedrock's errors in the gateway's terms. Bedrock answers errors as `{"message": …}` with the
// exception name in the `x-amzn-errortype` header, and reports failures inside a stream as
// `exception` messages named e.g. `throttlingException`; a Messages client expects
// `{"type":"error","error":{"type":…,"message":…}}` for both. The message text is Bedrock's own.
import { type ProviderError, errorTypeForStatus } from '../errors.ts';
import { inProtocolShape, jsonOf, plainMessage, readPlatformError } from './provider-errors.ts';

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
  return status === null ? 'api_error' : errorTypeForStatus(status);
}

/** Bedrock's `message` (or `Message`) field of an error payload, if there is one. */
export function bedrockMessage(payload: Buffer): string | null {
  return plainMessage(jsonOf(payload));
}

/** The Messages error JSON for a Bedrock error. */
export function messagesError(type: string, message: string): string {
  return JSON.stringify({ type: 'error', error: { type, message } });
}

/** A non-2xx Bedrock answer in the gateway's terms: the exception names the type (InvokeModel's
 *  `{"message"}` bodies); on the OpenAI-compatible endpoint a body already in that shape goes on. */
export function bedrockError(
  status: number,
  headers: Record<string, string>,
  body: Buffer,
  endpoint: string,
): ProviderError | null {
  const exception = headers['x-amzn-errortype'] ?? '';
  const name = exception.split(':')[0]?.trim() || null;
  if (endpoint !== 'messages' && inProtocolShape(jsonOf(body), endpoint)) return null;
  const read = readPlatformError(status, body, endpoint, 'Amazon Bedrock', name);
  if (read === null) return null;
  return { ...read, type: name ? anthropicErrorType(name, status) : read.type };
}
