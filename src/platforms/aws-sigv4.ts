// AWS Signature Version 4 over one request exactly as it is sent: the AWS SDK's own signer
// (@smithy/signature-v4, with the SDK's node:crypto SHA-256 from @smithy/core) signs the final URL,
// headers and body bytes; only the headers the signature adds are copied onto the request. The Host
// header is signed as undici will send it (the URL's host). Time comes from the caller's clock.
import { Hash } from '@smithy/core/serde';
import { SignatureV4 } from '@smithy/signature-v4';
import { CredentialError, type OutgoingRequest } from './types.ts';

/** Access key id + secret (+ session token for temporary credentials), as sealed. */
export interface AwsKeys {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
}

/** Headers the signer adds; everything else it saw is sent as it was. */
const SIGNATURE_HEADERS = ['authorization', 'x-amz-date', 'x-amz-security-token', 'x-amz-content-sha256'];

export async function signSigV4(
  out: OutgoingRequest,
  keys: AwsKeys,
  region: string,
  service: string,
  now: number,
): Promise<void> {
  if (typeof out.body !== 'string' && !Buffer.isBuffer(out.body)) {
    throw new CredentialError('a streamed upload cannot be signed with SigV4 (the signature covers the body)');
  }
  const u = new URL(out.url);
  const signer = new SignatureV4({
    service,
    region,
    credentials: {
      accessKeyId: keys.accessKeyId,
      secretAccessKey: keys.secretAccessKey,
      ...(keys.sessionToken ? { sessionToken: keys.sessionToken } : {}),
    },
    sha256: Hash.bind(null, 'sha256'),
    // Every AWS service but S3 signs the path encoded twice (the SDK's default).
    uriEscapePath: true,
  });
  const query: Record<string, string> = {};
  for (const [k, v] of u.searchParams) query[k] = v;
  const signed = await signer.sign(
    {
      method: 'POST',
      protocol: u.protocol,
      hostname: u.hostname,
      ...(u.port ? { port: Number(u.port) } : {}),
      path: u.pathname,
      query,
      headers: { ...out.headers, host: u.host },
      body: out.body,
    },
    { signingDate: new Date(now) },
  );
  for (const name of SIGNATURE_HEADERS) {
    const v = signed.headers[name];
    if (v !== undefined) out.headers[name] = v;
  }
}
