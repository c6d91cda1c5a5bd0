// Runtime lookups over a compiled config: built once at start, read-only afterwards.
import type {
  CompiledConfig,
  CompiledDeployment,
  CompiledModel,
  CompiledPlatform,
  CompiledResource,
  CompiledWorkspace,
  Vocabularies,
} from './compiled.ts';

export type EndpointVocab = Vocabularies['endpoints'][number];

export class ConfigIndex {
  readonly config: CompiledConfig;
  /** Slug, canonical slug and aliases → model (exact, case-sensitive match). */
  readonly modelByName = new Map<string, CompiledModel>();
  readonly modelById = new Map<string, CompiledModel>();
  /** Lowercased platform id and aliases → platform. */
  readonly platformByName = new Map<string, CompiledPlatform>();
  readonly platformById = new Map<string, CompiledPlatform>();
  readonly resourceById = new Map<string, CompiledResource>();
  readonly deploymentById = new Map<string, CompiledDeployment>();
  /** Model slug → its deployments, sorted by id. */
  readonly deploymentsByModel = new Map<string, CompiledDeployment[]>();
  readonly workspaceById = new Map<string, CompiledWorkspace>();
  readonly endpointById = new Map<string, EndpointVocab>();
  readonly endpointByPath = new Map<string, EndpointVocab>();

  constructor(config: CompiledConfig) {
    this.config = config;
    for (const m of config.models) {
      this.modelById.set(m.id, m);
      this.modelByName.set(m.id, m);
      this.modelByName.set(m.canonicalSlug, m);
      for (const a of m.aliases) this.modelByName.set(a, m);
    }
    for (const p of config.platforms) {
      this.platformById.set(p.id, p);
      this.platformByName.set(p.id.toLowerCase(), p);
      for (const a of p.aliases) this.platformByName.set(a.toLowerCase(), p);
    }
    for (const r of config.resources) this.resourceById.set(r.id, r);
    for (const d of config.deployments) {
      this.deploymentById.set(d.id, d);
      let list = this.deploymentsByModel.get(d.model);
      if (!list) this.deploymentsByModel.set(d.model, (list = []));
      list.push(d);
    }
    for (const list of this.deploymentsByModel.values()) list.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    for (const w of config.workspaces) this.workspaceById.set(w.id, w);
    for (const e of config.vocabularies.endpoints) {
      this.endpointById.set(e.id, e);
      this.endpointByPath.set(e.path, e);
    }
  }

  /** Resolve a provider name from a request (case-insensitive, aliases included). */
  platformFor(name: string): CompiledPlatform | undefined {
    return this.platformByName.get(name.toLowerCase());
  }

  deploymentsOf(modelId: string): readonly CompiledDeployment[] {
    return this.deploymentsByModel.get(modelId) ?? [];
  }
}
