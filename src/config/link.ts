// Cross-file rules of the config (what one file's schema cannot see): names match file names, ids are
// unique, references resolve, vocabulary ids exist, prices are consistent. Each problem is an issue
// located in the file that has to change. Rules only read values that passed schema validation, so a
// typo is reported once, by the schema, not again as a dangling reference.
import { PRICE_CLASSES, type PriceClass, REASONING_LEVELS, type ReasoningLevel } from './compiled.ts';
import { decimalToAtto } from '../money.ts';
import { ADAPTERS } from '../platforms/index.ts';
import type { PlatformAdapter } from '../platforms/types.ts';
import type {
  CapabilityVocab,
  Deployment,
  GatewayFile,
  Model,
  PlatformFile,
  PriceBracket,
  Pricing,
  Resource,
  VocabulariesFile,
  Workspace,
} from '../generated/config-types.ts';
import type { ConfigIssue, PathSegment } from './issues.ts';
import { type FileKind, issueAt, locate, type SourceFile } from './load.ts';

/** A loaded file with the paths its schema validation complained about. */
export interface CheckedFile {
  f: SourceFile;
  errorPaths: PathSegment[][];
}

/** The config's typed content once every rule passed: what `compile` turns into a CompiledConfig. */
export interface LinkedConfig {
  vocabularies: VocabulariesFile;
  gateway: GatewayFile;
  models: { vendor: string; model: Model }[];
  platforms: PlatformFile[];
  resources: { platform: string; resource: Resource }[];
  deployments: { platform: string; deployment: Deployment }[];
  workspaces: Workspace[];
}

export interface LinkOptions {
  /** The adapter registry platforms are checked against (tests may pass their own). */
  adapters?: ReadonlyMap<string, PlatformAdapter>;
}

type Obj = Record<string, unknown>;

