/* IMPORTANT
 * This snapshot file is auto-generated, but designed for humans.
 * It should be checked into source control and tracked carefully.
 * Re-generate by setting TAP_SNAPSHOT=1 and running tests.
 * Make sure to inspect the output below.  Do not ignore changes!
 */
'use strict'
exports[`test/spec/catalog/golden.test.ts > TAP > golden GET /v1/models and one endpoints view > GET /v1/models 1`] = `
{
  "data": [
    {
      "id": "acme/bracketed",
      "canonical_slug": "acme/bracketed",
      "hugging_face_id": null,
      "name": "Bracketed",
      "description": "A model priced by context bracket.",
      "context_length": 100000,
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
        "completion": "0.000004",
        "input_cache_read": "0.0000001",
        "overrides": [
          {
            "min_prompt_tokens": 1000,
            "prompt": "0.000002",
            "completion": "0.000008"
          }
        ]
      },
      "top_provider": {
        "context_length": 100000,
        "max_completion_tokens": 1000,
        "is_moderated": false
      },
      "per_request_limits": null,
      "supported_parameters": [
        "max_tokens"
      ],
      "default_parameters": {},
      "supported_voices": null,
      "knowledge_cutoff": null,
      "expiration_date": null,
      "links": {
        "details": "/v1/models/acme/bracketed"
      }
    },
    {
      "id": "acme/chat-big",
      "canonical_slug": "acme/chat-big",
      "hugging_face_id": null,
      "name": "Chat Big",
      "created": 1756684800,
      "description": "A larger, pricier chat model for fallback tests.",
      "context_length": 128000,
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
        "prompt": "0.00001",
        "completion": "0.00003"
      },
      "top_provider": {
        "context_length": 128000,
        "max_completion_tokens": 8192,
        "is_moderated": false
      },
      "per_request_limits": null,
      "supported_parameters": [
        "tools",
        "tool_choice",
        "max_tokens",
        "temperature",
        "top_p",
        "stop"
      ],
      "default_parameters": {},
      "supported_voices": null,
      "knowledge_cutoff": null,
      "expiration_date": null,
      "links": {
        "details": "/v1/models/acme/chat-big"
      }
    },
    {
      "id": "acme/chat-small",
      "canonical_slug": "acme/chat-small-2025-06-01",
      "hugging_face_id": null,
      "name": "Acme: Chat Small",
      "created": 1748736000,
      "description": "A small chat model for tests.",
      "context_length": 32000,
      "architecture": {
        "modality": "text+image->text",
        "input_modalities": [
          "text",
          "image"
        ],
        "output_modalities": [
          "text"
        ],
        "tokenizer": "acme",
        "instruct_type": null
      },
      "pricing": {
        "prompt": "0.000001",
        "completion": "0.000002",
        "input_cache_read": "0.0000005"
      },
      "top_provider": {
        "context_length": 32000,
        "max_completion_tokens": 4096,
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
        "frequency_penalty",
        "presence_penalty",
        "stop",
        "seed",
        "response_format"
      ],
      "default_parameters": {
        "temperature": 0.7
      },
      "supported_voices": null,
      "knowledge_cutoff": "2025-01-01",
      "expiration_date": null,
      "links": {
        "details": "/v1/models/acme/chat-small"
      }
    },
    {
      "id": "acme/embedder",
      "canonical_slug": "acme/embedder",
      "hugging_face_id": null,
      "name": "Embedder",
      "description": "An embedding model listed in the catalog only.",
      "context_length": 8192,
      "architecture": {
        "modality": "text->embedding",
        "input_modalities": [
          "text"
        ],
        "output_modalities": [
          "embedding"
        ],
        "tokenizer": "acme",
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
        "details": "/v1/models/acme/embedder"
      }
    },
    {
      "id": "acme/painter",
      "canonical_slug": "acme/painter",
      "hugging_face_id": null,
      "name": "Painter",
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
        "tokenizer": "acme",
        "instruct_type": null
      },
      "pricing": {
        "prompt": "0.000005",
        "completion": "0",
        "image_output": "0.00004",
        "image_token": "0.00001"
      },
      "top_provider": {
        "max_completion_tokens": 5000,
        "is_moderated": false
      },
      "per_request_limits": null,
      "supported_parameters": [],
      "default_parameters": {},
      "supported_voices": null,
      "knowledge_cutoff": null,
      "expiration_date": null,
      "links": {
        "details": "/v1/models/acme/painter"
      }
    },
    {
      "id": "acme/reasoner",
      "canonical_slug": "acme/reasoner",
      "hugging_face_id": null,
      "name": "Reasoner",
      "description": "A reasoning model.",
      "context_length": 64000,
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
        "prompt": "0.000002",
        "completion": "0.000008",
        "internal_reasoning": "0.000008"
      },
      "top_provider": {
        "context_length": 64000,
        "max_completion_tokens": 16000,
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
        "details": "/v1/models/acme/reasoner"
      },
      "reasoning": {
        "mandatory": false,
        "default_enabled": true,
        "supported_efforts": [
          "high",
          "medium",
          "low",
          "minimal",
          "none"
        ],
        "supports_max_tokens": true,
        "default_effort": "medium"
      }
    },
    {
      "id": "acme/retired",
      "canonical_slug": "acme/retired",
      "hugging_face_id": null,
      "name": "Retired",
      "description": "A model whose expiration date has passed.",
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
        "completion": "0.000001"
      },
      "top_provider": {
        "is_moderated": false
      },
      "per_request_limits": null,
      "supported_parameters": [
        "max_tokens"
      ],
      "default_parameters": {},
      "supported_voices": null,
      "knowledge_cutoff": null,
      "expiration_date": "2026-01-10",
      "links": {
        "details": "/v1/models/acme/retired"
      }
    },
    {
      "id": "beta-labs/sonnet-ish",
      "canonical_slug": "beta-labs/sonnet-ish",
      "hugging_face_id": null,
      "name": "Beta Labs: Sonnet-ish",
      "description": "A Messages-protocol model.",
      "context_length": 200000,
      "architecture": {
        "modality": "text->text",
        "input_modalities": [
          "text"
        ],
        "output_modalities": [
          "text"
        ],
        "tokenizer": "betalabs",
        "instruct_type": null
      },
      "pricing": {
        "prompt": "0.000003",
        "completion": "0.000015",
        "input_cache_read": "0.0000003",
        "input_cache_write": "0.00000375",
        "input_cache_write_1h": "0.000006"
      },
      "top_provider": {
        "context_length": 200000,
        "max_completion_tokens": 8000,
        "is_moderated": false
      },
      "per_request_limits": null,
      "supported_parameters": [
        "tools",
        "tool_choice",
        "max_tokens",
        "temperature"
      ],
      "default_parameters": {},
      "supported_voices": null,
      "knowledge_cutoff": null,
      "expiration_date": null,
      "links": {
        "details": "/v1/models/beta-labs/sonnet-ish"
      }
    }
  ]
}
`

