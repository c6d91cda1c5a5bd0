// The routing fields every inference body may carry (docs/api.md: "Only routing fields are consumed by the
// service: provider, models, route, fallbacks"; `preset` reserved). They are validated and removed
// here, once, so no protocol module can forward them by mistake.
import { GatewayError, modelRequired, validationFailed } from '../errors.ts';
import type { JsonObject, RoutingFields } from './types.ts';

export const MAX_FALLBACK_MODELS = 3;

function stringList(body: JsonObject, field: string): string[] | undefined {
  const v = body[field];
  if (v === undefined) return undefined;
  if (!Array.isArray(v) || v.some((x) => typeof x !== 'string' || x === '')) {
    throw validationFailed(`${field} must be an array of model slugs (strings)`);
  }
  if (v.length > MAX_FALLBACK_MODELS) {
    throw validationFailed(
      `${field} lists ${v.length} models; at most ${MAX_FALLBACK_MODELS} fallback models are allowed`,
    );
  }
  return v as string[];
}

/**
 * Validates and removes the routing fields. Returns them and the body that remains (a shallow copy:
 * the caller's object is not modified). `fallbacks` is accepted as another name for `models` (the
 * API leaves its shape to us); sending both is refused rather than guessing which wins.
 */
export function takeRoutingFields(body: JsonObject): { fields: RoutingFields; rest: JsonObject } {
  if ('preset' in body) throw validationFailed('preset is not supported yet');
  const route = body['route'];
  if (route !== undefined && route !== 'fallback')
    throw validationFailed('route must be "fallback" (the only routing mode)');
  const models = stringList(body, 'models');
  const fallbacksField = stringList(body, 'fallbacks');
  if (models && fallbacksField) throw validationFailed('send models or fallbacks, not both');
  const list = models ?? fallbacksField ?? [];

  const m = body['model'];
  if (m !== undefined && m !== null && (typeof m !== 'string' || m === ''))
    throw validationFailed('model must be a non-empty string');
  const primary = typeof m === 'string' && m !== '' ? m : list[0];
  if (primary === undefined) throw modelRequired();

  const seen = new Set([primary]);
  const fallbacks: string[] = [];
  for (const name of list) {
    if (seen.has(name)) continue;
    seen.add(name);
    fallbacks.push(name);
  }

  return { fields: { model: primary, fallbacks, provider: body['provider'] }, rest: withoutRoutingFields(body) };
}

const ROUTING_KEYS = new Set(['provider', 'models', 'fallbacks', 'route']);

/** A shallow copy without the routing fields. Built by copying (not by `delete` on a copy, which
 *  turns the object into a slow dictionary for every later read and for its serialisation). */
function withoutRoutingFields(body: JsonObject): JsonObject {
  if (!('provider' in body || 'models' in body || 'fallbacks' in body || 'route' in body)) return { ...body };
  const rest: JsonObject = {};
  for (const k of Object.keys(body)) {
    if (ROUTING_KEYS.has(k)) continue;
    // A member named __proto__ stays a member (an assignment would set the prototype instead).
    if (k === '__proto__')
      Object.defineProperty(rest, k, { value: body[k], enumerable: true, writable: true, configurable: true });
    else rest[k] = body[k];
  }
  return rest;
}

/** 400 for a missing required field (docs/api.md: "required field missing"). */
export function missingField(name: string): GatewayError {
  return new GatewayError('invalid_request', `${name} is required`);
}
