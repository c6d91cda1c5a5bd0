/* IMPORTANT
 * This snapshot file is auto-generated, but designed for humans.
 * It should be checked into source control and tracked carefully.
 * Re-generate by setting TAP_SNAPSHOT=1 and running tests.
 * Make sure to inspect the output below.  Do not ignore changes!
 */
'use strict'
exports[`test/codegen/codegen.test.ts > TAP > golden: catalog.json and tables.ts of the mini tree > catalog.json 1`] = `
{
  "data": [
    {
      "id": "acme/chat-1",
      "canonical_slug": "acme/chat-1-2025-01-15",
      "hugging_face_id": null,
      "name": "Acme Labs: Chat 1",
      "created": 1736899200,
      "description": "A general chat model.",
      "context_length": 256000,
      "architecture": {
        "modality": "text+image->text+image",
        "input_modalities": [
          "text",
          "image"
        ],
        "output_modalities": [
          "text",
          "image"
        ],
        "tokenizer": "acme",
        "instruct_type": null
      },
      "pricing": {
        "prompt": "0.0000025",
        "completion": "0.00001",
        "image": "0.001",
        "input_cache_read": "0.00000125",
        "overrides": [
          {
            "min_prompt_tokens": 128000,
            "prompt": "0.000005",
            "completion": "0.000015"
          },
          {
            "min_prompt_tokens": 200000,
            "prompt": "0.0000075"
          }
        ]
      },
      "top_provider": {
        "context_length": 256000,
        "max_completion_tokens": 16384,
        "is_moderated": false
      },
      "per_request_limits": null,
      "supported_parameters": [
        "tools",
        "tool_choice",
        "parallel_tool_calls",
        "max_tokens",
        "temperature",
        "top_p",
        "stop",
        "seed",
        "response_format"
      ],
      "default_parameters": {
        "temperature": 0.7,
        "top_p": 0.9
      },
      "supported_voices": null,
      "knowledge_cutoff": "2024-10-01",
      "expiration_date": null,
      "links": {
        "details": "/v1/models/acme/chat-1"
      }
    },
    {
      "id": "acme/old-1",
      "canonical_slug": "acme/old-1",
      "hugging_face_id": null,
      "name": "Old 1",
      "description": "An expired model, still listed for 30 days after its expiration date.",
      "architecture": {
        "modality": "text->text",
        "input_modalities": [
          "text"
        ],
        "output_modalities": [
          "text"
        ],
        "tokenizer": "acme",
        "instruct_type": null
      },
      "pricing": {
        "prompt": "0.000001",
        "completion": "0.000002"
      },
      "top_provider": {
        "is_moderated": false
      },
      "per_request_limits": null,
      "supported_parameters": [
        "max_tokens",
        "temperature"
      ],
      "default_parameters": {},
      "supported_voices": null,
      "knowledge_cutoff": null,
      "expiration_date": "2024-01-01",
      "links": {
        "details": "/v1/models/acme/old-1"
      }
    },
    {
      "id": "acme/think-1",
      "canonical_slug": "acme/think-1",
      "hugging_face_id": null,
      "name": "Think 1",
      "created": 1748736000,
      "description": "A reasoning model.",
      "context_length": 200000,
      "architecture": {
        "modality": "text+file->text",
        "input_modalities": [
          "text",
          "file"
        ],
        "output_modalities": [
          "text"
        ],
        "tokenizer": "acme",
        "instruct_type": null
      },
      "pricing": {
        "prompt": "0.000003",
        "completion": "0.000015",
        "internal_reasoning": "0.000015",
        "input_cache_read": "0.0000003",
        "input_cache_write": "0.00000375"
      },
      "top_provider": {
        "context_length": 200000,
        "is_moderated": false
      },
      "per_request_limits": null,
      "supported_parameters": [
        "tools",
        "tool_choice",
        "max_tokens",
        "reasoning",
        "include_reasoning"
      ],
      "default_parameters": {},
      "supported_voices": null,
      "knowledge_cutoff": null,
      "expiration_date": null,
      "links": {
        "details": "/v1/models/acme/think-1"
      },
      "reasoning": {
        "mandatory": false,
        "default_enabled": true,
        "supported_efforts": [
          "high",
          "medium",
          "low",
          "none"
        ],
        "supports_max_tokens": true,
        "default_effort": "medium"
      }
    },
    {
      "id": "beta/draw-1",
      "canonical_slug": "beta/draw-1",
      "hugging_face_id": null,
      "name": "Beta: Draw 1",
      "description": "An image generation model.",
      "architecture": {
        "modality": "text+image->image",
        "input_modalities": [
          "text",
          "image"
        ],
        "output_modalities": [
          "image"
        ],
        "tokenizer": "beta",
        "instruct_type": null
      },
      "pricing": {
        "prompt": "0.000005",
        "completion": "0",
        "image_output": "0.00004"
      },
      "top_provider": {
        "is_moderated": false
      },
      "per_request_limits": null,
      "supported_parameters": [],
      "default_parameters": {},
      "supported_voices": null,
      "knowledge_cutoff": null,
      "expiration_date": null,
      "links": {
        "details": "/v1/models/beta/draw-1"
      }
    },
    {
      "id": "beta/embed-1",
      "canonical_slug": "beta/embed-1",
      "hugging_face_id": null,
      "name": "Embed 1",
      "description": "A text embedding model.",
      "context_length": 8192,
      "architecture": {
        "modality": "text->embedding",
        "input_modalities": [
          "text"
        ],
        "output_modalities": [
          "embedding"
        ],
        "tokenizer": "beta",
        "instruct_type": null
      },
      "pricing": {
        "prompt": "0.00000002",
        "completion": "0"
      },
      "top_provider": {
        "context_length": 8192,
        "is_moderated": false
      },
      "per_request_limits": null,
      "supported_parameters": [],
      "default_parameters": {},
      "supported_voices": null,
      "knowledge_cutoff": null,
      "expiration_date": null,
      "links": {
        "details": "/v1/models/beta/embed-1"
      }
    }
  ]
}

`

