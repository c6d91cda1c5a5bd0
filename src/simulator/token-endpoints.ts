// The OAuth token endpoints the simulator plays: Google's (`…/token`, JWT bearer grant: the RS256
// assertion is verified against the public key of a service account the simulator was told about,
// with its iss, aud, exp and scope checked) and Microsoft Entra's (`…/oauth2/v2.0/token`, client
// credentials checked against the clients it knows). Both issue `sim-token-…` bearer tokens with a
// configurable lifetime on the simulator's clock; inference requests carrying such a token are
// refused with 401 unless it was issued here and has not expired — what drives refresh tests.
import { createPublicKey, randomBytes, verify } from 'node:crypto';
import type { SimState } from './state.ts';

export const TOKEN_PREFIX = 'sim-token-';

export interface TokenReply {
  status: number;
  body: string;
}

const oauthError = (status: number, error: string, description: string): TokenReply => ({
  status,
  body: JSON.stringify({ error, error_description: description }),
});

function issue(state: SimState): TokenReply {
  const token = TOKEN_PREFIX + randomBytes(16).toString('hex');
  state.tokens.issued.set(token, state.clock.now() + state.tokens.lifetimeSec * 1000);
  return {
    status: 200,
    body: JSON.stringify({ access_token: token, expires_in: state.tokens.lifetimeSec, token_type: 'Bearer' }),
  };
}

function googleGrant(state: SimState, form: URLSearchParams): TokenReply {
  if (form.get('grant_type') !== 'urn:ietf:params:oauth:grant-type:jwt-bearer')
    return oauthError(400, 'unsupported_grant_type', 'Invalid grant_type');
  const [h = '', c = '', s = ''] = (form.get('assertion') ?? '').split('.');
  let claims: Record<string, unknown>;
  let header: Record<string, unknown>;
  try {
    header = JSON.parse(Buffer.from(h, 'base64url').toString('utf8')) as Record<string, unknown>;
    claims = JSON.parse(Buffer.from(c, 'base64url').toString('utf8')) as Record<string, unknown>;
  } catch {
    return oauthError(400, 'invalid_grant', 'Invalid JWT');
  }
  const pem = typeof claims['iss'] === 'string' ? state.tokens.serviceAccounts.get(claims['iss']) : undefined;
  if (header['alg'] !== 'RS256' || !pem) return oauthError(400, 'invalid_grant', 'Invalid JWT Signature.');
  if (!verify('sha256', Buffer.from(`${h}.${c}`), createPublicKey(pem), Buffer.from(s, 'base64url')))
    return oauthError(400, 'invalid_grant', 'Invalid JWT Signature.');
  const now = state.clock.now() / 1000;
  const exp = claims['exp'];
  const iat = claims['iat'];
  if (typeof exp !== 'number' || typeof iat !== 'number' || exp < now || iat > now + 300 || exp - iat > 3600)
    return oauthError(
      400,
      'invalid_grant',
      'Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe.',
    );
  if (typeof claims['aud'] !== 'string' || !claims['aud'].endsWith('/token'))
    return oauthError(400, 'invalid_grant', 'Invalid JWT audience.');
  if (claims['scope'] !== 'https://www.googleapis.com/auth/cloud-platform')
    return oauthError(400, 'invalid_scope', 'Invalid OAuth scope.');
  return issue(state);
}

function entraGrant(state: SimState, form: URLSearchParams): TokenReply {
  if (form.get('grant_type') !== 'client_credentials')
    return oauthError(400, 'unsupported_grant_type', 'AADSTS70003: The app requested an unsupported grant type.');
  const secret = state.tokens.entraClients.get(form.get('client_id') ?? '');
  if (secret === undefined || secret !== form.get('client_secret'))
    return oauthError(401, 'invalid_client', 'AADSTS7000215: Invalid client secret provided.');
  if (form.get('scope') !== 'https://cognitiveservices.azure.com/.default')
    return oauthError(400, 'invalid_scope', 'AADSTS70011: The provided value for scope is not valid.');
  return issue(state);
}

/** Which token endpoint a path is, or null. */
export function tokenEndpointOf(path: string): 'google' | 'entra' | null {
  if (path.endsWith('/oauth2/v2.0/token')) return 'entra';
  if (path === '/token' || path.endsWith('/oauth2/v4/token')) return 'google';
  return null;
}

export function tokenReply(state: SimState, kind: 'google' | 'entra', raw: Buffer): TokenReply {
  const form = new URLSearchParams(raw.toString('utf8'));
  return kind === 'google' ? googleGrant(state, form) : entraGrant(state, form);
}

/** For a `sim-token-…` bearer: whether it was issued here and is still valid; null for other credentials. */
export function issuedTokenValid(state: SimState, authorization: string | undefined): boolean | null {
  const token = (authorization ?? '').replace(/^Bearer\s+/i, '');
  if (!token.startsWith(TOKEN_PREFIX)) return null;
  const expiresAt = state.tokens.issued.get(token);
  return expiresAt !== undefined && state.clock.now() < expiresAt;
}
