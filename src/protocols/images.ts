// Images (POST /v1/images/generations, /v1/images/edits). Answers are JSON with base64 images (often
// megabytes) or SSE with partial images, so nothing here parses a whole body: a JSON answer is checked
// whole by one scan (./json-complete.ts), `usage` and `error` are found by key scan. Image answers carry no `model`, so
// there is nothing to rewrite in them.
import { usageFromImages, type Usage } from '../billing/usage.ts';
import { validationFailed } from '../errors.ts';
import { isCompleteJson } from '../stream/json-complete.ts';
import { findValueBytes, hasNonNullKey } from '../stream/json-key.ts';
import { dataLooksWhole, parseSseEvent, sseEventName } from '../stream/sse-splitter.ts';
import { readImageEditRequest } from './image-edit-request.ts';
import { slugModel } from './model-field.ts';
import { readJsonRequest } from './json-request.ts';
import { imageCount, modelOutputBound, timesBound } from './output-bound.ts';
import { checkPositiveInt } from './positive-int.ts';
import { missingField } from './routing-fields.ts';
import {
  isObject,
  jsonObjectOf,
  type JsonAnswer,
  type ProtocolModule,
  type StreamTap,
  type TappedEvent,
} from './types.ts';

class ImagesTap implements StreamTap {
  upstreamModel: string | null = null;
  completed = false;
  contentEvents = 0;
  contentBytes = 0;
  private lastUsage: Usage | null = null;

  usage(): Usage | null {
    return this.lastUsage;
  }

  /** This wire reports usage only at the end of a stream. */
  inputUsage(): null {
    return null;
  }

  onEvent(ev: Buffer): TappedEvent {
    const name = sseEventName(ev);
    if (name === 'error' || (name === null && hasNonNullKey(ev, 'error', 1))) return { kind: 'error', out: ev };
    if (name !== null && !name.endsWith('.completed')) {
      if (!dataLooksWhole(ev)) return { kind: 'malformed', out: ev };
      this.contentEvents++;
      this.contentBytes += ev.length;
      return { kind: 'content', out: ev };
    }
    const { data } = parseSseEvent(ev);
    if (data === null) return { kind: 'preamble', out: ev };
    const obj = jsonObjectOf(data);
    if (obj === null) return { kind: 'malformed', out: ev };
    const type = typeof obj['type'] === 'string' ? obj['type'] : (name ?? '');
    if (type === 'error') return { kind: 'error', out: ev };
    const wasCommitted = this.contentEvents > 0;
    this.contentEvents++;
    this.contentBytes += ev.length;
    if (!type.endsWith('.completed')) return { kind: 'content', out: ev };
    // image_generation.completed / image_edit.completed: the final image, with the usage of the
    // whole request, ends the stream. Once output went out it is the end marker (sent after the
    // settlement); as the first event it is the output itself, and the stream is complete with it.
    this.completed = true;
    if (obj['usage'] !== undefined && obj['usage'] !== null) this.lastUsage = usageFromImages(obj['usage']);
    return { kind: wasCommitted ? 'terminal' : 'content', out: ev, usage: isObject(obj['usage']) };
  }
}

export const images: ProtocolModule = {
  endpoints: ['images_generations', 'images_edits'],
  // Edits upload images: streamed through (multipart), never buffered whole.
  bodyDelivery: (endpoint) => (endpoint === 'images_edits' ? 'stream' : 'buffer'),
  read: (req, endpoint, limits) =>
    endpoint === 'images_edits' ? readImageEditRequest(req, limits) : readJsonRequest(req, endpoint, images),
  validate(body) {
    const prompt = body['prompt'];
    if (prompt === undefined || prompt === null) throw missingField('prompt');
    if (typeof prompt !== 'string') throw validationFailed('prompt must be a string');
    checkPositiveInt(body, 'n');
    if (body['stream'] !== undefined && body['stream'] !== null && typeof body['stream'] !== 'boolean')
      throw validationFailed('stream must be a boolean');
  },
  wantsStream: (body) => body['stream'] === true,
  // Image requests set no output limit: each of the `n` images may take the model's whole bound.
  outputBound: (body, _endpoint, limits) => timesBound(imageCount(body['n']), modelOutputBound(limits)),
  prepare: (original, target) => ({ ...original, model: target.deployment.upstreamModel }),
  tap: () => new ImagesTap(),
  readJson(body, slugJson): JsonAnswer | null {
    const first = body.subarray(0, 1).toString('latin1');
    // One complete JSON object (an answer cut short is no answer), checked by one scan that decodes
    // nothing: image answers run to megabytes of base64.
    if (
      first !== '{' ||
      !isCompleteJson(body) ||
      hasNonNullKey(body, 'error', 1) ||
      findValueBytes(body, 'data', 1) === null
    )
      return null;
    const usageBytes = findValueBytes(body, 'usage', 1);
    let usage: Usage | null = null;
    if (usageBytes) {
      try {
        usage = usageFromImages(JSON.parse(usageBytes.toString('utf8')));
      } catch {
        return null;
      }
    }
    // Image answers carry no `model` of their own; one a provider sends anyway names the slug.
    const { out, reported } = slugModel(body, slugJson, 0, 1, undefined, false);
    return { body: out, upstreamModel: reported, usage };
  },
  streamErrorEvent(message, code) {
    return Buffer.from(
      `event: error\ndata: ${JSON.stringify({ type: 'error', error: { message, type: 'upstream_error', code } })}\n\n`,
    );
  },
};
