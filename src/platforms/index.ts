// The adapter registry: platform YAML names one of these in `adapter`. The only hand-kept registry.
import { anthropic } from './anthropic.ts';
import { azureOpenai } from './azure-openai.ts';
import { bedrock } from './bedrock.ts';
import { openai } from './openai.ts';
import type { PlatformAdapter } from './types.ts';
import { vertex } from './vertex.ts';

export const ADAPTERS: ReadonlyMap<string, PlatformAdapter> = new Map(
  [openai, anthropic, azureOpenai, vertex, bedrock].map((a) => [a.id, a]),
);

export function adapterFor(id: string): PlatformAdapter | undefined {
  return ADAPTERS.get(id);
}
