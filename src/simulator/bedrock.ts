// Amazon Bedrock's runtime as the simulator plays it: InvokeModel and InvokeModelWithResponseStream
// for Anthropic models (`/model/{id}/invoke[-with-response-stream]`). Requests authenticate with a
// SigV4 signature (checked by ./sigv4-verify.ts against the keys the simulator was given) or a
// Bedrock API key (the simulator's apiKey as a bearer token); the body must be Bedrock's (an
// `anthropic_version` of "bedrock-2023-05-31", no `model`, no `stream`). Answers: the Messages JSON,
// or the Messages events as binary event-stream `chunk` messages (./event-stream-frames.ts), with
// scripted `exception` messages, split writes, and Bedrock's error JSON + `x-amzn-errortype`.
import { randomUUID } from 'node:crypto';
import { type Behaviour, BehaviourError, selectBehaviour } from './behaviour.ts';
import { chunkMessage, exceptionMessage } from './event-stream-frames.ts';
import type { Exchange } from './exchange.ts';
import { estimatePromptTokens, planText } from './reply-text.ts';
import type { InferenceRoute } from './routes.ts';
import { verifySigV4 } from './sigv4-verify.ts';
import type { RequestCopy, SimState } from './state.ts';
import { resolveUsage } from './usage.ts';
import type { Body, ReplyContext } from './wire.ts';
import { JSON_TYPE, type HeaderList, withExtraHeaders } from './wire-headers.ts';
import { messages } from './wires/messages.ts';

export const EVENT_STREAM_TYPE = 'application/vnd.amazon.eventstream';

/** The exception Bedrock names for an HTTP status, and its usual message. */
const STATUS_ERRORS: Record<number, [string, string]> = {
  400: ['ValidationException', 'Malformed input request, please reformat your input and try again.'],
  401: ['UnrecognizedClientException', 'The security token included in the request is invalid.'],
  403: ['AccessDeniedException', "You don't have access to the model with the specified model ID."],
  404: ['ResourceNotFoundException', 'The requested resource could not be found.'],
  408: ['ModelTimeoutException', 'Model has timed out in processing the request.'],
  424: ['ModelErrorException', 'The model encountered an error processing the request.'],
  429: ['ThrottlingException', 'Too many requests, please wait before trying again.'],
  500: [
    'InternalServerException',
    'The system encountered an unexpected error during processing. Try your request again.',
  ],
  503: ['ServiceUnavailableException', 'Bedrock is unable to process your request.'],
};

function bedrockHeaders(contentType: string, requestId: string | null): HeaderList {
  const h: HeaderList = [['content-type', contentType]];
  if (requestId !== null) h.push(['x-amzn-requestid', requestId]);
  return h;
}

export function sendError(
  ex: Exchange,
  status: number,
  requestId: string | null,
  exception?: string,
  message?: string,
  extra?: Record<string, string>,
): void {
  const [name, text] = STATUS_ERRORS[status] ?? [
    'InternalServerException',
    'The system encountered an unexpected error during processing.',
  ];
  const headers = withExtraHeaders(bedrockHeaders(JSON_TYPE, requestId), extra);
  headers.push(['x-amzn-errortype', `${exception ?? name}:http://internal.amazon.com/coral/com.amazon.bedrock/`]);
  ex.sendWhole(status, headers, JSON.stringify({ message: message ?? text }));
}

/** SigV4 (always checked) or a Bedrock API key; false when refused (the 403 is already sent). */
export function authenticate(state: SimState, ex: Exchange, req: RequestCopy, raw: Buffer, requestId: string): boolean {
  const auth = req.headers['authorization'] ?? '';
  if (auth.startsWith('AWS4-HMAC-SHA256')) {
    const r = verifySigV4(req, raw, state.awsKeys, 'bedrock', state.clock.now());
    if (r.ok) return true;
    sendError(ex, 403, requestId, r.exception, r.message);
    return false;
  }
  // Like every other wire: without a configured key, any bearer (or none) is taken.
  if (state.apiKey === undefined || auth.replace(/^Bearer\s+/i, '') === state.apiKey) return true;
  sendError(
    ex,
    403,
    requestId,
    'UnrecognizedClientException',
    auth === '' ? 'Missing Authentication Token' : 'The security token included in the request is invalid.',
  );
  return false;
}

/** Bedrock's request checks on top of the Messages ones. */
function bedrockInvalid(body: Body, route: InferenceRoute): string | null {
  for (const key of ['model', 'stream'])
    if (key in body)
      return `Malformed input request: #: extraneous key [${key}] is not permitted, please reformat your input and try again.`;
  if (body['anthropic_version'] !== 'bedrock-2023-05-31')
    return 'Malformed input request: #/anthropic_version: bedrock-2023-05-31 is required, please reformat your input and try again.';
  const invalid = messages.validate(body, route);
  return invalid ? `Malformed input request: ${invalid.message}` : null;
}

