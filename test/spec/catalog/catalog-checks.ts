// Shared checks for the catalog tests: closed-object key sets, the pricing-object rules and the
// generic rules every catalog model / endpoints view must satisfy, written from the spec's tables
// (not from src/) so a wrong derivation in src/catalog cannot also be the expectation.
import type { Test } from 'tap';
import type { Vocabularies } from '../../../src/config/compiled.ts';

export type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
export type JsonObject = { [k: string]: Json };

/** Any tap test (the checks run inside whichever subtest calls them). */
export type Assert = Test;

export const PRICE_KEYS = [
  'prompt',
  'completion',
  'request',
  'image',
  'image_output',
  'audio',
  'audio_output',
  'input_audio_cache',
  'web_search',
  'internal_reasoning',
  'input_cache_read',
  'input_cache_write',
  'input_cache_write_1h',
  'image_token',
] as const;

export const REASONING_LEVELS = ['none', 'minimal', 'low', 'medium', 'high', 'xhigh', 'max'] as const;

export const MODEL_REQUIRED = [
  'id',
  'canonical_slug',
  'hugging_face_id',
  'name',
  'description',
  'architecture',
  'pricing',
  'top_provider',
  'per_request_limits',
  'supported_parameters',
  'default_parameters',
  'supported_voices',
  'knowledge_cutoff',
  'expiration_date',
  'links',
];
export const MODEL_OPTIONAL = ['created', 'context_length', 'reasoning'];

export const VIEW_KEYS = [
  'id',
  'aliases',
  'openness',
  'model_page_url',
  'capabilities',
  'protocols',
  'supported_endpoints',
  'endpoints',
];
export const ENTRY_KEYS = [
  'provider',
  'provider_type',
  'headquarters',
  'protocols',
  'supported_endpoints',
  'context_length',
  'max_prompt_tokens',
  'max_completion_tokens',
  'quantization',
  'supports_stream_cancellation',
  'capabilities',
  'pricing',
  'list_pricing',
  'discount',
  'data_policy',
];

const DECIMAL = /^(0|[1-9][0-9]*)(\.[0-9]+)?$/;
const DATE = /^\d{4}-\d{2}-\d{2}$/;
const QUANTIZATIONS = ['fp4', 'int4', 'int8', 'fp8', 'fp16', 'bf16', 'fp32', 'unknown'];

