// platforms/<platform>.yaml: the id matches the file name and is unique; ids and aliases are unique
// across platforms (case-insensitively); the adapter exists, can call every endpoint the platform
// declares and accepts its options; the data policy and sampling ids are in the vocabularies.
// Also the `platform:` reference that resources and deployments files start with.
import type { PlatformFile } from '../../generated/config-types.ts';
import type { AdapterCatalog } from '../adapter-catalog.ts';
import type { PathSegment } from '../issues.ts';
import { type CheckedFile, isMapping, type LinkContext, type Ref, where } from './context.ts';
import type { Vocab } from './vocabularies.ts';

export interface LinkedPlatforms {
  linked: PlatformFile[];
  /** Platform id → its first declaration, and the platform when the whole file passed the schema. */
  ids: Map<string, { ref: Ref; platform: PlatformFile | null; c: CheckedFile }>;
  /** Lowercased platform id / alias → platform id. */
  names: Map<string, { id: string; kind: string; value: string; ref: Ref }>;
}

function platformName(
  ctx: LinkContext,
  out: LinkedPlatforms,
  c: CheckedFile,
  path: PathSegment[],
  platform: string,
  value: string,
  kind: string,
): void {
  const key = value.toLowerCase();
  const prev = out.names.get(key);
  if (!prev) {
    out.names.set(key, { id: platform, kind, value, ref: { c, path } });
  } else if (prev.id === platform) {
    ctx.report(c, path, `${kind} "${value}" repeats the platform's own ${prev.kind}`);
  } else {
    const ci = prev.value !== value ? ' (names are compared case-insensitively)' : '';
    ctx.report(
      c,
      path,
      `${kind} "${value}" collides with the ${prev.kind} of platform "${prev.id}" at ${where(prev.ref)}${ci}`,
    );
  }
}

/** The adapter named by the file exists, calls every endpoint the platform declares, and accepts its options. */
function adapterRules(ctx: LinkContext, v: Vocab, adapters: AdapterCatalog, c: CheckedFile, p: PlatformFile): void {
  const adapterId = typeof p.adapter === 'string' && ctx.clean(c, ['adapter']) ? p.adapter : null;
  const adapter = adapterId === null ? undefined : adapters.get(adapterId);
  if (adapterId !== null && !adapter) {
    const known = [...adapters.keys()].sort().join(', ');
    ctx.report(c, ['adapter'], `unknown adapter "${adapterId}" (known: ${known})`);
  }
  if (Array.isArray(p.endpoints) && ctx.clean(c, ['endpoints'])) {
    p.endpoints.forEach((e, j) => {
      if (!ctx.member(c, ['endpoints', j], e, v.endpoints, 'endpoint', 'endpoints')) return;
      if (adapter && !adapter.endpoints.includes(e)) {
        ctx.report(
          c,
          ['endpoints', j],
          `adapter "${adapter.id}" cannot call endpoint "${e}" (it supports: ${adapter.endpoints.join(', ')})`,
        );
      }
    });
  }
  if (adapter && ctx.clean(c, ['adapter_options'])) {
    const opts = isMapping(p.adapter_options) ? p.adapter_options : {};
    const path = 'adapter_options' in p ? ['adapter_options'] : ['adapter'];
    for (const problem of adapter.validateOptions(opts)) ctx.report(c, path, problem);
  }
}

function platformRules(ctx: LinkContext, v: Vocab, adapters: AdapterCatalog, c: CheckedFile, p: PlatformFile): void {
  adapterRules(ctx, v, adapters, c, p);
  const dp = p.data_policy;
  if (isMapping(dp)) {
    if (typeof dp.data_retention === 'string' && ctx.clean(c, ['data_policy', 'data_retention'])) {
      ctx.member(
        c,
        ['data_policy', 'data_retention'],
        dp.data_retention,
        v.retention,
        'retention level',
        'retention_levels',
      );
    }
    if (typeof dp.moderation === 'string' && ctx.clean(c, ['data_policy', 'moderation'])) {
      ctx.member(c, ['data_policy', 'moderation'], dp.moderation, v.moderation, 'moderation id', 'moderation');
    }
  }
  const sampling = p.sampling;
  if (isMapping(sampling) && Array.isArray(sampling.accept) && ctx.clean(c, ['sampling'])) {
    for (const [j, s] of sampling.accept.entries())
      ctx.member(c, ['sampling', 'accept', j], s, v.sampling, 'sampling parameter', 'sampling_parameters');
  }
}

export function linkPlatforms(ctx: LinkContext, v: Vocab, adapters: AdapterCatalog): LinkedPlatforms {
  const out: LinkedPlatforms = { linked: [], ids: new Map(), names: new Map() };
  const files = ctx.sources('platform');
  // Ids first, then aliases, so an alias colliding with an id is the one reported.
  for (const { c, data: p } of files) {
    if (typeof p.id !== 'string') {
      ctx.incomplete.add('platform');
      continue;
    }
    const id = p.id;
    if (ctx.clean(c, ['id'])) ctx.nameMatches(c, ['id'], id, 'platform id');
    const first = out.ids.get(id);
    if (first) {
      ctx.report(c, ['id'], `duplicate platform id "${id}" (first declared at ${where(first.ref)})`);
      continue;
    }
    out.ids.set(id, { ref: { c, path: ['id'] }, platform: ctx.clean(c, []) ? p : null, c });
    platformName(ctx, out, c, ['id'], id, id, 'id');
  }
  for (const { c, data: p } of files) {
    if (typeof p.id !== 'string' || !Array.isArray(p.aliases) || !ctx.clean(c, ['aliases'])) continue;
    const id = p.id;
    for (const [j, a] of p.aliases.entries()) platformName(ctx, out, c, ['aliases', j], id, a, 'alias');
  }
  for (const { c, data: p } of files) {
    if (typeof p.id !== 'string' || out.ids.get(p.id)?.c !== c) continue;
    platformRules(ctx, v, adapters, c, p);
    out.linked.push(p);
  }
  return out;
}

/** A resources or deployments file's `platform`: must match the file name and name a declared platform. */
export function filePlatform(
  ctx: LinkContext,
  platforms: LinkedPlatforms,
  c: CheckedFile,
  declared: string,
): string | null {
  // `declared` is typed by the schema, but may be anything when the schema rejected it.
  if (typeof declared !== 'string' || !ctx.clean(c, ['platform'])) return null;
  ctx.nameMatches(c, ['platform'], declared, 'platform');
  if (!platforms.ids.has(declared) && !ctx.incomplete.has('platform')) {
    ctx.report(c, ['platform'], `unknown platform "${declared}" (no platforms/*.yaml declares it)`);
  }
  return declared;
}
