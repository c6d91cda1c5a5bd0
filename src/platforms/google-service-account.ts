// Access tokens for a Google service account: an RS256-signed JWT assertion (node:crypto) exchanged
// at the account's `token_uri` (OAuth 2.0 JWT bearer grant) for a token with the cloud-platform
// scope, cached and refreshed by ./token-cache.ts. The sealed credential is the service-account JSON
// key file as Google issues it.
import { createPrivateKey, type KeyObject, sign } from 'node:crypto';
import { credentialField, optionalField } from './credential-json.ts';
import { requestToken, tokenCacheOf, tokenKey } from './token-cache.ts';
import { type AdapterContext, CredentialError } from './types.ts';

export const CLOUD_PLATFORM_SCOPE = 'https://www.googleapis.com/auth/cloud-platform';
const DEFAULT_TOKEN_URI = 'https://oauth2.googleapis.com/token';
const JWT_BEARER = 'urn:ietf:params:oauth:grant-type:jwt-bearer';

export interface ServiceAccount {
  clientEmail: string;
  privateKey: KeyObject;
  privateKeyId: string | undefined;
  tokenUri: string;
}

export function serviceAccountOf(obj: Record<string, unknown>, platform: string): ServiceAccount {
  const what = 'service account';
  if (obj['type'] !== undefined && obj['type'] !== 'service_account')
    throw new CredentialError(
      `provider "${platform}": the sealed JSON is not a service account key ("type" is not "service_account")`,
    );
  const clientEmail = credentialField(obj, 'client_email', platform, what);
  let privateKey: KeyObject;
  try {
    privateKey = createPrivateKey(credentialField(obj, 'private_key', platform, what));
  } catch (err) {
    if (err instanceof CredentialError) throw err;
    throw new CredentialError(
      `provider "${platform}": the sealed service account's "private_key" is not a PEM private key`,
    );
  }
  return {
    clientEmail,
    privateKey,
    privateKeyId: optionalField(obj, 'private_key_id'),
    tokenUri: optionalField(obj, 'token_uri') ?? DEFAULT_TOKEN_URI,
  };
}

const b64url = (v: unknown): string => Buffer.from(JSON.stringify(v)).toString('base64url');

/** The signed assertion: valid for an hour from `now`, audience the token URI. */
export function assertion(sa: ServiceAccount, now: number): string {
  const iat = Math.floor(now / 1000);
  const header = { alg: 'RS256', typ: 'JWT', ...(sa.privateKeyId ? { kid: sa.privateKeyId } : {}) };
  const claims = { iss: sa.clientEmail, scope: CLOUD_PLATFORM_SCOPE, aud: sa.tokenUri, iat, exp: iat + 3600 };
  const data = `${b64url(header)}.${b64url(claims)}`;
  return `${data}.${sign('sha256', Buffer.from(data), sa.privateKey).toString('base64url')}`;
}

/** A bearer token for the service account in `credential`: at once when cached, else a promise. */
export function serviceAccountToken(
  obj: Record<string, unknown>,
  credential: string,
  platform: string,
  ctx: AdapterContext,
): string | Promise<string> {
  // The key is parsed only when a token is fetched, never on the cached path.
  return tokenCacheOf(ctx).token(tokenKey('google', credential), async () => {
    const sa = serviceAccountOf(obj, platform);
    return requestToken(
      ctx,
      sa.tokenUri,
      { grant_type: JWT_BEARER, assertion: assertion(sa, ctx.clock.now()) },
      platform,
    );
  });
}

export function dropServiceAccountToken(credential: string, token: string, ctx: AdapterContext): void {
  tokenCacheOf(ctx).drop(tokenKey('google', credential), token);
}
