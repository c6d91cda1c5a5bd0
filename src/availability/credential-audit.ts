// Which upstream credentials a config needs and which the store holds, compared by name: the
// deployments that cannot serve because their resource's credential was never stored, and stored
// secrets no resource names (a typo such as `secret set openai-us` for the credential `openai-prod`).
// `serve` logs both at start-up, so an operator learns it from the log instead of from a 404.
import type { CompiledConfig } from '../config/compiled.ts';
import { isModelActive } from './serving.ts';

export interface MissingCredential {
  credential: string;
  /** Active resources naming it, sorted. */
  resources: string[];
  /** Active deployments of routable models on those resources, sorted: what cannot serve. */
  deployments: string[];
}

export interface CredentialAudit {
  /** Credentials active deployments need that are not stored, sorted by name. */
  missing: MissingCredential[];
  /** Stored secrets no resource (active or not) names, sorted. */
  unused: string[];
  /** Active deployments of routable models whose credential is stored. */
  servable: number;
}

export function auditCredentials(config: CompiledConfig, stored: ReadonlySet<string>, nowMs: number): CredentialAudit {
  const resources = new Map(config.resources.map((r) => [r.id, r]));
  const models = new Map(config.models.map((m) => [m.id, m]));
  const missing = new Map<string, MissingCredential>();
  let servable = 0;
  for (const d of config.deployments) {
    const resource = resources.get(d.resource);
    const model = models.get(d.model);
    if (!d.active || !resource?.active || !model || !isModelActive(model, nowMs)) continue;
    if (stored.has(resource.credential)) {
      servable++;
      continue;
    }
    let m = missing.get(resource.credential);
    if (!m) missing.set(resource.credential, (m = { credential: resource.credential, resources: [], deployments: [] }));
    if (!m.resources.includes(resource.id)) m.resources.push(resource.id);
    m.deployments.push(d.id);
  }
  const named = new Set(config.resources.map((r) => r.credential));
  const byName = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
  return {
    missing: [...missing.values()]
      .map((m) => ({ ...m, resources: m.resources.sort(byName), deployments: m.deployments.sort(byName) }))
      .sort((a, b) => byName(a.credential, b.credential)),
    unused: [...stored].filter((n) => !named.has(n)).sort(byName),
    servable,
  };
}