exports[`test/spec/catalog/golden.test.ts > TAP > golden GET /v1/models and one endpoints view > GET /v1/models/acme/chat-small/endpoints 1`] = `
{
  "data": {
    "id": "acme/chat-small",
    "aliases": [
      "acme/small"
    ],
    "openness": "proprietary",
    "model_page_url": "https://acme.example/models/chat-small",
    "capabilities": [
      "supports_tools",
      "supports_parallel_tool_calls",
      "supports_json_mode",
      "supports_vision",
      "supports_prompt_caching"
    ],
    "protocols": [
      "chat_completions",
      "responses"
    ],
    "supported_endpoints": [
      "chat_completions",
      "responses"
    ],
    "endpoints": [
      {
        "provider": "alpha",
        "provider_type": "first_party",
        "headquarters": "US",
        "protocols": [
          "chat_completions",
          "responses"
        ],
        "supported_endpoints": [
          "chat_completions",
          "responses"
        ],
        "context_length": 32000,
        "max_prompt_tokens": null,
        "max_completion_tokens": 4096,
        "quantization": "bf16",
        "supports_stream_cancellation": true,
        "capabilities": [
          "supports_tools",
          "supports_parallel_tool_calls",
          "supports_json_mode",
          "supports_vision",
          "supports_prompt_caching"
        ],
        "pricing": {
          "prompt": "0.000001",
          "completion": "0.000002",
          "input_cache_read": "0.0000005"
        },
        "list_pricing": {
          "prompt": "0.000001",
          "completion": "0.000002",
          "input_cache_read": "0.0000005"
        },
        "discount": null,
        "data_policy": {
          "prompt_training": false,
          "data_retention": "zero",
          "moderation": "platform",
          "reviewed": true
        }
      },
      {
        "provider": "beta",
        "provider_type": "reseller",
        "headquarters": "DE",
        "protocols": [
          "chat_completions",
          "responses"
        ],
        "supported_endpoints": [
          "chat_completions",
          "responses"
        ],
        "context_length": 32000,
        "max_prompt_tokens": null,
        "max_completion_tokens": 4096,
        "quantization": "fp8",
        "supports_stream_cancellation": false,
        "capabilities": [
          "supports_tools",
          "supports_parallel_tool_calls",
          "supports_json_mode",
          "supports_vision",
          "supports_prompt_caching"
        ],
        "pricing": {
          "prompt": "0.00000075",
          "completion": "0.0000015",
          "input_cache_read": "0.000000375"
        },
        "list_pricing": {
          "prompt": "0.000001",
          "completion": "0.000002",
          "input_cache_read": "0.0000005"
        },
        "discount": {
          "percent_off": 25,
          "ends_at": "2026-02-01T00:00:00Z"
        },
        "data_policy": {
          "prompt_training": null,
          "data_retention": "unknown",
          "moderation": "none",
          "reviewed": false
        }
      },
      {
        "provider": "gamma",
        "provider_type": "cloud_infra",
        "headquarters": "US",
        "protocols": [
          "chat_completions"
        ],
        "supported_endpoints": [
          "chat_completions"
        ],
        "context_length": 32000,
        "max_prompt_tokens": null,
        "max_completion_tokens": 4096,
        "quantization": "fp4",
        "supports_stream_cancellation": true,
        "capabilities": [
          "supports_tools",
          "supports_parallel_tool_calls",
          "supports_json_mode",
          "supports_prompt_caching"
        ],
        "pricing": {
          "prompt": "0.0000005",
          "completion": "0.000001",
          "input_cache_read": "0.00000025"
        },
        "list_pricing": {
          "prompt": "0.000001",
          "completion": "0.000002",
          "input_cache_read": "0.0000005"
        },
        "discount": {
          "percent_off": 50,
          "ends_at": null
        },
        "data_policy": {
          "prompt_training": false,
          "data_retention": "short",
          "moderation": "customer",
          "reviewed": true
        }
      },
      {
        "provider": "zeta",
        "provider_type": "cloud_infra",
        "headquarters": "SE",
        "protocols": [
          "chat_completions"
        ],
        "supported_endpoints": [
          "chat_completions"
        ],
        "context_length": 32000,
        "max_prompt_tokens": null,
        "max_completion_tokens": 4096,
        "quantization": null,
        "supports_stream_cancellation": true,
        "capabilities": [
          "supports_tools",
          "supports_parallel_tool_calls",
          "supports_json_mode",
          "supports_vision",
          "supports_prompt_caching"
        ],
        "pricing": {
          "prompt": "0.000001",
          "completion": "0.000002",
          "input_cache_read": "0.0000005"
        },
        "list_pricing": {
          "prompt": "0.000001",
          "completion": "0.000002",
          "input_cache_read": "0.0000005"
        },
        "discount": null,
        "data_policy": {
          "prompt_training": false,
          "data_retention": "short",
          "moderation": "platform",
          "reviewed": true
        }
      }
    ]
  }
}
`
