// Bedrock's CountTokens (`POST /model/{modelId}/count-tokens`) for the Messages count: the body an
// InvokeModel call would carry goes base64-encoded in `{"input":{"invokeModel":{"body":…}}}` (so the
// count is the one InvokeModel would bill), and the answer `{"inputTokens": n}` comes back as
// Messages' `{"input_tokens": n}`. CountTokens takes a foundation model id: a geographic inference
// profile's prefix (`us.`, `eu.`, `global.`…) is dropped from the deployment's model id.

/** The prefixes of Bedrock's geographic (cross-region) inference profile ids. */
const PROFILE_PREFIX = /^(?:us|us-gov|eu|apac|jp|au|ca|global)\.(?=[^.]+\.)/;

/** The foundation model id CountTokens is called with. */
export function countModelId(upstreamModel: string): string {
  return upstreamModel.replace(PROFILE_PREFIX, '');
}

/** A positive integer, else null. */
function positiveInt(v: unknown): number | null {
  return typeof v === 'number' && Number.isSafeInteger(v) && v > 0 ? v : null;
}

/**
 * Replaces `body` (already the InvokeModel body: no model, Bedrock's anthropic_version) by the
 * CountTokens request wrapping it. A count request has no `max_tokens`, which InvokeModel requires:
 * the smallest the request allows is put in (one token, or one above an extended-thinking budget),
 * since it does not change the input's count.
 */
export function wrapForCount(body: Record<string, unknown>): void {
  const thinking = body['thinking'];
  const budget =
    typeof thinking === 'object' && thinking !== null
      ? positiveInt((thinking as Record<string, unknown>)['budget_tokens'])
      : null;
  if (positiveInt(body['max_tokens']) === null) body['max_tokens'] = budget === null ? 1 : budget + 1;
  const inner = Buffer.from(JSON.stringify(body)).toString('base64');
  for (const k of Object.keys(body)) delete body[k];
  body['input'] = { invokeModel: { body: inner } };
}

/** CountTokens' answer as Messages' count; null when it carries no count. */
export function countAnswer(body: Buffer): Buffer | null {
  let obj: unknown;
  try {
    obj = JSON.parse(body.toString('utf8'));
  } catch {
    return null;
  }
  if (typeof obj !== 'object' || obj === null) return null;
  const n = (obj as Record<string, unknown>)['inputTokens'];
  if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < 0) return null;
  return Buffer.from(JSON.stringify({ input_tokens: n }));
}
