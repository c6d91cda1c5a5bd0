// Microsoft Entra ID client-credentials tokens for Azure OpenAI: the sealed credential is
// `{"tenant_id", "client_id", "client_secret"}`; the token comes from
// `{authority}/{tenant}/oauth2/v2.0/token` with the Cognitive Services scope and is cached and
// refreshed by ./token-cache.ts. The authority is login.microsoftonline.com unless the platform's
// `entra_authority` names a sovereign cloud's.
import { credentialField } from './credential-json.ts';
import { requestToken, tokenCacheOf, tokenKey } from './token-cache.ts';
import type { AdapterContext } from './types.ts';

export const DEFAULT_AUTHORITY = 'https://login.microsoftonline.com';
export const COGNITIVE_SERVICES_SCOPE = 'https://cognitiveservices.azure.com/.default';

function keyOf(credential: string, authority: string): string {
  return tokenKey('entra', authority, credential);
}

export function entraToken(
  obj: Record<string, unknown>,
  credential: string,
  authority: string,
  platform: string,
  ctx: AdapterContext,
): string | Promise<string> {
  const what = 'Entra client credential';
  const tenant = credentialField(obj, 'tenant_id', platform, what);
  const form = {
    grant_type: 'client_credentials',
    client_id: credentialField(obj, 'client_id', platform, what),
    client_secret: credentialField(obj, 'client_secret', platform, what),
    scope: COGNITIVE_SERVICES_SCOPE,
  };
  const url = `${authority.replace(/\/+$/, '')}/${encodeURIComponent(tenant)}/oauth2/v2.0/token`;
  return tokenCacheOf(ctx).token(keyOf(credential, authority), () => requestToken(ctx, url, form, platform));
}

export function dropEntraToken(credential: string, authority: string, token: string, ctx: AdapterContext): void {
  tokenCacheOf(ctx).drop(keyOf(credential, authority), token);
}
