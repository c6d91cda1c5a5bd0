// OpenAI Images (generations and multipart edits): `{created, data:[{b64_json}], usage}` with `n`
// copies of a tiny valid PNG. Never streamed.
import { RawJson, compileTemplate, slot } from '../json-template.ts';
import { TINY_PNG_BASE64 } from '../tiny-png.ts';
import { type StreamEvents, type Wire, intField, missingParameter } from '../wire.ts';

const BODY = compileTemplate(
  {
    created: slot('created'),
    data: slot('data'),
    usage: {
      input_tokens: slot('input'),
      output_tokens: slot('output'),
      total_tokens: slot('total'),
      input_tokens_details: { text_tokens: slot('text'), image_tokens: slot('image') },
    },
  },
  2,
);

/** Output tokens of one 1024×1024 low-quality image, the usual default. */
const TOKENS_PER_IMAGE = 272;
/** Input tokens charged per input image on edits. */
const TOKENS_PER_INPUT_IMAGE = 194;
const DATA_INDENT = '  ';

const dataCache = new Map<number, RawJson>();
function data(n: number): RawJson {
  let d = dataCache.get(n);
  if (!d) {
    d = new RawJson(
      JSON.stringify(
        Array.from({ length: n }, () => ({ b64_json: TINY_PNG_BASE64 })),
        null,
        2,
      ).replaceAll('\n', '\n' + DATA_INDENT),
    );
    dataCache.set(n, d);
  }
  return d;
}

const NO_EVENTS: StreamEvents = { preamble: [], content: [], tail: [] };

export const images: Wire = {
  family: 'openai',

  validate(body) {
    return typeof body['prompt'] === 'string' ? null : missingParameter('prompt');
  },

  isStream() {
    return false;
  },

  maxTokens() {
    return undefined;
  },

  json(ctx) {
    const n = Math.min(10, Math.max(1, intField(ctx.body, 'n') ?? 1));
    const u = ctx.behaviour.usage;
    const text = u?.prompt ?? ctx.usage.prompt;
    const image = ctx.files * TOKENS_PER_INPUT_IMAGE;
    const output = u?.completion ?? TOKENS_PER_IMAGE * n;
    return BODY.render({
      created: ctx.created,
      data: data(n),
      input: text + image,
      output,
      total: text + image + output,
      text,
      image,
    });
  },

  events() {
    return NO_EVENTS;
  },

  inbandError() {
    return [];
  },

  malformed() {
    return '';
  },
};
