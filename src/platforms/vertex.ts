// Google Vertex AI. Messages go to the Anthropic publisher's rawPredict/streamRawPredict with the model
// in the URL and `anthropic_version` in the body; Chat Completions go to Vertex's OpenAI-compatible
// endpoint. The credential is an OAuth access token sent as a bearer token. The resource base URL is
// `https://{region}-aiplatform.googleapis.com/v1/projects/{project}/locations/{region}`.
import { type PlatformAdapter, joinUrl } from './types.ts';

export const vertex: PlatformAdapter = {
  id: 'vertex',
  endpoints: ['messages', 'chat_completions'],
  validateOptions(options) {
    return Object.keys(options).map((k) => `adapter "vertex" has no option "${k}"`);
  },
  request(target, req) {
    const headers: [string, string][] = [['authorization', `Bearer ${target.credential}`]];
    if (req.endpoint === 'messages') {
      const verb = req.stream ? 'streamRawPredict' : 'rawPredict';
      const model = encodeURIComponent(target.deployment.upstreamModel);
      const beta = req.clientHeaders['anthropic-beta'];
      if (beta) headers.push(['anthropic-beta', beta]);
      return { url: joinUrl(target.resource.baseUrl, `/publishers/anthropic/models/${model}:${verb}`), headers };
    }
    return { url: joinUrl(target.resource.baseUrl, '/endpoints/openapi/chat/completions'), headers };
  },
  patchBody(body, _target, req) {
    if (req.endpoint !== 'messages') return;
    delete body['model'];
    body['anthropic_version'] = 'vertex-2023-10-16';
  },
};
