// models/<vendor>.yaml: the vendor matches the file name and is unique; model ids, canonical slugs and
// aliases are unique across every vendor (case-insensitively) and start with the file's vendor; each
// model's vocabulary ids, capability requirements, declared input modalities, reasoning facts, default
// parameters and prices.
import { REASONING_LEVELS } from '../compiled.ts';
import type { Model } from '../../generated/config-types.ts';
import type { PathSegment } from '../issues.ts';
import { type CheckedFile, isMapping, type LinkContext, type Ref, where } from './context.ts';
import { priceListRules } from './prices.ts';
import type { Vocab } from './vocabularies.ts';

export interface LinkedModels {
  linked: { vendor: string; model: Model }[];
  /** Model id → its first declaration, and the model when its whole entry passed the schema. */
  ids: Map<string, { ref: Ref; model: Model | null }>;
  /** Lowercased model id / alias / canonical slug → owner. */
  names: Map<string, { model: string; kind: string; value: string; ref: Ref }>;
}

interface VendorFile {
  c: CheckedFile;
  vendor: string | null;
  models: Model[];
}

const LEVEL_RANK = new Map<string, number>(REASONING_LEVELS.map((l, i) => [l, i]));

function slugVendor(
  ctx: LinkContext,
  c: CheckedFile,
  path: PathSegment[],
  slug: string,
  vendor: string | null,
  what: string,
): void {
  const half = slug.split('/')[0];
  if (vendor !== null && half !== vendor) {
    ctx.report(c, path, `${what} "${slug}" must start with this file's vendor "${vendor}/"`);
  }
}

function modelName(
  ctx: LinkContext,
  out: LinkedModels,
  c: CheckedFile,
  path: PathSegment[],
  model: string,
  value: string,
  kind: string,
): void {
  const key = value.toLowerCase();
  const prev = out.names.get(key);
  if (!prev) {
    out.names.set(key, { model, kind, value, ref: { c, path } });
    return;
  }
  if (prev.model === model) {
    // The one allowed repeat: a model's canonical slug may be its own id.
    if (kind === 'canonical_slug' && prev.kind === 'id' && prev.value === value) return;
    const whose = prev.kind === 'id' ? 'id' : prev.kind;
    ctx.report(c, path, `${kind} "${value}" repeats the model's own ${whose}`);
    return;
  }
  const ci = prev.value !== value ? ' (names are compared case-insensitively)' : '';
  ctx.report(
    c,
    path,
    `${kind} "${value}" collides with the ${prev.kind} of model "${prev.model}" at ${where(prev.ref)}${ci}`,
  );
}

/** Each models file with its vendor (null when unusable), the vendor checked against file name and other files. */
function vendorFiles(ctx: LinkContext): VendorFile[] {
  const files: VendorFile[] = [];
  const vendors = new Map<string, Ref>();
  for (const { c, data } of ctx.sources('models')) {
    const vendorObj = data.vendor;
    let vendor: string | null = null;
    if (isMapping(vendorObj) && typeof vendorObj.id === 'string' && ctx.clean(c, ['vendor', 'id'])) {
      vendor = vendorObj.id;
      ctx.nameMatches(c, ['vendor', 'id'], vendor, 'vendor id');
      const first = vendors.get(vendor);
      if (first) ctx.report(c, ['vendor', 'id'], `duplicate vendor id "${vendor}" (first declared at ${where(first)})`);
      else vendors.set(vendor, { c, path: ['vendor', 'id'] });
    }
    files.push({ c, vendor, models: ctx.list(c, data.models) });
  }
  return files;
}

