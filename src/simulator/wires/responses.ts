// OpenAI Responses: the indented response object (request parameters echoed as OpenAI does), and
// the named-event stream with sequence numbers: created, in_progress, output_item.added,
// content_part.added, output_text.delta…, output_text.done, content_part.done, output_item.done,
// completed (or incomplete when max_output_tokens cut the reply).
import { obfuscationPool, outputMessageId, responseId } from '../ids.ts';
import { RawJson, compileTemplate, pyFloat, slot } from '../json-template.ts';
import { customErrorBody, openaiErrorDetails } from '../wire-errors.ts';
import {
  type Body,
  type ReplyContext,
  type StreamEvents,
  type Wire,
  intField,
  missingParameter,
  objectField,
} from '../wire.ts';

const OBFUSCATION = obfuscationPool();

const ECHOED = [
  'instructions',
  'max_output_tokens',
  'max_tool_calls',
  'parallel_tool_calls',
  'previous_response_id',
  'prompt_cache_key',
  'reasoning',
  'safety_identifier',
  'service_tier',
  'store',
  'temperature',
  'text',
  'tool_choice',
  'tools',
  'top_logprobs',
  'top_p',
  'truncation',
] as const;

function shape(withModel: boolean): unknown {
  const s: Record<string, unknown> = {
    id: slot('id'),
    object: 'response',
    created_at: slot('created_at'),
    status: slot('status'),
    background: false,
    error: slot('error'),
    incomplete_details: slot('incomplete_details'),
  };
  for (const k of ECHOED.slice(0, 3)) s[k] = slot(k);
  if (withModel) s['model'] = slot('model');
  s['output'] = slot('output');
  for (const k of ECHOED.slice(3)) s[k] = slot(k);
  s['usage'] = slot('usage');
  s['user'] = slot('user');
  s['metadata'] = slot('metadata');
  return s;
}

const PRETTY = [compileTemplate(shape(false), 2), compileTemplate(shape(true), 2)] as const;
const COMPACT = [compileTemplate(shape(false), 0), compileTemplate(shape(true), 0)] as const;

const num = (v: unknown, dflt: number): unknown =>
  v === undefined || v === null ? pyFloat(dflt) : typeof v === 'number' ? pyFloat(v) : v;

/** The request parameters a response object repeats, with OpenAI's defaults. */
function echoed(body: Body): Record<string, unknown> {
  const reasoning = objectField(body, 'reasoning');
  const text = objectField(body, 'text');
  const tier = body['service_tier'];
  return {
    instructions: body['instructions'] ?? null,
    max_output_tokens: body['max_output_tokens'] ?? null,
    max_tool_calls: body['max_tool_calls'] ?? null,
    parallel_tool_calls: body['parallel_tool_calls'] ?? true,
    previous_response_id: body['previous_response_id'] ?? null,
    prompt_cache_key: body['prompt_cache_key'] ?? null,
    reasoning: { effort: reasoning?.['effort'] ?? null, summary: reasoning?.['summary'] ?? null },
    safety_identifier: body['safety_identifier'] ?? null,
    service_tier: tier === undefined || tier === null || tier === 'auto' ? 'default' : tier,
    store: body['store'] ?? true,
    temperature: num(body['temperature'], 1),
    text: { format: text?.['format'] ?? { type: 'text' }, verbosity: text?.['verbosity'] ?? 'medium' },
    tool_choice: body['tool_choice'] ?? 'auto',
    tools: body['tools'] ?? [],
    top_logprobs: body['top_logprobs'] ?? 0,
    top_p: num(body['top_p'], 1),
    truncation: body['truncation'] ?? 'disabled',
    user: body['user'] ?? null,
    metadata: body['metadata'] ?? {},
  };
}

/** Object values serialized once, so the three snapshots of a stream do not re-stringify them. */
function frozenCompact(values: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(values))
    out[k] = typeof v === 'object' && v !== null && !(v instanceof RawJson) ? new RawJson(JSON.stringify(v)) : v;
  return out;
}

function usageValue(ctx: ReplyContext): Record<string, unknown> {
  const u = ctx.usage;
  return {
    input_tokens: u.prompt,
    input_tokens_details: { cached_tokens: u.cached },
    output_tokens: u.completion,
    output_tokens_details: { reasoning_tokens: u.reasoning },
    total_tokens: u.prompt + u.completion,
  };
}

function outputItem(id: string, status: string, text: string): Record<string, unknown> {
  return {
    id,
    type: 'message',
    status,
    content: [{ type: 'output_text', annotations: [], logprobs: [], text }],
    role: 'assistant',
  };
}

const INCOMPLETE = { reason: 'max_output_tokens' };

function frame(name: string, data: string): string {
  return `event: ${name}\ndata: ${data}\n\n`;
}