export function isObject(v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

export function obj(v: unknown): JsonObject {
  if (!isObject(v)) throw new Error(`expected an object, got ${JSON.stringify(v)}`);
  return v;
}

export function arr(v: unknown): Json[] {
  if (!Array.isArray(v)) throw new Error(`expected an array, got ${JSON.stringify(v)}`);
  return v as Json[];
}

/** Closed object: every required key present, nothing outside required + optional. */
export function checkKeys(
  t: Assert,
  v: unknown,
  required: readonly string[],
  optional: readonly string[],
  where: string,
): void {
  if (!isObject(v)) {
    t.ok(false, `${where} is an object`);
    return;
  }
  const keys = Object.keys(v);
  const missing = required.filter((k) => !keys.includes(k));
  const extra = keys.filter((k) => !required.includes(k) && !optional.includes(k));
  t.same(missing, [], `${where}: no required key missing`);
  t.same(extra, [], `${where}: no key outside the spec's table`);
}

/** `sub` lists only members of `order`, each once, in `order`'s order. */
export function isInOrder(sub: readonly unknown[], order: readonly string[]): boolean {
  let last = -1;
  for (const x of sub) {
    const i = order.indexOf(x as string);
    if (i <= last) return false;
    last = i;
  }
  return true;
}

function isValidDate(s: unknown): boolean {
  return typeof s === 'string' && DATE.test(s) && new Date(`${s}T00:00:00Z`).toISOString().startsWith(s);
}

/** Pricing object rules 1-3 (+ decimal strings): allowed keys, required text prices, brackets. */
export function checkPricing(t: Assert, p: unknown, where: string): void {
  checkKeys(t, p, ['prompt', 'completion'], [...PRICE_KEYS.slice(2), 'overrides'], where);
  const o = obj(p);
  for (const k of PRICE_KEYS) {
    if (!(k in o)) continue;
    t.ok(
      typeof o[k] === 'string' && DECIMAL.test(o[k] as string),
      `${where}.${k} is a plain decimal string (${JSON.stringify(o[k])})`,
    );
  }
  // Rule 1: an optional class present is priced (in these fixtures no optional class is declared free).
  for (const k of PRICE_KEYS.slice(2))
    if (k in o) t.ok(o[k] !== '0' && Number(o[k]) !== 0, `${where}.${k} is present only when priced`);
  if (!('overrides' in o)) return;
  const brackets = arr(o['overrides']);
  t.ok(brackets.length > 0, `${where}.overrides is absent rather than empty`);
  let prev = -1;
  brackets.forEach((b, i) => {
    const bw = `${where}.overrides[${i}]`;
    checkKeys(t, b, ['min_prompt_tokens'], PRICE_KEYS, bw);
    const m = obj(b)['min_prompt_tokens'];
    t.ok(Number.isInteger(m), `${bw}.min_prompt_tokens is an integer`);
    t.ok((m as number) > prev, `${bw} ascending by min_prompt_tokens`);
    prev = m as number;
    for (const k of PRICE_KEYS) {
      const v = obj(b)[k];
      if (v !== undefined) t.ok(typeof v === 'string' && DECIMAL.test(v), `${bw}.${k} is a decimal string`);
    }
  });
}

/** Every rule of the "Catalog model" table that can be checked on one object alone. */
export function checkCatalogModel(t: Assert, m: unknown, vocab: Vocabularies): void {
  const o = obj(m);
  const id = o['id'] as string;
  const w = `model ${id}`;
  checkKeys(t, o, MODEL_REQUIRED, MODEL_OPTIONAL, w);
  t.ok(typeof id === 'string' && /^[^/]+\/[^/]+$/.test(id), `${w}: id is vendor/model`);
  t.ok(typeof o['canonical_slug'] === 'string', `${w}: canonical_slug is a string`);
  t.equal(o['hugging_face_id'], null, `${w}: hugging_face_id is null`);
  t.ok(typeof o['name'] === 'string' && (o['name'] as string).length > 0, `${w}: name`);
  t.ok(typeof o['description'] === 'string', `${w}: description`);

  const a = obj(o['architecture']);
  checkKeys(
    t,
    a,
    ['modality', 'input_modalities', 'output_modalities', 'tokenizer', 'instruct_type'],
    [],
    `${w}.architecture`,
  );
  const ins = arr(a['input_modalities']) as string[];
  const outs = arr(a['output_modalities']) as string[];
  t.equal(a['modality'], `${ins.join('+')}->${outs.join('+')}`, `${w}: modality is in+in->out+out`);
  t.equal(ins[0], 'text', `${w}: text is the first input modality`);
  t.ok(
    isInOrder(ins, ['text', 'image', 'file', 'audio', 'video']),
    `${w}: input modalities in the fixed order (${ins.join(',')})`,
  );
  t.ok(outs.length >= 1 && new Set(outs).size === outs.length, `${w}: output modalities non-empty, no repeats`);
  t.ok(
    typeof a['tokenizer'] === 'string' && a['tokenizer'] === (a['tokenizer'] as string).toLowerCase(),
    `${w}: tokenizer lowercase`,
  );
  t.equal(a['instruct_type'], null, `${w}: instruct_type null`);

  checkPricing(t, o['pricing'], `${w}.pricing`);

  const top = obj(o['top_provider']);
  checkKeys(t, top, ['is_moderated'], ['context_length', 'max_completion_tokens'], `${w}.top_provider`);
  t.equal(top['is_moderated'], false, `${w}: top_provider.is_moderated false`);
  for (const k of ['context_length', 'max_completion_tokens'])
    if (k in top) t.ok(Number.isInteger(top[k]), `${w}: top_provider.${k} integer`);
  if ('context_length' in o) {
    t.ok(Number.isInteger(o['context_length']), `${w}: context_length integer`);
    t.equal(top['context_length'], o['context_length'], `${w}: top_provider.context_length = context_length`);
  } else t.ok(!('context_length' in top), `${w}: no top_provider.context_length without a declared context length`);

  t.equal(o['per_request_limits'], null, `${w}: per_request_limits null`);
  const params = arr(o['supported_parameters']) as string[];
  t.ok(isInOrder(params, vocab.parameters), `${w}: supported_parameters in the vocabulary's fixed order`);
  t.ok(!params.includes('reasoning_effort'), `${w}: reasoning_effort never listed`);
  const defaults = obj(o['default_parameters']);
  for (const k of Object.keys(defaults))
    t.ok(params.includes(k), `${w}: default parameter ${k} is one the model accepts`);
  t.equal(o['supported_voices'], null, `${w}: supported_voices null`);
  for (const k of ['knowledge_cutoff', 'expiration_date']) {
    t.ok(o[k] === null || isValidDate(o[k]), `${w}: ${k} is YYYY-MM-DD or null (${JSON.stringify(o[k])})`);
  }
  checkKeys(t, o['links'], ['details'], [], `${w}.links`);
  t.equal(obj(o['links'])['details'], `/v1/models/${id}`, `${w}: links.details`);
  if ('created' in o) {
    const c = o['created'];
    t.ok(Number.isInteger(c) && (c as number) % 86400 === 0, `${w}: created is a midnight-UTC Unix timestamp`);
  }
  if ('reasoning' in o) {
    const r = obj(o['reasoning']);
    checkKeys(
      t,
      r,
      ['mandatory', 'default_enabled', 'supported_efforts', 'supports_max_tokens'],
      ['default_effort'],
      `${w}.reasoning`,
    );
    for (const k of ['mandatory', 'default_enabled', 'supports_max_tokens'])
      t.equal(typeof r[k], 'boolean', `${w}: reasoning.${k} boolean`);
    const efforts = arr(r['supported_efforts']) as string[];
    t.ok(isInOrder([...efforts].reverse(), REASONING_LEVELS), `${w}: supported_efforts ordered high to low`);
    if ('default_effort' in r)
      t.ok(efforts.includes(r['default_effort'] as string), `${w}: default_effort is a supported level`);
    t.ok(params.includes('reasoning'), `${w}: a reasoning model lists "reasoning" in supported_parameters`);
  } else {
    t.ok(!params.includes('reasoning'), `${w}: a model that does not reason does not list "reasoning"`);
  }
}

function sameJson(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/** Some class of the base or of a bracket (matched by min_prompt_tokens) is priced above the list's. */
function someAboveList(pricing: JsonObject, list: JsonObject): boolean {
  const above = (p: JsonObject, l: JsonObject) =>
    Object.keys(p).some(
      (k) => k !== 'overrides' && k !== 'min_prompt_tokens' && l[k] !== undefined && Number(p[k]) > Number(l[k]),
    );
  if (above(pricing, list)) return true;
  const brackets = (x: JsonObject) => (x['overrides'] === undefined ? [] : arr(x['overrides']).map(obj));
  return brackets(pricing).some((b) => {
    const l = brackets(list).find((x) => x['min_prompt_tokens'] === b['min_prompt_tokens']);
    return l !== undefined && above(b, l);
  });
}

/** Every rule of the endpoints view that holds for any view alone. */
export function checkEndpointsView(t: Assert, v: unknown, vocab: Vocabularies, catalogModel: JsonObject): void {
  const o = obj(v);
  const w = `endpoints of ${String(o['id'])}`;
  checkKeys(t, o, VIEW_KEYS, [], w);
  t.equal(o['id'], catalogModel['id'], `${w}: id is the catalog slug`);
  const aliases = arr(o['aliases']) as string[];
  t.same(aliases, [...aliases].sort(), `${w}: aliases sorted`);
  t.ok(['open_source', 'open_weights', 'proprietary'].includes(o['openness'] as string), `${w}: openness`);
  t.ok(o['model_page_url'] === null || typeof o['model_page_url'] === 'string', `${w}: model_page_url`);
  const capOrder = vocab.capabilities.map((c) => c.id);
  const endpointOrder = vocab.endpoints.map((e) => e.id);
  const caps = arr(o['capabilities']) as string[];
  t.ok(
    isInOrder(caps, capOrder) && caps.every((c) => c.startsWith('supports_')),
    `${w}: capabilities supports_* in vocabulary order`,
  );
  const entries = arr(o['endpoints']).map(obj);
  const protos = new Set(entries.flatMap((e) => arr(e['protocols']) as string[]));
  const eps = new Set(entries.flatMap((e) => arr(e['supported_endpoints']) as string[]));
  t.same(
    o['protocols'],
    vocab.protocols.filter((p) => protos.has(p)),
    `${w}: protocols = union of the entries', vocabulary order`,
  );
  t.same(
    o['supported_endpoints'],
    endpointOrder.filter((p) => eps.has(p)),
    `${w}: supported_endpoints = union of the entries', vocabulary order`,
  );
  t.equal(new Set(entries.map((e) => e['provider'])).size, entries.length, `${w}: one entry per platform`);
  for (const e of entries) {
    const ew = `${w} / ${String(e['provider'])}`;
    checkKeys(t, e, ENTRY_KEYS, [], ew);
    t.ok(
      ['first_party', 'cloud_infra', 'reseller', 'private'].includes(e['provider_type'] as string),
      `${ew}: provider_type`,
    );
    t.ok(
      e['headquarters'] === null || /^[A-Z]{2}$/.test(e['headquarters'] as string),
      `${ew}: headquarters alpha-2 or null`,
    );
    t.ok(isInOrder(arr(e['protocols']), vocab.protocols), `${ew}: protocols in vocabulary order`);
    t.ok(isInOrder(arr(e['supported_endpoints']), endpointOrder), `${ew}: supported_endpoints in vocabulary order`);
    for (const k of ['context_length', 'max_prompt_tokens', 'max_completion_tokens']) {
      t.ok(e[k] === null || Number.isInteger(e[k]), `${ew}: ${k} integer or null`);
    }
    t.ok(e['quantization'] === null || QUANTIZATIONS.includes(e['quantization'] as string), `${ew}: quantization`);
    t.equal(typeof e['supports_stream_cancellation'], 'boolean', `${ew}: supports_stream_cancellation boolean`);
    const ecaps = arr(e['capabilities']) as string[];
    t.ok(
      isInOrder(ecaps, capOrder) && ecaps.every((c) => caps.includes(c)),
      `${ew}: capabilities narrowed from the model's, vocabulary order`,
    );
    checkPricing(t, e['pricing'], `${ew}.pricing`);
    checkPricing(t, e['list_pricing'], `${ew}.list_pricing`);
    t.same(e['list_pricing'], catalogModel['pricing'], `${ew}: list_pricing is the model's list pricing`);
    if (e['discount'] === null) {
      // No discount: list prices, or a channel that charges more than list somewhere (above list).
      if (!sameJson(e['pricing'], e['list_pricing'])) {
        t.ok(
          someAboveList(obj(e['pricing']), obj(e['list_pricing'])),
          `${ew}: no discount, so pricing is list or above list somewhere`,
        );
      }
    } else {
      const d = obj(e['discount']);
      checkKeys(t, d, ['percent_off', 'ends_at'], [], `${ew}.discount`);
      t.ok(
        Number.isInteger(d['percent_off']) && (d['percent_off'] as number) > 0 && (d['percent_off'] as number) <= 100,
        `${ew}: percent_off integer 1-100`,
      );
      t.ok(
        d['ends_at'] === null || Number.isFinite(Date.parse(d['ends_at'] as string)),
        `${ew}: ends_at timestamp or null`,
      );
      t.ok(
        Number(obj(e['pricing'])['prompt']) <= Number(obj(e['list_pricing'])['prompt']),
        `${ew}: discounted prompt not above list`,
      );
    }
    const dp = obj(e['data_policy']);
    checkKeys(t, dp, ['prompt_training', 'data_retention', 'moderation', 'reviewed'], [], `${ew}.data_policy`);
    t.ok(
      dp['prompt_training'] === null || typeof dp['prompt_training'] === 'boolean',
      `${ew}: prompt_training boolean or null`,
    );
    t.ok(
      vocab.retentionLevels.some((r) => r.id === dp['data_retention']),
      `${ew}: data_retention is a retention id`,
    );
    t.ok(vocab.moderation.includes(dp['moderation'] as string), `${ew}: moderation is a responsibility id`);
    t.equal(typeof dp['reviewed'], 'boolean', `${ew}: reviewed boolean`);
  }
}

/** GET a JSON URL: status, headers and parsed body. */
export async function getJson(
  url: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; headers: Headers; body: JsonObject; text: string }> {
  const res = await fetch(url, { headers });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: obj(JSON.parse(text)), text };
}

/** The spec's 404 for the catalog: error object with code and message, pointing at slugs and the list. */
export function checkModelNotFound(t: Assert, r: { status: number; body: JsonObject }, where: string): void {
  t.equal(r.status, 404, `${where}: 404`);
  checkKeys(t, r.body, ['error'], [], `${where}: body`);
  const e = obj(r.body['error']);
  checkKeys(t, e, ['message', 'type', 'code'], [], `${where}: error object`);
  t.equal(e['code'], 'model_not_found', `${where}: code`);
  t.equal(e['type'], 'not_found_error', `${where}: type`);
  t.ok(
    /vendor-qualified/.test(e['message'] as string) && /GET \/v1\/models/.test(e['message'] as string),
    `${where}: message says slugs are vendor-qualified and points to GET /v1/models`,
  );
}