function isObj(v: unknown): v is Obj {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

function startsWith(path: readonly PathSegment[], prefix: readonly PathSegment[]): boolean {
  return prefix.length <= path.length && prefix.every((s, i) => path[i] === s);
}

/** A place in a file, for "first declared at" notes. */
interface Ref {
  c: CheckedFile;
  path: PathSegment[];
}

function where(r: Ref): string {
  const p = locate(r.c.f, r.path);
  return `${r.c.f.file}:${p.line}:${p.col}`;
}

const LEVEL_RANK = new Map<string, number>(REASONING_LEVELS.map((l, i) => [l, i]));
const OPTIONAL_CLASSES = PRICE_CLASSES.filter((c) => c !== 'prompt' && c !== 'completion');

/** Vocabulary lists that passed the schema; null when a list is unusable (its checks are skipped). */
interface Vocab {
  protocols: Set<string> | null;
  endpoints: Map<string, { protocol: string; modes: string[] }> | null;
  modalities: Set<string> | null;
  modes: Set<string> | null;
  parameters: Set<string> | null;
  sampling: Set<string> | null;
  capabilities: Map<string, CapabilityVocab> | null;
  /** Parameter → the first capability that implies it. */
  paramOwner: Map<string, string> | null;
  retention: Set<string> | null;
  moderation: Set<string> | null;
}

class Linker {
  readonly issues: ConfigIssue[] = [];
  private readonly adapters: ReadonlyMap<string, PlatformAdapter>;
  private readonly files: CheckedFile[];
  private vocab!: Vocab;
  /** Kinds whose ids are not all knowable (a file failed to parse, a list is not a list). */
  private readonly incomplete = new Set<FileKind>();

  // Registries filled while walking the files (first declaration wins).
  private readonly modelIds = new Map<string, { ref: Ref; model: Model | null }>();
  /** Lowercased model id / alias / canonical slug → owner. */
  private readonly modelNames = new Map<string, { model: string; kind: string; value: string; ref: Ref }>();
  private readonly platformIds = new Map<string, { ref: Ref; platform: PlatformFile | null; c: CheckedFile }>();
  /** Lowercased platform id / alias → platform id. */
  private readonly platformNames = new Map<string, { id: string; kind: string; value: string; ref: Ref }>();
  private readonly resourceIds = new Map<string, { ref: Ref; platform: string | null }>();

  private readonly out: LinkedConfig = {
    vocabularies: undefined as unknown as VocabulariesFile,
    gateway: {},
    models: [],
    platforms: [],
    resources: [],
    deployments: [],
    workspaces: [],
  };

  constructor(files: CheckedFile[], opts: LinkOptions) {
    this.files = files;
    this.adapters = opts.adapters ?? ADAPTERS;
  }

  private report(c: CheckedFile, path: PathSegment[], message: string, at: 'value' | 'key' = 'value'): void {
    this.issues.push(issueAt(c.f, path, message, at));
  }

  /** True when the schema found nothing wrong at or below `path`. */
  private clean(c: CheckedFile, path: PathSegment[]): boolean {
    return c.f.parsed && !c.errorPaths.some((p) => startsWith(p, path));
  }

  private ofKind(kind: FileKind): CheckedFile[] {
    return this.files.filter((c) => c.f.kind === kind);
  }

  /** The file's data when it is an object; marks the kind incomplete otherwise. */
  private root(c: CheckedFile): Obj | null {
    if (c.f.parsed && isObj(c.f.data)) return c.f.data;
    this.incomplete.add(c.f.kind);
    return null;
  }

  /** The array at `key` of a file (marking the kind incomplete when it is not one). */
  private list(c: CheckedFile, data: Obj, key: string): unknown[] {
    const v = data[key];
    if (Array.isArray(v)) return v;
    this.incomplete.add(c.f.kind);
    return [];
  }

  /** File name must equal the declared id. */
  private nameMatches(c: CheckedFile, path: PathSegment[], id: unknown, what: string): void {
    if (typeof id === 'string' && this.clean(c, path) && id !== c.f.stem) {
      this.report(c, path, `${what} "${id}" does not match the file name "${c.f.stem}.yaml"`);
    }
  }

  run(): LinkedConfig {
    this.linkVocabularies();
    this.linkGateway();
    this.linkModels();
    this.linkPlatforms();
    this.linkResources();
    this.linkDeployments();
    this.linkWorkspaces();
    return this.out;
  }

  // ---------------------------------------------------------------- vocabularies

  private linkVocabularies(): void {
    const c = this.ofKind('vocabularies')[0];
    const data = c ? this.root(c) : null;
    const get = <T>(key: string): T[] | null =>
      c && data && Array.isArray(data[key]) && this.clean(c, [key]) ? (data[key] as T[]) : null;
    const ids = <T extends { id: string }>(key: string, what: string): T[] | null => {
      const items = get<T>(key);
      if (!items || !c) return items;
      const seen = new Map<string, number>();
      items.forEach((it, i) => {
        const first = seen.get(it.id);
        if (first === undefined) seen.set(it.id, i);
        else this.report(c, [key, i, 'id'], `duplicate ${what} id "${it.id}" (first declared at ${key}[${first}])`);
      });
      return items;
    };
    const protocols = get<string>('protocols');
    const endpoints = ids<{ id: string; protocol: string; path: string; modes: string[] }>('endpoints', 'endpoint');
    const modes = ids<{ id: string }>('modes', 'mode');
    const capabilities = ids<CapabilityVocab>('capabilities', 'capability');
    const retention = ids<{ id: string }>('retention_levels', 'retention level');
    const moderation = ids<{ id: string }>('moderation', 'moderation');
    const parameters = get<string>('parameters');
    const modalities = get<string>('modalities');
    const v: Vocab = {
      protocols: protocols && new Set(protocols),
      endpoints: endpoints && new Map(endpoints.map((e) => [e.id, { protocol: e.protocol, modes: e.modes }])),
      modalities: modalities && new Set(modalities),
      modes: modes && new Set(modes.map((m) => m.id)),
      parameters: parameters && new Set(parameters),
      sampling: (() => {
        const s = get<string>('sampling_parameters');
        return s && new Set(s);
      })(),
      capabilities: capabilities && new Map(capabilities.map((x) => [x.id, x])),
      paramOwner: null,
      retention: retention && new Set(retention.map((r) => r.id)),
      moderation: moderation && new Set(moderation.map((m) => m.id)),
    };
    if (capabilities) {
      v.paramOwner = new Map();
      for (const cap of capabilities) for (const p of cap.parameters ?? []) if (!v.paramOwner.has(p)) v.paramOwner.set(p, cap.id);
    }
    this.vocab = v;
    if (!c || !data) return;

    if (endpoints) {
      const paths = new Map<string, number>();
      endpoints.forEach((e, i) => {
        this.member(c, ['endpoints', i, 'protocol'], e.protocol, v.protocols, 'protocol', 'protocols');
        e.modes.forEach((m, j) => this.member(c, ['endpoints', i, 'modes', j], m, v.modes, 'mode', 'modes'));
        const first = paths.get(e.path);
        if (first === undefined) paths.set(e.path, i);
        else this.report(c, ['endpoints', i, 'path'], `duplicate endpoint path "${e.path}" (first declared at endpoints[${first}])`);
      });
    }
    if (capabilities) {
      capabilities.forEach((cap, i) => {
        (cap.parameters ?? []).forEach((p, j) =>
          this.member(c, ['capabilities', i, 'parameters', j], p, v.parameters, 'parameter', 'parameters'),
        );
        if (cap.input_modality !== undefined) {
          this.member(c, ['capabilities', i, 'input_modality'], cap.input_modality, v.modalities, 'modality', 'modalities');
        }
        (cap.requires ?? []).forEach((r, j) => {
          if (r === cap.id) this.report(c, ['capabilities', i, 'requires', j], `capability "${cap.id}" cannot require itself`);
          else this.member(c, ['capabilities', i, 'requires', j], r, v.capabilities, 'capability', 'capabilities');
        });
      });
    }
    if (retention && !retention.some((r) => r.id === 'unknown')) {
      this.report(c, ['retention_levels'], 'must list "unknown" (the level of a platform that records no data_retention)');
    }
    this.out.vocabularies = data as unknown as VocabulariesFile;
  }

  /** Reports `value` unless the vocabulary list has it (skipped when the list itself is unusable). */
  private member(
    c: CheckedFile,
    path: PathSegment[],
    value: string,
    known: { has(k: string): boolean } | null,
    what: string,
    list: string,
  ): boolean {
    if (!known || known.has(value)) return true;
    this.report(c, path, `unknown ${what} "${value}" (not in vocabularies.yaml ${list})`);
    return false;
  }

  // ---------------------------------------------------------------- gateway

  private linkGateway(): void {
    const c = this.ofKind('gateway')[0];
    if (c && isObj(c.f.data)) this.out.gateway = c.f.data as GatewayFile;
  }

  // ---------------------------------------------------------------- models

  private linkModels(): void {
    const files: { c: CheckedFile; vendor: string | null; models: unknown[] }[] = [];
    const vendors = new Map<string, Ref>();
    for (const c of this.ofKind('models')) {
      const data = this.root(c);
      if (!data) continue;
      const vendorObj = data['vendor'];
      let vendor: string | null = null;
      if (isObj(vendorObj) && typeof vendorObj['id'] === 'string' && this.clean(c, ['vendor', 'id'])) {
        vendor = vendorObj['id'];
        this.nameMatches(c, ['vendor', 'id'], vendor, 'vendor id');
        const first = vendors.get(vendor);
        if (first) this.report(c, ['vendor', 'id'], `duplicate vendor id "${vendor}" (first declared at ${where(first)})`);
        else vendors.set(vendor, { c, path: ['vendor', 'id'] });
      }
      files.push({ c, vendor, models: this.list(c, data, 'models') });
    }

    // Ids are registered first, then canonical slugs and aliases in file order, so a collision with an
    // id is reported on the alias (or slug), and any other on the later declaration.
    for (const { c, vendor, models } of files) {
      models.forEach((m, i) => {
        if (!isObj(m) || typeof m['id'] !== 'string') return;
        const id = m['id'];
        const ref: Ref = { c, path: ['models', i, 'id'] };
        const first = this.modelIds.get(id);
        if (first) {
          this.report(c, ref.path, `duplicate model id "${id}" (first declared at ${where(first.ref)})`);
          return;
        }
        const usable = this.clean(c, ['models', i]);
        this.modelIds.set(id, { ref, model: usable ? (m as unknown as Model) : null });
        if (!this.clean(c, ref.path)) return;
        this.slugVendor(c, ref.path, id, vendor, 'id');
        this.modelName(c, ref.path, id, id, 'id');
      });
    }
    for (const { c, vendor, models } of files) {
      models.forEach((m, i) => {
        if (!isObj(m) || typeof m['id'] !== 'string') return;
        const id = m['id'];
        const slugPath = ['models', i, 'canonical_slug'];
        if (typeof m['canonical_slug'] === 'string' && this.clean(c, slugPath)) {
          this.slugVendor(c, slugPath, m['canonical_slug'], vendor, 'canonical_slug');
          this.modelName(c, slugPath, id, m['canonical_slug'], 'canonical_slug');
        }
        if (Array.isArray(m['aliases']) && this.clean(c, ['models', i, 'aliases'])) {
          (m['aliases'] as string[]).forEach((a, j) => {
            const path = ['models', i, 'aliases', j];
            this.slugVendor(c, path, a, vendor, 'alias');
            this.modelName(c, path, id, a, 'alias');
          });
        }
      });
    }

    for (const { c, vendor, models } of files) {
      models.forEach((m, i) => {
        if (!isObj(m) || typeof m['id'] !== 'string') return;
        const first = this.modelIds.get(m['id']);
        if (first?.ref.c !== c || first.ref.path[1] !== i) return; // a duplicate, already reported
        this.modelRules(c, i, m);
        this.out.models.push({ vendor: vendor ?? c.f.stem, model: m as unknown as Model });
      });
    }
  }

  private slugVendor(c: CheckedFile, path: PathSegment[], slug: string, vendor: string | null, what: string): void {
    const half = slug.split('/')[0];
    if (vendor !== null && half !== vendor) {
      this.report(c, path, `${what} "${slug}" must start with this file's vendor "${vendor}/"`);
    }
  }

  private modelName(c: CheckedFile, path: PathSegment[], model: string, value: string, kind: string): void {
    const key = value.toLowerCase();
    const prev = this.modelNames.get(key);
    if (!prev) {
      this.modelNames.set(key, { model, kind, value, ref: { c, path } });
      return;
    }
    if (prev.model === model) {
      // The one allowed repeat: a model's canonical slug may be its own id.
      if (kind === 'canonical_slug' && prev.kind === 'id' && prev.value === value) return;
      const whose = prev.kind === 'id' ? 'id' : prev.kind;
      this.report(c, path, `${kind} "${value}" repeats the model's own ${whose}`);
      return;
    }
    const ci = prev.value !== value ? ' (names are compared case-insensitively)' : '';
    this.report(c, path, `${kind} "${value}" collides with the ${prev.kind} of model "${prev.model}" at ${where(prev.ref)}${ci}`);
  }

  private modelRules(c: CheckedFile, i: number, m: Obj): void {
    const v = this.vocab;
    const base: PathSegment[] = ['models', i];
    const at = (...p: PathSegment[]) => [...base, ...p];
    if (typeof m['mode'] === 'string' && this.clean(c, at('mode'))) {
      this.member(c, at('mode'), m['mode'], v.modes, 'mode', 'modes');
    }
    const capsOk = Array.isArray(m['capabilities']) && this.clean(c, at('capabilities'));
    const caps = capsOk ? (m['capabilities'] as string[]) : null;
    if (caps) {
      caps.forEach((cap, j) => {
        if (!this.member(c, at('capabilities', j), cap, v.capabilities, 'capability', 'capabilities')) return;
        for (const r of v.capabilities?.get(cap)?.requires ?? []) {
          if (!caps.includes(r)) this.report(c, at('capabilities', j), `capability "${cap}" requires capability "${r}"`);
        }
      });
    }
    const paramsOk = !('parameters' in m) || (Array.isArray(m['parameters']) && this.clean(c, at('parameters')));
    const params = Array.isArray(m['parameters']) ? (m['parameters'] as string[]) : [];
    if (paramsOk) {
      params.forEach((p, j) => {
        if (!this.member(c, at('parameters', j), p, v.parameters, 'parameter', 'parameters')) return;
        const owner = v.paramOwner?.get(p);
        if (owner) {
          this.report(c, at('parameters', j), `parameter "${p}" comes from capability "${owner}"; declare the capability instead`);
        }
      });
    }

    // Reasoning facts go with the capability, and efforts are listed high to low.
    const reasoning = m['reasoning'];
    if (caps) {
      const j = caps.indexOf('supports_reasoning');
      if (reasoning !== undefined && j < 0) {
        this.report(c, at('reasoning'), 'a reasoning block needs the "supports_reasoning" capability');
      } else if (reasoning === undefined && j >= 0) {
        this.report(c, at('capabilities', j), 'capability "supports_reasoning" needs a reasoning block on the model');
      }
    }
    if (isObj(reasoning) && this.clean(c, at('reasoning'))) {
      const efforts = reasoning['supported_efforts'] as ReasoningLevel[];
      for (let k = 1; k < efforts.length; k++) {
        const prev = efforts[k - 1] as ReasoningLevel;
        const cur = efforts[k] as ReasoningLevel;
        if ((LEVEL_RANK.get(cur) ?? 0) >= (LEVEL_RANK.get(prev) ?? 0)) {
          this.report(
            c,
            at('reasoning', 'supported_efforts', k),
            `supported_efforts must be ordered high to low (none < minimal < low < medium < high < xhigh < max): "${cur}" follows "${prev}"`,
          );
        }
      }
      const d = reasoning['default_effort'];
      if (typeof d === 'string' && !efforts.includes(d as ReasoningLevel)) {
        this.report(c, at('reasoning', 'default_effort'), `default_effort "${d}" is not one of supported_efforts`);
      }
    }

    // default_parameters: only parameters the model supports (its own plus its capabilities').
    const defaults = m['default_parameters'];
    if (isObj(defaults) && caps && paramsOk && v.capabilities && this.clean(c, at('default_parameters'))) {
      const supported = new Set(params);
      for (const cap of caps) for (const p of v.capabilities.get(cap)?.parameters ?? []) supported.add(p);
      for (const k of Object.keys(defaults)) {
        if (!supported.has(k)) {
          this.report(c, at('default_parameters', k), `default parameter "${k}" is not a supported parameter of this model`, 'key');
        }
      }
    }

    if (isObj(m['pricing']) && this.clean(c, at('pricing'))) this.priceList(c, at('pricing'), m['pricing'] as unknown as Pricing);
  }

  /** Rules of one price list (list prices or a channel's): bracket order, no zero optional class, no new class in a bracket. */
  private priceList(c: CheckedFile, path: PathSegment[], p: Pricing): void {
    const zero = (v: string | undefined) => {
      try {
        return v !== undefined && decimalToAtto(v) === 0n;
      } catch {
        return false;
      }
    };
    for (const cls of OPTIONAL_CLASSES) {
      if (zero(p[cls])) this.report(c, [...path, cls], 'optional price classes must be absent, not 0');
    }
    (p.overrides ?? []).forEach((b, k) => {
      const bp = [...path, 'overrides', k];
      const prev = p.overrides?.[k - 1];
      if (prev && b.min_prompt_tokens <= prev.min_prompt_tokens) {
        this.report(
          c,
          [...bp, 'min_prompt_tokens'],
          `overrides must be strictly ascending by min_prompt_tokens: ${b.min_prompt_tokens} does not follow ${prev.min_prompt_tokens}`,
        );
      }
      for (const cls of PRICE_CLASSES) {
        const val = b[cls];
        if (val === undefined) continue;
        if (p[cls] === undefined) {
          this.report(c, [...bp, cls], `bracket prices "${cls}" but the base prices do not (a bracket only restates base classes)`);
        } else if (cls !== 'prompt' && cls !== 'completion' && zero(val)) {
          this.report(c, [...bp, cls], 'optional price classes must be absent, not 0');
        }
      }
    });
  }

  // ---------------------------------------------------------------- platforms

  private linkPlatforms(): void {
    const files: { c: CheckedFile; p: Obj }[] = [];
    for (const c of this.ofKind('platform')) {
      const p = this.root(c);
      if (!p) continue;
      files.push({ c, p });
      if (typeof p['id'] !== 'string') {
        this.incomplete.add('platform');
        continue;
      }
      const id = p['id'];
      if (this.clean(c, ['id'])) this.nameMatches(c, ['id'], id, 'platform id');
      const first = this.platformIds.get(id);
      if (first) {
        this.report(c, ['id'], `duplicate platform id "${id}" (first declared at ${where(first.ref)})`);
        continue;
      }
      this.platformIds.set(id, { ref: { c, path: ['id'] }, platform: this.clean(c, []) ? (p as unknown as PlatformFile) : null, c });
      this.platformName(c, ['id'], id, id, 'id');
    }
    for (const { c, p } of files) {
      if (typeof p['id'] !== 'string' || !Array.isArray(p['aliases']) || !this.clean(c, ['aliases'])) continue;
      (p['aliases'] as string[]).forEach((a, j) => this.platformName(c, ['aliases', j], p['id'] as string, a, 'alias'));
    }
    for (const { c, p } of files) {
      if (typeof p['id'] !== 'string' || this.platformIds.get(p['id'])?.c !== c) continue;
      this.platformRules(c, p);
      this.out.platforms.push(p as unknown as PlatformFile);
    }
  }

  private platformName(c: CheckedFile, path: PathSegment[], platform: string, value: string, kind: string): void {
    const key = value.toLowerCase();
    const prev = this.platformNames.get(key);
    if (!prev) {
      this.platformNames.set(key, { id: platform, kind, value, ref: { c, path } });
    } else if (prev.id === platform) {
      this.report(c, path, `${kind} "${value}" repeats the platform's own ${prev.kind}`);
    } else {
      const ci = prev.value !== value ? ' (names are compared case-insensitively)' : '';
      this.report(c, path, `${kind} "${value}" collides with the ${prev.kind} of platform "${prev.id}" at ${where(prev.ref)}${ci}`);
    }
  }

  private platformRules(c: CheckedFile, p: Obj): void {
    const v = this.vocab;
    const adapterId = typeof p['adapter'] === 'string' && this.clean(c, ['adapter']) ? p['adapter'] : null;
    const adapter = adapterId === null ? undefined : this.adapters.get(adapterId);
    if (adapterId !== null && !adapter) {
      const known = [...this.adapters.keys()].sort().join(', ');
      this.report(c, ['adapter'], `unknown adapter "${adapterId}" (known: ${known})`);
    }
    if (Array.isArray(p['endpoints']) && this.clean(c, ['endpoints'])) {
      (p['endpoints'] as string[]).forEach((e, j) => {
        if (!this.member(c, ['endpoints', j], e, v.endpoints, 'endpoint', 'endpoints')) return;
        if (adapter && !adapter.endpoints.includes(e)) {
          this.report(c, ['endpoints', j], `adapter "${adapter.id}" cannot call endpoint "${e}" (it supports: ${adapter.endpoints.join(', ')})`);
        }
      });
    }
    if (adapter && this.clean(c, ['adapter_options'])) {
      const opts = isObj(p['adapter_options']) ? (p['adapter_options'] as Record<string, string | number | boolean>) : {};
      const path = 'adapter_options' in p ? ['adapter_options'] : ['adapter'];
      for (const problem of adapter.validateOptions(opts)) this.report(c, path, problem);
    }
    const dp = p['data_policy'];
    if (isObj(dp)) {
      if (typeof dp['data_retention'] === 'string' && this.clean(c, ['data_policy', 'data_retention'])) {
        this.member(c, ['data_policy', 'data_retention'], dp['data_retention'], v.retention, 'retention level', 'retention_levels');
      }
      if (typeof dp['moderation'] === 'string' && this.clean(c, ['data_policy', 'moderation'])) {
        this.member(c, ['data_policy', 'moderation'], dp['moderation'], v.moderation, 'moderation id', 'moderation');
      }
    }
    const sampling = p['sampling'];
    if (isObj(sampling) && Array.isArray(sampling['accept']) && this.clean(c, ['sampling'])) {
      (sampling['accept'] as string[]).forEach((s, j) =>
        this.member(c, ['sampling', 'accept', j], s, v.sampling, 'sampling parameter', 'sampling_parameters'),
      );
    }
  }

  // ---------------------------------------------------------------- resources

  /** The file's `platform`: must match the file name and name a declared platform. */
  private filePlatform(c: CheckedFile, data: Obj): string | null {
    if (typeof data['platform'] !== 'string' || !this.clean(c, ['platform'])) return null;
    const id = data['platform'];
    this.nameMatches(c, ['platform'], id, 'platform');
    if (!this.platformIds.has(id) && !this.incomplete.has('platform')) {
      this.report(c, ['platform'], `unknown platform "${id}" (no platforms/*.yaml declares it)`);
    }
    return id;
  }

  private linkResources(): void {
    for (const c of this.ofKind('resources')) {
      const data = this.root(c);
      if (!data) continue;
      const platform = this.filePlatform(c, data);
      this.list(c, data, 'resources').forEach((r, i) => {
        if (!isObj(r) || typeof r['id'] !== 'string') return;
        const path = ['resources', i, 'id'];
        const first = this.resourceIds.get(r['id']);
        if (first) {
          this.report(c, path, `duplicate resource id "${r['id']}" (first declared at ${where(first.ref)})`);
          return;
        }
        this.resourceIds.set(r['id'], { ref: { c, path }, platform });
        this.out.resources.push({ platform: platform ?? c.f.stem, resource: r as unknown as Resource });
      });
    }
  }

  // ---------------------------------------------------------------- deployments

  private linkDeployments(): void {
    const ids = new Map<string, Ref>();
    for (const c of this.ofKind('deployments')) {
      const data = this.root(c);
      if (!data) continue;
      const platform = this.filePlatform(c, data);
      this.list(c, data, 'deployments').forEach((d, i) => {
        if (!isObj(d)) return;
        if (typeof d['id'] === 'string') {
          const path = ['deployments', i, 'id'];
          const first = ids.get(d['id']);
          if (first) this.report(c, path, `duplicate deployment id "${d['id']}" (first declared at ${where(first)})`);
          else ids.set(d['id'], { c, path });
        }
        this.deploymentRules(c, i, d, platform);
        this.out.deployments.push({ platform: platform ?? c.f.stem, deployment: d as unknown as Deployment });
      });
    }
  }

  private deploymentRules(c: CheckedFile, i: number, d: Obj, platform: string | null): void {
    const v = this.vocab;
    const at = (...p: PathSegment[]): PathSegment[] => ['deployments', i, ...p];

    // The model, by id (aliases are for requests, not for config references).
    let model: Model | null = null;
    if (typeof d['model'] === 'string' && this.clean(c, at('model'))) {
      const id = d['model'];
      const found = this.modelIds.get(id);
      if (found) model = found.model;
      else if (!this.incomplete.has('models')) {
        const other = this.modelNames.get(id.toLowerCase());
        this.report(
          c,
          at('model'),
          other ? `unknown model "${id}": deployments name a model by its id ("${other.model}"), not by ${other.kind}` : `unknown model "${id}"`,
        );
      }
    }

    if (typeof d['resource'] === 'string' && this.clean(c, at('resource'))) {
      const r = this.resourceIds.get(d['resource']);
      if (!r) {
        if (!this.incomplete.has('resources')) this.report(c, at('resource'), `unknown resource "${d['resource']}"`);
      } else if (platform !== null && r.platform !== null && r.platform !== platform) {
        this.report(c, at('resource'), `resource "${d['resource']}" belongs to platform "${r.platform}", not "${platform}"`);
      }
    }

    const plat = platform === null ? null : this.platformIds.get(platform)?.platform ?? null;
    const platEndpoints = plat && Array.isArray(plat.endpoints) ? plat.endpoints : null;
    if (Array.isArray(d['endpoints']) && this.clean(c, at('endpoints'))) {
      (d['endpoints'] as string[]).forEach((e, j) => {
        if (!this.member(c, at('endpoints', j), e, v.endpoints, 'endpoint', 'endpoints')) return;
        if (platEndpoints && !platEndpoints.includes(e)) {
          this.report(c, at('endpoints', j), `platform "${platform}" does not serve endpoint "${e}" (its endpoints: ${platEndpoints.join(', ')})`);
        }
        const modes = v.endpoints?.get(e)?.modes;
        if (model && modes && !modes.includes(model.mode)) {
          this.report(c, at('endpoints', j), `endpoint "${e}" cannot serve model "${model.id}" of mode "${model.mode}" (it serves: ${modes.join(', ')})`);
        }
      });
    }

    if (model && Array.isArray(d['capabilities_removed']) && this.clean(c, at('capabilities_removed'))) {
      (d['capabilities_removed'] as string[]).forEach((cap, j) => {
        if (!model.capabilities.includes(cap)) {
          this.report(c, at('capabilities_removed', j), `model "${model.id}" does not have capability "${cap}"`);
        }
      });
    }

    const pricing = d['pricing'];
    if (isObj(pricing) && isObj(pricing['prices']) && this.clean(c, at('pricing'))) {
      const prices = pricing['prices'] as unknown as Pricing;
      this.priceList(c, at('pricing', 'prices'), prices);
      if (model) this.notAboveList(c, at('pricing', 'prices'), prices, model.pricing);
    }
  }

  /** A channel price list never exceeds list, class by class, at every bracket it declares. */
  private notAboveList(c: CheckedFile, path: PathSegment[], ch: Pricing, list: Pricing): void {
    const compare = (p: PathSegment[], prices: Partial<Record<PriceClass, string>>, listPrices: Partial<Record<PriceClass, string>>, where: string) => {
      for (const cls of PRICE_CLASSES) {
        const val = prices[cls];
        if (val === undefined) continue;
        const lv = listPrices[cls];
        if (lv === undefined) this.report(c, [...p, cls], `the model's list prices do not price "${cls}"${where}`);
        else if (decimalToAtto(val) > decimalToAtto(lv)) this.report(c, [...p, cls], `${cls} ${val} is above the list price ${lv}${where}`);
      }
    };
    compare(path, ch, list, '');
    (ch.overrides ?? []).forEach((b, k) => {
      compare([...path, 'overrides', k], b, effectiveAt(list, b.min_prompt_tokens), ` at ${b.min_prompt_tokens} prompt tokens`);
    });
  }

  // ---------------------------------------------------------------- workspaces

  private linkWorkspaces(): void {
    const c = this.ofKind('workspaces')[0];
    const data = c ? this.root(c) : null;
    if (!c || !data) return;
    const ids = new Map<string, number>();
    this.list(c, data, 'workspaces').forEach((w, i) => {
      if (!isObj(w)) return;
      if (typeof w['id'] === 'string') {
        const first = ids.get(w['id']);
        if (first !== undefined) this.report(c, ['workspaces', i, 'id'], `duplicate workspace id "${w['id']}" (first declared at workspaces[${first}])`);
        else ids.set(w['id'], i);
      }
      const routing = w['routing'];
      if (isObj(routing)) {
        for (const key of ['allow', 'ignore', 'order']) {
          const names = routing[key];
          if (!Array.isArray(names) || !this.clean(c, ['workspaces', i, 'routing', key])) continue;
          const seen = new Map<string, string>();
          (names as string[]).forEach((n, j) => {
            const path = ['workspaces', i, 'routing', key, j];
            const p = this.platformNames.get(n.toLowerCase());
            if (!p) {
              if (!this.incomplete.has('platform')) this.report(c, path, `unknown platform "${n}"`);
              return;
            }
            const dup = seen.get(p.id);
            if (dup !== undefined) this.report(c, path, `"${n}" names the same platform as "${dup}" ("${p.id}")`);
            else seen.set(p.id, n);
          });
        }
      }
      this.out.workspaces.push(w as unknown as Workspace);
    });
  }

  /** Platform id for a name (id or alias, any case). */
  platformIdFor(name: string): string | undefined {
    return this.platformNames.get(name.toLowerCase())?.id;
  }
}

/** List prices in effect at a prompt context length: the base, overlaid by the last bracket at or below it. */
export function effectiveAt(p: Pricing, promptTokens: number): Partial<Record<PriceClass, string>> {
  const out: Partial<Record<PriceClass, string>> = {};
  for (const cls of PRICE_CLASSES) if (p[cls] !== undefined) out[cls] = p[cls];
  let bracket: PriceBracket | undefined;
  for (const b of p.overrides ?? []) if (b.min_prompt_tokens <= promptTokens) bracket = b;
  if (bracket) for (const cls of PRICE_CLASSES) if (bracket[cls] !== undefined) out[cls] = bracket[cls];
  return out;
}

export interface LinkResult {
  issues: ConfigIssue[];
  /** Meaningful only when there are no issues (from any stage). */
  config: LinkedConfig;
  /** Resolves a platform name (id or alias, any case) to its id. */
  platformIdFor(name: string): string | undefined;
}

/** Applies every cross-file rule to the schema-checked files. */
export function link(files: CheckedFile[], opts: LinkOptions = {}): LinkResult {
  const l = new Linker(files, opts);
  const config = l.run();
  return { issues: l.issues, config, platformIdFor: (n) => l.platformIdFor(n) };
}
