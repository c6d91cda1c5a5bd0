// vocabularies.yaml: ids unique within each list, endpoint paths unique, and the lists referring to
// each other (an endpoint's protocol, when it has one, and its modes, a capability's parameters, modality and
// requires).
// Returns the lookups every other kind checks its vocabulary ids against.
import type { CapabilityVocab, VocabulariesFile } from '../../generated/config-types.ts';
import type { CheckedFile, LinkContext, Source } from './context.ts';

/** Vocabulary lists that passed the schema; null when a list is unusable (its checks are skipped). */
export interface Vocab {
  protocols: Set<string> | null;
  endpoints: Map<string, { protocol: string | null; modes: string[] }> | null;
  modalities: Set<string> | null;
  modes: Set<string> | null;
  parameters: Set<string> | null;
  sampling: Set<string> | null;
  capabilities: Map<string, CapabilityVocab> | null;
  /** Parameter → the first capability that implies it. */
  paramOwner: Map<string, string> | null;
  retention: Set<string> | null;
  moderation: Set<string> | null;
}

export interface LinkedVocabularies {
  vocab: Vocab;
  /** The file's content; null when there is no usable vocabularies.yaml (always reported). */
  file: VocabulariesFile | null;
}

/** Reports a repeated `id` in one vocabulary list. */
function uniqueIds(
  ctx: LinkContext,
  c: CheckedFile,
  key: string,
  items: readonly { id: string }[],
  what: string,
): void {
  const seen = new Map<string, number>();
  items.forEach((it, i) => {
    const first = seen.get(it.id);
    if (first === undefined) seen.set(it.id, i);
    else ctx.report(c, [key, i, 'id'], `duplicate ${what} id "${it.id}" (first declared at ${key}[${first}])`);
  });
}

/** The usable lists of the file, with duplicate ids reported as each list is read. */
function readLists(ctx: LinkContext, src: Source<'vocabularies'> | undefined) {
  const usable = <K extends keyof VocabulariesFile>(key: K): VocabulariesFile[K] | null =>
    src && Array.isArray(src.data[key]) && ctx.clean(src.c, [key]) ? src.data[key] : null;
  const withIds = <K extends 'endpoints' | 'modes' | 'capabilities' | 'retention_levels' | 'moderation'>(
    key: K,
    what: string,
  ) => {
    const items = usable(key);
    if (items && src) uniqueIds(ctx, src.c, key, items, what);
    return items;
  };
  const protocols = usable('protocols');
  const endpoints = withIds('endpoints', 'endpoint');
  const modes = withIds('modes', 'mode');
  const capabilities = withIds('capabilities', 'capability');
  const retention = withIds('retention_levels', 'retention level');
  const moderation = withIds('moderation', 'moderation');
  const parameters = usable('parameters');
  const modalities = usable('modalities');
  const sampling = usable('sampling_parameters');
  return { protocols, endpoints, modes, capabilities, retention, moderation, parameters, modalities, sampling };
}

type Lists = ReturnType<typeof readLists>;

function lookups(l: Lists): Vocab {
  const v: Vocab = {
    protocols: l.protocols && new Set(l.protocols),
    endpoints: l.endpoints && new Map(l.endpoints.map((e) => [e.id, { protocol: e.protocol ?? null, modes: e.modes }])),
    modalities: l.modalities && new Set(l.modalities),
    modes: l.modes && new Set(l.modes.map((m) => m.id)),
    parameters: l.parameters && new Set(l.parameters),
    sampling: l.sampling && new Set(l.sampling),
    capabilities: l.capabilities && new Map(l.capabilities.map((x) => [x.id, x])),
    paramOwner: null,
    retention: l.retention && new Set(l.retention.map((r) => r.id)),
    moderation: l.moderation && new Set(l.moderation.map((m) => m.id)),
  };
  if (l.capabilities) {
    v.paramOwner = new Map();
    for (const cap of l.capabilities)
      for (const p of cap.parameters ?? []) if (!v.paramOwner.has(p)) v.paramOwner.set(p, cap.id);
  }
  return v;
}

/** The lists' references to each other. */
function crossRules(ctx: LinkContext, c: CheckedFile, l: Lists, v: Vocab): void {
  if (l.endpoints) {
    const paths = new Map<string, number>();
    l.endpoints.forEach((e, i) => {
      if (e.protocol !== undefined)
        ctx.member(c, ['endpoints', i, 'protocol'], e.protocol, v.protocols, 'protocol', 'protocols');
      for (const [j, m] of e.modes.entries()) ctx.member(c, ['endpoints', i, 'modes', j], m, v.modes, 'mode', 'modes');
      const first = paths.get(e.path);
      if (first === undefined) paths.set(e.path, i);
      else
        ctx.report(
          c,
          ['endpoints', i, 'path'],
          `duplicate endpoint path "${e.path}" (first declared at endpoints[${first}])`,
        );
    });
  }
  if (l.capabilities) {
    l.capabilities.forEach((cap, i) => {
      for (const [j, p] of (cap.parameters ?? []).entries())
        ctx.member(c, ['capabilities', i, 'parameters', j], p, v.parameters, 'parameter', 'parameters');
      if (cap.input_modality !== undefined) {
        ctx.member(
          c,
          ['capabilities', i, 'input_modality'],
          cap.input_modality,
          v.modalities,
          'modality',
          'modalities',
        );
      }
      (cap.requires ?? []).forEach((r, j) => {
        if (r === cap.id)
          ctx.report(c, ['capabilities', i, 'requires', j], `capability "${cap.id}" cannot require itself`);
        else ctx.member(c, ['capabilities', i, 'requires', j], r, v.capabilities, 'capability', 'capabilities');
      });
    });
  }
  if (l.retention && !l.retention.some((r) => r.id === 'unknown')) {
    ctx.report(c, ['retention_levels'], 'must list "unknown" (the level of a platform that records no data_retention)');
  }
}

export function linkVocabularies(ctx: LinkContext): LinkedVocabularies {
  const src = ctx.sources('vocabularies')[0];
  const lists = readLists(ctx, src);
  const vocab = lookups(lists);
  if (!src) return { vocab, file: null };
  crossRules(ctx, src.c, lists, vocab);
  return { vocab, file: src.data };
}
