// The starter config `pi-gateway init` writes: one OpenAI-compatible provider (OpenAI itself, one
// resource, two current models) and one workspace. The vocabularies, the defaults of gateway.yaml,
// the platform and the models' facts are copied from the bundled example config, so the starter
// carries the catalog this build ships; only what is the operator's own (the resource and its
// credential name, the deployments, the workspace) is written here.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { keepModels } from '../config/model-subset.ts';

/** The provider the starter serves, and the names the next steps use. */
export const STARTER = {
  platform: 'openai',
  resource: 'openai-main',
  credential: 'openai-api-key',
  baseUrl: 'https://api.openai.com/v1',
  /** Catalog ids of the bundled config/models/openai.yaml, and the ids OpenAI's API takes. */
  models: [
    { id: 'openai/gpt-6-luna', upstream: 'gpt-6-luna' },
    { id: 'openai/gpt-6.2-sol', upstream: 'gpt-6.2-sol' },
  ],
} as const;

/** Workspace ids, as the config's schema allows them. */
export const WORKSPACE_ID = /^[a-z0-9][a-z0-9-]{0,63}$/;

function resourcesYaml(): string {
  return `# Your OpenAI organisation. The API key is never written here: it is stored sealed in the
# database under the credential name below, with
#   printf %s "$OPENAI_API_KEY" | pi-gateway secret set ${STARTER.credential}
# Another OpenAI-compatible provider (vLLM, a reseller) is a platform, resource and deployments
# file of its own: see the bundled example config.
platform: ${STARTER.platform}
resources:
  - id: ${STARTER.resource}
    base_url: ${STARTER.baseUrl}
    credential: ${STARTER.credential}
`;
}

function deploymentsYaml(): string {
  const entries = STARTER.models.map(
    (m) => `  - id: ${STARTER.resource}/${m.upstream}
    model: ${m.id}
    resource: ${STARTER.resource}
    upstream_model: ${m.upstream}
    weight: 100
    quantization: unknown
    endpoints: [chat_completions, responses]
`,
  );
  return `# The models served through the resource in resources/openai.yaml. A model's facts and prices
# are in models/openai.yaml; a deployment says who serves it, under which upstream id.
platform: ${STARTER.platform}
deployments:
${entries.join('\n')}`;
}

function workspacesYaml(workspace: string): string {
  return `# Workspaces: every API key belongs to one; each has its own wallet, a default per-key rate
# limit and a routing policy (see the bundled example config for policies).
workspaces:
  - id: ${workspace}
    rate_limit_rpm: 600
`;
}

/** Relative path → text of every starter file, copied pieces read from the bundled config `bundled`. */
export function starterFiles(bundled: string, workspace: string): Map<string, string> {
  const copy = (rel: string) => readFileSync(join(bundled, rel), 'utf8');
  const models = keepModels(
    copy('models/openai.yaml'),
    STARTER.models.map((m) => m.id),
  );
  return new Map([
    ['vocabularies.yaml', copy('vocabularies.yaml')],
    ['gateway.yaml', copy('gateway.yaml')],
    ['workspaces.yaml', workspacesYaml(workspace)],
    ['platforms/openai.yaml', copy('platforms/openai.yaml')],
    ['resources/openai.yaml', resourcesYaml()],
    ['deployments/openai.yaml', deploymentsYaml()],
    ['models/openai.yaml', models],
  ]);
}
