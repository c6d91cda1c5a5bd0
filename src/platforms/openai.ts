// OpenAI-style platforms (OpenAI, Gemini's and Bedrock's OpenAI-compatible APIs, resellers, vLLM-like
// self-hosted servers): `Authorization: Bearer`, endpoint paths appended to the resource base URL.
import { type PlatformAdapter, joinUrl } from './types.ts';

const PATHS: Record<string, string> = {
  chat_completions: '/chat/completions',
  responses: '/responses',
  messages: '/messages',
  images_generations: '/images/generations',
  images_edits: '/images/edits',
};

export const openai: PlatformAdapter = {
  id: 'openai',
  endpoints: Object.keys(PATHS),
  validateOptions(options) {
    return Object.keys(options).map((k) => `adapter "openai" has no option "${k}"`);
  },
  request(target, req) {
    const headers: [string, string][] = [['authorization', `Bearer ${target.credential}`]];
    if (req.endpoint === 'messages') {
      // Messages-speaking OpenAI-style servers still want the protocol version header.
      headers.push(['anthropic-version', req.clientHeaders['anthropic-version'] || '2023-06-01']);
      const beta = req.clientHeaders['anthropic-beta'];
      if (beta) headers.push(['anthropic-beta', beta]);
    }
    return { url: joinUrl(target.resource.baseUrl, PATHS[req.endpoint] ?? '/'), headers };
  },
};
