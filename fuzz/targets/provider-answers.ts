// What a misbehaving provider writes. A plan (chosen per case and attempt from the seed) says how the
// answer is broken: its status, content type, usage numbers and `model` key, oversized events or
// lines, content encoding (a bomb among them), interim 1xx heads, framing (length, chunked,
// close-delimited, a length that lies), stream quirks, and where the bytes are split, paused, cut
// (FIN), reset or stalled. `compileAnswer` turns a plan and the request it answers into the exact
// actions the raw-socket upstream performs — the bytes saved with a finding and replayed as they are.
import { deflateSync, brotliCompressSync, gzipSync, constants as zlibConstants } from 'node:zlib';
import { Rng, splitAt } from '../lib/rng.ts';

export type Wire = 'chat' | 'responses' | 'messages' | 'images' | 'image-edits';

export interface UpstreamRequestInfo {
  wire: Wire;
  stream: boolean;
  /** The model the gateway asked for (body `model`, or the one in a Vertex URL). */
  model: string;
  /** The output limit the gateway forwarded, when it did. */
  maxTokens: number | null;
}

/** Which wire an upstream request speaks, from its path and body. */
export function requestInfo(path: string, body: Buffer): UpstreamRequestInfo {
  const text = body.toString('latin1');
  let json: Record<string, unknown> = {};
  try {
    json = JSON.parse(body.toString('utf8')) as Record<string, unknown>;
  } catch {
    json = {};
  }
  const p = path.split('?')[0] ?? '';
  let wire: Wire = 'chat';
  if (p.endsWith('/responses')) wire = 'responses';
  else if (p.endsWith('/messages') || p.includes(':rawPredict') || p.includes(':streamRawPredict')) wire = 'messages';
  else if (p.endsWith('/images/generations')) wire = 'images';
  else if (p.endsWith('/images/edits')) wire = 'image-edits';
  const multipartStream = /name="stream"\r\n\r\ntrue/.test(text);
  const stream = json['stream'] === true || p.includes(':streamRawPredict') || multipartStream;
  const urlModel = /\/models\/([^/:]+):/.exec(p)?.[1];
  const multipartModel = /name="model"\r\n\r\n([^\r]*)/.exec(text)?.[1];
  const model = typeof json['model'] === 'string' ? json['model'] : (urlModel ?? multipartModel ?? 'unknown');
  const mt = [json['max_tokens'], json['max_completion_tokens'], json['max_output_tokens']].find(
    (v) => typeof v === 'number',
  );
  return { wire, stream, model: decodeURIComponent(model), maxTokens: typeof mt === 'number' ? mt : null };
}

/** Raw JSON tokens a usage count may be written as (well-formed or not). */
export const USAGE_TOKENS = [
  '0',
  '-1',
  '-100',
  '1.5',
  '1e12',
  '1100000000000',
  '4294967296',
  '9007199254740991',
  '9007199254740993',
  '1e300',
  '"12"',
  'null',
  'true',
  '[]',
  '{}',
  '<absent>',
];

export interface AnswerPlan {
  /** Seeds the compile-time choices (chunk sizes, cut point), so a plan compiles the same every time. */
  seed: number;
  status: number;
  /** A 200 whose body is an error object. */
  errorIn200: boolean;
  /** null: no Content-Type; 'auto': the right one. */
  contentType: string | null;
  /** Usage object: written normally (with `fields`), left out, or not an object. */
  usageShape: 'object' | 'missing' | 'not-object' | 'null';
  /** Raw token per usage field (p prompt, c completion, t total, k cached, r reasoning/cache write); absent = a normal value. */
  usage: Partial<Record<'p' | 'c' | 't' | 'k' | 'r', string>>;
  model: 'keep' | 'other' | 'duplicate' | 'escaped' | 'missing' | 'number' | 'bad-escape';
  /** Content events (streams). */
  deltas: number;
  /** Bytes of one oversized string (a content event, or the JSON body's text). */
  big: number | null;
  /** Streams: one data line of this many bytes without an event boundary, before the end. */
  longLine: number | null;
  encoding: 'identity' | 'gzip' | 'deflate' | 'br' | 'gzip-lie' | 'bomb-gzip' | 'bomb-deflate';
  interim: number[];
  framing: 'length' | 'chunked' | 'close' | 'length-short' | 'length-long';
  quirks: string[];
  cut: { at: number; how: 'fin' | 'reset' | 'stall' } | null;
  pieces: number;
  /** One long pause (ms) before a piece in the middle, beyond the stream idle limit now and then. */
  pauseMs: number;
}

