// Target `client-body`: mutated request bodies on the five inference endpoints, sent as exact bytes
// to a `pi-gateway serve` child whose upstream is the in-process simulator (never told to fail).
// JSON bodies start from a valid request and get 1–4 structural mutations (types swapped, edge
// numbers, deep nesting, many keys, long or invalid strings, duplicate and escaped keys, routing
// fields) and sometimes byte-level ones; image edits get a multipart body with its parts reordered,
// dropped, repeated, oversized or mangled. Now and then the key is missing or wrong, or the content
// type is, so the gateway answers before it has read the body.
// Oracles: the process never exits; every request is answered (or its connection closed) within
// the hang bound; no answer is a 5xx.
import { join } from 'node:path';
import { restIsBounded } from '../../src/server/read-body.ts';
import { startSimulator, type Simulator } from '../../src/simulator/server.ts';
import { mutateBytes } from '../lib/bytes-mutate.ts';
import { coverageReport } from '../lib/coverage.ts';
import type { FindingFiles } from '../lib/findings.ts';
import { type CaseSpec, runHttpCampaign } from '../lib/http-campaign.ts';
import { EDGE_NUMBERS, fromValue, mutateJson, type MutationContext, serialise } from '../lib/json-mutate.ts';
import { type WriteStep, exchange, requestBytes, statusSignature } from '../lib/raw-http.ts';
import { Rng, splitAt } from '../lib/rng.ts';
import { GatewaySession } from '../lib/session.ts';
import { type Target, type TargetOptions, type TargetSummary, hitsFrom } from '../lib/target.ts';
import { ledgerNotes } from './ledger-oracles.ts';

export const CLIENT_BODY_LIMITS = {
  // The production default (the fixture's 64 KiB would hide the cost of a large body's shape).
  max_body_bytes: 4 * 1024 * 1024,
  max_upload_bytes: 1024 * 1024,
  drain_timeout_ms: 5000,
  // The simulator answers in milliseconds; the fixture's 2 s would let a loaded machine's stall be
  // reported as a provider failure (a 503) to a client input that did nothing wrong.
  first_byte_timeout_ms: 15_000,
  stream_idle_timeout_ms: 15_000,
};

const ENDPOINTS = [
  '/v1/chat/completions',
  '/v1/responses',
  '/v1/messages',
  '/v1/images/generations',
  '/v1/images/edits',
] as const;
type Endpoint = (typeof ENDPOINTS)[number];

/** A valid body per JSON endpoint; the mutations start from one of these. */
function template(rng: Rng, endpoint: Endpoint): Record<string, unknown> {
  const stream = rng.chance(0.35);
  switch (endpoint) {
    case '/v1/chat/completions': {
      const body: Record<string, unknown> = {
        model: rng.pick(['acme/chat-small', 'acme/chat-big', 'acme/reasoner', 'acme/bracketed', 'acme/small']),
        messages: [
          { role: 'system', content: 'Be brief.' },
          {
            role: 'user',
            content: rng.pick([
              'Hello there',
              [
                { type: 'text', text: 'Describe' },
                { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } },
              ],
            ]),
          },
        ],
        max_tokens: rng.int(1, 64),
      };
      if (rng.chance(0.5)) body['temperature'] = 0.5;
      if (rng.chance(0.2))
        body['tools'] = [
          {
            type: 'function',
            function: { name: 'lookup', parameters: { type: 'object', properties: { q: { type: 'string' } } } },
          },
        ];
      if (rng.chance(0.2)) body['reasoning_effort'] = rng.pick(['low', 'high', 'none']);
      if (stream) {
        body['stream'] = true;
        if (rng.chance(0.5)) body['stream_options'] = { include_usage: true };
      }
      return body;
    }
    case '/v1/responses':
      return {
        model: rng.pick(['acme/chat-small', 'acme/reasoner']),
        input: rng.chance(0.5) ? 'Hello' : [{ role: 'user', content: [{ type: 'input_text', text: 'Hello' }] }],
        max_output_tokens: rng.int(1, 64),
        ...(stream ? { stream: true } : {}),
      };
    case '/v1/messages':
      return {
        model: rng.pick(['beta-labs/sonnet-ish', 'acme/chat-big']),
        max_tokens: rng.int(1, 64),
        messages: [{ role: 'user', content: 'Hello' }],
        ...(rng.chance(0.3) ? { system: 'Be brief.' } : {}),
        ...(stream ? { stream: true } : {}),
      };
    default:
      return { model: 'acme/painter', prompt: 'a cat', n: 1, size: '1024x1024', ...(stream ? { stream: true } : {}) };
  }
}

