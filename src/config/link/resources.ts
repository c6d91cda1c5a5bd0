// resources/<platform>.yaml: the file's platform is declared and matches the file name; resource ids
// are unique across every platform. Returns the resources deployments refer to.
import type { Resource } from '../../generated/config-types.ts';
import { isMapping, type LinkContext, type Ref, where } from './context.ts';
import { filePlatform, type LinkedPlatforms } from './platforms.ts';

export interface LinkedResources {
  linked: { platform: string; resource: Resource }[];
  /** Resource id → its first declaration and its file's platform (null when unusable). */
  ids: Map<string, { ref: Ref; platform: string | null }>;
}

export function linkResources(ctx: LinkContext, platforms: LinkedPlatforms): LinkedResources {
  const out: LinkedResources = { linked: [], ids: new Map() };
  for (const { c, data } of ctx.sources('resources')) {
    const platform = filePlatform(ctx, platforms, c, data.platform);
    ctx.list(c, data.resources).forEach((r, i) => {
      if (!isMapping(r) || typeof r.id !== 'string') return;
      const path = ['resources', i, 'id'];
      const first = out.ids.get(r.id);
      if (first) {
        ctx.report(c, path, `duplicate resource id "${r.id}" (first declared at ${where(first.ref)})`);
        return;
      }
      out.ids.set(r.id, { ref: { c, path }, platform });
      out.linked.push({ platform: platform ?? c.f.stem, resource: r });
    });
  }
  return out;
}
