// A catalog model object (docs/api.md: "Catalog model"), derived from a compiled model. Pure and
// time-independent, so codegen can emit it into src/generated/catalog.json and the server can
// precompute every model's JSON once at start.
import type { CompiledModel } from '../config/compiled.ts';
import { renderPricing } from '../billing/price.ts';
import { dayStartMs } from '../availability/lifecycle.ts';

export type CatalogModel = Record<string, unknown>;

/** `links.details`: the single-model endpoint, relative to the API host root (`{base_url}`). */
export function detailsPath(id: string): string {
  return `/v1/models/${id}`;
}

export function toCatalogModel(m: CompiledModel): CatalogModel {
  const out: CatalogModel = {
    id: m.id,
    canonical_slug: m.canonicalSlug,
    hugging_face_id: null,
    name: m.name,
  };
  if (m.releaseDate !== null) out['created'] = Math.floor(dayStartMs(m.releaseDate) / 1000);
  out['description'] = m.description;
  if (m.contextLength !== null) out['context_length'] = m.contextLength;
  out['architecture'] = {
    modality: `${m.inputModalities.join('+')}->${m.outputModalities.join('+')}`,
    input_modalities: m.inputModalities,
    output_modalities: m.outputModalities,
    tokenizer: m.tokenizer,
    instruct_type: null,
  };
  out['pricing'] = renderPricing(m.listPricing);
  const top: Record<string, unknown> = {};
  if (m.contextLength !== null) top['context_length'] = m.contextLength;
  if (m.maxCompletionTokens !== null) top['max_completion_tokens'] = m.maxCompletionTokens;
  top['is_moderated'] = false;
  out['top_provider'] = top;
  out['per_request_limits'] = null;
  out['supported_parameters'] = m.supportedParameters;
  out['default_parameters'] = m.defaultParameters;
  out['supported_voices'] = null;
  out['knowledge_cutoff'] = m.knowledgeCutoff;
  out['expiration_date'] = m.expirationDate;
  out['links'] = { details: detailsPath(m.id) };
  if (m.reasoning) {
    const r: Record<string, unknown> = {
      mandatory: m.reasoning.mandatory,
      default_enabled: m.reasoning.defaultEnabled,
      supported_efforts: m.reasoning.supportedEfforts,
      supports_max_tokens: m.reasoning.supportsMaxTokens,
    };
    if (m.reasoning.defaultEffort !== null) r['default_effort'] = m.reasoning.defaultEffort;
    out['reasoning'] = r;
  }
  return out;
}
