// Amazon Bedrock, natively. Messages (Claude) go to InvokeModel / InvokeModelWithResponseStream with
// the model id in the path (`/model/{id}/invoke`, `/invoke-with-response-stream`), `model` and
// `stream` out of the body, `anthropic_version: "bedrock-2023-05-31"` in it and the client's
// `anthropic-beta` header, filtered to the betas Bedrock accepts (BEDROCK_BETAS unless the platform's
// YAML says otherwise), as the body's `anthropic_beta` list; the streamed answer is Bedrock's binary
// event stream, decoded into Messages SSE (./bedrock-event-stream.ts), and errors are read into the
// gateway's error model (./bedrock-errors.ts), which the protocol renders in its own shape. Chat
// Completions go to Bedrock's OpenAI-compatible endpoint (`/openai/v1/chat/completions`, OpenAI's
// own wire). The resource base URL is the runtime
// root, `https://bedrock-runtime.{region}.amazonaws.com`.
// Token counting goes to CountTokens with the InvokeModel body wrapped (./bedrock-count-tokens.ts).
// Credentials: a JSON object `{"access_key_id", "secret_access_key", "session_token"?}` signs every
// request with SigV4 (service `bedrock`, the resource's region); any other string is a Bedrock API key
// sent as a bearer token.
import type { BetaPolicy } from '../config/compiled.ts';
import { signSigV4 } from './aws-sigv4.ts';
import { countAnswer, countModelId, wrapForCount } from './bedrock-count-tokens.ts';
import { bedrockError } from './bedrock-errors.ts';
import { BedrockStreamDecoder, EVENT_STREAM_TYPE } from './bedrock-event-stream.ts';
import { credentialField, credentialObject, optionalField } from './credential-json.ts';
import { type AnswerDecoding, CredentialError, type PlatformAdapter, type UpstreamTarget, joinUrl } from './types.ts';

const MESSAGES_DECODING: AnswerDecoding = {
  streamType: EVENT_STREAM_TYPE,
  decoder: () => new BedrockStreamDecoder(),
};

/** A count is never streamed (the stream fields are never read); errors and the answer are mapped. */
const COUNT_DECODING: AnswerDecoding = { ...MESSAGES_DECODING, answerBody: countAnswer };

/** The region SigV4 signs for: the resource's, else the one in a bedrock-runtime host name. */
function regionOf(target: UpstreamTarget): string {
  if (target.resource.region) return target.resource.region;
  const m = /^bedrock-runtime(?:-fips)?\.([a-z0-9-]+)\.amazonaws\.com$/.exec(new URL(target.resource.baseUrl).hostname);
  if (m?.[1]) return m[1];
  throw new CredentialError(
    `provider "${target.platform.id}": resource "${target.resource.id}" has no region to sign for`,
  );
}

/**
 * The betas forwarded when the platform's YAML sets no `anthropic_beta`: only those Amazon Bedrock's
 * own documentation names for Claude on InvokeModel (the request reference's `anthropic_beta`
 * example, the extended-thinking guide's interleaved thinking). Bedrock refuses a request carrying a
 * beta it does not know, so an unknown one is dropped rather than sent; docs/clouds.md says how to
 * allow more.
 */
export const BEDROCK_BETAS: BetaPolicy = {
  kind: 'allow',
  names: ['computer-use-2024-10-22', 'interleaved-thinking-2025-05-14'],
};

export const bedrock: PlatformAdapter = {
  id: 'bedrock',
  endpoints: ['messages', 'chat_completions'],
  anthropicBeta: BEDROCK_BETAS,
  validateOptions(options) {
    return Object.keys(options).map((k) => `adapter "bedrock" has no option "${k}"`);
  },
  request(target, req) {
    const headers: [string, string][] = [];
    // An opaque credential is a Bedrock API key; AWS keys sign the request in authorize().
    if (!target.credential.trimStart().startsWith('{')) headers.push(['authorization', `Bearer ${target.credential}`]);
    if (req.endpoint !== 'messages')
      return { url: joinUrl(target.resource.baseUrl, '/openai/v1/chat/completions'), headers };
    const model = encodeURIComponent(target.deployment.upstreamModel);
    if (req.stream) {
      headers.push(['accept', EVENT_STREAM_TYPE], ['x-amzn-bedrock-accept', 'application/json']);
      return { url: joinUrl(target.resource.baseUrl, `/model/${model}/invoke-with-response-stream`), headers };
    }
    headers.push(['accept', 'application/json']);
    return { url: joinUrl(target.resource.baseUrl, `/model/${model}/invoke`), headers };
  },
  patchBody(body, _target, req) {
    if (req.endpoint !== 'messages') return;
    delete body['model'];
    delete body['stream'];
    body['anthropic_version'] = 'bedrock-2023-05-31';
    const beta = req.clientHeaders['anthropic-beta'];
    if (beta) {
      const list = beta
        .split(',')
        .map((b) => b.trim())
        .filter((b) => b !== '');
      if (list.length > 0) body['anthropic_beta'] = list;
    }
  },
  authorize(out, target, _req, ctx) {
    const obj = credentialObject(target.credential, target.platform.id);
    if (obj === null) return;
    const what = 'AWS credential';
    const keys = {
      accessKeyId: credentialField(obj, 'access_key_id', target.platform.id, what),
      secretAccessKey: credentialField(obj, 'secret_access_key', target.platform.id, what),
    };
    const sessionToken = optionalField(obj, 'session_token');
    return signSigV4(
      out,
      sessionToken ? { ...keys, sessionToken } : keys,
      regionOf(target),
      'bedrock',
      ctx.clock.now(),
    );
  },
  decoding(_target, req) {
    return req.endpoint === 'messages' ? MESSAGES_DECODING : null;
  },
  countTokens: {
    request(target) {
      const headers: [string, string][] = [];
      if (!target.credential.trimStart().startsWith('{'))
        headers.push(['authorization', `Bearer ${target.credential}`]);
      headers.push(['accept', 'application/json']);
      const model = encodeURIComponent(countModelId(target.deployment.upstreamModel));
      return { url: joinUrl(target.resource.baseUrl, `/model/${model}/count-tokens`), headers };
    },
    patchBody(body, target, req) {
      // The body InvokeModel would get for this request, then wrapped.
      bedrock.patchBody?.(body, target, { ...req, endpoint: 'messages', stream: false });
      wrapForCount(body);
    },
    decoding: () => COUNT_DECODING,
  },
  readError: (status, headers, body, req) => bedrockError(status, headers, body, req.endpoint),
};