export type UpstreamAction =
  | { kind: 'write'; bytes: Buffer; delayMs: number }
  | { kind: 'end' }
  | { kind: 'reset' }
  | { kind: 'stall' };

const ERROR_STATUSES = [400, 401, 403, 404, 408, 409, 413, 422, 429, 500, 502, 503, 504, 529];

export function randomPlan(rng: Rng): AnswerPlan {
  const bad = (p: number): boolean => rng.chance(p);
  const usage: AnswerPlan['usage'] = {};
  for (const f of ['p', 'c', 't', 'k', 'r'] as const) if (bad(0.12)) usage[f] = rng.pick(USAGE_TOKENS);
  if (bad(0.05)) usage.c = rng.pick(['1e12', '1100000000000', '9007199254740991']);
  return {
    seed: rng.int(0, 0x7fffffff),
    status: bad(0.12) ? rng.pick(ERROR_STATUSES) : 200,
    errorIn200: bad(0.04),
    contentType: bad(0.06)
      ? rng.pick([
          null,
          'text/plain',
          'text/html',
          'application/octet-stream',
          'application/json',
          'text/event-stream',
          'application/json; charset=utf-8',
        ])
      : 'auto',
    usageShape: rng.weighted([
      ['object', 88],
      ['missing', 8],
      ['not-object', 2],
      ['null', 2],
    ] as const),
    usage,
    model: rng.weighted([
      ['keep', 80],
      ['other', 5],
      ['duplicate', 5],
      ['escaped', 4],
      ['missing', 4],
      ['number', 2],
      ['bad-escape', 2],
    ] as const),
    deltas: rng.chance(0.05) ? rng.int(50, 400) : rng.int(0, 6),
    big: bad(0.04) ? rng.pick([70_000, 300_000, 1_100_000, 4_200_000, 8_400_000]) : null,
    longLine: bad(0.03) ? rng.pick([100_000, 1_000_000, 8_400_000]) : null,
    encoding: rng.weighted([
      ['identity', 88],
      ['gzip', 3],
      ['deflate', 2],
      ['br', 2],
      ['gzip-lie', 1],
      ['bomb-gzip', 2],
      ['bomb-deflate', 2],
    ] as const),
    interim: bad(0.15) ? Array.from({ length: rng.int(1, 3) }, () => rng.pick([100, 102, 103])) : [],
    framing: rng.weighted([
      ['length', 55],
      ['chunked', 25],
      ['close', 12],
      ['length-short', 4],
      ['length-long', 4],
    ] as const),
    quirks: bad(0.25)
      ? Array.from({ length: rng.int(1, 2) }, () =>
          rng.pick([
            'no-terminal',
            'dup-usage',
            'malformed',
            'crlf',
            'comments',
            'after-terminal',
            'unterminated',
            'empty-data',
            'no-blank-lines',
          ]),
        )
      : [],
    cut: bad(0.15) ? { at: rng.float(), how: rng.pick(['fin', 'reset', 'stall'] as const) } : null,
    pieces: rng.chance(0.4) ? rng.int(2, 12) : 1,
    pauseMs: bad(0.06) ? rng.pick([300, 1500, 2500]) : 0,
  };
}

/** One-line description of a plan (what is broken about it). */
export function describePlan(p: AnswerPlan): string {
  const parts: string[] = [];
  if (p.status !== 200) parts.push(`status ${p.status}`);
  if (p.errorIn200) parts.push('error body with 200');
  if (p.contentType !== 'auto') parts.push(`content-type ${p.contentType}`);
  if (p.usageShape !== 'object') parts.push(`usage ${p.usageShape}`);
  const u = Object.entries(p.usage).map(([k, v]) => `${k}=${v}`);
  if (u.length > 0) parts.push(`usage ${u.join(',')}`);
  if (p.model !== 'keep') parts.push(`model ${p.model}`);
  if (p.big !== null) parts.push(`big ${p.big}B`);
  if (p.longLine !== null) parts.push(`long line ${p.longLine}B`);
  if (p.encoding !== 'identity') parts.push(p.encoding);
  if (p.interim.length > 0) parts.push(`interim ${p.interim.join('/')}`);
  if (p.framing !== 'length') parts.push(p.framing);
  if (p.quirks.length > 0) parts.push(p.quirks.join('+'));
  if (p.cut) parts.push(`${p.cut.how} at ${(p.cut.at * 100).toFixed(0)}%`);
  if (p.pieces > 1) parts.push(`${p.pieces} pieces`);
  if (p.pauseMs > 0) parts.push(`pause ${p.pauseMs} ms`);
  if (p.deltas > 6) parts.push(`${p.deltas} events`);
  return parts.length === 0 ? 'well-formed' : parts.join(', ');
}

