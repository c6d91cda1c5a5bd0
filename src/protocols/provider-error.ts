// A provider's error, read from a platform's own error shape by its adapter (src/errors.ts
// ProviderError), rendered as the inbound protocol's error body: what the client's SDK reads to pick
// its error class and show the message. The provider's status goes with it unchanged.
import type { ProviderError } from '../errors.ts';
import type { ProtocolModule } from './types.ts';

/** The error object every protocol carries: the platform's kept members, then message, type, code. */
export function providerErrorObject(err: ProviderError): Record<string, unknown> {
  return { ...err.extra, message: err.message, type: err.type, code: err.code };
}

/** The body the client gets: the protocol's envelope, else `{"error":{…}}`. */
export function renderProviderError(protocol: ProtocolModule, err: ProviderError): Buffer {
  const body = protocol.providerErrorBody?.(err) ?? { error: providerErrorObject(err) };
  return Buffer.from(JSON.stringify(body));
}
