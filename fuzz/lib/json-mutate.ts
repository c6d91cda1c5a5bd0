// JSON-aware mutation: a document is held as a small syntax tree whose leaves keep their exact
// source text, so a mutation can produce what no JSON value can — a duplicate key, an escaped key
// (`"mod\u0065l"`), a number token beyond 2^53 or beyond a double, a lone surrogate, invalid UTF-8 —
// and still serialise to exactly the bytes meant. Byte-level mutations (bytes-mutate.ts) run on top.
import type { Rng } from './rng.ts';

export type Node =
  | { t: 'obj'; members: [key: string, value: Node][] }
  | { t: 'arr'; items: Node[] }
  /** `raw`: the string's JSON text between the quotes, escapes included. */
  | { t: 'str'; raw: string }
  /** Any token written as is (numbers, literals, or bytes no JSON value has). */
  | { t: 'raw'; raw: Buffer };

/** Keys are JSON string text between the quotes (escapes allowed). */
export function fromValue(v: unknown): Node {
  if (v === null) return { t: 'raw', raw: Buffer.from('null') };
  if (Array.isArray(v)) return { t: 'arr', items: v.map(fromValue) };
  if (typeof v === 'object')
    return {
      t: 'obj',
      members: Object.entries(v as Record<string, unknown>).map(([k, x]) => [
        JSON.stringify(k).slice(1, -1),
        fromValue(x),
      ]),
    };
  if (typeof v === 'string') return { t: 'str', raw: JSON.stringify(v).slice(1, -1) };
  return { t: 'raw', raw: Buffer.from(JSON.stringify(v) ?? 'null') };
}

export function serialise(n: Node): Buffer {
  const out: Buffer[] = [];
  write(n, out);
  return Buffer.concat(out);
}

function write(n: Node, out: Buffer[]): void {
  switch (n.t) {
    case 'raw':
      out.push(n.raw);
      return;
    case 'str':
      out.push(Buffer.from(`"${n.raw}"`, 'utf8'));
      return;
    case 'arr':
      out.push(Buffer.from('['));
      n.items.forEach((x, i) => {
        if (i > 0) out.push(Buffer.from(','));
        write(x, out);
      });
      out.push(Buffer.from(']'));
      return;
    case 'obj':
      out.push(Buffer.from('{'));
      n.members.forEach(([k, x], i) => {
        out.push(Buffer.from(`${i > 0 ? ',' : ''}"${k}":`, 'utf8'));
        write(x, out);
      });
      out.push(Buffer.from('}'));
  }
}

/** Number tokens at the edges: signs, zeros, the safe-integer limit and past it, past a double, floats, and tokens JSON forbids. */
export const EDGE_NUMBERS = [
  '0',
  '-0',
  '1',
  '-1',
  '2',
  '16',
  '255',
  '256',
  '4096',
  '65535',
  '65536',
  '2147483647',
  '2147483648',
  '-2147483649',
  '4294967296',
  '9007199254740991',
  '9007199254740992',
  '9007199254740993',
  '-9007199254740991',
  '18446744073709551616',
  '1e12',
  '1.1e12',
  '1e15',
  '1e21',
  '1e308',
  '1e400',
  '-1e400',
  '1e-400',
  '0.5',
  '1.5',
  '-0.0',
  '1E3',
  '1e+2',
  '123456789012345678901234567890',
  '0.1e1',
  '01',
  '1.',
  '.5',
  '+1',
  'NaN',
  'Infinity',
  '-Infinity',
  '0x10',
  '1_000',
];

/** Strings with what a parser or a header may trip on. */
export const EDGE_STRINGS = [
  '',
  ' ',
  'a',
  '\\u0000',
  '\\ud800',
  '\\udfff',
  '\\ud800\\udc00',
  '\\n',
  '\\r\\n',
  '\\"',
  '\\\\',
  '\\u00e9',
  'é',
  '日本語',
  '\\u007f',
  '%00',
  '../../etc',
  '<script>',
  'auto',
  'fallback',
  'price',
  'latency',
  'throughput',
  'deny',
  'allow',
  'none',
  'high',
  'low',
  'medium',
  'minimal',
  'null',
  'true',
  '-1',
  '1e400',
];

