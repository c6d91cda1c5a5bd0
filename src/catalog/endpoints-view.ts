// The endpoints view (docs/api.md: "Model endpoints view"): one entry per platform able to serve the model
// now, carrying its best deployment's facts, ordered by that deployment's weight then platform id.
// Depends on time (discount windows, expiry), sealed credentials and health, so it is built per request.
import type { CompiledDeployment, CompiledModel } from '../config/compiled.ts';
import type { ConfigIndex } from '../config/index.ts';
import { effectivePricing, renderPricing } from '../billing/price.ts';
import { type CredentialView, type HealthView, compareBest, servingDeployments } from '../availability/serving.ts';

function inVocabOrder(order: readonly string[], ids: Iterable<string>): string[] {
  const set = new Set(ids);
  return order.filter((id) => set.has(id));
}

export function endpointsView(
  index: ConfigIndex,
  model: CompiledModel,
  creds: CredentialView,
  health: HealthView,
  nowMs: number,
): Record<string, unknown> {
  const vocab = index.config.vocabularies;
  const endpointOrder = vocab.endpoints.map((e) => e.id);
  const byPlatform = new Map<string, CompiledDeployment[]>();
  for (const d of servingDeployments(index, model, creds, nowMs)) {
    let list = byPlatform.get(d.platform);
    if (!list) byPlatform.set(d.platform, (list = []));
    list.push(d);
  }

  const best = compareBest(health, nowMs);
  const entries: { weight: number; platform: string; entry: Record<string, unknown> }[] = [];
  for (const [platformId, deps] of byPlatform) {
    const platform = index.platformById.get(platformId);
    if (!platform) continue;
    deps.sort(best);
    const d = deps[0] as CompiledDeployment;
    const prices = effectivePricing(model, d, nowMs);
    entries.push({
      weight: d.weight,
      platform: platformId,
      entry: {
        provider: platform.id,
        provider_type: platform.providerType,
        headquarters: platform.headquarters,
        protocols: inVocabOrder(
          vocab.protocols,
          deps.flatMap((x) => x.protocols),
        ),
        supported_endpoints: inVocabOrder(
          endpointOrder,
          deps.flatMap((x) => x.endpoints),
        ),
        context_length: d.contextLength,
        max_prompt_tokens: d.maxPromptTokens,
        max_completion_tokens: d.maxCompletionTokens,
        quantization: d.quantization,
        supports_stream_cancellation: platform.supportsStreamCancellation,
        capabilities: d.capabilities,
        pricing: renderPricing(prices.pricing),
        list_pricing: renderPricing(prices.list),
        discount: prices.discount ? { percent_off: prices.discount.percentOff, ends_at: prices.discount.endsAt } : null,
        data_policy: {
          prompt_training: platform.dataPolicy.promptTraining,
          data_retention: platform.dataPolicy.dataRetention,
          moderation: platform.dataPolicy.moderation,
          reviewed: platform.dataPolicy.reviewed,
        },
      },
    });
  }
  entries.sort((a, b) => b.weight - a.weight || (a.platform < b.platform ? -1 : a.platform > b.platform ? 1 : 0));
  const list = entries.map((e) => e.entry);

  return {
    id: model.id,
    aliases: [...model.aliases].sort(),
    openness: model.openness,
    model_page_url: model.modelPageUrl,
    capabilities: model.capabilities,
    protocols: inVocabOrder(
      vocab.protocols,
      list.flatMap((e) => e['protocols'] as string[]),
    ),
    supported_endpoints: inVocabOrder(
      endpointOrder,
      list.flatMap((e) => e['supported_endpoints'] as string[]),
    ),
    endpoints: list,
  };
}
