// Google Vertex AI. Messages go to the Anthropic publisher's rawPredict/streamRawPredict with the model
// in the URL and `anthropic_version` in the body; Chat Completions go to Vertex's OpenAI-compatible
// endpoint. The resource base URL is
// `https://{region}-aiplatform.googleapis.com/v1/projects/{project}/locations/{region}`.
// Token counting goes to the publisher's `count-tokens:rawPredict`, with the model kept in the body
// and `anthropic_version` added (as Google documents it and Anthropic's Vertex SDK sends it).
// Credentials: a service-account JSON key (the gateway mints its own access tokens and refreshes them,
// ./google-service-account.ts), or a plain OAuth access token sent as it is (which expires: an
// operator would re-seal it by hand).
// Errors: Claude's own errors come in the Messages shape and go on as they are; Vertex's (quota,
// permissions, a model not found) come in Google's `{"error":{"code","message","status"}}` and are
// read into the gateway's error model, which the protocol renders in its own shape.
import { credentialObject } from './credential-json.ts';
import { bearerOf, setBearer } from './token-cache.ts';
import { dropServiceAccountToken, serviceAccountToken } from './google-service-account.ts';
import { readPlatformError } from './provider-errors.ts';
import { type AdapterRequest, type PlatformAdapter, type UpstreamTarget, joinUrl } from './types.ts';

function isJson(credential: string): boolean {
  return credential.trimStart().startsWith('{');
}

const VERTEX_ANTHROPIC_VERSION = 'vertex-2023-10-16';

/** A static token (not a service-account key) and the client's beta list. */
function messagesHeaders(target: UpstreamTarget, req: AdapterRequest): [string, string][] {
  const headers: [string, string][] = isJson(target.credential)
    ? []
    : [['authorization', `Bearer ${target.credential}`]];
  const beta = req.clientHeaders['anthropic-beta'];
  if (beta) headers.push(['anthropic-beta', beta]);
  return headers;
}

export const vertex: PlatformAdapter = {
  id: 'vertex',
  endpoints: ['messages', 'chat_completions'],
  validateOptions(options) {
    return Object.keys(options).map((k) => `adapter "vertex" has no option "${k}"`);
  },
  request(target, req) {
    if (req.endpoint === 'messages') {
      const verb = req.stream ? 'streamRawPredict' : 'rawPredict';
      const model = encodeURIComponent(target.deployment.upstreamModel);
      return {
        url: joinUrl(target.resource.baseUrl, `/publishers/anthropic/models/${model}:${verb}`),
        headers: messagesHeaders(target, req),
      };
    }
    const headers: [string, string][] = isJson(target.credential)
      ? []
      : [['authorization', `Bearer ${target.credential}`]];
    return { url: joinUrl(target.resource.baseUrl, '/endpoints/openapi/chat/completions'), headers };
  },
  patchBody(body, _target, req) {
    if (req.endpoint !== 'messages') return;
    delete body['model'];
    body['anthropic_version'] = VERTEX_ANTHROPIC_VERSION;
  },
  countTokens: {
    request(target, req) {
      return {
        url: joinUrl(target.resource.baseUrl, '/publishers/anthropic/models/count-tokens:rawPredict'),
        headers: messagesHeaders(target, req),
      };
    },
    patchBody(body) {
      body['anthropic_version'] = VERTEX_ANTHROPIC_VERSION;
    },
  },
  authorize(out, target, _req, ctx) {
    const obj = credentialObject(target.credential, target.platform.id);
    if (obj === null) return;
    return setBearer(out, serviceAccountToken(obj, target.credential, target.platform.id, ctx));
  },
  refused(out, target, ctx) {
    if (!isJson(target.credential)) return false;
    dropServiceAccountToken(target.credential, bearerOf(out), ctx);
    return true;
  },
  readError: (status, _headers, body, req) => readPlatformError(status, body, req.endpoint, 'Vertex AI'),
};