/** Keys a request may carry: the protocols' own, routing fields, and some no protocol knows. */
export const KEYS = [
  'model',
  'messages',
  'input',
  'prompt',
  'max_tokens',
  'max_completion_tokens',
  'max_output_tokens',
  'stream',
  'stream_options',
  'n',
  'temperature',
  'top_p',
  'top_k',
  'stop',
  'seed',
  'tools',
  'tool_choice',
  'parallel_tool_calls',
  'response_format',
  'reasoning',
  'reasoning_effort',
  'thinking',
  'system',
  'metadata',
  'user',
  'logprobs',
  'top_logprobs',
  'logit_bias',
  'frequency_penalty',
  'presence_penalty',
  'size',
  'quality',
  'background',
  'provider',
  'models',
  'route',
  'transforms',
  'usage',
  'include',
  'instructions',
  'previous_response_id',
  'store',
  'modalities',
  'audio',
  'web_search_options',
  'verbosity',
  'partial_images',
  'output_format',
  'include_usage',
  'role',
  'content',
  'type',
  'text',
  'image_url',
  'order',
  'only',
  'ignore',
  'allow_fallbacks',
  'sort',
  'data_collection',
  'quantizations',
  'require_parameters',
  'zdr',
  'max_price',
  '__proto__',
  'constructor',
  'toString',
  '',
  'mod\\u0065l',
  'MODEL',
  'Model',
];

/** Routing-field values: well-formed ones and the wrong types. */
export function routingValue(rng: Rng, models: readonly string[], platforms: readonly string[]): Node {
  const key = rng.pick(['provider', 'models', 'route'] as const);
  if (key === 'route')
    return rng.chance(0.6)
      ? { t: 'str', raw: rng.pick(['fallback', 'auto', '', 'FALLBACK', 'x']) }
      : randomValue(rng, 2);
  if (key === 'models') {
    const n = rng.chance(0.1) ? rng.int(0, 300) : rng.int(0, 4);
    return {
      t: 'arr',
      items: Array.from({ length: n }, () =>
        rng.chance(0.8) ? { t: 'str', raw: rng.pick(models) } : randomValue(rng, 1),
      ),
    };
  }
  const members: [string, Node][] = [];
  const subKeys = [
    'order',
    'only',
    'ignore',
    'allow_fallbacks',
    'sort',
    'data_collection',
    'quantizations',
    'require_parameters',
    'zdr',
    'max_price',
    'x',
  ];
  for (let i = rng.int(0, 4); i > 0; i--) {
    const k = rng.pick(subKeys);
    let v: Node;
    if (['order', 'only', 'ignore'].includes(k) && rng.chance(0.7))
      v = {
        t: 'arr',
        items: Array.from({ length: rng.int(0, 4) }, () => ({ t: 'str', raw: rng.pick(platforms) }) as Node),
      };
    else if (k === 'quantizations' && rng.chance(0.7))
      v = { t: 'arr', items: [{ t: 'str', raw: rng.pick(['fp8', 'bf16', 'int4', 'unknown', 'fp64']) }] };
    else if (k === 'sort' && rng.chance(0.7)) v = { t: 'str', raw: rng.pick(['price', 'latency', 'throughput', 'x']) };
    else if (k === 'data_collection' && rng.chance(0.7)) v = { t: 'str', raw: rng.pick(['deny', 'allow', 'x']) };
    else if (k === 'max_price' && rng.chance(0.6))
      v = {
        t: 'obj',
        members: [
          [
            rng.pick(['prompt', 'completion', 'request', 'image']),
            { t: 'raw', raw: Buffer.from(rng.pick(EDGE_NUMBERS)) },
          ],
        ],
      };
    else v = randomValue(rng, 2);
    members.push([k, v]);
  }
  return rng.chance(0.85) ? { t: 'obj', members } : randomValue(rng, 2);
}

/** A random JSON value (sometimes with tokens JSON forbids). */
export function randomValue(rng: Rng, depth: number): Node {
  const kind = rng.int(0, depth > 0 ? 6 : 4);
  switch (kind) {
    case 0:
      return { t: 'raw', raw: Buffer.from(rng.pick(EDGE_NUMBERS)) };
    case 1:
      return { t: 'str', raw: rng.pick(EDGE_STRINGS) };
    case 2:
      return { t: 'raw', raw: Buffer.from(rng.pick(['true', 'false', 'null'])) };
    case 3:
      return { t: 'raw', raw: Buffer.from(String(rng.int(-5, 100_000))) };
    case 4:
      return { t: 'str', raw: 'x'.repeat(rng.size(64)) };
    case 5:
      return { t: 'arr', items: Array.from({ length: rng.int(0, 3) }, () => randomValue(rng, depth - 1)) };
    default:
      return {
        t: 'obj',
        members: Array.from(
          { length: rng.int(0, 3) },
          () => [rng.pick(KEYS), randomValue(rng, depth - 1)] as [string, Node],
        ),
      };
  }
}

interface Slot {
  get(): Node;
  set(n: Node): void;
  /** The containing object and the index of this member, when the slot is an object member. */
  member?: { obj: Extract<Node, { t: 'obj' }>; index: number };
  depth: number;
}

