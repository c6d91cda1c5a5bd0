// The request's `provider` preferences (docs/api.md: "Provider preferences object"): validation with the
// API's exact 422 messages, resolution of provider names to platform ids, and the merge with the
// workspace's routing settings into the one policy the candidate set and the ordering read.
import type { CompiledRouting, Quantization } from '../config/compiled.ts';
import { QUANTIZATIONS } from '../config/compiled.ts';
import type { ConfigIndex } from '../config/index.ts';
import { validationFailed } from '../errors.ts';

/** The request's `provider` object, validated and resolved to canonical platform ids. */
export interface ProviderPreferences {
  order?: string[];
  only?: string[];
  ignore?: string[];
  allowFallbacks?: boolean;
  sort?: 'price';
  dataCollection?: 'allow' | 'deny';
  zdr?: boolean;
  quantizations?: Quantization[];
}

/** The fields this gateway implements, wire name → what they parse into. */
const IMPLEMENTED = [
  'order',
  'only',
  'ignore',
  'allow_fallbacks',
  'sort',
  'data_collection',
  'zdr',
  'quantizations',
] as const;
type ImplementedKey = (typeof IMPLEMENTED)[number];

/**
 * OpenRouter's other `provider` fields: a client written for it may send them, so they get the
 * API's "not supported yet" message instead of "unrecognized key". `min_throughput` and
 * `max_latency` are the older spellings of the `preferred_*` fields.
 */
const NOT_SUPPORTED_YET = new Set([
  'require_parameters',
  'max_price',
  'preferred_min_throughput',
  'preferred_max_latency',
  'min_throughput',
  'max_latency',
  'enforce_distillable_text',
  'experimental',
]);

const QUANTIZATION_SET: ReadonlySet<string> = new Set(QUANTIZATIONS);

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function isImplemented(key: string): key is ImplementedKey {
  return (IMPLEMENTED as readonly string[]).includes(key);
}

function stringArray(field: string, v: unknown): string[] {
  if (!Array.isArray(v) || !v.every((x) => typeof x === 'string')) {
    throw validationFailed(`provider.${field} must be an array of strings`);
  }
  return v as string[];
}

/** Provider names → platform ids (case-insensitive, aliases included), first occurrence kept. */
function platformIds(field: string, v: unknown, index: ConfigIndex): string[] {
  const out: string[] = [];
  for (const name of stringArray(field, v)) {
    const platform = index.platformFor(name);
    if (!platform) throw validationFailed(`provider.${field}: unknown provider "${name}"`);
    if (!out.includes(platform.id)) out.push(platform.id);
  }
  return out;
}

function bool(field: string, v: unknown): boolean {
  if (typeof v !== 'boolean') throw validationFailed(`provider.${field} must be a boolean`);
  return v;
}

const SORT_MESSAGE = 'provider.sort must be "price" or an object {"by": "price"}';

/** `"price"` or `{by: "price"}`; OpenRouter's `partition` key is known but not implemented. */
function sortMode(v: unknown): 'price' {
  if (v === 'price') return 'price';
  if (!isPlainObject(v)) throw validationFailed(SORT_MESSAGE);
  for (const key of Object.keys(v)) {
    if (key === 'by') continue;
    if (key === 'partition') throw validationFailed('provider.sort.partition is not supported yet');
    throw validationFailed(`provider.sort: unrecognized key "${key}"`);
  }
  if (!('by' in v)) throw validationFailed('provider.sort.by is required');
  if (v['by'] !== 'price') throw validationFailed('provider.sort.by must be "price"');
  return 'price';
}

function quantizations(v: unknown): Quantization[] {
  const out: Quantization[] = [];
  for (const q of stringArray('quantizations', v)) {
    // Exact match: the API's ids are lowercase and the catalog shows them that way.
    if (!QUANTIZATION_SET.has(q)) {
      throw validationFailed(
        `provider.quantizations: unknown quantization "${q}" (expected one of ${QUANTIZATIONS.join(', ')})`,
      );
    }
    if (!out.includes(q as Quantization)) out.push(q as Quantization);
  }
  return out;
}

/**
 * Validates the raw `provider` value and resolves provider names to platform ids.
 *
 * Keys are checked in the order the client sent them and the first problem is reported
 * (unknown key, "not supported yet" field, wrong type or unknown provider name), so one request
 * gets one precise message. Rules chosen where the API is open:
 * - `null` (for `provider` itself or for any field) counts as absent: OpenRouter's schema declares
 *   these fields nullable and SDKs serialise unset optionals that way.
 * - An empty `order`, `only` or `quantizations` array counts as absent: "use only these: none"
 *   would refuse every request, which no client means.
 * - Duplicate names (including an id and its alias) collapse to one entry, first position kept.
 */
export function parseProviderPreferences(raw: unknown, index: ConfigIndex): ProviderPreferences {
  if (raw === null || raw === undefined) return {};
  if (!isPlainObject(raw)) throw validationFailed('provider must be an object');
  const prefs: ProviderPreferences = {};
  for (const [key, value] of Object.entries(raw)) {
    if (!isImplemented(key)) {
      if (NOT_SUPPORTED_YET.has(key)) throw validationFailed(`provider.${key} is not supported yet`);
      throw validationFailed(`provider: unrecognized key "${key}"`);
    }
    if (value === null) continue;
    switch (key) {
      case 'order':
      case 'only':
      case 'ignore': {
        const ids = platformIds(key, value, index);
        if (ids.length > 0 || key === 'ignore') prefs[key] = ids;
        break;
      }
      case 'allow_fallbacks':
        prefs.allowFallbacks = bool(key, value);
        break;
      case 'zdr':
        prefs.zdr = bool(key, value);
        break;
      case 'sort':
        prefs.sort = sortMode(value);
        break;
      case 'data_collection':
        if (value !== 'allow' && value !== 'deny')
          throw validationFailed('provider.data_collection must be "allow" or "deny"');
        prefs.dataCollection = value;
        break;
      case 'quantizations': {
        const qs = quantizations(value);
        if (qs.length > 0) prefs.quantizations = qs;
        break;
      }
    }
  }
  return prefs;
}