exports[`test/codegen/codegen.test.ts > TAP > golden: catalog.json and tables.ts of the mini tree > tables.ts 1`] = `
// Generated by scripts/codegen.ts — do not edit.
// The compiled config (src/config/compiled.ts types) of the YAML under config/; \`sourceHash\` identifies that YAML.
import type { CompiledConfig } from '../config/compiled.ts';

export const tables: CompiledConfig = {
  sourceHash: "2c2a4ddd700b9fb2e023517a08288b6380fe0e0232f6531bd8fb11b338503d9d",
  vocabularies: {
    protocols: ["chat_completions", "responses", "messages"],
    endpoints: [
      {
        id: "chat_completions",
        protocol: "chat_completions",
        path: "/v1/chat/completions",
        modes: ["chat"],
      },
      {
        id: "responses",
        protocol: "responses",
        path: "/v1/responses",
        modes: ["chat"],
      },
      {
        id: "messages",
        protocol: "messages",
        path: "/v1/messages",
        modes: ["chat"],
      },
      {
        id: "images_generations",
        protocol: null,
        path: "/v1/images/generations",
        modes: ["image"],
      },
    ],
    modalities: ["text", "image", "file", "audio", "video"],
    modes: [
      {
        id: "chat",
        outputModality: "text",
      },
      {
        id: "embedding",
        outputModality: "embedding",
      },
      {
        id: "image",
        outputModality: "image",
      },
    ],
    parameters: [
      "tools",
      "tool_choice",
      "parallel_tool_calls",
      "max_tokens",
      "temperature",
      "top_p",
      "stop",
      "seed",
      "response_format",
      "reasoning",
      "include_reasoning",
    ],
    samplingParameters: ["temperature", "top_p", "seed", "stop"],
    capabilities: [
      {
        id: "supports_tools",
        parameters: ["tools", "tool_choice"],
        inputModality: null,
        outputModality: null,
        requires: [],
      },
      {
        id: "supports_parallel_tool_calls",
        parameters: ["parallel_tool_calls"],
        inputModality: null,
        outputModality: null,
        requires: ["supports_tools"],
      },
      {
        id: "supports_json_mode",
        parameters: ["response_format"],
        inputModality: null,
        outputModality: null,
        requires: [],
      },
      {
        id: "supports_reasoning",
        parameters: ["reasoning", "include_reasoning"],
        inputModality: null,
        outputModality: null,
        requires: [],
      },
      {
        id: "supports_vision",
        parameters: [],
        inputModality: "image",
        outputModality: null,
        requires: [],
      },
      {
        id: "supports_pdf_input",
        parameters: [],
        inputModality: "file",
        outputModality: null,
        requires: [],
      },
      {
        id: "supports_image_output",
        parameters: [],
        inputModality: null,
        outputModality: "image",
        requires: [],
      },
      {
        id: "supports_prompt_caching",
        parameters: [],
        inputModality: null,
        outputModality: null,
        requires: [],
      },
    ],
    retentionLevels: [
      {
        id: "zero",
        limited: true,
        zero: true,
      },
      {
        id: "short",
        limited: true,
        zero: false,
      },
      {
        id: "unknown",
        limited: false,
        zero: false,
      },
    ],
    moderation: ["platform", "none"],
    quantizations: ["fp4", "int4", "int8", "fp8", "fp16", "bf16", "fp32", "unknown"],
  },
  settings: {
    limits: {
      maxBodyBytes: 4194304,
      maxUploadBytes: 52428800,
      maxBodyBytesInTransit: 268435456,
      maxUpstreamBodyBytes: 67108864,
      maxUpstreamEventBytes: 16777216,
      firstByteTimeoutMs: 90000,
      streamIdleTimeoutMs: 60000,
      preambleMaxBytes: 65536,
      maxAttempts: 3,
      writeStallTimeoutMs: 5000,
      tokenTimeoutMs: 5000,
      drainTimeoutMs: 30000,
    },
    health: {
      consecutiveFailures: 5,
      window: 20,
      minRequests: 10,
      errorRate: 0.25,
      slowFirstByteMs: 30000,
      cooldownMs: 30000,
      maxCooldownMs: 300000,
    },
    sessions: {
      maxPins: 100000,
    },
    requestLog: {
      flushIntervalMs: 200,
      maxBatch: 1000,
    },
  },
  models: [
    {
      id: "acme/chat-1",
      vendor: "acme",
      canonicalSlug: "acme/chat-1-2025-01-15",
      aliases: ["acme/chat", "acme/chat-latest"],
      name: "Acme Labs: Chat 1",
      description: "A general chat model.",
      mode: "chat",
      tokenizer: "acme",
      capabilities: [
        "supports_tools",
        "supports_parallel_tool_calls",
        "supports_json_mode",
        "supports_vision",
        "supports_image_output",
      ],
      inputModalities: ["text", "image"],
      outputModalities: ["text", "image"],
      supportedParameters: [
        "tools",
        "tool_choice",
        "parallel_tool_calls",
        "max_tokens",
        "temperature",
        "top_p",
        "stop",
        "seed",
        "response_format",
      ],
      reasoning: null,
      defaultParameters: {
        temperature: 0.7,
        top_p: 0.9,
      },
      contextLength: 256000,
      maxCompletionTokens: 16384,
      knowledgeCutoff: "2024-10-01",
      releaseDate: "2025-01-15",
      expirationDate: null,
      openness: "proprietary",
      modelPageUrl: "https://acme.example/models/chat-1",
      enabled: true,
      listPricing: {
        base: {
          prompt: 2500000000000n,
          completion: 10000000000000n,
          image: 1000000000000000n,
          input_cache_read: 1250000000000n,
        },
        overrides: [
          {
            minPromptTokens: 128000,
            prices: {
              prompt: 5000000000000n,
              completion: 15000000000000n,
            },
          },
          {
            minPromptTokens: 200000,
            prices: {
              prompt: 7500000000000n,
            },
          },
        ],
      },
    },
    {
      id: "acme/old-1",
      vendor: "acme",
      canonicalSlug: "acme/old-1",
      aliases: [],
      name: "Old 1",
      description: "An expired model, still listed for 30 days after its expiration date.",
      mode: "chat",
      tokenizer: "acme",
      capabilities: [],
      inputModalities: ["text"],
      outputModalities: ["text"],
      supportedParameters: ["max_tokens", "temperature"],
      reasoning: null,
      defaultParameters: {},
      contextLength: null,
      maxCompletionTokens: null,
      knowledgeCutoff: null,
      releaseDate: null,
      expirationDate: "2024-01-01",
      openness: "proprietary",
      modelPageUrl: null,
      enabled: true,
      listPricing: {
        base: {
          prompt: 1000000000000n,
          completion: 2000000000000n,
        },
        overrides: [],
      },
    },
    {
      id: "acme/think-1",
      vendor: "acme",
      canonicalSlug: "acme/think-1",
      aliases: [],
      name: "Think 1",
      description: "A reasoning model.",
      mode: "chat",
      tokenizer: "acme",
      capabilities: ["supports_tools", "supports_reasoning", "supports_pdf_input", "supports_prompt_caching"],
      inputModalities: ["text", "file"],
      outputModalities: ["text"],
      supportedParameters: ["tools", "tool_choice", "max_tokens", "reasoning", "include_reasoning"],
      reasoning: {
        mandatory: false,
        defaultEnabled: true,
        supportedEfforts: ["high", "medium", "low", "none"],
        supportsMaxTokens: true,
        defaultEffort: "medium",
      },
      defaultParameters: {},
      contextLength: 200000,
      maxCompletionTokens: null,
      knowledgeCutoff: null,
      releaseDate: "2025-06-01",
      expirationDate: null,
      openness: "open_weights",
      modelPageUrl: null,
      enabled: true,
      listPricing: {
        base: {
          prompt: 3000000000000n,
          completion: 15000000000000n,
          internal_reasoning: 15000000000000n,
          input_cache_read: 300000000000n,
          input_cache_write: 3750000000000n,
        },
        overrides: [],
      },
    },
    {
      id: "beta/draw-1",
      vendor: "beta",
      canonicalSlug: "beta/draw-1",
      aliases: [],
      name: "Beta: Draw 1",
      description: "An image generation model.",
      mode: "image",
      tokenizer: "beta",
      capabilities: ["supports_vision", "supports_image_output"],
      inputModalities: ["text", "image"],
      outputModalities: ["image"],
      supportedParameters: [],
      reasoning: null,
      defaultParameters: {},
      contextLength: null,
      maxCompletionTokens: null,
      knowledgeCutoff: null,
      releaseDate: null,
      expirationDate: null,
      openness: "proprietary",
      modelPageUrl: null,
      enabled: true,
      listPricing: {
        base: {
          prompt: 5000000000000n,
          completion: 0n,
          image_output: 40000000000000n,
        },
        overrides: [],
      },
    },
    {
      id: "beta/embed-1",
      vendor: "beta",
      canonicalSlug: "beta/embed-1",
      aliases: [],
      name: "Embed 1",
      description: "A text embedding model.",
      mode: "embedding",
      tokenizer: "beta",
      capabilities: [],
      inputModalities: ["text"],
      outputModalities: ["embedding"],
      supportedParameters: [],
      reasoning: null,
      defaultParameters: {},
      contextLength: 8192,
      maxCompletionTokens: null,
      knowledgeCutoff: null,
      releaseDate: null,
      expirationDate: null,
      openness: "open_source",
      modelPageUrl: "https://github.com/beta/embed",
      enabled: true,
      listPricing: {
        base: {
          prompt: 20000000000n,
          completion: 0n,
        },
        overrides: [],
      },
    },
    {
      id: "beta/hidden-1",
      vendor: "beta",
      canonicalSlug: "beta/hidden-1",
      aliases: [],
      name: "Hidden 1",
      description: "A disabled model.",
      mode: "chat",
      tokenizer: "beta",
      capabilities: [],
      inputModalities: ["text"],
      outputModalities: ["text"],
      supportedParameters: [],
      reasoning: null,
      defaultParameters: {},
      contextLength: null,
      maxCompletionTokens: null,
      knowledgeCutoff: null,
      releaseDate: null,
      expirationDate: null,
      openness: "proprietary",
      modelPageUrl: null,
      enabled: false,
      listPricing: {
        base: {
          prompt: 1000000000000n,
          completion: 1000000000000n,
        },
        overrides: [],
      },
    },
  ],
  platforms: [
    {
      id: "alpha",
      name: "Alpha Cloud",
      providerType: "first_party",
      headquarters: "US",
      aliases: ["alpha-cloud"],
      adapter: "openai",
      adapterOptions: {},
      endpoints: ["chat_completions", "responses", "images_generations"],
      protocols: ["chat_completions", "responses"],
      dataPolicy: {
        promptTraining: false,
        dataRetention: "short",
        moderation: "platform",
        reviewed: true,
      },
      retentionLimited: true,
      zdr: false,
      supportsStreamCancellation: true,
      samplingAccept: null,
      reasoningDefaultEffort: null,
      reasoningBudget: null,
      anthropicBeta: null,
    },
    {
      id: "bravo",
      name: "Bravo",
      providerType: "cloud_infra",
      headquarters: null,
      aliases: [],
      adapter: "anthropic",
      adapterOptions: {
        version: "2023-06-01",
      },
      endpoints: ["messages"],
      protocols: ["messages"],
      dataPolicy: {
        promptTraining: null,
        dataRetention: "unknown",
        moderation: "none",
        reviewed: false,
      },
      retentionLimited: false,
      zdr: false,
      supportsStreamCancellation: false,
      samplingAccept: null,
      reasoningDefaultEffort: null,
      reasoningBudget: null,
      anthropicBeta: null,
    },
    {
      id: "charlie",
      name: "Charlie",
      providerType: "reseller",
      headquarters: "DE",
      aliases: [],
      adapter: "openai",
      adapterOptions: {},
      endpoints: ["chat_completions"],
      protocols: ["chat_completions"],
      dataPolicy: {
        promptTraining: false,
        dataRetention: "zero",
        moderation: "none",
        reviewed: true,
      },
      retentionLimited: true,
      zdr: true,
      supportsStreamCancellation: true,
      samplingAccept: ["temperature", "top_p"],
      reasoningDefaultEffort: "medium",
      reasoningBudget: {
        tokens: {
          low: 2000,
          medium: 8000,
          high: 16000,
        },
        minReplyTokens: 256,
      },
      anthropicBeta: null,
    },
  ],
  resources: [
    {
      id: "alpha-eu",
      platform: "alpha",
      region: "eu-west-1",
      baseUrl: "https://eu.api.alpha.example/v1",
      active: false,
      credential: "alpha-eu-key",
    },
    {
      id: "alpha-us",
      platform: "alpha",
      region: "us-east-1",
      baseUrl: "https://api.alpha.example/v1",
      active: true,
      credential: "alpha-us",
    },
    {
      id: "bravo-main",
      platform: "bravo",
      region: null,
      baseUrl: "https://api.bravo.example",
      active: true,
      credential: "bravo-main",
    },
    {
      id: "charlie-1",
      platform: "charlie",
      region: null,
      baseUrl: "http://127.0.0.1:8081/v1",
      active: true,
      credential: "charlie.token",
    },
  ],
  deployments: [
    {
      id: "alpha/chat-1",
      model: "acme/chat-1",
      platform: "alpha",
      resource: "alpha-us",
      upstreamModel: "chat-1-2025-01-15",
      weight: 100,
      active: true,
      status: "up",
      quantization: "unknown",
      contextLength: 256000,
      maxPromptTokens: null,
      maxCompletionTokens: 16384,
      endpoints: ["chat_completions", "responses"],
      protocols: ["chat_completions", "responses"],
      capabilities: [
        "supports_tools",
        "supports_parallel_tool_calls",
        "supports_json_mode",
        "supports_vision",
        "supports_image_output",
      ],
      pricing: {
        kind: "discount",
        percent: 20,
        endsAt: "2030-01-01T00:00:00Z",
      },
    },
    {
      id: "alpha/draw-1",
      model: "beta/draw-1",
      platform: "alpha",
      resource: "alpha-us",
      upstreamModel: "draw-1",
      weight: 100,
      active: true,
      status: "up",
      quantization: null,
      contextLength: null,
      maxPromptTokens: null,
      maxCompletionTokens: null,
      endpoints: ["images_generations"],
      protocols: [],
      capabilities: ["supports_vision", "supports_image_output"],
      pricing: {
        kind: "list",
      },
    },
    {
      id: "alpha/embed-1",
      model: "beta/embed-1",
      platform: "alpha",
      resource: "alpha-us",
      upstreamModel: "embed-1",
      weight: 100,
      active: true,
      status: "up",
      quantization: null,
      contextLength: 8192,
      maxPromptTokens: null,
      maxCompletionTokens: null,
      endpoints: [],
      protocols: [],
      capabilities: [],
      pricing: {
        kind: "list",
      },
    },
    {
      id: "alpha/hidden-1",
      model: "beta/hidden-1",
      platform: "alpha",
      resource: "alpha-us",
      upstreamModel: "hidden-1",
      weight: 100,
      active: true,
      status: "up",
      quantization: null,
      contextLength: null,
      maxPromptTokens: null,
      maxCompletionTokens: null,
      endpoints: ["chat_completions"],
      protocols: ["chat_completions"],
      capabilities: [],
      pricing: {
        kind: "list",
      },
    },
    {
      id: "alpha/old-1",
      model: "acme/old-1",
      platform: "alpha",
      resource: "alpha-us",
      upstreamModel: "old-1",
      weight: 100,
      active: true,
      status: "up",
      quantization: null,
      contextLength: null,
      maxPromptTokens: null,
      maxCompletionTokens: null,
      endpoints: ["chat_completions"],
      protocols: ["chat_completions"],
      capabilities: [],
      pricing: {
        kind: "list",
      },
    },
    {
      id: "alpha/think-1",
      model: "acme/think-1",
      platform: "alpha",
      resource: "alpha-eu",
      upstreamModel: "think-1",
      weight: 80,
      active: true,
      status: "up",
      quantization: null,
      contextLength: 200000,
      maxPromptTokens: null,
      maxCompletionTokens: null,
      endpoints: ["chat_completions"],
      protocols: ["chat_completions"],
      capabilities: ["supports_tools", "supports_reasoning", "supports_pdf_input", "supports_prompt_caching"],
      pricing: {
        kind: "channel",
        prices: {
          base: {
            prompt: 2500000000000n,
            completion: 15000000000000n,
            internal_reasoning: 10000000000000n,
          },
          overrides: [
            {
              minPromptTokens: 100000,
              prices: {
                prompt: 3000000000000n,
              },
            },
          ],
        },
        endsAt: null,
      },
    },
    {
      id: "bravo/chat-1",
      model: "acme/chat-1",
      platform: "bravo",
      resource: "bravo-main",
      upstreamModel: "chat-1",
      weight: 100,
      active: true,
      status: "up",
      quantization: null,
      contextLength: 256000,
      maxPromptTokens: 100000,
      maxCompletionTokens: 16384,
      endpoints: ["messages"],
      protocols: ["messages"],
      capabilities: ["supports_tools", "supports_json_mode", "supports_vision", "supports_image_output"],
      pricing: {
        kind: "list",
      },
    },
    {
      id: "bravo/think-1",
      model: "acme/think-1",
      platform: "bravo",
      resource: "bravo-main",
      upstreamModel: "think-1@20250601",
      weight: 100,
      active: true,
      status: "down",
      quantization: null,
      contextLength: 200000,
      maxPromptTokens: null,
      maxCompletionTokens: null,
      endpoints: ["messages"],
      protocols: ["messages"],
      capabilities: ["supports_tools", "supports_reasoning", "supports_pdf_input", "supports_prompt_caching"],
      pricing: {
        kind: "list",
      },
    },
    {
      id: "charlie/chat-1",
      model: "acme/chat-1",
      platform: "charlie",
      resource: "charlie-1",
      upstreamModel: "acme/chat-1",
      weight: 50,
      active: true,
      status: "up",
      quantization: "fp8",
      contextLength: 128000,
      maxPromptTokens: null,
      maxCompletionTokens: 8192,
      endpoints: ["chat_completions"],
      protocols: ["chat_completions"],
      capabilities: [
        "supports_tools",
        "supports_parallel_tool_calls",
        "supports_json_mode",
        "supports_vision",
        "supports_image_output",
      ],
      pricing: {
        kind: "list",
      },
    },
    {
      id: "charlie/think-1",
      model: "acme/think-1",
      platform: "charlie",
      resource: "charlie-1",
      upstreamModel: "acme/think-1",
      weight: 100,
      active: false,
      status: "up",
      quantization: null,
      contextLength: 200000,
      maxPromptTokens: null,
      maxCompletionTokens: null,
      endpoints: ["chat_completions"],
      protocols: ["chat_completions"],
      capabilities: ["supports_tools", "supports_reasoning", "supports_pdf_input", "supports_prompt_caching"],
      pricing: {
        kind: "list",
      },
    },
  ],
  workspaces: [
    {
      id: "default",
      name: "Default",
      rateLimitRpm: 600,
      lowBalanceNano: null,
      routing: {
        allow: null,
        ignore: [],
        allowFallbacks: true,
        dataCollection: "allow",
        zdr: false,
        quantizations: null,
        order: [],
        sort: null,
      },
    },
    {
      id: "team",
      name: "team",
      rateLimitRpm: 60,
      lowBalanceNano: null,
      routing: {
        allow: ["alpha", "charlie"],
        ignore: ["bravo"],
        allowFallbacks: false,
        dataCollection: "deny",
        zdr: false,
        quantizations: ["fp8", "bf16"],
        order: ["alpha"],
        sort: "price",
      },
    },
  ],
};

`
