// Token counting as the simulator plays it, on the three platforms that offer it: Anthropic's
// `POST /v1/messages/count_tokens` (`model` and `messages` in the body), Vertex's
// `…/publishers/anthropic/models/count-tokens:rawPredict` (the same body plus `anthropic_version`),
// and Bedrock's CountTokens `POST /model/{modelId}/count-tokens` (`{"input":{"invokeModel":{"body":
// base64 of an InvokeModel body}}}`, SigV4 or an API key, answered `{"inputTokens": n}`). The count
// is deterministic: the prompt estimate a simulated reply reports as its input tokens (one token per
// four characters of message text, system and tool text included, at least 1; ./reply-text.ts), or
// the scripted `usage.prompt`. Scripted statuses, delays and resets apply as for inference.
import { randomUUID } from 'node:crypto';
import { type Behaviour, BehaviourError, selectBehaviour } from './behaviour.ts';
import { authenticate, sendError } from './bedrock.ts';
import { deliver } from './deliver.ts';
import type { Exchange } from './exchange.ts';
import { anthropicRequestId } from './ids.ts';
import { authorized } from './inference.ts';
import { estimatePromptTokens } from './reply-text.ts';
import type { CountRoute } from './routes.ts';
import type { RequestCopy, SimState } from './state.ts';
import { issuedTokenValid } from './token-endpoints.ts';
import { resolveUsage } from './usage.ts';
import type { Body } from './wire.ts';
import { authErrorBody, customErrorBody, errorBody } from './wire-errors.ts';
import { JSON_TYPE, type HeaderList, providerHeaders, withExtraHeaders } from './wire-headers.ts';

function objectOf(text: string): Body | null {
  try {
    const v: unknown = JSON.parse(text);
    return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Body) : null;
  } catch {
    return null;
  }
}

/** The InvokeModel body a CountTokens request wraps, or why it cannot be read. */
function invokeBody(body: Body | null): Body | string {
  const input = body?.['input'];
  const invoke = typeof input === 'object' && input !== null ? (input as Body)['invokeModel'] : undefined;
  const b64 = typeof invoke === 'object' && invoke !== null ? (invoke as Body)['body'] : undefined;
  if (typeof b64 !== 'string')
    return 'Malformed input request: #/input: expected invokeModel.body (base64), please reformat your input and try again.';
  const inner = objectOf(Buffer.from(b64, 'base64').toString('utf8'));
  if (inner === null)
    return 'Malformed input request: invokeModel.body is not a JSON object, please reformat your input and try again.';
  for (const key of ['model', 'stream'])
    if (key in inner)
      return `Malformed input request: #: extraneous key [${key}] is not permitted, please reformat your input and try again.`;
  if (inner['anthropic_version'] !== 'bedrock-2023-05-31')
    return 'Malformed input request: #/anthropic_version: bedrock-2023-05-31 is required, please reformat your input and try again.';
  if (typeof inner['max_tokens'] !== 'number')
    return 'Malformed input request: #: required key [max_tokens] not found, please reformat your input and try again.';
  if (!Array.isArray(inner['messages']))
    return 'Malformed input request: #: required key [messages] not found, please reformat your input and try again.';
  return inner;
}

/** What the Anthropic and Vertex count endpoints refuse: a missing field, Vertex's version. */
function anthropicInvalid(body: Body | null, route: CountRoute): string | null {
  if (body === null) return 'There was an error parsing the body of your request';
  if (route.form === 'vertex' && typeof body['anthropic_version'] !== 'string')
    return 'anthropic_version: Field required';
  if (typeof body['model'] !== 'string') return 'model: Field required';
  if (!Array.isArray(body['messages'])) return 'messages: Field required';
  return null;
}

export function handleCount(state: SimState, ex: Exchange, route: CountRoute, req: RequestCopy, raw: Buffer): void {
  const body = objectOf(raw.toString('utf8'));
  state.recorder.add({
    method: req.method,
    path: req.path,
    query: req.query,
    headers: req.headers,
    body,
    rawBody: raw,
    at: req.at,
  });
  if (route.form === 'bedrock') countBedrock(state, ex, route, req, raw, body);
  else countAnthropic(state, ex, route, req, body);
}