interface Part {
  name: string;
  value: Buffer;
  filename?: string;
  contentType?: string;
}

/** An image-edit upload: the usual parts, then reordered, dropped, repeated, oversized or mangled. */
function multipartBody(rng: Rng, labels: string[], large = false): { body: Buffer; contentType: string } {
  const boundary = rng.chance(0.9)
    ? `fz${rng.int(0, 1e9).toString(36)}`
    : rng.pick(['', 'a b', '"q"', 'x'.repeat(200), '----', 'é']);
  let parts: Part[] = [
    { name: 'model', value: Buffer.from('acme/painter') },
    { name: 'prompt', value: Buffer.from('make it blue') },
    { name: 'n', value: Buffer.from('1') },
    // Large now and then: past the upload limit, and past the point where the server stops reading
    // ahead (an early answer must not be followed by the body reader touching the reply).
    {
      name: 'image',
      value: pngLike(rng, large || rng.chance(0.25) ? rng.int(256 * 1024, 1536 * 1024) : rng.int(64, 4096)),
      filename: 'in.png',
      contentType: 'image/png',
    },
  ];
  if (rng.chance(0.2)) parts.push({ name: 'stream', value: Buffer.from(rng.pick(['true', 'false', '1', 'yes'])) });
  if (rng.chance(0.2))
    parts.push({
      name: 'mask',
      value: pngLike(rng, rng.int(64, 2048)),
      filename: 'mask.png',
      contentType: 'image/png',
    });
  for (let i = rng.int(0, 3); i > 0; i--) {
    const what = rng.int(0, 6);
    if (what === 0) {
      parts = parts.filter((p) => p.name !== 'model');
      labels.push('no-model');
    } else if (what === 1) {
      const m = parts.findIndex((p) => p.name === 'model');
      if (m !== -1) parts.push(...parts.splice(m, 1));
      labels.push('model-last');
    } else if (what === 2) {
      parts.splice(rng.int(0, parts.length), 0, {
        name: 'model',
        value: Buffer.from(rng.pick(['acme/chat-small', 'acme/painter', '', 'nope/x'])),
      });
      labels.push('model-twice');
    } else if (what === 3) {
      const v = rng.pick(EDGE_NUMBERS);
      parts = parts.map((p) => (p.name === 'n' ? { ...p, value: Buffer.from(v) } : p));
      labels.push(`n=${v}`);
    } else if (what === 4) {
      parts = parts.map((p) =>
        p.name === 'prompt'
          ? { ...p, value: rng.chance(0.5) ? Buffer.alloc(rng.int(0, 200_000), 'p') : Buffer.alloc(0) }
          : p,
      );
      labels.push('prompt-size');
    } else if (what === 5) {
      parts.splice(rng.int(0, parts.length), 0, {
        name: rng.pick(['image', 'image[]', '', 'x"y', 'model"']),
        value: rng.bytes(rng.int(0, 64)),
        filename: rng.pick(['a.png', '', 'a"b', '../x']),
      });
      labels.push('extra-part');
    } else {
      parts = parts.filter((p) => p.name !== rng.pick(['prompt', 'image', 'n']));
      labels.push('drop-part');
    }
  }
  const chunks: Buffer[] = [];
  if (rng.chance(0.05)) chunks.push(Buffer.from('preamble junk\r\n'));
  for (const p of parts) {
    let head = `--${boundary}\r\nContent-Disposition: form-data; name="${p.name}"${p.filename !== undefined ? `; filename="${p.filename}"` : ''}\r\n`;
    if (p.contentType) head += `Content-Type: ${p.contentType}\r\n`;
    if (rng.chance(0.03)) {
      head = head.replace('\r\n', rng.pick(['\n', '', '\r\n\r\n']));
      labels.push('mangled-part-head');
    }
    chunks.push(Buffer.from(head + '\r\n', 'latin1'), p.value, Buffer.from('\r\n'));
  }
  if (rng.chance(0.95)) chunks.push(Buffer.from(`--${boundary}--\r\n`, 'latin1'));
  else labels.push('no-closing-boundary');
  let body: Buffer = Buffer.concat(chunks);
  if (rng.chance(0.1)) {
    body = mutateBytes(rng, body);
    labels.push('bytes');
  }
  const quoted = rng.chance(0.1) ? `"${boundary}"` : boundary;
  const contentType = rng.chance(0.95)
    ? `multipart/form-data; boundary=${quoted}`
    : rng.pick(['multipart/form-data', 'application/json', `multipart/mixed; boundary=${boundary}`]);
  return { body, contentType };
}

