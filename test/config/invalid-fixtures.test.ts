// Every config rule has a fixture and the exact lines an operator sees for it (Envoy-style table):
// each case overlays test/fixtures/config/invalid/<fixture>/ on the valid mini tree, so the expected
// list is complete — a rule that also fired somewhere else (a cascade) would fail the case.
import t from 'tap';
import { rmSync } from 'node:fs';
import { issueLines, overlayTree } from './fixture-tree.ts';

interface Case {
  name: string;
  /** What the case proves. */
  rule: string;
  /** Folder of test/fixtures/config/invalid/ copied over mini/ (none: mini as is). */
  fixture?: string;
  /** Files of the tree to delete. */
  remove?: string[];
  expected: string[];
}

const cases: Case[] = [
  {
    name: 'yaml-syntax',
    rule: 'A YAML syntax error is reported at its position; the file is then skipped, and nothing else cascades.',
    fixture: 'yaml-syntax',
    expected: [
      'config/models/zeta.yaml:6:1: YAML syntax error: Flow map in block collection must be sufficiently indented and end with a }',
      'config/models/zeta.yaml:6:1: YAML syntax error: Flow sequence in block collection must be sufficiently indented and end with a ]',
    ],
  },
  {
    name: 'duplicate-key',
    rule: 'A duplicate map key is an error (YAML would silently keep one of the two values).',
    fixture: 'duplicate-key',
    expected: ['config/platforms/delta.yaml:6:1 name: duplicate key "name"'],
  },
  {
    name: 'unknown-files',
    rule: 'Only the known file kinds may live in the config dir; *.md is ignored anywhere (docs/notes.md here).',
    fixture: 'unknown-files',
    expected: [
      'config/models/extra/zeta.yaml:1:1: unexpected file: the config dir holds vocabularies.yaml, gateway.yaml, workspaces.yaml and models/, platforms/, resources/, deployments/ with one <id>.yaml each (*.md files are ignored)',
      'config/notes.txt:1:1: unexpected file: the config dir holds vocabularies.yaml, gateway.yaml, workspaces.yaml and models/, platforms/, resources/, deployments/ with one <id>.yaml each (*.md files are ignored)',
      'config/platforms/delta.yml:1:1: unexpected file: the config dir holds vocabularies.yaml, gateway.yaml, workspaces.yaml and models/, platforms/, resources/, deployments/ with one <id>.yaml each (*.md files are ignored)',
    ],
  },
  {
    name: 'missing-required',
    rule: 'vocabularies.yaml and workspaces.yaml are required; without a vocabulary no vocabulary check cascades.',
    remove: ['vocabularies.yaml', 'workspaces.yaml'],
    expected: [
      'config/vocabularies.yaml:1:1: required file is missing',
      'config/workspaces.yaml:1:1: required file is missing',
    ],
  },
  {
    name: 'empty-file',
    rule: 'An empty file is an error, except gateway.yaml (all defaults).',
    fixture: 'empty-file',
    expected: ['config/platforms/delta.yaml:1:1: file is empty'],
  },
  {
    name: 'schema-keys',
    rule: 'Unknown keys (at the key), price keys, missing keys, enums, DecimalUsd pattern and type.',
    fixture: 'schema-keys',
    expected: [
      'config/models/zeta.yaml:5:5 models[0]: missing required key "tokenizer"',
      'config/models/zeta.yaml:10:15 models[0].openness: must be one of: open_source, open_weights, proprietary',
      'config/models/zeta.yaml:11:5 models[0].foo: unknown key "foo"',
      'config/models/zeta.yaml:13:15 models[0].pricing.prompt: must be a decimal USD string such as "0.0000025" (at most 12 decimals)',
      'config/models/zeta.yaml:14:19 models[0].pricing.completion: must be a decimal USD string such as "0.0000025" (at most 12 decimals); quote it so YAML keeps it a string',
      'config/models/zeta.yaml:15:7 models[0].pricing.cached: price key "cached" is not allowed (allowed: prompt, completion, request, image, image_output, audio, audio_output, input_audio_cache, web_search, internal_reasoning, input_cache_read, input_cache_write, input_cache_write_1h, image_token, overrides)',
      'config/models/zeta.yaml:18:11 models[0].pricing.overrides[0].bogus: price key "bogus" is not allowed (allowed: min_prompt_tokens, prompt, completion, request, image, image_output, audio, audio_output, input_audio_cache, web_search, internal_reasoning, input_cache_read, input_cache_write, input_cache_write_1h, image_token)',
      'config/models/zeta.yaml:19:19 models[0].pricing.overrides[0].prompt: must be a decimal USD string such as "0.0000025" (at most 12 decimals)',
    ],
  },
  {
    name: 'schema-values',
    rule: 'Id pattern, empty string, duplicate list entries, booleans, propertyNames, integer, URL patterns.',
    fixture: 'schema-values',
    expected: [
      'config/platforms/delta.yaml:1:5 id: must be a lowercase id: letters, digits and dashes, starting with a letter or digit, at most 64 characters',
      'config/platforms/delta.yaml:2:7 name: must not be empty',
      'config/platforms/delta.yaml:3:16 provider_type: must be one of: first_party, cloud_infra, reseller, private',
      'config/platforms/delta.yaml:4:15 headquarters: must match the pattern ^[A-Z]{2}$',
      'config/platforms/delta.yaml:6:31 endpoints[1]: duplicate entry "chat_completions" (already at index 0)',
      'config/platforms/delta.yaml:8:3 data_policy: missing required key "reviewed"',
      'config/platforms/delta.yaml:9:31 supports_stream_cancellation: must be a boolean (true or false)',
      'config/platforms/delta.yaml:13:7 reasoning.budget.tokens.bogus: key "bogus" is not allowed: it must be one of: none, minimal, low, medium, high, xhigh, max',
      'config/platforms/delta.yaml:14:13 reasoning.budget.tokens.high: must be an integer',
      'config/resources/alpha.yaml:4:13 resources[0].region: must match the pattern ^[a-z0-9-]+$',
      'config/resources/alpha.yaml:5:15 resources[0].base_url: must match the pattern ^https?://',
    ],
  },
  {
    name: 'schema-dates',
    rule: 'Dates, URIs, minimum, list type, duplicate aliases.',
    fixture: 'schema-dates',
    expected: [
      'config/models/zeta.yaml:6:23 models[0].aliases[1]: duplicate entry "zeta/b" (already at index 0)',
      'config/models/zeta.yaml:11:19 models[0].capabilities: must be a list',
      'config/models/zeta.yaml:12:21 models[0].context_length: must be >= 1',
      'config/models/zeta.yaml:13:19 models[0].release_date: must be a date YYYY-MM-DD',
      'config/models/zeta.yaml:14:22 models[0].expiration_date: must be a date YYYY-MM-DD',
      'config/models/zeta.yaml:15:21 models[0].model_page_url: must be an absolute URI, such as "https://example.com/page"',
    ],
  },
  {
    name: 'channel-pricing',
    rule: "The ChannelPricing oneOf: one message for both/neither, the chosen branch's own errors otherwise.",
    fixture: 'channel-pricing',
    expected: [
      'config/deployments/charlie.yaml:9:7 deployments[0].pricing: channel pricing is either "discount_percent" (with optional "ends_at") or "prices" (with optional "ends_at" and "above_list"), not both',
      'config/deployments/charlie.yaml:17:7 deployments[1].pricing: channel pricing is either "discount_percent" (with optional "ends_at") or "prices" (with optional "ends_at" and "above_list")',
      'config/deployments/charlie.yaml:24:25 deployments[2].pricing.discount_percent: must be <= 100',
      'config/deployments/charlie.yaml:25:16 deployments[2].pricing.ends_at: must be a UTC timestamp ending in "Z", such as "2026-12-01T00:00:00Z"',
      'config/deployments/charlie.yaml:33:9 deployments[3].pricing.prices: missing required key "completion"',
      'config/deployments/charlie.yaml:34:16 deployments[3].pricing.ends_at: must be a UTC timestamp ending in "Z", such as "2026-12-01T00:00:00Z"',
    ],
  },
  {
    name: 'file-names',
    rule: 'A file declares the id of its file name (vendor, platform, resources/deployments platform).',
    fixture: 'file-names',
    expected: [
      'config/deployments/delta.yaml:1:11 platform: platform "alpha" does not match the file name "delta.yaml"',
      'config/models/zeta.yaml:2:7 vendor.id: vendor id "zed" does not match the file name "zeta.yaml"',
      'config/platforms/delta.yaml:1:5 id: platform id "delt" does not match the file name "delta.yaml"',
      'config/resources/delta.yaml:1:11 platform: unknown platform "delta" (no platforms/*.yaml declares it)',
    ],
  },
  {
    name: 'duplicate-ids',
    rule: 'Duplicate model, vendor, platform, resource, deployment and workspace ids, within and across files.',
    fixture: 'duplicate-ids',
    expected: [
      'config/deployments/charlie.yaml:8:9 deployments[1].id: duplicate deployment id "charlie/chat-1" (first declared at config/deployments/charlie.yaml:3:9)',
      'config/deployments/charlie.yaml:13:9 deployments[2].id: duplicate deployment id "alpha/chat-1" (first declared at config/deployments/alpha.yaml:3:9)',
      'config/models/zeta.yaml:13:9 models[1].id: duplicate model id "zeta/a" (first declared at config/models/zeta.yaml:5:9)',
      'config/models/zeta2.yaml:2:7 vendor.id: duplicate vendor id "zeta" (first declared at config/models/zeta.yaml:2:7)',
      'config/models/zeta2.yaml:2:7 vendor.id: vendor id "zeta" does not match the file name "zeta2.yaml"',
      'config/platforms/alpha2.yaml:1:5 id: duplicate platform id "alpha" (first declared at config/platforms/alpha.yaml:1:5)',
      'config/platforms/alpha2.yaml:1:5 id: platform id "alpha" does not match the file name "alpha2.yaml"',
      'config/resources/charlie.yaml:6:9 resources[1].id: duplicate resource id "alpha-us" (first declared at config/resources/alpha.yaml:3:9)',
      'config/workspaces.yaml:4:9 workspaces[2].id: duplicate workspace id "default" (first declared at workspaces[0])',
    ],
  },
  {
    name: 'vocab-rules',
    rule: 'Vocabulary cross-references, duplicate ids and paths, and the mandatory "unknown" retention level.',
    fixture: 'vocab-rules',
    expected: [
      'config/vocabularies.yaml:21:15 endpoints[4].protocol: unknown protocol "embeddingz" (not in vocabularies.yaml protocols)',
      'config/vocabularies.yaml:22:11 endpoints[4].path: duplicate endpoint path "/v1/chat/completions" (first declared at endpoints[0])',
      'config/vocabularies.yaml:23:13 endpoints[4].modes[0]: unknown mode "embed" (not in vocabularies.yaml modes)',
      'config/vocabularies.yaml:24:9 endpoints[5].id: duplicate endpoint id "responses" (first declared at endpoints[1])',
      'config/vocabularies.yaml:72:18 capabilities[8].parameters[0]: unknown parameter "bogus" (not in vocabularies.yaml parameters)',
      'config/vocabularies.yaml:73:21 capabilities[8].input_modality: unknown modality "smell" (not in vocabularies.yaml modalities)',
      'config/vocabularies.yaml:74:16 capabilities[8].requires[0]: unknown capability "supports_y" (not in vocabularies.yaml capabilities)',
      'config/vocabularies.yaml:74:28 capabilities[8].requires[1]: capability "supports_x" cannot require itself',
      'config/vocabularies.yaml:75:9 capabilities[9].id: duplicate capability id "supports_tools" (first declared at capabilities[0])',
      'config/vocabularies.yaml:78:3 retention_levels: must list "unknown" (the level of a platform that records no data_retention)',
    ],
  },
  {
    name: 'vocab-protocols',
    rule: "The protocols vocabulary is the spec's three inference protocols: image endpoints belong to none (supported_endpoints only).",
    fixture: 'vocab-protocols',
    expected: ['config/vocabularies.yaml:1:52 protocols[3]: must be one of: chat_completions, responses, messages'],
  },
  {
    name: 'slugs-and-names',
    rule: 'Slug vendor halves; id/alias/canonical_slug collisions (a canonical slug may equal its own id).',
    fixture: 'slugs-and-names',
    expected: [
      'config/models/zeta.yaml:5:9 models[0].id: id "acme/z1" must start with this file\'s vendor "zeta/"',
      'config/models/zeta.yaml:14:21 models[1].canonical_slug: canonical_slug "acme/chat" collides with the alias of model "acme/chat-1" at config/models/acme.yaml:8:33',
      'config/models/zeta.yaml:14:21 models[1].canonical_slug: canonical_slug "acme/chat" must start with this file\'s vendor "zeta/"',
      'config/models/zeta.yaml:15:15 models[1].aliases[0]: alias "other/z2" must start with this file\'s vendor "zeta/"',
      'config/models/zeta.yaml:15:25 models[1].aliases[1]: alias "zeta/z2" repeats the model\'s own id',
      'config/models/zeta.yaml:15:34 models[1].aliases[2]: alias "acme/chat-1" collides with the id of model "acme/chat-1" at config/models/acme.yaml:6:9',
      'config/models/zeta.yaml:15:34 models[1].aliases[2]: alias "acme/chat-1" must start with this file\'s vendor "zeta/"',
    ],
  },
  {
    name: 'platform-names',
    rule: 'Platform ids and aliases share one case-insensitive namespace.',
    fixture: 'platform-names',
    expected: [
      'config/platforms/delta.yaml:3:11 aliases[0]: alias "delta" repeats the platform\'s own id',
      'config/platforms/delta.yaml:3:18 aliases[1]: alias "alpha-cloud" collides with the alias of platform "alpha" at config/platforms/alpha.yaml:5:11',
      'config/platforms/delta.yaml:3:31 aliases[2]: alias "charlie" collides with the id of platform "charlie" at config/platforms/charlie.yaml:1:5',
    ],
  },
  {
    name: 'model-rules',
    rule: 'Model vocabulary ids, capability requires, capability-owned parameters, reasoning block and efforts, defaults.',
    fixture: 'model-rules',
    expected: [
      'config/models/zeta.yaml:8:11 models[0].mode: unknown mode "chatt" (not in vocabularies.yaml modes)',
      'config/models/zeta.yaml:10:20 models[0].capabilities[0]: capability "supports_parallel_tool_calls" requires capability "supports_tools"',
      'config/models/zeta.yaml:10:50 models[0].capabilities[1]: unknown capability "supports_bogus" (not in vocabularies.yaml capabilities)',
      'config/models/zeta.yaml:11:18 models[0].parameters[0]: parameter "tools" comes from capability "supports_tools"; declare the capability instead',
      'config/models/zeta.yaml:11:25 models[0].parameters[1]: unknown parameter "temprature" (not in vocabularies.yaml parameters)',
      'config/models/zeta.yaml:14:7 models[0].default_parameters.seed: default parameter "seed" is not a supported parameter of this model',
      'config/models/zeta.yaml:24:7 models[1].reasoning: a reasoning block needs the "supports_reasoning" capability',
      'config/models/zeta.yaml:35:20 models[2].capabilities[0]: capability "supports_reasoning" needs a reasoning block on the model',
      'config/models/zeta.yaml:47:32 models[3].reasoning.supported_efforts[1]: supported_efforts must be ordered high to low (none < minimal < low < medium < high < xhigh < max): "high" follows "low"',
      'config/models/zeta.yaml:49:23 models[3].reasoning.default_effort: default_effort "max" is not one of supported_efforts',
    ],
  },
  {
    name: 'model-modalities',
    rule: 'Declared input modalities: vocabulary ids, text always listed, every modality a declared capability implies.',
    fixture: 'model-modalities',
    expected: [
      'config/models/zeta.yaml:11:23 models[0].input_modalities: input_modalities must include "text" (the catalog always lists it)',
      'config/models/zeta.yaml:11:31 models[0].input_modalities[1]: unknown modality "smell" (not in vocabularies.yaml modalities)',
      'config/models/zeta.yaml:19:36 models[1].capabilities[1]: capability "supports_vision" implies input modality "image", which input_modalities does not list',
      'config/models/zeta.yaml:19:53 models[1].capabilities[2]: capability "supports_pdf_input" implies input modality "file", which input_modalities does not list',
      'config/models/zeta.yaml:29:30 models[2].input_modalities[1]: duplicate entry "text" (already at index 0)',
    ],
  },
  {
    name: 'price-rules',
    rule: 'Bracket order, optional classes written as 0, brackets restating classes the base does not price.',
    fixture: 'price-rules',
    expected: [
      'config/models/zeta.yaml:15:14 models[0].pricing.image: optional price classes must be absent, not 0',
      'config/models/zeta.yaml:16:25 models[0].pricing.input_cache_read: optional price classes must be absent, not 0',
      'config/models/zeta.yaml:21:23 models[0].pricing.overrides[0].web_search: optional price classes must be absent, not 0',
      'config/models/zeta.yaml:22:30 models[0].pricing.overrides[1].min_prompt_tokens: overrides must be strictly ascending by min_prompt_tokens: 100000 does not follow 200000',
      'config/models/zeta.yaml:23:18 models[0].pricing.overrides[1].audio: bracket prices "audio" but the base prices do not (a bracket only restates base classes)',
      'config/models/zeta.yaml:24:30 models[0].pricing.overrides[2].min_prompt_tokens: overrides must be strictly ascending by min_prompt_tokens: 100000 does not follow 100000',
    ],
  },
  {
    name: 'deployment-rules',
    rule: 'Model/resource references, endpoints vs platform and mode, narrowing, channel prices above list only with above_list (at every prompt length, list brackets included).',
    fixture: 'deployment-rules',
    expected: [
      'config/deployments/charlie.yaml:4:12 deployments[0].model: unknown model "acme/nope"',
      'config/deployments/charlie.yaml:9:12 deployments[1].model: unknown model "acme/chat-latest": deployments name a model by its id ("acme/chat-1"), not by alias',
      'config/deployments/charlie.yaml:15:15 deployments[2].resource: unknown resource "charlie-9"',
      'config/deployments/charlie.yaml:20:15 deployments[3].resource: resource "alpha-us" belongs to platform "alpha", not "charlie"',
      'config/deployments/charlie.yaml:27:17 deployments[4].endpoints[0]: endpoint "chat_completions" cannot serve model "beta/embed-1" of mode "embedding" (it serves: chat)',
      'config/deployments/charlie.yaml:27:35 deployments[4].endpoints[1]: endpoint "messages" cannot serve model "beta/embed-1" of mode "embedding" (it serves: chat)',
      'config/deployments/charlie.yaml:27:35 deployments[4].endpoints[1]: platform "charlie" does not serve endpoint "messages" (its endpoints: chat_completions)',
      'config/deployments/charlie.yaml:27:45 deployments[4].endpoints[2]: unknown endpoint "embeddings" (not in vocabularies.yaml endpoints)',
      'config/deployments/charlie.yaml:33:44 deployments[5].capabilities_removed[1]: model "acme/chat-1" does not have capability "supports_reasoning"',
      'config/deployments/charlie.yaml:41:17 deployments[6].pricing.prices.prompt: prompt 0.000003 is above the list price 0.0000025 (set above_list: true if this channel charges more than list)',
      'config/deployments/charlie.yaml:43:16 deployments[6].pricing.prices.audio: the model\'s list prices do not price "audio"',
      'config/deployments/charlie.yaml:46:21 deployments[6].pricing.prices.overrides[0].prompt: prompt 0.000006 is above the list price 0.000005 at 150000 prompt tokens (set above_list: true if this channel charges more than list)',
      'config/deployments/charlie.yaml:47:25 deployments[6].pricing.prices.overrides[0].completion: completion 0.000015 is above the list price 0.00001 at 200000 prompt tokens (set above_list: true if this channel charges more than list)',
      'config/deployments/charlie.yaml:50:25 deployments[6].pricing.prices.overrides[1].completion: completion 0.000015 is above the list price 0.00001 at 250000 prompt tokens (set above_list: true if this channel charges more than list)',
    ],
  },
  {
    name: 'channel-above-list',
    rule: 'above_list: accepted when a price is above list, refused when none is; never allows an unpriced class; price lists only.',
    fixture: 'channel-above-list',
    expected: [
      'config/deployments/charlie.yaml:29:19 deployments[1].pricing.above_list: above_list is set but no price is above the list price; remove it',
      'config/deployments/charlie.yaml:39:67 deployments[2].pricing.prices.audio: the model\'s list prices do not price "audio"',
      'config/deployments/charlie.yaml:48:7 deployments[3].pricing.above_list: unknown key "above_list"',
    ],
  },
  {
    name: 'platform-rules',
    rule: 'Adapter registry: unknown adapter, endpoints it cannot call, its option checks; platform vocabulary ids.',
    fixture: 'platform-rules',
    expected: [
      'config/platforms/delta.yaml:4:10 adapter: unknown adapter "grpc" (known: anthropic, azure-openai, bedrock, openai, vertex)',
      'config/platforms/delta.yaml:5:31 endpoints[1]: unknown endpoint "embeddings" (not in vocabularies.yaml endpoints)',
      'config/platforms/delta.yaml:7:19 data_policy.data_retention: unknown retention level "forever" (not in vocabularies.yaml retention_levels)',
      'config/platforms/delta.yaml:8:15 data_policy.moderation: unknown moderation id "someone" (not in vocabularies.yaml moderation)',
      'config/platforms/delta.yaml:12:25 sampling.accept[1]: unknown sampling parameter "tools" (not in vocabularies.yaml sampling_parameters)',
      'config/platforms/echo.yaml:6:3 adapter_options: adapter "anthropic" has no option "region"',
      'config/platforms/echo.yaml:6:3 adapter_options: adapter "anthropic" option "version" must be a date like 2023-06-01',
      'config/platforms/echo.yaml:8:23 endpoints[1]: adapter "anthropic" cannot call endpoint "chat_completions" (it supports: messages)',
      'config/platforms/foxtrot.yaml:4:10 adapter: adapter "azure-openai" needs option "api_version" (a string such as "2024-10-21")',
    ],
  },
  {
    name: 'workspace-rules',
    rule: 'Routing platform names resolve (id or alias, any case) and name each platform once.',
    fixture: 'workspace-rules',
    expected: [
      'config/workspaces.yaml:4:22 workspaces[0].routing.allow[1]: unknown platform "zulu"',
      'config/workspaces.yaml:5:29 workspaces[0].routing.ignore[1]: "alpha" names the same platform as "ALPHA-CLOUD" ("alpha")',
    ],
  },
];

for (const c of cases) {
  t.test(c.name, async (t) => {
    const dir = overlayTree(c.fixture ?? null, c.remove);
    t.teardown(() => rmSync(dir, { recursive: true, force: true }));
    t.strictSame(issueLines(dir), c.expected, c.rule);
  });
}

t.test('every fixture folder has a case', async (t) => {
  const { readdirSync, statSync } = await import('node:fs');
  const { FIXTURES } = await import('./fixture-tree.ts');
  const root = `${FIXTURES}invalid`;
  const folders = readdirSync(root).filter((n) => statSync(`${root}/${n}`).isDirectory());
  t.strictSame(folders.sort(), cases.flatMap((c) => (c.fixture ? [c.fixture] : [])).sort());
});
