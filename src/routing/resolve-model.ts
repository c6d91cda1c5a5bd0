// Model names from a request → compiled models (docs/api.md: model identifiers, lifecycle, "a model is served
// only on the protocols and endpoints it is registered for"). Slugs, canonical slugs and aliases
// resolve; bare provider-native names do not.
import type { CompiledModel } from '../config/compiled.ts';
import type { ConfigIndex } from '../config/index.ts';
import { GatewayError, modelNotFound, validationFailed } from '../errors.ts';
import { isExpired } from '../availability/lifecycle.ts';

/** Endpoint ids the model's deployments are registered for (configuration, not availability). */
export function registeredEndpoints(index: ConfigIndex, model: CompiledModel): Set<string> {
  const out = new Set<string>();
  for (const d of index.deploymentsOf(model.id)) for (const e of d.endpoints) out.add(e);
  return out;
}

export function resolveModel(index: ConfigIndex, name: string, endpoint: string, nowMs: number): CompiledModel {
  const model = index.modelByName.get(name);
  if (!model) throw modelNotFound(name);
  if (!model.enabled) {
    throw new GatewayError(
      'model_not_found',
      `model "${name}" is not enabled on this gateway; list the available slugs with GET /v1/models`,
    );
  }
  if (isExpired(model, nowMs)) {
    throw new GatewayError(
      'model_not_found',
      `model "${name}" reached its expiration date ${model.expirationDate} and is no longer served; list the available slugs with GET /v1/models`,
    );
  }
  const served = registeredEndpoints(index, model);
  if (!served.has(endpoint)) {
    const paths = index.config.vocabularies.endpoints.filter((e) => served.has(e.id)).map((e) => `POST ${e.path}`);
    const here = index.endpointById.get(endpoint)?.path ?? endpoint;
    throw validationFailed(
      paths.length === 0
        ? `model "${model.id}" is not served on POST ${here}: it is not served on any inference endpoint`
        : `model "${model.id}" is not served on POST ${here}; it is served on: ${paths.join(', ')}`,
    );
  }
  return model;
}
