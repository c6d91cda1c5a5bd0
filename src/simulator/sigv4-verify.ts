// Checks an AWS Signature Version 4 the way AWS does, written from the published algorithm with
// node:crypto only — independent of the SDK signer the gateway uses, so a bug both share cannot
// pass: the credential scope (known key, date, region, service), the signed headers (host and
// x-amz-date at least), the canonical request over the path as received (encoded again, as every
// service but S3 does), the sorted query, the payload hash of the exact body bytes, the clock skew
// window, the session token when the key has one. A failure is what Bedrock answers: 403 with the
// exception name and its message.
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';

export interface AwsSimKey {
  secretAccessKey: string;
  /** When set, requests must carry (and sign) this x-amz-security-token. */
  sessionToken?: string;
}

export interface SignedRequest {
  method: string;
  /** The path exactly as received (still percent-encoded). */
  path: string;
  /** The raw query string (no `?`). */
  query: string;
  headers: Record<string, string>;
}

export type SigV4Result =
  | { ok: true; accessKeyId: string; region: string }
  | { ok: false; exception: string; message: string };

/** AWS allows 5 minutes between the signature's time and its own. */
const SKEW_MS = 5 * 60 * 1000;
const AUTH =
  /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/([^/]+)\/aws4_request, ?SignedHeaders=([a-z0-9;-]+), ?Signature=([0-9a-f]{64})$/;

const sha256hex = (data: string | Buffer): string => createHash('sha256').update(data).digest('hex');
const hmac = (key: string | Buffer, data: string): Buffer => createHmac('sha256', key).update(data, 'utf8').digest();

/** RFC 3986 encoding: everything but unreserved characters (A-Z a-z 0-9 - _ . ~). */
function rfc3986(s: string): string {
  return encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

function canonicalQuery(query: string): string {
  if (query === '') return '';
  const pairs = query
    .split('&')
    .filter((p) => p !== '')
    .map((p) => {
      const eq = p.indexOf('=');
      const k = decodeURIComponent(eq === -1 ? p : p.slice(0, eq));
      const v = eq === -1 ? '' : decodeURIComponent(p.slice(eq + 1).replace(/\+/g, ' '));
      return [rfc3986(k), rfc3986(v)] as const;
    });
  pairs.sort((a, b) => (a[0] === b[0] ? (a[1] < b[1] ? -1 : 1) : a[0] < b[0] ? -1 : 1));
  return pairs.map(([k, v]) => `${k}=${v}`).join('&');
}

/** 20250101T000000Z → ms since the epoch, or NaN. */
function amzDateMs(s: string): number {
  const m = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(s);
  if (!m) return Number.NaN;
  return Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]), Number(m[4]), Number(m[5]), Number(m[6]));
}

const deny = (exception: string, message: string): SigV4Result => ({ ok: false, exception, message });
const MISMATCH =
  'The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method. Consult the service documentation for details.';

export function verifySigV4(
  req: SignedRequest,
  body: Buffer,
  keys: ReadonlyMap<string, AwsSimKey>,
  service: string,
  now: number,
): SigV4Result {
  const m = AUTH.exec(req.headers['authorization'] ?? '');
  if (!m)
    return deny(
      'IncompleteSignatureException',
      'Authorization header requires Credential, SignedHeaders and Signature.',
    );
  const [, keyId = '', date = '', region = '', scopeService = '', signedList = '', signature = ''] = m;
  const key = keys.get(keyId);
  if (!key) return deny('UnrecognizedClientException', 'The security token included in the request is invalid.');
  if (scopeService !== service)
    return deny('InvalidSignatureException', `Credential should be scoped to correct service: '${service}'.`);
  const amzDate = req.headers['x-amz-date'] ?? '';
  const at = amzDateMs(amzDate);
  if (Number.isNaN(at) || amzDate.slice(0, 8) !== date)
    return deny(
      'InvalidSignatureException',
      'Date in Credential scope does not match YYYYMMDD from ISO-8601 version of date from HTTP.',
    );
  if (Math.abs(at - now) > SKEW_MS)
    return deny(
      'InvalidSignatureException',
      `Signature expired: ${amzDate} is now earlier or later than the allowed 5 minutes.`,
    );
  const signed = signedList.split(';');
  if (!signed.includes('host') || !signed.includes('x-amz-date'))
    return deny('InvalidSignatureException', "'Host' and 'X-Amz-Date' must be signed.");
  if ([...signed].sort().join(';') !== signedList) return deny('InvalidSignatureException', MISMATCH);
  if (
    key.sessionToken !== undefined &&
    (req.headers['x-amz-security-token'] !== key.sessionToken || !signed.includes('x-amz-security-token'))
  ) {
    return deny('UnrecognizedClientException', 'The security token included in the request is invalid.');
  }
  const payloadHash = sha256hex(body);
  const claimed = req.headers['x-amz-content-sha256'];
  if (claimed !== undefined && claimed !== payloadHash) return deny('InvalidSignatureException', MISMATCH);
  const headerLines = signed.map((h) => `${h}:${(req.headers[h] ?? '').trim().replace(/\s+/g, ' ')}\n`).join('');
  const uri = req.path.split('/').map(rfc3986).join('/') || '/';
  const canonical = [req.method, uri, canonicalQuery(req.query), headerLines, signedList, payloadHash].join('\n');
  const scope = `${date}/${region}/${service}/aws4_request`;
  const toSign = ['AWS4-HMAC-SHA256', amzDate, scope, sha256hex(canonical)].join('\n');
  const kSigning = hmac(hmac(hmac(hmac(`AWS4${key.secretAccessKey}`, date), region), service), 'aws4_request');
  const expected = createHmac('sha256', kSigning).update(toSign, 'utf8').digest();
  if (!timingSafeEqual(expected, Buffer.from(signature, 'hex'))) return deny('InvalidSignatureException', MISMATCH);
  return { ok: true, accessKeyId: keyId, region };
}