/** Every place in the tree a node sits (the root included), for picking one at random. */
function slots(root: { node: Node }): Slot[] {
  const out: Slot[] = [{ get: () => root.node, set: (n) => (root.node = n), depth: 0 }];
  const walk = (n: Node, depth: number): void => {
    if (out.length > 5000) return;
    if (n.t === 'obj') {
      n.members.forEach((m, index) => {
        out.push({ get: () => m[1], set: (x) => (m[1] = x), member: { obj: n, index }, depth: depth + 1 });
        walk(m[1], depth + 1);
      });
    } else if (n.t === 'arr') {
      n.items.forEach((x, i) => {
        out.push({ get: () => n.items[i] as Node, set: (y) => (n.items[i] = y), depth: depth + 1 });
        walk(x, depth + 1);
      });
    }
  };
  walk(root.node, 0);
  return out;
}

export interface MutationContext {
  models: readonly string[];
  platforms: readonly string[];
  /** Largest body the mutations should aim for (they may still go a little past it). */
  maxBytes: number;
}

export type JsonMutation = (rng: Rng, root: { node: Node }, ctx: MutationContext) => string;

/** One structural mutation per entry; each returns a short label for the case's description. */
export const JSON_MUTATIONS: readonly (readonly [JsonMutation, number])[] = [
  [swapType, 6],
  [edgeNumber, 8],
  [deepNesting, 3],
  [manyKeys, 2],
  [longString, 3],
  [badString, 4],
  [duplicateKey, 4],
  [escapedKey, 3],
  [dropMember, 4],
  [addMember, 6],
  [routingField, 8],
  [modelField, 6],
  [emptyContainer, 2],
  [rootNotObject, 1],
];

function pickSlot(rng: Rng, root: { node: Node }, pred: (s: Slot) => boolean = () => true): Slot | null {
  const all = slots(root).filter(pred);
  return all.length === 0 ? null : rng.pick(all);
}

function swapType(rng: Rng, root: { node: Node }): string {
  const s = pickSlot(rng, root, (x) => x.depth > 0);
  if (!s) return 'swap-type:none';
  s.set(randomValue(rng, 2));
  return 'swap-type';
}

function edgeNumber(rng: Rng, root: { node: Node }): string {
  const s = pickSlot(rng, root, (x) => x.depth > 0 && (x.get().t === 'raw' || rng.chance(0.3)));
  if (!s) return 'edge-number:none';
  const n = rng.pick(EDGE_NUMBERS);
  s.set({ t: 'raw', raw: Buffer.from(n) });
  return `edge-number:${n}`;
}

function deepNesting(rng: Rng, root: { node: Node }): string {
  const levels = rng.pick([126, 127, 128, 129, 200, 1000, rng.int(1, 5000), 50_000]);
  const s = pickSlot(rng, root, (x) => x.depth > 0);
  if (!s) return 'deep:none';
  const open = rng.chance(0.5) ? '[' : '{"a":';
  const close = open === '[' ? ']' : '}';
  const inner = serialise(s.get());
  // Unbalanced now and then: the scan must not be fooled by a missing close.
  const closes = rng.chance(0.9) ? levels : rng.int(0, levels);
  s.set({ t: 'raw', raw: Buffer.concat([Buffer.from(open.repeat(levels)), inner, Buffer.from(close.repeat(closes))]) });
  return `deep:${levels}`;
}

function manyKeys(rng: Rng, root: { node: Node }, ctx: MutationContext): string {
  const obj = root.node.t === 'obj' ? root.node : null;
  if (!obj) return 'many-keys:none';
  // About 15 bytes a member: as many as the body limit lets through, or a few thousand.
  const most = Math.max(10, Math.floor(ctx.maxBytes / 15));
  const n = rng.chance(0.3) ? most : rng.int(10, Math.min(most, 20_000));
  const parts: string[] = [];
  for (let i = 0; i < n; i++) parts.push(`"k${i}":${i % 7}`);
  obj.members.push(['k_many', { t: 'raw', raw: Buffer.from('0') }]);
  const last = obj.members[obj.members.length - 1] as [string, Node];
  // Written as one raw run of members after a real one, so serialising stays cheap.
  last[1] = { t: 'raw', raw: Buffer.from(`0,${parts.join(',')}`) };
  return `many-keys:${n}`;
}

function longString(rng: Rng, root: { node: Node }, ctx: MutationContext): string {
  const s = pickSlot(rng, root, (x) => x.depth > 0 && (x.get().t === 'str' || rng.chance(0.2)));
  if (!s) return 'long-string:none';
  const n = rng.chance(0.2) ? ctx.maxBytes : rng.size(ctx.maxBytes);
  const unit = rng.pick(['a', 'é', '\\n', '\\u0000', '\\"', ' ', '日']);
  s.set({ t: 'str', raw: unit.repeat(Math.max(1, Math.floor(n / Buffer.byteLength(unit)))) });
  return `long-string:${n}`;
}

