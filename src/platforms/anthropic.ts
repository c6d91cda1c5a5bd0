// Anthropic's own API: `x-api-key` plus the `anthropic-version` header; the client's version and
// beta headers are forwarded so beta features keep working through the gateway. Counts tokens at
// `/v1/messages/count_tokens`, with the same headers and the Messages body as it is.
import type { AdapterRequest, UpstreamTarget } from './types.ts';
import { type PlatformAdapter, joinUrl } from './types.ts';

function headersOf(target: UpstreamTarget, req: AdapterRequest): [string, string][] {
  const version =
    req.clientHeaders['anthropic-version'] || String(target.platform.adapterOptions['version'] ?? '2023-06-01');
  const headers: [string, string][] = [
    ['x-api-key', target.credential],
    ['anthropic-version', version],
  ];
  const beta = req.clientHeaders['anthropic-beta'];
  if (beta) headers.push(['anthropic-beta', beta]);
  return headers;
}

export const anthropic: PlatformAdapter = {
  id: 'anthropic',
  endpoints: ['messages'],
  validateOptions(options) {
    const problems: string[] = [];
    for (const [k, v] of Object.entries(options)) {
      if (k !== 'version') problems.push(`adapter "anthropic" has no option "${k}"`);
      else if (typeof v !== 'string' || !/^\d{4}-\d{2}-\d{2}$/.test(v))
        problems.push('adapter "anthropic" option "version" must be a date like 2023-06-01');
    }
    return problems;
  },
  request(target, req) {
    return { url: joinUrl(target.resource.baseUrl, '/v1/messages'), headers: headersOf(target, req) };
  },
  countTokens: {
    request(target, req) {
      return { url: joinUrl(target.resource.baseUrl, '/v1/messages/count_tokens'), headers: headersOf(target, req) };
    },
  },
};
