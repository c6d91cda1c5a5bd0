// The demo's upstream credentials. Every resource whose credential is not sealed yet gets a demo-only
// value of the kind its platform's adapter takes: AWS access keys (`bedrock`: every request SigV4
// signed), a service-account key file whose RSA key pair is generated here (`vertex`), Entra client
// credentials (`azure-openai`), `sim-demo-<name>` for every other adapter. Then every structured
// credential sealed — generated now or on an earlier start — is turned into what the simulator must
// be told to accept it: AWS keys for its SigV4 verifier, the service account's public key for its
// Google token endpoint, the Entra client for its Entra token endpoint. None of these values is a
// real credential; the demo sends every upstream call (token endpoints included) to the simulator.
import { createPrivateKey, createPublicKey, generateKeyPairSync, randomBytes } from 'node:crypto';
import type { CompiledConfig } from '../config/compiled.ts';
import type { AwsSimKey } from '../simulator/sigv4-verify.ts';

/** The simulator options that make it accept the sealed credentials. */
export interface DemoUpstreamAuth {
  awsKeys: Record<string, AwsSimKey>;
  serviceAccounts: Record<string, string>;
  entraClients: Record<string, string>;
}

/** The part of the store's secrets the demo uses. */
export interface DemoSecrets {
  names(): Set<string>;
  set(name: string, plaintext: string): void;
  reveal(name: string): string | null;
}

/** A service-account key file shaped like the ones Google issues, for a key pair made here. */
function demoServiceAccount(name: string): string {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return JSON.stringify({
    type: 'service_account',
    project_id: 'pi-gateway-demo',
    private_key_id: randomBytes(20).toString('hex'),
    private_key: privateKey.export({ type: 'pkcs8', format: 'pem' }),
    client_email: `${name}@pi-gateway-demo.iam.gserviceaccount.com`,
    client_id: '100000000000000000000',
    token_uri: 'https://oauth2.googleapis.com/token',
  });
}

/** The demo value for a credential of a resource on a platform using `adapter`. */
export function demoCredential(adapter: string, name: string): string {
  switch (adapter) {
    case 'bedrock':
      // Shaped like an IAM user's keys (AKIA + 16 characters); the simulator's verifier knows them.
      return JSON.stringify({
        access_key_id: 'AKIAPIGATEWAYDEMO000',
        secret_access_key: `sim-demo-${name}-secret-access-key`,
      });
    case 'vertex':
      return demoServiceAccount(name);
    case 'azure-openai':
      return JSON.stringify({
        tenant_id: 'pi-gateway-demo',
        client_id: `sim-demo-${name}`,
        client_secret: `sim-demo-${name}-secret`,
      });
    default:
      return `sim-demo-${name}`;
  }
}

const text = (obj: Record<string, unknown>, field: string): string | undefined => {
  const v = obj[field];
  return typeof v === 'string' && v !== '' ? v : undefined;
};

/** Adds what the simulator needs to accept one sealed value (nothing for an opaque key). */
function learn(auth: DemoUpstreamAuth, value: string): void {
  if (!value.trimStart().startsWith('{')) return;
  let obj: unknown;
  try {
    obj = JSON.parse(value);
  } catch {
    return;
  }
  if (typeof obj !== 'object' || obj === null || Array.isArray(obj)) return;
  const o = obj as Record<string, unknown>;
  const keyId = text(o, 'access_key_id');
  const secret = text(o, 'secret_access_key');
  if (keyId && secret) {
    const sessionToken = text(o, 'session_token');
    auth.awsKeys[keyId] = sessionToken ? { secretAccessKey: secret, sessionToken } : { secretAccessKey: secret };
  }
  const email = text(o, 'client_email');
  const pem = text(o, 'private_key');
  if (email && pem) {
    try {
      auth.serviceAccounts[email] = createPublicKey(createPrivateKey(pem))
        .export({ type: 'spki', format: 'pem' })
        .toString();
    } catch {
      // Not a private key: the token endpoint refuses this account, as Google would.
    }
  }
  const clientId = text(o, 'client_id');
  const clientSecret = text(o, 'client_secret');
  if (clientId && clientSecret) auth.entraClients[clientId] = clientSecret;
}

/** Seals a demo credential for every resource that lacks one; returns what the simulator must accept. */
export function sealDemoCredentials(config: CompiledConfig, secrets: DemoSecrets): DemoUpstreamAuth {
  const adapterOf = new Map(config.platforms.map((p) => [p.id, p.adapter]));
  const sealed = secrets.names();
  for (const r of config.resources) {
    if (sealed.has(r.credential)) continue;
    secrets.set(r.credential, demoCredential(adapterOf.get(r.platform) ?? '', r.credential));
    sealed.add(r.credential);
  }
  const auth: DemoUpstreamAuth = { awsKeys: {}, serviceAccounts: {}, entraClients: {} };
  for (const name of new Set(config.resources.map((r) => r.credential))) {
    let value: string | null;
    try {
      value = secrets.reveal(name);
    } catch {
      continue; // sealed under another master key or tampered: the gateway reports it at start
    }
    if (value !== null) learn(auth, value);
  }
  return auth;
}