/** Where each limit came from, so the funnel can name the rule that removed a provider. */
export interface PolicyOrigin {
  /** The workspace allowlist (null = none). */
  workspaceAllow: Set<string> | null;
  workspaceIgnore: Set<string>;
  /** The workspace's `allow_fallbacks: false` with its own `order`: only those (null = no such limit). */
  workspaceOrderLimit: Set<string> | null;
  /** The request's `only` (null = not given). */
  requestOnly: Set<string> | null;
  requestIgnore: Set<string>;
  /** Whose sort mode (`order` + `sort`) is in effect. */
  sortModeFrom: 'request' | 'workspace';
}

/** The request's preferences merged with the workspace's routing settings. */
export interface EffectivePolicy {
  /** Platforms that may serve (null = no restriction): workspace allowlist ∩ request `only`, also
   *  narrowed to the workspace `order` when the workspace sets `allow_fallbacks: false` (see below). */
  allow: Set<string> | null;
  /** Workspace ignore ∪ request ignore; wins over `allow`. */
  ignore: Set<string>;
  /** Tier order: the request's if the request set `order` or `sort`, else the workspace's. */
  order: string[];
  sort: 'price' | null;
  /** With `false` and a non-empty `order`, only platforms in `order` may serve. */
  allowFallbacks: boolean;
  dataCollection: 'allow' | 'deny';
  zdr: boolean;
  /** null = any quantization. */
  quantizations: Set<Quantization> | null;
  /** Provenance for the funnel's reasons; always set by mergePreferences. Without it the funnel
   *  still applies `allow`/`ignore`, and attributes them to the workspace stage. */
  origin?: PolicyOrigin;
}

function intersect<T>(a: Set<T> | null, b: Set<T> | null): Set<T> | null {
  if (a === null) return b === null ? null : new Set(b);
  if (b === null) return new Set(a);
  return new Set([...a].filter((x) => b.has(x)));
}

/**
 * Merges the request's preferences into the workspace's routing settings. Readings of the API:
 * - `only` is intersected with the workspace allowlist (limits only tighten).
 * - `ignore` adds to the workspace ignore list, and a platform in both `only` and `ignore` is
 *   ignored (ignore wins over only).
 * - `allow_fallbacks: false` with an `order` means only the listed platforms may serve; without an
 *   order it changes nothing. The effective flag is false when either side says false: a
 *   workspace-level false cannot be relaxed by the request.
 * - The sort mode (`order` + `sort`) is a default the request replaces as a whole: if the request
 *   sets either, both come from the request (an unset half is then empty / no sort).
 * - Because the request may replace the order, a workspace's `allow_fallbacks: false` with its own
 *   `order` is also kept as a limit ("only the workspace's ordered platforms"), folded into
 *   `allow`: otherwise a request could escape it by sending `sort` or another `order`, which would
 *   relax the workspace. With a request order as well, both limits apply (only platforms in both).
 * - `data_collection: deny` and `zdr: true` apply when either side sets them; `quantizations` is
 *   the intersection when both sides give a list, else whichever list is given.
 */
export function mergePreferences(workspace: CompiledRouting, request: ProviderPreferences | null): EffectivePolicy {
  const req = request ?? {};
  const workspaceAllow = workspace.allow === null ? null : new Set(workspace.allow);
  const workspaceIgnore = new Set(workspace.ignore);
  const workspaceOrderLimit = !workspace.allowFallbacks && workspace.order.length > 0 ? new Set(workspace.order) : null;
  const requestOnly = req.only && req.only.length > 0 ? new Set(req.only) : null;
  const requestIgnore = new Set(req.ignore ?? []);
  const sortModeFrom = req.order !== undefined || req.sort !== undefined ? 'request' : 'workspace';

  const reqQuant = req.quantizations && req.quantizations.length > 0 ? new Set(req.quantizations) : null;
  const wsQuant = workspace.quantizations === null ? null : new Set(workspace.quantizations);

  return {
    allow: intersect(intersect(workspaceAllow, workspaceOrderLimit), requestOnly),
    ignore: new Set([...workspaceIgnore, ...requestIgnore]),
    order: sortModeFrom === 'request' ? [...(req.order ?? [])] : [...workspace.order],
    sort: sortModeFrom === 'request' ? (req.sort ?? null) : workspace.sort,
    allowFallbacks: workspace.allowFallbacks && req.allowFallbacks !== false,
    dataCollection: workspace.dataCollection === 'deny' || req.dataCollection === 'deny' ? 'deny' : 'allow',
    zdr: workspace.zdr || req.zdr === true,
    quantizations: intersect(wsQuant, reqQuant),
    origin: { workspaceAllow, workspaceIgnore, workspaceOrderLimit, requestOnly, requestIgnore, sortModeFrom },
  };
}
