// workspaces.yaml: workspace ids are unique, and each routing list (allow, ignore, order) names
// declared platforms (by id or alias, any case), each platform at most once.
import type { Workspace } from '../../generated/config-types.ts';
import { type CheckedFile, isMapping, type LinkContext } from './context.ts';
import type { LinkedPlatforms } from './platforms.ts';

const PLATFORM_LISTS = ['allow', 'ignore', 'order'] as const;

function routingRules(ctx: LinkContext, platforms: LinkedPlatforms, c: CheckedFile, i: number, w: Workspace): void {
  const routing = w.routing;
  if (!isMapping(routing)) return;
  for (const key of PLATFORM_LISTS) {
    const names = routing[key];
    if (!Array.isArray(names) || !ctx.clean(c, ['workspaces', i, 'routing', key])) continue;
    const seen = new Map<string, string>();
    names.forEach((n, j) => {
      const path = ['workspaces', i, 'routing', key, j];
      const p = platforms.names.get(n.toLowerCase());
      if (!p) {
        if (!ctx.incomplete.has('platform')) ctx.report(c, path, `unknown platform "${n}"`);
        return;
      }
      const dup = seen.get(p.id);
      if (dup !== undefined) ctx.report(c, path, `"${n}" names the same platform as "${dup}" ("${p.id}")`);
      else seen.set(p.id, n);
    });
  }
}

export function linkWorkspaces(ctx: LinkContext, platforms: LinkedPlatforms): Workspace[] {
  const linked: Workspace[] = [];
  const src = ctx.sources('workspaces')[0];
  if (!src) return linked;
  const { c, data } = src;
  const ids = new Map<string, number>();
  ctx.list(c, data.workspaces).forEach((w, i) => {
    if (!isMapping(w)) return;
    if (typeof w.id === 'string') {
      const first = ids.get(w.id);
      if (first !== undefined)
        ctx.report(
          c,
          ['workspaces', i, 'id'],
          `duplicate workspace id "${w.id}" (first declared at workspaces[${first}])`,
        );
      else ids.set(w.id, i);
    }
    routingRules(ctx, platforms, c, i, w);
    linked.push(w);
  });
  return linked;
}