/** Model ids first, so a later slug or alias colliding with an id is the one reported. */
function registerIds(ctx: LinkContext, out: LinkedModels, files: VendorFile[]): void {
  for (const { c, vendor, models } of files) {
    models.forEach((m, i) => {
      if (!isMapping(m) || typeof m.id !== 'string') return;
      const id = m.id;
      const ref: Ref = { c, path: ['models', i, 'id'] };
      const first = out.ids.get(id);
      if (first) {
        ctx.report(c, ref.path, `duplicate model id "${id}" (first declared at ${where(first.ref)})`);
        return;
      }
      out.ids.set(id, { ref, model: ctx.clean(c, ['models', i]) ? m : null });
      if (!ctx.clean(c, ref.path)) return;
      slugVendor(ctx, c, ref.path, id, vendor, 'id');
      modelName(ctx, out, c, ref.path, id, id, 'id');
    });
  }
}

/** Canonical slugs and aliases, in file order: any collision not with an id is reported on the later one. */
function registerOtherNames(ctx: LinkContext, out: LinkedModels, files: VendorFile[]): void {
  for (const { c, vendor, models } of files) {
    models.forEach((m, i) => {
      if (!isMapping(m) || typeof m.id !== 'string') return;
      const id = m.id;
      const slugPath = ['models', i, 'canonical_slug'];
      if (typeof m.canonical_slug === 'string' && ctx.clean(c, slugPath)) {
        slugVendor(ctx, c, slugPath, m.canonical_slug, vendor, 'canonical_slug');
        modelName(ctx, out, c, slugPath, id, m.canonical_slug, 'canonical_slug');
      }
      if (Array.isArray(m.aliases) && ctx.clean(c, ['models', i, 'aliases'])) {
        m.aliases.forEach((a, j) => {
          const path = ['models', i, 'aliases', j];
          slugVendor(ctx, c, path, a, vendor, 'alias');
          modelName(ctx, out, c, path, id, a, 'alias');
        });
      }
    });
  }
}

/** Reasoning facts go with the capability, and efforts are listed high to low. */
function reasoningRules(ctx: LinkContext, c: CheckedFile, base: PathSegment[], m: Model, caps: string[] | null): void {
  const at = (...p: PathSegment[]) => [...base, ...p];
  const reasoning = m.reasoning;
  if (caps) {
    const j = caps.indexOf('supports_reasoning');
    if (reasoning !== undefined && j < 0) {
      ctx.report(c, at('reasoning'), 'a reasoning block needs the "supports_reasoning" capability');
    } else if (reasoning === undefined && j >= 0) {
      ctx.report(c, at('capabilities', j), 'capability "supports_reasoning" needs a reasoning block on the model');
    }
  }
  if (!isMapping(reasoning) || !ctx.clean(c, at('reasoning'))) return;
  const efforts = reasoning.supported_efforts;
  for (let k = 1; k < efforts.length; k++) {
    const prev = efforts[k - 1];
    const cur = efforts[k];
    if (prev === undefined || cur === undefined) continue;
    if ((LEVEL_RANK.get(cur) ?? 0) >= (LEVEL_RANK.get(prev) ?? 0)) {
      ctx.report(
        c,
        at('reasoning', 'supported_efforts', k),
        `supported_efforts must be ordered high to low (none < minimal < low < medium < high < xhigh < max): "${cur}" follows "${prev}"`,
      );
    }
  }
  const d = reasoning.default_effort;
  if (typeof d === 'string' && !efforts.includes(d)) {
    ctx.report(c, at('reasoning', 'default_effort'), `default_effort "${d}" is not one of supported_efforts`);
  }
}

/**
 * Declared input modalities: vocabulary ids, text among them (the catalog always lists it), and every
 * modality a declared capability implies (a capability's claim cannot contradict the declared list;
 * the list may go beyond the capabilities).
 */
