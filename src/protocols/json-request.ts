// Reading a JSON inference request (every endpoint but image edits): parse the buffered body, take
// the routing fields off, apply the protocol's checks, and size the hold bounds from the body.
import { isUtf8 } from 'node:buffer';
import { promptTokenBound } from '../billing/hold.ts';
import { GatewayError } from '../errors.ts';
import type { IncomingRequest } from '../http/request.ts';
import { takeRoutingFields } from './routing-fields.ts';
import type { InboundRequest, JsonObject, ProtocolModule } from './types.ts';

/** The protocol rules a JSON request is read with. */
export type JsonRules = Pick<ProtocolModule, 'validate' | 'wantsStream' | 'outputBound'>;

export function readJsonRequest(req: IncomingRequest, endpoint: string, rules: JsonRules): InboundRequest {
  const body = parseJsonBody(req.body);
  const { fields, rest } = takeRoutingFields(body);
  rules.validate(rest, endpoint);
  return {
    fields,
    stream: rules.wantsStream(rest),
    body: { kind: 'json', original: rest },
    requestBytes: req.body.length,
    promptBound: promptTokenBound(req.body.length),
    outputBound: (m) => rules.outputBound(rest, endpoint, m),
  };
}

function parseJsonBody(raw: Buffer): JsonObject {
  if (raw.length === 0) throw new GatewayError('invalid_request', 'model is required');
  if (!isUtf8(raw)) throw new GatewayError('invalid_request', 'the request body is not valid UTF-8');
  let value: unknown;
  try {
    value = JSON.parse(raw.toString('utf8'));
  } catch (err) {
    throw new GatewayError('invalid_request', `the request body is not valid JSON: ${err instanceof Error ? err.message : 'parse error'}`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new GatewayError('invalid_request', 'the request body must be a JSON object');
  }
  return value as JsonObject;
}