function usageValue(plan: AnswerPlan, field: 'p' | 'c' | 't' | 'k' | 'r', normal: number): string | null {
  const raw = plan.usage[field];
  if (raw === undefined) return String(normal);
  return raw === '<absent>' ? null : raw;
}

/** The usage member (`"usage":{…}` with its key), or '' when left out. */
function usageMember(plan: AnswerPlan, wire: Wire, maxTokens: number | null): string {
  if (plan.usageShape === 'missing') return '';
  if (plan.usageShape === 'null') return '"usage":null';
  if (plan.usageShape === 'not-object') return '"usage":"n/a"';
  const rng = new Rng(plan.seed ^ 0x5a5a);
  const p = rng.int(5, 300);
  const c = rng.int(1, Math.max(1, Math.min(maxTokens ?? 64, 64)));
  const v = (f: 'p' | 'c' | 't' | 'k' | 'r', normal: number): string | null => usageValue(plan, f, normal);
  const obj = (pairs: [string, string | null][]): string =>
    `{${pairs
      .filter((x): x is [string, string] => x[1] !== null)
      .map(([k, x]) => `"${k}":${x}`)
      .join(',')}}`;
  switch (wire) {
    case 'chat':
      return `"usage":${obj([
        ['prompt_tokens', v('p', p)],
        ['completion_tokens', v('c', c)],
        ['total_tokens', v('t', p + c)],
        ['prompt_tokens_details', obj([['cached_tokens', v('k', 0)]])],
        ['completion_tokens_details', obj([['reasoning_tokens', v('r', 0)]])],
      ])}`;
    case 'responses':
      return `"usage":${obj([
        ['input_tokens', v('p', p)],
        ['output_tokens', v('c', c)],
        ['total_tokens', v('t', p + c)],
        ['input_tokens_details', obj([['cached_tokens', v('k', 0)]])],
        ['output_tokens_details', obj([['reasoning_tokens', v('r', 0)]])],
      ])}`;
    case 'messages':
      return `"usage":${obj([
        ['input_tokens', v('p', p)],
        ['output_tokens', v('c', c)],
        ['cache_read_input_tokens', v('k', 0)],
        ['cache_creation_input_tokens', v('r', 0)],
      ])}`;
    default:
      return `"usage":${obj([
        ['input_tokens', v('p', p)],
        ['output_tokens', v('c', c)],
        ['total_tokens', v('t', p + c)],
        [
          'input_tokens_details',
          obj([
            ['text_tokens', v('p', p)],
            ['image_tokens', v('k', 0)],
          ]),
        ],
      ])}`;
  }
}

/** The `model` member as the plan writes it (with a trailing comma), or ''. */
function modelMember(plan: AnswerPlan, model: string): string {
  const m = JSON.stringify(model);
  switch (plan.model) {
    case 'keep':
      return `"model":${m},`;
    case 'other':
      return `"model":"someone-elses-model",`;
    case 'duplicate':
      return `"model":${m},"model":"provider-internal-id",`;
    case 'escaped':
      return `"mod\\u0065l":"provider-internal-id",`;
    case 'missing':
      return '';
    case 'bad-escape':
      // Not JSON: an escape no parser accepts, inside the value a rewriter reads.
      return '"model":"bad\\q",';
    default:
      return '"model":12,';
  }
}

function text(plan: AnswerPlan): string {
  return plan.big !== null ? 'x'.repeat(plan.big) : 'Hello from the fuzz upstream.';
}

const IMAGE = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';

