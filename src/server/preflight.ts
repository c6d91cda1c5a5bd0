// Browser preflight (docs/api.md: Browser preflight): 204 without a key, a fixed list of allowed request
// headers plus the `X-Stainless-*` family SDKs add in browsers. A header outside the list is simply
// not allowed back, which makes the browser fail the preflight.
import type { HeaderList, Reply } from '../http/reply.ts';
import type { IncomingRequest } from '../http/request.ts';

export const ALLOWED_REQUEST_HEADERS = [
  'Authorization',
  'X-Api-Key',
  'X-Goog-Api-Key',
  'Content-Type',
  'Anthropic-Version',
  'Anthropic-Beta',
  'Anthropic-Dangerous-Direct-Browser-Access',
  'X-Title',
  'HTTP-Referer',
  'X-Pi-Session-Id',
  'OpenAI-Organization',
  'OpenAI-Project',
];

const SDK_FAMILY = /^x-stainless-[a-z0-9-]+$/;

export function preflight(req: IncomingRequest, reply: Reply): void {
  const requested = (req.headers['access-control-request-headers'] ?? '')
    .split(',')
    .map((h) => h.trim().toLowerCase())
    .filter((h) => SDK_FAMILY.test(h));
  const allowed = [...ALLOWED_REQUEST_HEADERS, ...new Set(requested)].join(', ');
  const headers: HeaderList = [
    ['Access-Control-Allow-Methods', 'POST, GET, OPTIONS'],
    ['Access-Control-Allow-Headers', allowed],
    ['Access-Control-Max-Age', '86400'],
  ];
  reply.send(204, headers);
}
