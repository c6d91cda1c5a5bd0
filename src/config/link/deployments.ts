// deployments/<platform>.yaml: the file's platform is declared and matches the file name; deployment
// ids are unique; each deployment names a model by id and a resource of its own platform, serves only
// endpoints its platform speaks and its model's mode allows, removes only capabilities the model has,
// and prices above the model's list prices only when it says `above_list: true`.
import type { Deployment, Model } from '../../generated/config-types.ts';
import type { PathSegment } from '../issues.ts';
import { type CheckedFile, isMapping, type LinkContext, type Ref, where } from './context.ts';
import type { LinkedModels } from './models.ts';
import { filePlatform, type LinkedPlatforms } from './platforms.ts';
import { channelAgainstList, priceListRules } from './prices.ts';
import type { LinkedResources } from './resources.ts';
import type { Vocab } from './vocabularies.ts';

/** What a deployment is checked against: the vocabularies and the kinds linked before it. */
export interface DeploymentRefs {
  vocab: Vocab;
  models: LinkedModels;
  platforms: LinkedPlatforms;
  resources: LinkedResources;
}

/** The model, by id (aliases are for requests, not for config references); null when unknown or unusable. */
function modelOf(
  ctx: LinkContext,
  refs: DeploymentRefs,
  c: CheckedFile,
  path: PathSegment[],
  d: Deployment,
): Model | null {
  if (typeof d.model !== 'string' || !ctx.clean(c, path)) return null;
  const id = d.model;
  const found = refs.models.ids.get(id);
  if (found) return found.model;
  if (!ctx.incomplete.has('models')) {
    const other = refs.models.names.get(id.toLowerCase());
    ctx.report(
      c,
      path,
      other
        ? `unknown model "${id}": deployments name a model by its id ("${other.model}"), not by ${other.kind}`
        : `unknown model "${id}"`,
    );
  }
  return null;
}

function resourceRule(
  ctx: LinkContext,
  refs: DeploymentRefs,
  c: CheckedFile,
  path: PathSegment[],
  d: Deployment,
  platform: string | null,
): void {
  if (typeof d.resource !== 'string' || !ctx.clean(c, path)) return;
  const r = refs.resources.ids.get(d.resource);
  if (!r) {
    if (!ctx.incomplete.has('resources')) ctx.report(c, path, `unknown resource "${d.resource}"`);
  } else if (platform !== null && r.platform !== null && r.platform !== platform) {
    ctx.report(c, path, `resource "${d.resource}" belongs to platform "${r.platform}", not "${platform}"`);
  }
}

function deploymentRules(
  ctx: LinkContext,
  refs: DeploymentRefs,
  c: CheckedFile,
  i: number,
  d: Deployment,
  platform: string | null,
): void {
  const v = refs.vocab;
  const at = (...p: PathSegment[]): PathSegment[] => ['deployments', i, ...p];
  const model = modelOf(ctx, refs, c, at('model'), d);
  resourceRule(ctx, refs, c, at('resource'), d, platform);

  const plat = platform === null ? null : (refs.platforms.ids.get(platform)?.platform ?? null);
  const platEndpoints = plat && Array.isArray(plat.endpoints) ? plat.endpoints : null;
  if (Array.isArray(d.endpoints) && ctx.clean(c, at('endpoints'))) {
    d.endpoints.forEach((e, j) => {
      if (!ctx.member(c, at('endpoints', j), e, v.endpoints, 'endpoint', 'endpoints')) return;
      if (platEndpoints && !platEndpoints.includes(e)) {
        ctx.report(
          c,
          at('endpoints', j),
          `platform "${platform}" does not serve endpoint "${e}" (its endpoints: ${platEndpoints.join(', ')})`,
        );
      }
      const modes = v.endpoints?.get(e)?.modes;
      if (model && modes && !modes.includes(model.mode)) {
        ctx.report(
          c,
          at('endpoints', j),
          `endpoint "${e}" cannot serve model "${model.id}" of mode "${model.mode}" (it serves: ${modes.join(', ')})`,
        );
      }
    });
  }

  if (model && Array.isArray(d.capabilities_removed) && ctx.clean(c, at('capabilities_removed'))) {
    d.capabilities_removed.forEach((cap, j) => {
      if (!model.capabilities.includes(cap)) {
        ctx.report(c, at('capabilities_removed', j), `model "${model.id}" does not have capability "${cap}"`);
      }
    });
  }

  const pricing = d.pricing;
  if (isMapping(pricing) && 'prices' in pricing && isMapping(pricing.prices) && ctx.clean(c, at('pricing'))) {
    priceListRules(ctx, c, at('pricing', 'prices'), pricing.prices);
    if (model) channelAgainstList(ctx, c, at('pricing'), pricing.prices, model.pricing, pricing.above_list === true);
  }
}

export function linkDeployments(
  ctx: LinkContext,
  refs: DeploymentRefs,
): { platform: string; deployment: Deployment }[] {
  const linked: { platform: string; deployment: Deployment }[] = [];
  const ids = new Map<string, Ref>();
  for (const { c, data } of ctx.sources('deployments')) {
    const platform = filePlatform(ctx, refs.platforms, c, data.platform);
    ctx.list(c, data.deployments).forEach((d, i) => {
      if (!isMapping(d)) return;
      if (typeof d.id === 'string') {
        const path = ['deployments', i, 'id'];
        const first = ids.get(d.id);
        if (first) ctx.report(c, path, `duplicate deployment id "${d.id}" (first declared at ${where(first)})`);
        else ids.set(d.id, { c, path });
      }
      deploymentRules(ctx, refs, c, i, d, platform);
      linked.push({ platform: platform ?? c.f.stem, deployment: d });
    });
  }
  return linked;
}
