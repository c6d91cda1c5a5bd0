// What config linking needs to know about the platform adapters: their ids, the endpoints each can
// call, and how each judges its `adapter_options`. The adapters live above config/ (in platforms/,
// which reads the compiled config), so config/ never imports them: whoever loads a config passes
// the registry in (platforms/index.ts's ADAPTERS satisfies this; tests may pass their own).
import type { PlatformFile } from '../generated/config-types.ts';

/** A platform's `adapter_options`, as the platform schema types them. */
export type AdapterOptions = NonNullable<PlatformFile['adapter_options']>;

/** The facts about one adapter that platform files are checked against. */
export interface AdapterFacts {
  readonly id: string;
  /** Endpoint ids the adapter knows how to call; a platform declaring others is rejected. */
  readonly endpoints: readonly string[];
  /** Problems with a platform's `adapter_options` (empty when fine). */
  validateOptions(options: AdapterOptions): string[];
}

/** Adapter id → its facts: the registry a platform's `adapter` must name one of. */
export type AdapterCatalog = ReadonlyMap<string, AdapterFacts>;