/** The wire's error body; `bare`: an `{"error":…}` object without the Messages wire's top-level type
 *  (what some relays in front of a Messages provider send, with a 200). */
function errorBody(wire: Wire, bare = false): string {
  return wire === 'messages' && !bare
    ? '{"type":"error","error":{"type":"api_error","message":"fuzz upstream error"}}'
    : '{"error":{"message":"fuzz upstream error","type":"server_error","code":null}}';
}

function jsonBody(plan: AnswerPlan, info: UpstreamRequestInfo): string {
  if (plan.status !== 200 || plan.errorIn200) return errorBody(info.wire, plan.errorIn200 && plan.seed % 2 === 0);
  const u = usageMember(plan, info.wire, info.maxTokens);
  const usage = u === '' ? '' : `,${u}`;
  const model = modelMember(plan, info.model);
  const t = JSON.stringify(text(plan));
  switch (info.wire) {
    case 'chat':
      return `{"id":"chatcmpl-fz","object":"chat.completion","created":1,${model}"choices":[{"index":0,"message":{"role":"assistant","content":${t}},"finish_reason":"stop"}]${usage}}`;
    case 'responses':
      return `{"id":"resp_fz","object":"response","created_at":1,"status":"completed",${model}"output":[{"type":"message","id":"msg_fz","status":"completed","role":"assistant","content":[{"type":"output_text","text":${t},"annotations":[]}]}]${usage}}`;
    case 'messages':
      return `{"id":"msg_fz","type":"message","role":"assistant",${model}"content":[{"type":"text","text":${t}}],"stop_reason":"end_turn","stop_sequence":null${usage}}`;
    default:
      return `{"created":1,"data":[{"b64_json":${plan.big !== null ? t : JSON.stringify(IMAGE)}}]${usage}}`;
  }
}

function sse(event: string | null, data: string): string {
  return `${event !== null ? `event: ${event}\n` : ''}data: ${data}\n\n`;
}

/** The events of a stream answer, in order, before the quirks. */
function streamEvents(
  plan: AnswerPlan,
  info: UpstreamRequestInfo,
): { events: string[]; terminal: number; usageAt: number } {
  const model = modelMember(plan, info.model);
  const u = usageMember(plan, info.wire, info.maxTokens);
  const ev: string[] = [];
  const deltaText = (i: number): string => JSON.stringify(plan.big !== null && i === 0 ? text(plan) : `w${i} `);
  let usageAt = -1;
  if (info.wire === 'chat') {
    ev.push(
      sse(
        null,
        `{"id":"c","object":"chat.completion.chunk","created":1,${model}"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`,
      ),
    );
    for (let i = 0; i < plan.deltas; i++)
      ev.push(
        sse(
          null,
          `{"id":"c","object":"chat.completion.chunk","created":1,${model}"choices":[{"index":0,"delta":{"content":${deltaText(i)}},"finish_reason":null}]}`,
        ),
      );
    ev.push(
      sse(
        null,
        `{"id":"c","object":"chat.completion.chunk","created":1,${model}"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`,
      ),
    );
    if (u !== '') {
      usageAt = ev.length;
      ev.push(sse(null, `{"id":"c","object":"chat.completion.chunk","created":1,${model}"choices":[],${u}}`));
    }
    ev.push('data: [DONE]\n\n');
  } else if (info.wire === 'responses') {
    ev.push(
      sse(
        'response.created',
        `{"type":"response.created","response":{"id":"resp_fz","object":"response","status":"in_progress",${model}"output":[]}}`,
      ),
    );
    for (let i = 0; i < plan.deltas; i++)
      ev.push(
        sse(
          'response.output_text.delta',
          `{"type":"response.output_text.delta","item_id":"msg_fz","output_index":0,"content_index":0,"delta":${deltaText(i)}}`,
        ),
      );
    usageAt = ev.length;
    ev.push(
      sse(
        'response.completed',
        `{"type":"response.completed","response":{"id":"resp_fz","object":"response","status":"completed",${model}"output":[]${u === '' ? '' : `,${u}`}}}`,
      ),
    );
  } else if (info.wire === 'messages') {
    ev.push(
      sse(
        'message_start',
        `{"type":"message_start","message":{"id":"msg_fz","type":"message","role":"assistant",${model}"content":[],"stop_reason":null,"usage":{"input_tokens":${usageValue(plan, 'p', 20) ?? 20},"output_tokens":1}}}`,
      ),
    );
    ev.push(
      sse('content_block_start', '{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}'),
    );
    for (let i = 0; i < plan.deltas; i++)
      ev.push(
        sse(
          'content_block_delta',
          `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":${deltaText(i)}}}`,
        ),
      );
    ev.push(sse('content_block_stop', '{"type":"content_block_stop","index":0}'));
    usageAt = ev.length;
    ev.push(
      sse(
        'message_delta',
        `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null}${u === '' ? '' : `,${u}`}}`,
      ),
    );
    ev.push(sse('message_stop', '{"type":"message_stop"}'));
  } else {
    const kind = info.wire === 'images' ? 'image_generation' : 'image_edit';
    for (let i = 0; i < Math.min(plan.deltas, 3); i++)
      ev.push(
        sse(
          `${kind}.partial_image`,
          `{"type":"${kind}.partial_image","b64_json":${plan.big !== null && i === 0 ? JSON.stringify(text(plan)) : JSON.stringify(IMAGE)},"partial_image_index":${i}}`,
        ),
      );
    usageAt = ev.length;
    ev.push(
      sse(
        `${kind}.completed`,
        `{"type":"${kind}.completed","b64_json":${JSON.stringify(IMAGE)}${u === '' ? '' : `,${u}`}}`,
      ),
    );
  }
  return { events: ev, terminal: ev.length - 1, usageAt };
}

