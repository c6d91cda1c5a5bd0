// GET /admin/meta: what the console's forms offer — workspaces, model slugs, providers (platform ids),
// endpoints, how requests end — and the serving config's hash.
import type { OperatorView } from '../admin/operator-view.ts';
import { REQUEST_ENDS } from '../observe/request-end.ts';

export function metaReport(view: OperatorView): unknown {
  const c = view.index().config;
  return {
    config_hash: c.sourceHash,
    workspaces: c.workspaces.map((w) => ({ id: w.id, name: w.name })),
    models: c.models.map((m) => m.id).sort(),
    providers: [...new Set(c.deployments.map((d) => d.platform))].sort(),
    endpoints: c.vocabularies.endpoints.map((e) => e.id),
    ended: REQUEST_ENDS,
  };
}
