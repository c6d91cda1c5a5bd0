// Reading a JSON inference request (every endpoint but image edits): parse the buffered body, take
// the routing fields off, apply the protocol's checks, and size the hold bounds from the body.
import { isUtf8 } from 'node:buffer';
import { promptTokenBound } from '../billing/hold.ts';
import { GatewayError } from '../errors.ts';
import type { IncomingRequest } from '../http/request.ts';
import { type JsonLimit, type JsonLimits, jsonShape, type MemberSpans } from '../stream/json-depth.ts';
import { SPLICE_FROM_BYTES } from './upstream-json.ts';
import { takeRoutingFields } from './routing-fields.ts';
import { isPositiveInt } from './positive-int.ts';
import type { InboundRequest, JsonObject, OutputLimitField, ProtocolModule } from './types.ts';

/**
 * Deepest nesting of objects and arrays a request body may have (the top-level object is level 1).
 * Real requests stay far below it (messages → content parts → a tool's JSON Schema is ~10–30 levels);
 * bounding it keeps every later step that walks or re-serialises the body (JSON.stringify for the
 * upstream call recurses once per level) within a depth the gateway chose, not the client.
 */
export const MAX_JSON_DEPTH = 128;

/**
 * What a JSON request body may hold, checked by the same forward scan as its depth, before it is
 * parsed. The body's byte limit alone does not bound the work: a few MiB of tiny values cost far more
 * to parse, copy and forward than the same bytes of text, and one object with hundreds of thousands
 * of members is stored by V8 as a dictionary whose copies (the routing fields taken off, each
 * attempt's rewrite) cost more than linear time. Each limit is far above real traffic: a long agent
 * conversation has thousands of messages and tens of thousands of values, a tool's JSON Schema a few
 * hundred properties, its names are identifiers; strings (base64 images of several MB included) are
 * bounded by the body's byte limit only, since one costs a single pass in the scan and the parse.
 */
export const JSON_LIMITS: Readonly<JsonLimits> = {
  depth: MAX_JSON_DEPTH,
  members: 10_000,
  elements: 100_000,
  values: 500_000,
  nameBytes: 4096,
};

/** Why a body over one of the limits is refused, naming the limit. */
const LIMIT_MESSAGES: Record<JsonLimit, string> = {
  depth: `nests objects and arrays more than ${JSON_LIMITS.depth} levels deep`,
  members: `has an object with more than ${JSON_LIMITS.members} members`,
  elements: `has an array with more than ${JSON_LIMITS.elements} elements`,
  values: `holds more than ${JSON_LIMITS.values} values (object members and array elements, all levels)`,
  nameBytes: `has a member name longer than ${JSON_LIMITS.nameBytes} bytes`,
};

/** The protocol rules a JSON request is read with. */
export type JsonRules = Pick<ProtocolModule, 'validate' | 'wantsStream' | 'outputBound' | 'outputLimitFields'>;

export function readJsonRequest(req: IncomingRequest, endpoint: string, rules: JsonRules): InboundRequest {
  const { body, members } = parseJsonBody(req.body);
  const { fields, rest } = takeRoutingFields(body);
  rules.validate(rest, endpoint);
  const read: InboundRequest = {
    fields,
    stream: rules.wantsStream(rest),
    // The bytes and their member spans go along, so each attempt's upstream body reuses them.
    body:
      members === null
        ? { kind: 'json', original: rest }
        : { kind: 'json', original: rest, source: { raw: req.body, members, original: rest } },
    requestBytes: req.body.length,
    promptBound: promptTokenBound(req.body.length),
    outputBound: (m, d) => rules.outputBound(rest, endpoint, d ?? m),
  };
  const limitField =
    rules.outputLimitFields === undefined ? null : outputLimitField(rest, endpoint, rules, req.body.length);
  if (limitField !== null) read.outputLimit = limitField;
  return read;
}

/**
 * The output-limit field of a request and its hold bounds at another value: the protocol's own bound
 * rule on the body with that value, and the prompt bound of the body it makes — the number's digits
 * replacing the sent ones, or, when the request set none, the member added as `, "name": N` (the
 * longer spelling, so that a compact one only holds less).
 */
function outputLimitField(
  rest: JsonObject,
  endpoint: string,
  rules: JsonRules,
  bodyBytes: number,
): OutputLimitField | null {
  const names = rules.outputLimitFields ?? [];
  const sent = names.find((f) => isPositiveInt(rest[f]));
  const name = sent ?? names.at(-1);
  if (name === undefined) return null;
  const base = sent === undefined ? bodyBytes + JSON.stringify(name).length + 4 : bodyBytes - String(rest[sent]).length;
  return {
    name,
    boundsAt(tokens) {
      const body = { ...rest, [name]: tokens };
      return {
        promptTokens: promptTokenBound(base + String(tokens).length),
        outputBound: (m, d) => rules.outputBound(body, endpoint, d ?? m),
      };
    },
  };
}

/** The parsed body, and where its top-level members lie in `raw` (null when the scan could not tell). */
function parseJsonBody(raw: Buffer): { body: JsonObject; members: MemberSpans | null } {
  if (raw.length === 0) throw new GatewayError('invalid_request', 'model is required');
  if (!isUtf8(raw)) throw new GatewayError('invalid_request', 'the request body is not valid UTF-8');
  // Member spans only for a body large enough to be spliced (./upstream-json.ts); the limits for all.
  const shape = jsonShape(raw, JSON_LIMITS, raw.length >= SPLICE_FROM_BYTES);
  if (shape.exceeded !== null)
    throw new GatewayError('invalid_request', `the request body ${LIMIT_MESSAGES[shape.exceeded]}`);
  let value: unknown;
  try {
    value = JSON.parse(raw.toString('utf8'));
  } catch (err) {
    throw new GatewayError(
      'invalid_request',
      `the request body is not valid JSON: ${err instanceof Error ? err.message : 'parse error'}`,
    );
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new GatewayError('invalid_request', 'the request body must be a JSON object');
  }
  const members = shape.members;
  // A scan that disagrees with the parser about the members is not trusted with the bytes.
  return {
    body: value as JsonObject,
    members: members !== null && members.size === Object.keys(value).length ? members : null,
  };
}