function applyQuirks(plan: AnswerPlan, rng: Rng, s: { events: string[]; terminal: number; usageAt: number }): string {
  let ev = [...s.events];
  for (const q of plan.quirks) {
    if (q === 'no-terminal') ev = ev.slice(0, -1);
    else if (q === 'dup-usage' && s.usageAt >= 0) ev.splice(s.usageAt + 1, 0, s.events[s.usageAt] as string);
    else if (q === 'malformed') ev.splice(rng.int(0, ev.length), 0, 'data: {"choices":[{"delta":{"content":"cut\n\n');
    else if (q === 'comments') ev.splice(rng.int(0, ev.length), 0, ': ping\n\n', ':\n\n');
    else if (q === 'after-terminal')
      ev.push(s.events[Math.max(0, s.terminal - 1)] as string, s.events[s.terminal] as string);
    else if (q === 'empty-data') ev.splice(rng.int(0, ev.length), 0, 'data:\n\n', 'data: \n\n');
  }
  // A data line with no event boundary: everything after it joins one giant event.
  if (plan.longLine !== null)
    ev.splice(rng.int(0, Math.max(0, ev.length - 1)), 0, `data: {"pad":"${'y'.repeat(plan.longLine)}`);
  let body = ev.join('');
  if (plan.quirks.includes('crlf')) body = body.replace(/\n/g, '\r\n');
  if (plan.quirks.includes('no-blank-lines')) body = body.replace(/\n\n/g, '\n');
  if (plan.quirks.includes('unterminated')) body = body.replace(/\n+$/, '');
  return body;
}

const BOMB_BYTES = 256 * 1024 * 1024;
const bombs = new Map<string, Buffer>();

/** A compressed body that inflates to 256 MiB of spaces (computed once per process). */
export function bomb(kind: 'gzip' | 'deflate'): Buffer {
  let b = bombs.get(kind);
  if (!b) {
    const plain = Buffer.alloc(BOMB_BYTES, 0x20);
    b = kind === 'gzip' ? gzipSync(plain, { level: 9 }) : deflateSync(plain, { level: 9 });
    bombs.set(kind, b);
  }
  return b;
}

function encode(plan: AnswerPlan, body: Buffer): { body: Buffer; header: string | null } {
  switch (plan.encoding) {
    case 'gzip':
      return { body: gzipSync(body), header: 'gzip' };
    case 'deflate':
      return { body: deflateSync(body), header: 'deflate' };
    case 'br':
      return { body: brotliCompressSync(body, { params: { [zlibConstants.BROTLI_PARAM_QUALITY]: 4 } }), header: 'br' };
    case 'gzip-lie':
      return { body, header: 'gzip' };
    case 'bomb-gzip':
      return { body: bomb('gzip'), header: 'gzip' };
    case 'bomb-deflate':
      return { body: bomb('deflate'), header: 'deflate' };
    default:
      return { body, header: null };
  }
}