function countAnthropic(state: SimState, ex: Exchange, route: CountRoute, req: RequestCopy, body: Body | null): void {
  const requestId = anthropicRequestId();
  const headers = (): HeaderList =>
    providerHeaders('anthropic', JSON_TYPE, requestId, performance.now() - req.startedAt, state.organizationId);
  const issued = issuedTokenValid(state, req.headers['authorization']);
  const auth = issued === null && state.apiKey !== undefined ? authorized(req.headers, state.apiKey) : 'ok';
  if (issued === false || auth !== 'ok') {
    ex.sendWhole(401, headers(), authErrorBody('anthropic', auth === 'missing', requestId));
    return;
  }
  const invalid = anthropicInvalid(body, route);
  if (invalid !== null || body === null) {
    ex.sendWhole(
      400,
      headers(),
      errorBody('anthropic', 400, '', requestId, { message: invalid ?? '', type: 'invalid_request_error' }),
    );
    return;
  }
  const model = String(body['model']);
  const b = behaviourOf(state, model, body, req);
  if (typeof b === 'string') {
    ex.sendWhole(
      400,
      headers(),
      errorBody('anthropic', 400, model, requestId, { message: `simulator: ${b}`, type: 'invalid_request_error' }),
    );
    return;
  }
  const status = b.status ?? 200;
  const text =
    status >= 200 && status < 300
      ? JSON.stringify({ input_tokens: countOf(b, body) })
      : b.errorBody !== undefined
        ? customErrorBody(b.errorBody)
        : errorBody('anthropic', status, model, requestId);
  deliver(ex, { kind: 'json', status, headers: withExtraHeaders(headers(), b.headers), body: text }, b);
}

function countBedrock(
  state: SimState,
  ex: Exchange,
  route: CountRoute,
  req: RequestCopy,
  raw: Buffer,
  body: Body | null,
): void {
  const requestId = randomUUID();
  if (!authenticate(state, ex, req, raw, requestId)) return;
  const inner = invokeBody(body);
  if (typeof inner === 'string') {
    sendError(ex, 400, requestId, 'ValidationException', inner);
    return;
  }
  const model = route.urlModel ?? '';
  const b = behaviourOf(state, model, inner, req);
  if (typeof b === 'string') {
    sendError(ex, 400, requestId, 'ValidationException', `simulator: ${b}`);
    return;
  }
  const status = b.status ?? 200;
  if (status < 200 || status >= 300) {
    if (b.errorBody === undefined) {
      ex.after(b.ttfbMs ?? 0, () => sendError(ex, status, requestId, undefined, undefined, b.headers));
      return;
    }
    deliver(
      ex,
      {
        kind: 'json',
        status,
        headers: withExtraHeaders(
          [
            ['content-type', JSON_TYPE],
            ['x-amzn-requestid', requestId],
          ],
          b.headers,
        ),
        body: customErrorBody(b.errorBody),
      },
      b,
    );
    return;
  }
  const headers = withExtraHeaders(
    [
      ['content-type', JSON_TYPE],
      ['x-amzn-requestid', requestId],
    ],
    b.headers,
  );
  deliver(ex, { kind: 'json', status, headers, body: JSON.stringify({ inputTokens: countOf(b, inner) }) }, b);
}

/** The scripted behaviour for `model` (script, the body's `sim`, the `x-sim` header), or why it is refused. */
function behaviourOf(state: SimState, model: string, body: Body, req: RequestCopy): Behaviour | string {
  try {
    return selectBehaviour(state.scripts.take(model), body['sim'], req.headers['x-sim'], model).behaviour;
  } catch (err) {
    if (err instanceof BehaviourError) return err.message;
    throw err;
  }
}

/** The count: the scripted prompt usage, else the simulator's prompt estimate of the body. */
function countOf(b: Behaviour, body: Body): number {
  return resolveUsage(b, () => estimatePromptTokens(body), 0).prompt;
}