/** Bytes that start like a PNG (the simulator does not decode them). */
function pngLike(rng: Rng, size: number): Buffer {
  const out = Buffer.alloc(size, rng.int(0, 255));
  Buffer.from('89504e470d0a1a0a', 'hex').copy(out, 0, 0, Math.min(8, size));
  return out;
}

export interface BodyCase extends CaseSpec {
  endpoint: Endpoint;
  /** The request's bytes with an empty key (`Bearer ` then CRLF): `casesBytes` puts a database's key in. */
  bytes: Buffer;
  /** Where the bytes are split into writes (positions in `bytes`), and the pause before each piece. */
  cuts: number[];
  delays: number[];
  seed: number;
}

/**
 * A body the gateway answers and then closes on at once when the answer comes before its end
 * (docs/api.md, "HTTP transport"): any chunked body, or a length declared more than
 * DROPPED_BODY_BYTES past the limit. A client still sending may then see the connection reset before
 * it reads the answer: documented, not a finding.
 */
export function closesUnread(c: { endpoint: string; bytes: Buffer }): boolean {
  const headEnd = c.bytes.indexOf('\r\n\r\n');
  if (headEnd === -1) return false;
  const head = c.bytes.subarray(0, headEnd).toString('latin1').toLowerCase();
  const cap =
    c.endpoint === '/v1/images/edits' ? CLIENT_BODY_LIMITS.max_upload_bytes : CLIENT_BODY_LIMITS.max_body_bytes;
  const declared = /\r\ncontent-length: *(\d+)/.exec(head);
  if (declared) return !restIsBounded(Number(declared[1]), cap);
  // A chunked body answered before its end (over the limit, or refused early) has no bound.
  return head.includes('\r\ntransfer-encoding: chunked');
}

/** The bytes a case sends with `key` in place, and its writes. */
export function caseWrites(
  c: { bytes: Buffer; cuts: number[]; delays: number[] },
  key: string,
): { bytes: Buffer; steps: WriteStep[] } {
  const at = c.bytes.indexOf(KEY_SLOT);
  if (at === -1)
    return { bytes: c.bytes, steps: splitAt(c.bytes, c.cuts).map((b, i) => ({ bytes: b, delayMs: c.delays[i] ?? 0 })) };
  const insertAt = at + KEY_SLOT.length - 2;
  const bytes = Buffer.concat([c.bytes.subarray(0, insertAt), Buffer.from(key, 'latin1'), c.bytes.subarray(insertAt)]);
  const cuts = c.cuts.map((x) => (x > insertAt ? x + key.length : x));
  return { bytes, steps: splitAt(bytes, cuts).map((b, i) => ({ bytes: b, delayMs: c.delays[i] ?? 0 })) };
}

/** Where a case's key goes. */
const KEY_SLOT = Buffer.from('Authorization: Bearer \r\n');

/** Every 16th case (from the 9th): an upload of 256 KiB–1.5 MiB answered before it is read (no key,
 *  a wrong key): the rest of a streamed body arriving after the answer is a path random cases reach
 *  only now and then. */