export function handleBedrock(
  state: SimState,
  ex: Exchange,
  route: InferenceRoute,
  req: RequestCopy,
  raw: Buffer,
): void {
  let body: Body | null = null;
  try {
    const parsed: unknown = JSON.parse(raw.toString('utf8'));
    if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)) body = parsed as Body;
  } catch {
    body = null;
  }
  state.recorder.add({
    method: req.method,
    path: req.path,
    query: req.query,
    headers: req.headers,
    body,
    rawBody: raw,
    at: req.at,
  });
  const requestId = randomUUID();
  if (!authenticate(state, ex, req, raw, requestId)) return;
  if (body === null) {
    sendError(ex, 400, requestId);
    return;
  }
  const invalid = bedrockInvalid(body, route);
  if (invalid) {
    sendError(ex, 400, requestId, 'ValidationException', invalid);
    return;
  }

  const model = route.urlModel ?? '';
  let b: Behaviour;
  try {
    b = selectBehaviour(state.scripts.take(model), body['sim'], req.headers['x-sim'], model).behaviour;
  } catch (err) {
    if (!(err instanceof BehaviourError)) throw err;
    sendError(ex, 400, requestId, 'ValidationException', `simulator: ${err.message}`);
    return;
  }
  const rid = b.requestId !== undefined ? b.requestId : requestId;
  ex.after(b.ttfbMs ?? 0, () => answer(state, ex, route, body, b, model, rid));
}

function answer(
  state: SimState,
  ex: Exchange,
  route: InferenceRoute,
  body: Body,
  b: Behaviour,
  model: string,
  requestId: string | null,
): void {
  if (b.status !== undefined && (b.status < 200 || b.status >= 300)) {
    if (b.errorBody !== undefined) {
      const headers = withExtraHeaders(bedrockHeaders(JSON_TYPE, requestId), b.headers);
      ex.sendWhole(b.status, headers, typeof b.errorBody === 'string' ? b.errorBody : JSON.stringify(b.errorBody));
    } else sendError(ex, b.status, requestId, undefined, undefined, b.headers);
    return;
  }
  const text = planText(b, b.echo ? JSON.stringify(body) : undefined, messages.maxTokens(body));
  const ctx: ReplyContext = {
    model,
    reportModel: b.reportModel !== undefined ? b.reportModel : model,
    requestId,
    created: Math.floor(state.clock.now() / 1000),
    text,
    usage: resolveUsage(b, () => estimatePromptTokens(body), text.tokens),
    body,
    route,
    behaviour: b,
    files: 0,
  };
  if (!route.urlStream) {
    ex.sendWhole(
      b.status ?? 200,
      withExtraHeaders(bedrockHeaders(JSON_TYPE, requestId), b.headers),
      messages.json(ctx),
    );
    return;
  }
  const frames = streamFrames(ctx, b);
  ex.beginChunked(b.status ?? 200, withExtraHeaders(bedrockHeaders(EVENT_STREAM_TYPE, requestId), b.headers));
  play(ex, frames, b);
}

/** The SSE events of the Messages wire as event-stream messages, with the scripted exceptions. */
function streamFrames(ctx: ReplyContext, b: Behaviour): Buffer[] {
  if (b.inbandError)
    return [
      exceptionMessage(b.exceptionType ?? 'throttlingException', 'Too many requests, please wait before trying again.'),
    ];
  const { preamble, content, tail } = messages.events(ctx);
  const cut = b.exceptionAfterChunks;
  const events = cut === undefined ? [...preamble, ...content, ...tail] : [...preamble, ...content.slice(0, cut)];
  const frames = events.map((e) => chunkMessage(sseData(e, ctx)));
  if (cut !== undefined)
    frames.push(exceptionMessage(b.exceptionType ?? 'modelStreamErrorException', 'The model stream was interrupted.'));
  return frames;
}

/** The data line of one SSE event; message_stop gains Bedrock's invocation metrics, as on Bedrock. */
function sseData(event: string, ctx: ReplyContext): string {
  const line = event.split('\n').find((l) => l.startsWith('data: ')) ?? 'data: {}';
  const data = line.slice(6);
  if (!data.startsWith('{"type":"message_stop"')) return data;
  const metrics = {
    inputTokenCount: ctx.usage.prompt,
    outputTokenCount: ctx.usage.completion,
    invocationLatency: 5,
    firstByteLatency: 1,
  };
  return `{"type":"message_stop","amazon-bedrock-invocationMetrics":${JSON.stringify(metrics)}}`;
}

/** Writes the frames: one write per frame, or split into pieces; chunk delays and resets apply. */
function play(ex: Exchange, frames: Buffer[], b: Behaviour): void {
  const split = b.splitFrameBytes;
  if (split !== undefined) {
    const all = Buffer.concat(frames);
    const step = (at: number): void => {
      const end = Math.min(all.length, at + split);
      ex.write([all.subarray(at, end)], end === all.length);
      if (end < all.length) ex.after(1, () => step(end));
    };
    step(0);
    return;
  }
  const resetAt = b.resetAfterChunks !== undefined ? 3 + b.resetAfterChunks : undefined;
  const delay = b.chunkDelayMs ?? 0;
  const pump = (i: number): void => {
    if (resetAt === i) {
      ex.reset();
      return;
    }
    if (i >= frames.length) {
      ex.write([], true);
      return;
    }
    ex.write([frames[i] as Buffer]);
    if (delay > 0 && i >= 3) ex.after(delay, () => pump(i + 1));
    else pump(i + 1);
  };
  pump(0);
}