export const responses: Wire = {
  family: 'openai',

  validate(body, route) {
    if (route.urlModel === undefined && typeof body['model'] !== 'string') return missingParameter('model');
    return null;
  },

  isStream(body) {
    return body['stream'] === true;
  },

  maxTokens(body) {
    return intField(body, 'max_output_tokens');
  },

  json(ctx) {
    const done = ctx.text.truncated ? 'incomplete' : 'completed';
    return PRETTY[ctx.reportModel === null ? 0 : 1].render({
      ...echoed(ctx.body),
      id: responseId(),
      created_at: ctx.created,
      status: done,
      error: null,
      incomplete_details: ctx.text.truncated ? INCOMPLETE : null,
      model: ctx.reportModel,
      output: [outputItem(outputMessageId(), done, ctx.text.full)],
      usage: usageValue(ctx),
    });
  },

  events(ctx): StreamEvents {
    const tpl = COMPACT[ctx.reportModel === null ? 0 : 1];
    const base = frozenCompact({
      ...echoed(ctx.body),
      id: responseId(),
      created_at: ctx.created,
      model: ctx.reportModel,
    });
    const obfuscate = objectField(ctx.body, 'stream_options')?.['include_obfuscation'] !== false;
    const itemId = outputMessageId();
    const snapshot = tpl.render({
      ...base,
      status: 'in_progress',
      error: null,
      incomplete_details: null,
      output: new RawJson('[]'),
      usage: null,
    });
    let seq = 0;
    const loc = `"item_id":"${itemId}","output_index":0,"content_index":0`;
    const preamble = [
      frame('response.created', `{"type":"response.created","sequence_number":${seq++},"response":${snapshot}}`),
      frame(
        'response.in_progress',
        `{"type":"response.in_progress","sequence_number":${seq++},"response":${snapshot}}`,
      ),
      frame(
        'response.output_item.added',
        `{"type":"response.output_item.added","sequence_number":${seq++},"output_index":0,"item":{"id":"${itemId}","type":"message","status":"in_progress","content":[],"role":"assistant"}}`,
      ),
      frame(
        'response.content_part.added',
        `{"type":"response.content_part.added","sequence_number":${seq++},${loc},"part":{"type":"output_text","annotations":[],"logprobs":[],"text":""}}`,
      ),
    ];
    const content = ctx.text.pieces.map((p, i) => {
      const obf = obfuscate ? `,"obfuscation":"${OBFUSCATION[i % OBFUSCATION.length]}"` : '';
      return frame(
        'response.output_text.delta',
        `{"type":"response.output_text.delta","sequence_number":${seq++},${loc},"delta":${JSON.stringify(p)},"logprobs":[]${obf}}`,
      );
    });
    const full = JSON.stringify(ctx.text.full);
    const done = ctx.text.truncated ? 'incomplete' : 'completed';
    const item = JSON.stringify(outputItem(itemId, done, ctx.text.full));
    const final = tpl.render({
      ...base,
      status: done,
      error: null,
      incomplete_details: ctx.text.truncated ? INCOMPLETE : null,
      output: new RawJson(`[${item}]`),
      usage: ctx.behaviour.noUsageInStream ? null : usageValue(ctx),
    });
    const tail = [
      frame(
        'response.output_text.done',
        `{"type":"response.output_text.done","sequence_number":${seq++},${loc},"text":${full},"logprobs":[]}`,
      ),
      frame(
        'response.content_part.done',
        `{"type":"response.content_part.done","sequence_number":${seq++},${loc},"part":{"type":"output_text","annotations":[],"logprobs":[],"text":${full}}}`,
      ),
      frame(
        'response.output_item.done',
        `{"type":"response.output_item.done","sequence_number":${seq++},"output_index":0,"item":${item}}`,
      ),
      frame(`response.${done}`, `{"type":"response.${done}","sequence_number":${seq++},"response":${final}}`),
    ];
    return { preamble, content, tail };
  },

  inbandError(ctx) {
    const d = openaiErrorDetails(500, ctx.model);
    const code = typeof d.code === 'string' ? d.code : 'server_error';
    const first =
      ctx.behaviour.errorBody !== undefined
        ? customErrorBody(ctx.behaviour.errorBody)
        : JSON.stringify({ type: 'error', sequence_number: 0, code, message: d.message, param: null });
    const failed = COMPACT[ctx.reportModel === null ? 0 : 1].render({
      ...echoed(ctx.body),
      id: responseId(),
      created_at: ctx.created,
      status: 'failed',
      error: { code, message: d.message },
      incomplete_details: null,
      model: ctx.reportModel,
      output: new RawJson('[]'),
      usage: null,
    });
    return [
      frame('error', first),
      frame('response.failed', `{"type":"response.failed","sequence_number":1,"response":${failed}}`),
    ];
  },

  malformed() {
    return 'event: response.output_text.delta\ndata: {"type":"response.output_text.delta","sequence_number":\n\n';
  },
};