const REASONS: Record<number, string> = {
  100: 'Continue',
  102: 'Processing',
  103: 'Early Hints',
  200: 'OK',
  429: 'Too Many Requests',
  500: 'Internal Server Error',
  503: 'Service Unavailable',
};

/** The actions that answer `info` according to `plan`. */
export function compileAnswer(plan: AnswerPlan, info: UpstreamRequestInfo): UpstreamAction[] {
  const rng = new Rng(plan.seed);
  const asStream = info.stream && plan.status === 200 && !plan.errorIn200;
  let payload: Buffer = Buffer.from(
    asStream ? applyQuirks(plan, rng, streamEvents(plan, info)) : jsonBody(plan, info),
    'utf8',
  );
  // Bombs are a non-streamed answer's trick; a stream keeps its own encoding plan.
  const enc = encode(asStream && plan.encoding.startsWith('bomb') ? { ...plan, encoding: 'gzip' } : plan, payload);
  payload = enc.body;
  const contentType =
    plan.contentType === 'auto' ? (asStream ? 'text/event-stream' : 'application/json') : plan.contentType;
  const headers: string[] = [];
  if (contentType !== null) headers.push(`Content-Type: ${contentType}`);
  if (enc.header) headers.push(`Content-Encoding: ${enc.header}`);
  headers.push('x-request-id: fz-upstream');
  if (plan.status === 429) headers.push('retry-after: 0');
  let framed: Buffer;
  let endAfter = false;
  switch (plan.framing) {
    case 'chunked': {
      headers.push('Transfer-Encoding: chunked');
      const pieces = splitAt(payload, rng.cuts(payload.length, rng.int(1, 8))).filter((p) => p.length > 0);
      framed = Buffer.concat([
        ...pieces.map((p) => Buffer.concat([Buffer.from(`${p.length.toString(16)}\r\n`), p, Buffer.from('\r\n')])),
        Buffer.from('0\r\n\r\n'),
      ]);
      break;
    }
    case 'close':
      headers.push('Connection: close');
      framed = payload;
      endAfter = true;
      break;
    case 'length-short':
      headers.push(`Content-Length: ${Math.max(0, payload.length - rng.int(1, 20))}`);
      framed = payload;
      endAfter = true;
      break;
    case 'length-long':
      headers.push(`Content-Length: ${payload.length + rng.int(1, 20)}`);
      framed = payload;
      endAfter = true;
      break;
    default:
      headers.push(`Content-Length: ${payload.length}`);
      framed = payload;
  }
  const interim = plan.interim
    .map(
      (s) => `HTTP/1.1 ${s} ${REASONS[s] ?? 'Info'}\r\n${s === 103 ? 'Link: </style.css>; rel=preload\r\n' : ''}\r\n`,
    )
    .join('');
  const head = `${interim}HTTP/1.1 ${plan.status} ${REASONS[plan.status] ?? 'Status'}\r\n${headers.join('\r\n')}\r\n\r\n`;
  let all = Buffer.concat([Buffer.from(head, 'latin1'), framed]);
  let tail: UpstreamAction = endAfter ? { kind: 'end' } : { kind: 'stall' };
  if (plan.cut) {
    all = all.subarray(0, Math.floor(plan.cut.at * all.length));
    tail = plan.cut.how === 'fin' ? { kind: 'end' } : plan.cut.how === 'reset' ? { kind: 'reset' } : { kind: 'stall' };
  }
  const cuts = plan.pieces > 1 ? rng.cuts(all.length, plan.pieces - 1) : [];
  const pieces = splitAt(all, cuts);
  const pauseAt = plan.pauseMs > 0 && pieces.length > 1 ? rng.int(1, pieces.length - 1) : -1;
  const actions: UpstreamAction[] = pieces.map((bytes, i) => ({
    kind: 'write',
    bytes,
    delayMs: i === pauseAt ? plan.pauseMs : i === 0 ? 0 : rng.int(0, 15),
  }));
  // A whole, well-framed answer leaves the connection open for the next request (keep-alive):
  // `stall` at the end means "do nothing more" there.
  actions.push(tail);
  return actions;
}