function earlyAnswerCase(n: number): boolean {
  return n % 16 === 8;
}

export function buildBodyCase(seed: number, n: number, ctx: MutationContext): BodyCase {
  const rng = Rng.forCase(seed, 'client-body', n);
  const directed = earlyAnswerCase(n);
  const endpoint = directed ? '/v1/images/edits' : rng.pick(ENDPOINTS);
  const labels: string[] = [endpoint];
  let body: Buffer;
  let contentType = 'application/json';
  if (endpoint === '/v1/images/edits') {
    ({ body, contentType } = multipartBody(rng, labels, directed));
  } else {
    const root = { node: fromValue(template(rng, endpoint)) };
    labels.push(...mutateJson(rng, root, ctx));
    body = serialise(root.node);
    if (rng.chance(0.25)) {
      body = mutateBytes(rng, body);
      labels.push('bytes');
    }
  }
  const headers: [string, string][] = [['Host', 'localhost']];
  // Uploads get early answers (no key, a wrong key) more often: what happens to the rest of a
  // streamed body after the answer is the point there.
  const early = endpoint === '/v1/images/edits' ? 3 : 1;
  const auth = directed
    ? rng.pick(['missing', 'invalid'] as const)
    : rng.weighted([
        ['valid', 92],
        ['missing', 3 * early],
        ['invalid', 5 * early],
      ] as const);
  if (auth === 'valid') headers.push(['Authorization', 'Bearer ']);
  else if (auth === 'invalid') headers.push(['Authorization', 'Bearer sk-pi-not-a-key']);
  if (auth !== 'valid') labels.push(`key-${auth}`);
  if (rng.chance(0.05)) {
    contentType = rng.pick([
      'text/plain',
      'application/x-www-form-urlencoded',
      '',
      'application/json; charset=latin1',
      'multipart/form-data; boundary=x',
      'application/json',
    ]);
    labels.push(`content-type:${contentType || 'empty'}`);
  }
  headers.push(['Content-Type', contentType]);
  let bytes: Buffer;
  if (rng.chance(0.05)) {
    // Chunked upload of the same body.
    const chunks = splitAt(body, rng.cuts(body.length, rng.int(1, 5))).filter((c) => c.length > 0);
    const framed = chunks.map((c) =>
      Buffer.concat([Buffer.from(`${c.length.toString(16)}\r\n`), c, Buffer.from('\r\n')]),
    );
    bytes = Buffer.concat([
      requestBytes('POST', endpoint, [...headers, ['Transfer-Encoding', 'chunked']], null),
      ...framed,
      Buffer.from('0\r\n\r\n'),
    ]);
    labels.push('chunked');
  } else {
    bytes = requestBytes('POST', endpoint, headers, body);
  }
  let cuts: number[] = [];
  let delays: number[] = [];
  if (rng.chance(0.3)) {
    cuts = rng.cuts(bytes.length, rng.int(1, 5));
    delays = [0, ...cuts.map(() => rng.int(0, 30))];
    labels.push('split');
  }
  labels.push(`${body.length}B`);
  return { n, endpoint, bytes, cuts, delays, seed, label: labels.join(' '), files: () => ({}) };
}

/** The files that replay a case: the exact bytes sent (with the key of the run), its writes, how it was made. */
export function bodyCaseFiles(c: BodyCase, key: string, observed: object | undefined): FindingFiles {
  const w = caseWrites(c, key);
  return {
    'request.bin': w.bytes,
    'meta.json': {
      target: 'client-body',
      seed: c.seed,
      case: c.n,
      label: c.label,
      key,
      writes: w.steps.map((s) => ({ bytes: s.bytes.length, delayMs: s.delayMs ?? 0 })),
      replay: 'npm run fuzz -- --replay <this directory>',
    },
    ...(observed === undefined ? {} : { 'observed.json': observed }),
  };
}

