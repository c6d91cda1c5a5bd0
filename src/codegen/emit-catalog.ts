// src/generated/catalog.json: the `GET /v1/models` document for every enabled model, sorted by id.
// Expiry is time-dependent, so it is applied at request time; this file lists every enabled model.
import type { CompiledConfig } from '../config/compiled.ts';
import { toCatalogModel } from '../catalog/catalog-model.ts';

/** The text of src/generated/catalog.json: pure JSON (no banner key), 2-space indent, trailing newline. */
export function emitCatalog(config: CompiledConfig): string {
  const models = config.models.filter((m) => m.enabled).sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  return JSON.stringify({ data: models.map(toCatalogModel) }, null, 2) + '\n';
}
