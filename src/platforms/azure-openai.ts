// Azure OpenAI: the deployment name (our upstream model id) is part of the path, the API version is a
// query parameter; Responses go to the v1 API (`/openai/v1/responses`, the deployment name as the
// body's `model`, no API version), which Azure serves in the regions and for the models it lists. Credentials: an API
// key sent in `api-key`, or Microsoft Entra ID client credentials
// `{"tenant_id", "client_id", "client_secret"}` exchanged for bearer tokens that refresh themselves
// (./entra-token.ts; `entra_authority` names a sovereign cloud's login host).
// Errors: Azure's `{"error":{"code","message"}}` has no `type` and its front door answers
// `{"statusCode","message"}`; both are read into the gateway's error model (Azure's code and its
// other members, such as the content filter's `innererror`, kept) for the protocol to render.
import { credentialObject } from './credential-json.ts';
import { bearerOf, setBearer } from './token-cache.ts';
import { DEFAULT_AUTHORITY, dropEntraToken, entraToken } from './entra-token.ts';
import { readPlatformError } from './provider-errors.ts';
import { type PlatformAdapter, type UpstreamTarget, joinUrl } from './types.ts';

const PATHS: Record<string, string> = {
  chat_completions: '/chat/completions',
  responses: '/responses',
  images_generations: '/images/generations',
  images_edits: '/images/edits',
};

/** Responses live only on Azure's v1 API: no deployment in the path, no `api-version`; the
 *  deployment name is the body's `model` (the protocol writes the upstream model there). */
const V1_RESPONSES = '/openai/v1/responses';
const OPTIONS = new Set(['api_version', 'entra_authority']);

function authorityOf(target: UpstreamTarget): string {
  const a = target.platform.adapterOptions['entra_authority'];
  return typeof a === 'string' ? a : DEFAULT_AUTHORITY;
}

function isJson(credential: string): boolean {
  return credential.trimStart().startsWith('{');
}

export const azureOpenai: PlatformAdapter = {
  id: 'azure-openai',
  endpoints: Object.keys(PATHS),
  validateOptions(options) {
    const problems: string[] = [];
    for (const k of Object.keys(options))
      if (!OPTIONS.has(k)) problems.push(`adapter "azure-openai" has no option "${k}"`);
    if (typeof options['api_version'] !== 'string')
      problems.push('adapter "azure-openai" needs option "api_version" (a string such as "2024-10-21")');
    const authority = options['entra_authority'];
    if (authority !== undefined && (typeof authority !== 'string' || !/^https:\/\/[^/]+\/?$/.test(authority))) {
      problems.push(
        'adapter "azure-openai" option "entra_authority" must be an https origin such as "https://login.microsoftonline.us"',
      );
    }
    return problems;
  },
  request(target, req) {
    const version = encodeURIComponent(String(target.platform.adapterOptions['api_version']));
    const deployment = encodeURIComponent(target.deployment.upstreamModel);
    const path =
      req.endpoint === 'responses'
        ? V1_RESPONSES
        : `/openai/deployments/${deployment}${PATHS[req.endpoint] ?? '/'}?api-version=${version}`;
    const headers: [string, string][] = isJson(target.credential) ? [] : [['api-key', target.credential]];
    return { url: joinUrl(target.resource.baseUrl, path), headers };
  },
  authorize(out, target, _req, ctx) {
    const obj = credentialObject(target.credential, target.platform.id);
    if (obj === null) return;
    return setBearer(out, entraToken(obj, target.credential, authorityOf(target), target.platform.id, ctx));
  },
  refused(out, target, ctx) {
    if (!isJson(target.credential)) return false;
    dropEntraToken(target.credential, authorityOf(target), bearerOf(out), ctx);
    return true;
  },
  readError: (status, _headers, body, req) => readPlatformError(status, body, req.endpoint, 'Azure OpenAI'),
};