/** Campaign-wide facts the mutations draw from. */
export function mutationContext(models: string[], platforms: string[]): MutationContext {
  return { models, platforms, maxBytes: CLIENT_BODY_LIMITS.max_body_bytes };
}

export const clientBody: Target = {
  name: 'client-body',
  describe: 'mutated request bodies on the five inference endpoints (simulator upstream)',
  async run(opts: TargetOptions): Promise<TargetSummary> {
    const started = performance.now();
    const sim: Simulator = await startSimulator({ record: false });
    const covDir = opts.coverage ? join(opts.workDir, 'coverage', 'client-body') : null;
    const session = new GatewaySession(join(opts.workDir, 'client-body'), () => sim.url, covDir, {
      limits: CLIENT_BODY_LIMITS,
    });
    const models = session.config.models.flatMap((m) => [m.id, ...m.aliases]);
    const ctx = mutationContext(
      models,
      session.config.platforms.map((p) => p.id),
    );
    const slowest: { ms: number; label: string }[] = [];
    let closedUnanswered = 0;
    let cases = 0;
    try {
      cases = await runHttpCampaign<BodyCase>({
        target: 'client-body',
        opts,
        session,
        concurrency: opts.concurrency ?? 4,
        build: (n) => {
          const c = buildBodyCase(opts.seed, n, ctx);
          // A crash's files carry the key of the process the case ran on.
          c.files = () =>
            bodyCaseFiles(c, session.generations[session.generations.length - 1]?.db.key ?? '', undefined);
          return c;
        },
        async exec(c, g, quiet) {
          const r = await exchange({
            port: g.child.port,
            steps: caseWrites(c, g.db.key).steps,
            deadlineMs: opts.hangMs,
            writeAll: true,
          });
          if (quiet) return;
          const files = (): FindingFiles =>
            bodyCaseFiles(c, g.db.key, {
              ms: r.ms,
              answers: r.answers.map((a) => ({
                status: a.status,
                headers: a.headers,
                body: a.body.subarray(0, 4096).toString('utf8'),
              })),
              closedByServer: r.closedByServer,
              timedOut: r.timedOut,
              error: r.error,
            });
          const a = r.answers[0];
          if (a) {
            if (a.status >= 500)
              opts.findings.record('client-body', '5xx', `${statusSignature(a)} on ${c.endpoint}`, c.label, files());
            noteSlow(slowest, r.ms, c.label);
          } else if (r.timedOut) {
            opts.findings.record(
              'client-body',
              'hang',
              `no answer within ${opts.hangMs} ms on ${c.endpoint}`,
              c.label,
              files(),
            );
          } else if (g.child.exit() === null && !closesUnread(c)) {
            // Every case is a well-formed HTTP request (only its body is mutated): it must be answered.
            closedUnanswered++;
            opts.findings.record(
              'client-body',
              'unanswered',
              `connection closed without an answer on ${c.endpoint}`,
              c.label,
              files(),
            );
          }
        },
      });
    } catch (err) {
      await session.kill();
      await sim.close();
      throw err;
    }
    const checks = await session.finish();
    await sim.close();
    const ledger = ledgerNotes('client-body', checks, opts.findings);
    const coverage = covDir ? await coverageReport(covDir, join(opts.workDir, 'coverage-report', 'client-body')) : null;
    return {
      target: 'client-body',
      cases,
      seconds: (performance.now() - started) / 1000,
      hits: hitsFrom(opts.findings, 'client-body'),
      ledgerVerify: ledger.verify,
      openHolds: ledger.openHolds,
      settlementsChecked: null,
      notes: [
        `connections closed without an answer: ${closedUnanswered}`,
        `gateway processes: ${session.generations.length}`,
        ...ledger.notes,
        ...slowest.map((s) => `slow answer ${s.ms.toFixed(0)} ms: ${s.label}`),
      ],
      coverage,
    };
  },
};

/** Keeps the three slowest answers. */
export function noteSlow(list: { ms: number; label: string }[], ms: number, label: string): void {
  list.push({ ms, label });
  list.sort((x, y) => y.ms - x.ms);
  list.length = Math.min(list.length, 3);
}