function badString(rng: Rng, root: { node: Node }): string {
  const s = pickSlot(rng, root, (x) => x.get().t === 'str');
  if (!s) return 'bad-string:none';
  const bad = rng.pick([
    Buffer.from([0xff]),
    Buffer.from([0xc0, 0x80]),
    Buffer.from([0xed, 0xa0, 0x80]),
    Buffer.from([0xf4, 0x90, 0x80, 0x80]),
    Buffer.from([0x00]),
    Buffer.from([0x0a]),
    Buffer.from('\\ud800'),
    Buffer.from('\\x'),
    Buffer.from('\\u12'),
    Buffer.from([0xe2, 0x82]),
  ]);
  const cur = s.get() as Extract<Node, { t: 'str' }>;
  const text = Buffer.from(cur.raw, 'utf8');
  const at = rng.int(0, text.length);
  s.set({
    t: 'raw',
    raw: Buffer.concat([Buffer.from('"'), text.subarray(0, at), bad, text.subarray(at), Buffer.from('"')]),
  });
  return 'bad-string';
}

function duplicateKey(rng: Rng, root: { node: Node }): string {
  const s = pickSlot(rng, root, (x) => x.member !== undefined);
  if (!s?.member) return 'duplicate-key:none';
  const [k] = s.member.obj.members[s.member.index] as [string, Node];
  s.member.obj.members.splice(rng.int(0, s.member.obj.members.length), 0, [k, randomValue(rng, 1)]);
  return `duplicate-key:${k}`;
}

function escapedKey(rng: Rng, root: { node: Node }): string {
  const s = pickSlot(rng, root, (x) => x.member !== undefined);
  if (!s?.member) return 'escaped-key:none';
  const m = s.member.obj.members[s.member.index] as [string, Node];
  m[0] = [...m[0]]
    .map((c) => (rng.chance(0.5) && /[a-z]/.test(c) ? `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}` : c))
    .join('');
  return `escaped-key:${m[0]}`;
}

function dropMember(rng: Rng, root: { node: Node }): string {
  const s = pickSlot(rng, root, (x) => x.member !== undefined);
  if (!s?.member) return 'drop:none';
  const [k] = s.member.obj.members.splice(s.member.index, 1)[0] as [string, Node];
  return `drop:${k}`;
}

function addMember(rng: Rng, root: { node: Node }): string {
  const s = pickSlot(rng, root, (x) => x.get().t === 'obj');
  if (!s) return 'add:none';
  const k = rng.pick(KEYS);
  (s.get() as Extract<Node, { t: 'obj' }>).members.push([k, randomValue(rng, 2)]);
  return `add:${k}`;
}

function routingField(rng: Rng, root: { node: Node }, ctx: MutationContext): string {
  if (root.node.t !== 'obj') return 'routing:none';
  const key = rng.pick(['provider', 'models', 'route']);
  const value = routingValue(rng, ctx.models, ctx.platforms);
  const members = root.node.members;
  const at = members.findIndex(([k]) => k === key);
  if (at === -1) members.push([key, value]);
  else (members[at] as [string, Node])[1] = value;
  return `routing:${key}`;
}

function modelField(rng: Rng, root: { node: Node }, ctx: MutationContext): string {
  if (root.node.t !== 'obj') return 'model:none';
  const members = root.node.members;
  const at = members.findIndex(([k]) => k === 'model');
  const v: Node = rng.chance(0.8)
    ? {
        t: 'str',
        raw: rng.pick([
          ...ctx.models,
          'acme/disabled',
          'acme/retired',
          'acme/embedder',
          'nope/none',
          '',
          'acme/chat-small:free',
          'ACME/CHAT-SMALL',
          'acme//chat-small',
        ]),
      }
    : randomValue(rng, 1);
  if (at === -1) members.unshift(['model', v]);
  else (members[at] as [string, Node])[1] = v;
  return 'model';
}

function emptyContainer(rng: Rng, root: { node: Node }): string {
  const s = pickSlot(rng, root, (x) => x.depth > 0 && (x.get().t === 'obj' || x.get().t === 'arr'));
  if (!s) return 'empty:none';
  s.set(s.get().t === 'obj' ? { t: 'obj', members: [] } : { t: 'arr', items: [] });
  return 'empty';
}

function rootNotObject(rng: Rng, root: { node: Node }): string {
  root.node = rng.chance(0.5) ? { t: 'arr', items: [root.node] } : randomValue(rng, 1);
  return 'root-not-object';
}

/** Applies 1–4 structural mutations; returns their labels. */
export function mutateJson(rng: Rng, root: { node: Node }, ctx: MutationContext): string[] {
  const labels: string[] = [];
  for (let i = rng.int(1, 4); i > 0; i--) labels.push(rng.weighted(JSON_MUTATIONS)(rng, root, ctx));
  return labels;
}
