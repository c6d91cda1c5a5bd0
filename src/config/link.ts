// Cross-file rules of the config (what one file's schema cannot see): names match file names, ids are
// unique, references resolve, vocabulary ids exist, prices are consistent. Each problem is an issue
// located in the file that has to change. Rules only read values that passed schema validation, so a
// typo is reported once, by the schema, not again as a dangling reference.
//
// One file per config kind under ./link/, run in dependency order over one shared context
// (./link/context.ts types each file's content once); each kind returns what later kinds refer to.
import type {
  Deployment,
  GatewayFile,
  Model,
  PlatformFile,
  Resource,
  VocabulariesFile,
  Workspace,
} from '../generated/config-types.ts';
import type { AdapterCatalog } from './adapter-catalog.ts';
import type { ConfigIssue } from './issues.ts';
import { type CheckedFile, LinkContext } from './link/context.ts';
import { linkDeployments } from './link/deployments.ts';
import { linkModels } from './link/models.ts';
import { linkPlatforms } from './link/platforms.ts';
import { linkResources } from './link/resources.ts';
import { linkVocabularies } from './link/vocabularies.ts';
import { linkWorkspaces } from './link/workspaces.ts';

export type { CheckedFile };

/** The config's typed content once every rule passed: what `compile` turns into a CompiledConfig. */
export interface LinkedConfig {
  vocabularies: VocabulariesFile;
  gateway: GatewayFile;
  models: { vendor: string; model: Model }[];
  platforms: PlatformFile[];
  resources: { platform: string; resource: Resource }[];
  deployments: { platform: string; deployment: Deployment }[];
  workspaces: Workspace[];
}

export interface LinkOptions {
  /** The adapters platforms are checked against: platforms/'s ADAPTERS, or a test's own. */
  adapters: AdapterCatalog;
}

export interface LinkResult {
  issues: ConfigIssue[];
  /**
   * Meaningful only when there are no issues (from any stage); null when there is no usable
   * vocabularies.yaml, which is always an issue of its own.
   */
  config: LinkedConfig | null;
  /** Resolves a platform name (id or alias, any case) to its id. */
  platformIdFor(name: string): string | undefined;
}

/** Applies every cross-file rule to the schema-checked files. */
export function link(files: CheckedFile[], opts: LinkOptions): LinkResult {
  const ctx = new LinkContext(files);
  const vocabularies = linkVocabularies(ctx);
  // gateway.yaml has no cross-file rule: its content is used as the schema passed it.
  const gateway = ctx.sources('gateway')[0]?.data ?? {};
  const models = linkModels(ctx, vocabularies.vocab);
  const platforms = linkPlatforms(ctx, vocabularies.vocab, opts.adapters);
  const resources = linkResources(ctx, platforms);
  const deployments = linkDeployments(ctx, { vocab: vocabularies.vocab, models, platforms, resources });
  const workspaces = linkWorkspaces(ctx, platforms);
  const config: LinkedConfig | null = vocabularies.file && {
    vocabularies: vocabularies.file,
    gateway,
    models: models.linked,
    platforms: platforms.linked,
    resources: resources.linked,
    deployments,
    workspaces,
  };
  return { issues: ctx.issues, config, platformIdFor: (name) => platforms.names.get(name.toLowerCase())?.id };
}