function inputModalityRules(
  ctx: LinkContext,
  v: Vocab,
  c: CheckedFile,
  base: PathSegment[],
  m: Model,
  caps: string[] | null,
): void {
  const at = (...p: PathSegment[]) => [...base, ...p];
  const declared = m.input_modalities;
  if (!Array.isArray(declared) || !ctx.clean(c, at('input_modalities'))) return;
  for (const [j, x] of declared.entries())
    ctx.member(c, at('input_modalities', j), x, v.modalities, 'modality', 'modalities');
  if (!declared.includes('text'))
    ctx.report(c, at('input_modalities'), 'input_modalities must include "text" (the catalog always lists it)');
  (caps ?? []).forEach((cap, j) => {
    const implied = v.capabilities?.get(cap)?.input_modality;
    if (implied !== undefined && !declared.includes(implied)) {
      ctx.report(
        c,
        at('capabilities', j),
        `capability "${cap}" implies input modality "${implied}", which input_modalities does not list`,
      );
    }
  });
}

/** One model's own rules: vocabulary ids, capability requirements, input modalities, reasoning, default parameters,
 *  prices. */
function modelRules(ctx: LinkContext, v: Vocab, c: CheckedFile, i: number, m: Model): void {
  const base: PathSegment[] = ['models', i];
  const at = (...p: PathSegment[]) => [...base, ...p];
  if (typeof m.mode === 'string' && ctx.clean(c, at('mode'))) {
    ctx.member(c, at('mode'), m.mode, v.modes, 'mode', 'modes');
  }
  const caps = Array.isArray(m.capabilities) && ctx.clean(c, at('capabilities')) ? m.capabilities : null;
  if (caps) {
    caps.forEach((cap, j) => {
      if (!ctx.member(c, at('capabilities', j), cap, v.capabilities, 'capability', 'capabilities')) return;
      for (const r of v.capabilities?.get(cap)?.requires ?? []) {
        if (!caps.includes(r)) ctx.report(c, at('capabilities', j), `capability "${cap}" requires capability "${r}"`);
      }
    });
  }
  const paramsOk = !('parameters' in m) || (Array.isArray(m.parameters) && ctx.clean(c, at('parameters')));
  const params = Array.isArray(m.parameters) ? m.parameters : [];
  if (paramsOk) {
    params.forEach((p, j) => {
      if (!ctx.member(c, at('parameters', j), p, v.parameters, 'parameter', 'parameters')) return;
      const owner = v.paramOwner?.get(p);
      if (owner) {
        ctx.report(
          c,
          at('parameters', j),
          `parameter "${p}" comes from capability "${owner}"; declare the capability instead`,
        );
      }
    });
  }

  inputModalityRules(ctx, v, c, base, m, caps);
  reasoningRules(ctx, c, base, m, caps);

  // default_parameters: only parameters the model supports (its own plus its capabilities').
  const defaults = m.default_parameters;
  if (isMapping(defaults) && caps && paramsOk && v.capabilities && ctx.clean(c, at('default_parameters'))) {
    const supported = new Set(params);
    for (const cap of caps) for (const p of v.capabilities.get(cap)?.parameters ?? []) supported.add(p);
    for (const k of Object.keys(defaults)) {
      if (!supported.has(k)) {
        ctx.report(
          c,
          at('default_parameters', k),
          `default parameter "${k}" is not a supported parameter of this model`,
          'key',
        );
      }
    }
  }

  if (isMapping(m.pricing) && ctx.clean(c, at('pricing'))) priceListRules(ctx, c, at('pricing'), m.pricing);
}

export function linkModels(ctx: LinkContext, v: Vocab): LinkedModels {
  const out: LinkedModels = { linked: [], ids: new Map(), names: new Map() };
  const files = vendorFiles(ctx);
  registerIds(ctx, out, files);
  registerOtherNames(ctx, out, files);
  for (const { c, vendor, models } of files) {
    models.forEach((m, i) => {
      if (!isMapping(m) || typeof m.id !== 'string') return;
      const first = out.ids.get(m.id);
      if (first?.ref.c !== c || first.ref.path[1] !== i) return; // a duplicate, already reported
      modelRules(ctx, v, c, i, m);
      out.linked.push({ vendor: vendor ?? c.f.stem, model: m });
    });
  }
  return out;
}
