// Reading a JSON inference request (every endpoint but image edits): parse the buffered body, take
// the routing fields off, apply the protocol's checks, and size the hold bounds from the body.
import { isUtf8 } from 'node:buffer';
import { promptTokenBound } from '../billing/hold.ts';
import { GatewayError } from '../errors.ts';
import type { IncomingRequest } from '../http/request.ts';
import { nestsDeeperThan } from '../stream/json-depth.ts';
import { takeRoutingFields } from './routing-fields.ts';
import type { InboundRequest, JsonObject, ProtocolModule } from './types.ts';

/**
 * Deepest nesting of objects and arrays a request body may have (the top-level object is level 1).
 * Real requests stay far below it (messages → content parts → a tool's JSON Schema is ~10–30 levels);
 * bounding it keeps every later step that walks or re-serialises the body (JSON.stringify for the
 * upstream call recurses once per level) within a depth the gateway chose, not the client.
 */
export const MAX_JSON_DEPTH = 128;

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
    outputBound: (m, d) => rules.outputBound(rest, endpoint, d ?? m),
  };
}

function parseJsonBody(raw: Buffer): JsonObject {
  if (raw.length === 0) throw new GatewayError('invalid_request', 'model is required');
  if (!isUtf8(raw)) throw new GatewayError('invalid_request', 'the request body is not valid UTF-8');
  if (nestsDeeperThan(raw, MAX_JSON_DEPTH)) {
    throw new GatewayError('invalid_request', `the request body nests objects and arrays more than ${MAX_JSON_DEPTH} levels deep`);
  }
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
