// Every error the gateway raises itself: one table of code → status and type, one error class.
// Provider errors never go through this table: one already in the inbound protocol's shape is passed
// through as the provider sent it; a platform's own shape (a cloud's) is read by its adapter into a
// ProviderError (below), which the protocol renders in its error shape with the provider's status.

export const ERROR_CODES = {
  invalid_request: { status: 400, type: 'invalid_request_error' },
  /** Token counting asked of a model none of whose eligible providers can count tokens. */
  count_tokens_unsupported: { status: 400, type: 'invalid_request_error' },
  invalid_api_key: { status: 401, type: 'authentication_error' },
  api_key_not_found: { status: 401, type: 'authentication_error' },
  api_key_revoked: { status: 401, type: 'authentication_error' },
  api_key_expired: { status: 401, type: 'authentication_error' },
  insufficient_balance: { status: 402, type: 'payment_required_error' },
  model_not_found: { status: 404, type: 'not_found_error' },
  no_eligible_provider: { status: 404, type: 'not_found_error' },
  request_too_large: { status: 413, type: 'invalid_request_error' },
  /** A request body in a Content-Encoding the gateway does not decode (or several stacked). */
  unsupported_content_encoding: { status: 415, type: 'invalid_request_error' },
  validation_failed: { status: 422, type: 'invalid_request_error' },
  rate_limited: { status: 429, type: 'rate_limit_error' },
  internal_error: { status: 500, type: 'api_error' },
  provider_unavailable: { status: 503, type: 'api_error' },
  /** The shared store (PostgreSQL) does not answer: nothing is admitted without a hold (fail closed). */
  store_unavailable: { status: 503, type: 'api_error' },
} as const;

export type ErrorCode = keyof typeof ERROR_CODES;

export interface ErrorBody {
  error: { message: string; type: string; code: string; metadata?: unknown };
}

export class GatewayError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly type: string;
  readonly metadata: unknown;
  /** Extra response headers this error carries (Retry-After on 429, provider naming on a refused credential). */
  readonly headers: [string, string][];

  constructor(code: ErrorCode, message: string, opts: { metadata?: unknown; headers?: [string, string][] } = {}) {
    super(message);
    this.name = 'GatewayError';
    this.code = code;
    this.status = ERROR_CODES[code].status;
    this.type = ERROR_CODES[code].type;
    this.metadata = opts.metadata;
    this.headers = opts.headers ?? [];
  }

  toBody(): ErrorBody {
    const error: ErrorBody['error'] = { message: this.message, type: this.type, code: this.code };
    if (this.metadata !== undefined) error.metadata = this.metadata;
    return { error };
  }
}

/**
 * A provider's error answer in the gateway's terms, read from the platform's own error body by its
 * adapter so that the inbound protocol can render it in its own shape. `status` is the provider's,
 * kept as it is; `type` is the error class in the API's vocabulary (errorTypeForStatus);
 * `code` the platform's own name for the error when it has one (a Google status such as
 * `RESOURCE_EXHAUSTED`, a Bedrock exception, an Azure code); `extra`: members of the platform's error
 * object kept beside them (Azure's `innererror` with its content-filter results, a `param`).
 */
export interface ProviderError {
  status: number;
  type: string;
  code: string | null;
  message: string;
  extra?: Record<string, unknown>;
}

/** The API's error type for a provider status: the classes Anthropic's and OpenAI's SDKs know. */
export function errorTypeForStatus(status: number): string {
  switch (status) {
    case 401:
      return 'authentication_error';
    case 403:
      return 'permission_error';
    case 404:
      return 'not_found_error';
    case 413:
      return 'request_too_large';
    case 429:
      return 'rate_limit_error';
    case 503:
    case 529:
      return 'overloaded_error';
  }
  return status >= 400 && status < 500 ? 'invalid_request_error' : 'api_error';
}

/** The API's message for a bare or unknown model name. */
export function modelNotFound(name: string): GatewayError {
  return new GatewayError(
    'model_not_found',
    `model "${name}" was not found: model ids are vendor-qualified slugs such as "vendor/model"; list them with GET /v1/models`,
  );
}

/** 400 for a body without `model`/`models`, and for every unserved path. */
export function modelRequired(): GatewayError {
  return new GatewayError('invalid_request', 'model is required');
}

export function validationFailed(message: string): GatewayError {
  return new GatewayError('validation_failed', message);
}

/** Status line text for uWS's `writeStatus`. */
export function statusLine(status: number): string {
  return `${status} ${STATUS_TEXT[status] ?? 'Unknown'}`;
}

const STATUS_TEXT: Record<number, string> = {
  200: 'OK',
  201: 'Created',
  202: 'Accepted',
  204: 'No Content',
  206: 'Partial Content',
  301: 'Moved Permanently',
  302: 'Found',
  304: 'Not Modified',
  400: 'Bad Request',
  401: 'Unauthorized',
  402: 'Payment Required',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  408: 'Request Timeout',
  409: 'Conflict',
  410: 'Gone',
  413: 'Payload Too Large',
  415: 'Unsupported Media Type',
  422: 'Unprocessable Entity',
  429: 'Too Many Requests',
  500: 'Internal Server Error',
  501: 'Not Implemented',
  502: 'Bad Gateway',
  503: 'Service Unavailable',
  504: 'Gateway Timeout',
  529: 'Overloaded',
};
