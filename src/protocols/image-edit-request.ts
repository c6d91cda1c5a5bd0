// Reading an image-edit request (POST /v1/images/edits): a multipart upload streamed through, read
// here only up to its `model` field (the rest flows to the provider later), and the hold bounds
// judged from what that prefix shows.
import { GatewayError } from '../errors.ts';
import type { IncomingRequest } from '../http/request.ts';
import { boundaryOf, MultipartUpload } from './multipart-upload.ts';
import { DEFAULT_OUTPUT_BOUND, timesBound } from './output-bound.ts';
import { isPositiveInt, positiveIntRequired } from './positive-int.ts';
import type { InboundRequest, ReadLimits } from './types.ts';

/** Input-token bound per uploaded image, and the most images an edit may carry. */
const TOKENS_PER_INPUT_IMAGE = 10_000;
const MAX_EDIT_IMAGES = 16;
/** Prompt bound of an edit whose prompt comes after `model` (not read yet): image APIs cap prompts at 32k characters. */
const MAX_EDIT_PROMPT_TOKENS = 32_000;

export async function readImageEditRequest(req: IncomingRequest, limits: ReadLimits): Promise<InboundRequest> {
  const contentType = req.headers['content-type'];
  const boundary = boundaryOf(contentType);
  if (!boundary || !req.bodyStream || contentType === undefined) throw new GatewayError('invalid_request', 'images/edits needs a multipart/form-data body');
  const upload = new MultipartUpload(req.bodyStream, boundary, limits.maxUploadBytes);
  let found: boolean;
  try {
    found = await upload.readUntilModel();
  } catch (err) {
    if (err instanceof GatewayError) throw err;
    throw new GatewayError('invalid_request', 'the multipart body could not be read before its model field');
  }
  if (!found) throw new GatewayError('invalid_request', 'model is required');
  // Only the bytes up to `model` are read here: a prompt sent after it (the usual field order)
  // is still on its way, so its absence can only be judged when the whole body was read.
  if (upload.ended && !upload.fields.get('prompt')) throw new GatewayError('invalid_request', 'prompt is required');
  const images = upload.fields.has('model') && upload.filesInPrefix > 0 ? upload.filesInPrefix : MAX_EDIT_IMAGES;
  const prompt = upload.fields.get('prompt');
  const n = imageCountField(upload.fields.get('n'));
  return {
    fields: { model: upload.model as string, fallbacks: [], provider: undefined },
    stream: upload.fields.get('stream') === 'true',
    body: {
      kind: 'upload',
      upload: {
        contentType,
        body: (upstreamModel) => upload.body(upstreamModel),
        get replayable() {
          return upload.replayable;
        },
      },
    },
    requestBytes: Number(req.headers['content-length']) || 0,
    promptBound: (prompt !== undefined ? Buffer.byteLength(prompt) : MAX_EDIT_PROMPT_TOKENS) + images * TOKENS_PER_INPUT_IMAGE,
    outputBound: (m, d) => timesBound(n, (d ?? m).maxCompletionTokens ?? DEFAULT_OUTPUT_BOUND),
  };
}

/** The `n` form field read before `model`: absent is one image; anything but a positive integer in
 *  the safe range is refused (it would size the hold), as on the JSON endpoint. */
function imageCountField(raw: string | undefined): number {
  if (raw === undefined) return 1;
  const n = /^\s*[0-9]+\s*$/.test(raw) ? Number(raw) : Number.NaN;
  if (!isPositiveInt(n)) throw positiveIntRequired('n');
  return n;
}
