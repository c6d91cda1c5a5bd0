// Reading an image-edit request (POST /v1/images/edits): a multipart upload streamed through. The
// held prefix (./multipart-upload.ts: up to `model` and the text fields right after it) decides the
// route and the hold; the fields the gateway reads — `model`, `n`, `prompt`, and the count of file
// parts — are checked wherever they are in the form. One in the prefix is judged before anything is
// sent. One after it (it followed a file, which is streamed, not held) was not known when the hold
// was taken: the hold assumed the most the rules allow for it, and the field is checked against that
// as it streams past — a field that breaks a rule fails the request before the provider has the
// whole form (see multipart-upload.ts), with the same error it would get in the prefix.
import { GatewayError, validationFailed } from '../errors.ts';
import type { IncomingRequest } from '../http/request.ts';
import type { FormListener, FormPart } from './form-parts.ts';
import { boundaryOf, MultipartUpload } from './multipart-upload.ts';
import { DEFAULT_OUTPUT_BOUND, timesBound } from './output-bound.ts';
import { isPositiveInt, positiveIntRequired } from './positive-int.ts';
import type { InboundRequest, ReadLimits } from './types.ts';

/** Input-token bound per uploaded file (an image or the mask). */
const TOKENS_PER_INPUT_IMAGE = 10_000;
/** Most file parts an edit may carry: 16 images and a mask (what OpenAI's image edits accept). */
export const MAX_EDIT_FILES = 17;
/** Prompt bound of an edit whose prompt was not read before the hold: image APIs cap prompts at 32k
 *  characters; a later prompt may have at most this many bytes (the hold counts a byte as a token). */
export const MAX_EDIT_PROMPT_BYTES = 32_000;
/** Images an edit whose `n` was not read before the hold is held for: the most OpenAI's edits make. */
export const MAX_EDIT_N = 10;

/** Fields the gateway reads: sent twice they would leave the provider to pick one, and as a file they
 *  would not be read at all. */
const READ_FIELDS = new Set(['model', 'n', 'prompt']);

/** What the form has shown so far, checked part by part; after the hold, checked against what it assumed. */
class EditForm implements FormListener {
  readonly seen = new Set<string>();
  n: number | null = null;
  prompt: string | null = null;
  promptBytes = 0;
  files = 0;
  /** The `stream` text field, as sent. */
  stream: string | null = null;
  /** Set once the hold is sized: later fields must fit what it assumed. */
  held = false;

  partStart(name: string, filename: string | null): void {
    if (filename !== null && READ_FIELDS.has(name))
      throw new GatewayError('invalid_request', `${name} must be a text field, not a file`);
    if (filename !== null && ++this.files > MAX_EDIT_FILES) {
      throw validationFailed(`an image edit carries at most ${MAX_EDIT_FILES} files (16 images and a mask)`);
    }
  }

  part(part: FormPart): void {
    if (part.filename === null && part.name === 'stream') this.stream = part.value;
    if (part.filename !== null || !READ_FIELDS.has(part.name)) return;
    if (this.seen.has(part.name)) throw new GatewayError('invalid_request', `${part.name} is sent twice; send it once`);
    this.seen.add(part.name);
    if (part.name === 'model') {
      if (part.value === null || part.value === '') throw validationFailed('model must be a non-empty string');
    } else if (part.name === 'n') {
      const n = imageCount(part.value);
      if (this.held && n > MAX_EDIT_N)
        throw validationFailed(
          `n must be at most ${MAX_EDIT_N} when it comes after a file part (the hold was taken before it arrived); send n before the files`,
        );
      this.n = n;
    } else {
      if (part.size === 0) throw new GatewayError('invalid_request', 'prompt is required');
      if (this.held && part.size > MAX_EDIT_PROMPT_BYTES) {
        throw validationFailed(
          `prompt must be at most ${MAX_EDIT_PROMPT_BYTES} bytes when it comes after a file part (the hold was taken before it arrived); send prompt before the files`,
        );
      }
      this.prompt = part.value;
      this.promptBytes = part.size;
    }
  }

  end(): void {
    if (!this.seen.has('prompt')) throw new GatewayError('invalid_request', 'prompt is required');
  }
}

export async function readImageEditRequest(req: IncomingRequest, limits: ReadLimits): Promise<InboundRequest> {
  const contentType = req.headers['content-type'];
  const boundary = boundaryOf(contentType);
  if (!boundary || !req.bodyStream || contentType === undefined)
    throw new GatewayError('invalid_request', 'images/edits needs a multipart/form-data body');
  const form = new EditForm();
  const upload = new MultipartUpload(req.bodyStream, boundary, limits.maxUploadBytes, form);
  let found: boolean;
  try {
    found = await upload.readPrefix();
  } catch (err) {
    if (err instanceof GatewayError) throw err;
    throw new GatewayError('invalid_request', 'the multipart body could not be read before its model field');
  }
  if (!found || upload.model === null) throw new GatewayError('invalid_request', 'model is required');
  // The hold covers what the prefix shows, and the most the rules allow for what it does not.
  const complete = upload.formComplete;
  const files = complete ? form.files : MAX_EDIT_FILES;
  const promptBytes = form.seen.has('prompt') ? form.promptBytes : MAX_EDIT_PROMPT_BYTES;
  const n = form.n ?? (complete ? 1 : MAX_EDIT_N);
  form.held = true;
  return {
    fields: { model: upload.model, fallbacks: [], provider: undefined },
    // A `stream` field after the prefix is forwarded but not seen here: the answer's content type
    // decides how it is relayed either way.
    stream: form.stream === 'true',
    body: {
      kind: 'upload',
      upload: {
        contentType,
        body: (upstreamModel) => upload.body(upstreamModel),
        get replayable() {
          return upload.replayable;
        },
        get refusal() {
          return upload.refusal;
        },
      },
    },
    requestBytes: Number(req.headers['content-length']) || 0,
    promptBound: promptBytes + files * TOKENS_PER_INPUT_IMAGE,
    outputBound: (m, d) => timesBound(n, (d ?? m).maxCompletionTokens ?? DEFAULT_OUTPUT_BOUND),
  };
}

/** The `n` form field: a positive integer in the safe range, as on the JSON endpoint (it sizes the hold). */
function imageCount(raw: string | null): number {
  const n = raw !== null && /^\s*[0-9]+\s*$/.test(raw) ? Number(raw) : Number.NaN;
  if (!isPositiveInt(n)) throw positiveIntRequired('n');
  return n;
}
