// Error bodies in each wire's own shape: OpenAI `{error:{message,type,param,code}}` (indented four
// spaces, as OpenAI sends it) and Anthropic `{type:'error', error:{type,message}, request_id}`.
import { compileTemplate, slot } from './json-template.ts';
import type { Family } from './wire-headers.ts';

export interface ErrorDetails {
  message?: string;
  type?: string;
  param?: string | null;
  code?: string | number | null;
}

const OPENAI = compileTemplate(
  { error: { message: slot('message'), type: slot('type'), param: slot('param'), code: slot('code') } },
  4,
);

const OPENAI_DEFAULTS: Record<number, (model: string) => Required<ErrorDetails>> = {
  400: () => ({ message: 'Invalid request.', type: 'invalid_request_error', param: null, code: null }),
  401: () => ({
    message: 'Incorrect API key provided. You can find your API key at https://platform.openai.com/account/api-keys.',
    type: 'invalid_request_error',
    param: null,
    code: 'invalid_api_key',
  }),
  403: (m) => ({
    message: `Project does not have access to model \`${m}\``,
    type: 'invalid_request_error',
    param: null,
    code: 'model_not_found',
  }),
  404: (m) => ({
    message: `The model \`${m}\` does not exist or you do not have access to it.`,
    type: 'invalid_request_error',
    param: null,
    code: 'model_not_found',
  }),
  429: (m) => ({
    message: `Rate limit reached for ${m} in organization org-simulator on requests per min (RPM): Limit 60, Used 60, Requested 1. Please try again in 1s. Visit https://platform.openai.com/account/rate-limits to learn more.`,
    type: 'requests',
    param: null,
    code: 'rate_limit_exceeded',
  }),
  500: () => ({
    message: 'The server had an error while processing your request. Sorry about that!',
    type: 'server_error',
    param: null,
    code: null,
  }),
  502: () => ({ message: 'Bad gateway.', type: 'cf_bad_gateway', param: null, code: 502 }),
  503: () => ({
    message: 'The engine is currently overloaded, please try again later',
    type: 'server_error',
    param: null,
    code: null,
  }),
  504: () => ({ message: 'Gateway timeout.', type: 'cf_gateway_timeout', param: null, code: 504 }),
};

export function openaiErrorDetails(status: number, model: string): Required<ErrorDetails> {
  const d = OPENAI_DEFAULTS[status];
  if (d) return d(model);
  return status >= 500
    ? {
        message: 'The server had an error while processing your request. Sorry about that!',
        type: 'server_error',
        param: null,
        code: null,
      }
    : { message: `Request failed with status ${status}.`, type: 'invalid_request_error', param: null, code: null };
}

const ANTHROPIC_DEFAULTS: Record<number, (model: string) => [string, string]> = {
  400: () => ['invalid_request_error', 'Invalid request'],
  401: () => ['authentication_error', 'invalid x-api-key'],
  402: () => [
    'billing_error',
    'Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits.',
  ],
  403: () => ['permission_error', 'Your API key does not have permission to use the specified resource.'],
  404: (m) => ['not_found_error', `model: ${m}`],
  413: () => ['request_too_large', 'Request exceeds the maximum allowed number of bytes.'],
  429: () => [
    'rate_limit_error',
    'This request would exceed the rate limit for your organization. Please reduce the prompt length or the maximum tokens requested, or try again later.',
  ],
  500: () => ['api_error', 'Internal server error'],
  504: () => ['timeout_error', 'Request timed out'],
  529: () => ['overloaded_error', 'Overloaded'],
};

export function anthropicErrorDetails(status: number, model: string): [type: string, message: string] {
  const d = ANTHROPIC_DEFAULTS[status];
  if (d) return d(model);
  return status >= 500
    ? ['api_error', 'Internal server error']
    : ['invalid_request_error', `Request failed with status ${status}`];
}

/** The error body `family` sends for `status`; `details` overrides the default message/type/param/code. */
export function errorBody(
  family: Family,
  status: number,
  model: string,
  requestId: string | null,
  details: ErrorDetails = {},
): string {
  if (family === 'openai') {
    const d = openaiErrorDetails(status, model);
    return (
      OPENAI.render({
        message: details.message ?? d.message,
        type: details.type ?? d.type,
        param: details.param !== undefined ? details.param : d.param,
        code: details.code !== undefined ? details.code : d.code,
      }) + '\n'
    );
  }
  const [type, message] = anthropicErrorDetails(status, model);
  return JSON.stringify({
    type: 'error',
    error: { type: details.type ?? type, message: details.message ?? message },
    request_id: requestId,
  });
}

/** A scripted `errorBody`: strings verbatim, anything else as JSON. */
export function customErrorBody(v: unknown): string {
  return typeof v === 'string' ? v : JSON.stringify(v);
}

/** The 401 for a missing or wrong credential, in the wire's words. */
export function authErrorBody(family: Family, missing: boolean, requestId: string | null): string {
  if (family === 'anthropic') {
    return errorBody('anthropic', 401, '', requestId, {
      message: missing ? 'x-api-key header is required' : 'invalid x-api-key',
    });
  }
  if (!missing) return errorBody('openai', 401, '', requestId);
  return errorBody('openai', 401, '', requestId, {
    message:
      "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY), or as the password field (with blank username) if you're accessing the API from your browser and are prompted for a username and password. You can obtain an API key from https://platform.openai.com/account/api-keys.",
    code: null,
  });
}
