// Target `client-http`: raw bytes over node:net at the HTTP layer. Each case starts from a valid
// chat request (a valid key and body) and breaks its framing: the request line (method, target,
// version, absolute-form, HTTP/1.0), header names and values carrying every byte value 0x00–0xff
// (swept in turn, and at random), header lines without a colon, obs-fold, duplicate or conflicting
// Content-Length and Transfer-Encoding, bad chunk sizes, pipelined requests, slow writes and early
// closes.
// Oracles: the process never exits; each connection is answered or closed within the hang bound;
// no 5xx; and after each case a well-formed request on a new connection is answered 200 with a
// completion (the liveness probe — it also catches a breaker opened by a client's bytes).
import { join } from 'node:path';
import { startSimulator, type Simulator } from '../../src/simulator/server.ts';
import { mutateBytes } from '../lib/bytes-mutate.ts';
import { coverageReport } from '../lib/coverage.ts';
import type { FindingFiles } from '../lib/findings.ts';
import { type CaseSpec, runHttpCampaign } from '../lib/http-campaign.ts';
import { type ExchangeResult, type HttpAnswer, type WriteStep, exchange, statusSignature } from '../lib/raw-http.ts';
import { Rng, splitAt } from '../lib/rng.ts';
import { GatewaySession } from '../lib/session.ts';
import { type Target, type TargetOptions, type TargetSummary, hitsFrom } from '../lib/target.ts';
import { ledgerNotes } from './ledger-oracles.ts';

/** Upstream limits well above the simulator's answer time (see CLIENT_BODY_LIMITS). */
export const CLIENT_HTTP_LIMITS = {
  drain_timeout_ms: 5000,
  first_byte_timeout_ms: 15_000,
  stream_idle_timeout_ms: 15_000,
};

/**
 * uWS answers a request line it cannot take as HTTP/1.1 (HTTP/1.0, an absolute-form target, a
 * stray byte in the line) with its own `505 HTTP Version Not Supported` before the gateway sees the
 * request: documented in the README's choices, and not an answer the gateway can change. It is the
 * only 5xx allowed here, and only as uWS's own answer (no X-Pi-Trace-Id: the gateway never saw it).
 */
function libraryVersionRefusal(a: HttpAnswer): boolean {
  return a.status === 505 && !a.headers.some(([k]) => k.toLowerCase() === 'x-pi-trace-id');
}

/** Where a case's key goes: replaced by the running database's key when the case is sent. */
const KEY = '\u0000KEY\u0000';

const BODY = JSON.stringify({ model: 'acme/chat-small', messages: [{ role: 'user', content: 'hi' }], max_tokens: 8 });

/** The headers of the valid request every case starts from (Content-Length added last). */
function baseHeaders(): [string, string][] {
  return [
    ['Host', 'localhost'],
    ['Authorization', `Bearer ${KEY}`],
    ['Content-Type', 'application/json'],
  ];
}

/** Headers whose values the gateway reads, forwards or logs: where a byte matters most. */
const HEADER_TARGETS = [
  'X-Title',
  'HTTP-Referer',
  'X-Pi-Session-Id',
  'Authorization',
  'Content-Type',
  'X-Custom',
  'User-Agent',
  'Accept',
  'Origin',
  'X-Pi-Trace-Id',
  'Traceparent',
] as const;

interface Request {
  line: string;
  headers: [string, string][];
  /** Header lines written verbatim after the others (no colon, folded, …). */
  rawLines: string[];
  body: Buffer;
  /** Content-Length written from the body (false: the case frames the body itself). */
  autoLength: boolean;
}

function baseRequest(): Request {
  return {
    line: 'POST /v1/chat/completions HTTP/1.1',
    headers: baseHeaders(),
    rawLines: [],
    body: Buffer.from(BODY),
    autoLength: true,
  };
}

function encode(r: Request): Buffer {
  const lines = [r.line, ...r.headers.map(([k, v]) => `${k}: ${v}`), ...r.rawLines];
  if (r.autoLength) lines.push(`Content-Length: ${r.body.length}`);
  return Buffer.concat([Buffer.from(lines.join('\r\n') + '\r\n\r\n', 'latin1'), r.body]);
}

type Mutator = (rng: Rng, r: Request, n: number) => string;

/** Every byte value, the ones a header parser or a forwarder treats specially first: DEL, NUL, the
 *  line ends, other C0 controls, the bytes that start or end UTF-8 sequences, separators. */
const SWEEP: readonly number[] = (() => {
  const first = [
    0x7f, 0x00, 0x0d, 0x0a, 0x09, 0x0b, 0x0c, 0x1b, 0x80, 0xc3, 0xe9, 0xff, 0xfe, 0x20, 0x22, 0x3a, 0x2c, 0x3b, 0x5c,
  ];
  return [...first, ...Array.from({ length: 256 }, (_, b) => b).filter((b) => !first.includes(b))];
})();

/** Puts `byte` into a header's name or value at `where`. */
function putByte(r: Request, name: string, byte: number, inName: boolean, where: 'start' | 'middle' | 'end'): string {
  const ch = String.fromCharCode(byte);
  const base =
    name === 'Authorization'
      ? `Bearer ${KEY}`
      : name === 'Content-Type'
        ? 'application/json'
        : name === 'X-Pi-Session-Id'
          ? 'session-1'
          : 'My App';
  const put = (x: string): string =>
    where === 'start' ? ch + x : where === 'end' ? x + ch : x.slice(0, 3) + ch + x.slice(3);
  r.headers = r.headers.filter(([k]) => k !== name);
  r.headers.push(inName ? [put(name), base] : [name, put(base)]);
  return `byte 0x${byte.toString(16).padStart(2, '0')} in ${name} ${inName ? 'name' : 'value'} (${where})`;
}

/** Every 4th case: the sweep's next byte in a header value (by case number: the bytes in SWEEP's
 *  order, each header in turn for 1,024 cases), so a campaign meets every byte in every header. */
const sweepByte: Mutator = (_rng, r, n) => {
  const k = Math.floor(n / 4);
  return putByte(
    r,
    HEADER_TARGETS[Math.floor(k / 256) % HEADER_TARGETS.length] as string,
    SWEEP[k % 256] as number,
    false,
    'middle',
  );
};

/** A random byte in a random header's name or value. */
const headerByte: Mutator = (rng, r) =>
  putByte(
    r,
    rng.pick(HEADER_TARGETS),
    rng.int(0, 255),
    rng.chance(0.25),
    rng.pick(['start', 'middle', 'end'] as const),
  );

const requestLine: Mutator = (rng, r) => {
  const method = rng.pick([
    'POST',
    'GET',
    'HEAD',
    'PUT',
    'DELETE',
    'OPTIONS',
    'PATCH',
    'CONNECT',
    'TRACE',
    'post',
    'P0ST',
    'POST\u0000',
    '',
    'X'.repeat(rng.int(1, 5000)),
  ]);
  const target = rng.pick([
    '/v1/chat/completions',
    '/v1/chat/completions?x=1',
    '//v1/chat/completions',
    '/v1/chat/completions/',
    '/v1/chat/%63ompletions',
    '/v1/../v1/chat/completions',
    'http://localhost/v1/chat/completions',
    'http://other.example:1/v1/chat/completions',
    '*',
    '',
    '/v1/chat/completions#frag',
    '/' + 'a'.repeat(rng.int(1, 70_000)),
    '/v1/chat/completions?' + 'q='.repeat(rng.int(1, 20_000)),
    '/v1/models',
    '/v1/models/acme/chat-small/endpoints',
    `/v1/chat/completions${String.fromCharCode(rng.int(0, 255))}`,
  ]);
  const version = rng.pick([
    'HTTP/1.1',
    'HTTP/1.0',
    'HTTP/1.2',
    'HTTP/2.0',
    'HTTP/0.9',
    'http/1.1',
    'HTTP/1.1 ',
    'HTTP/11',
    '',
  ]);
  const sep = rng.chance(0.9) ? ' ' : rng.pick(['  ', '\t', '\u000b']);
  r.line = [method, target, version].join(sep);
  if (version === 'HTTP/1.0' && rng.chance(0.5)) r.headers = r.headers.filter(([k]) => k !== 'Host');
  return `request line ${JSON.stringify(r.line.slice(0, 80))}`;
};

const framing: Mutator = (rng, r) => {
  const kind = rng.int(0, 11);
  const len = r.body.length;
  switch (kind) {
    case 0:
      r.autoLength = false;
      r.headers.push(['Content-Length', String(len)], ['Content-Length', String(rng.pick([len, len + 1, 0, len - 1]))]);
      return 'duplicate content-length';
    case 1:
      r.autoLength = false;
      r.headers.push([
        'Content-Length',
        rng.pick([
          `${len}, ${len}`,
          `+${len}`,
          ` ${len} `,
          `0x${len.toString(16)}`,
          '-1',
          '99999999999999999999',
          '',
          `${len}a`,
          '1e3',
        ]),
      ]);
      return 'odd content-length';
    case 2: {
      r.autoLength = rng.chance(0.5);
      r.headers.push(['Transfer-Encoding', 'chunked']);
      r.body = chunked(r.body, rng);
      return `transfer-encoding chunked${r.autoLength ? ' with content-length' : ''}`;
    }
    case 3:
      r.autoLength = false;
      r.headers.push([
        'Transfer-Encoding',
        rng.pick([
          'gzip, chunked',
          'chunked, gzip',
          'identity',
          'chunked, chunked',
          'xchunked',
          ' chunked',
          'CHUNKED',
          'chunked;q=1',
        ]),
      ]);
      r.body = chunked(r.body, rng);
      return 'odd transfer-encoding';
    case 4: {
      r.autoLength = false;
      r.headers.push(['Transfer-Encoding', 'chunked']);
      const size = rng.pick([
        '-1',
        'ffffffffffffffff',
        '1g',
        '',
        ' 5',
        '5 ',
        '5;ext=1',
        '0x5',
        '10000000000',
        String(len + 5),
      ]);
      r.body = Buffer.concat([
        Buffer.from(`${size}\r\n`),
        r.body,
        Buffer.from(rng.pick(['\r\n0\r\n\r\n', '\r\n', '0\r\n\r\n', '\n0\n\n'])),
      ]);
      return `bad chunk size ${JSON.stringify(size)}`;
    }
    case 5:
      r.rawLines.push(
        rng.pick([
          'X-No-Colon',
          'X-No-Colon value',
          ': empty-name',
          'X-Space : v',
          'X-Tab\t: v',
          ' X-Leading-Space: v',
          '\u0000: v',
        ]),
      );
      return 'header line without a proper name/colon';
    case 6:
      r.headers.push(['X-Title', 'folded']);
      r.rawLines.push(rng.pick([' continued', '\tcontinued', ' ', '\t']));
      return 'obs-fold';
    case 7: {
      const n = rng.pick([100, 200, 1000, 5000]);
      for (let i = 0; i < n; i++) r.headers.push([`X-H${i}`, 'v']);
      return `${n} headers`;
    }
    case 8:
      r.headers.push(['X-Big', 'v'.repeat(rng.pick([4096, 8192, 16_384, 65_536, 200_000]))]);
      return 'huge header';
    case 9:
      r.headers.push(['Expect', rng.pick(['100-continue', '100-Continue', 'nonsense'])]);
      return 'expect';
    case 10:
      r.headers.push(
        ['Connection', rng.pick(['close', 'keep-alive', 'upgrade', 'Upgrade, HTTP2-Settings'])],
        ...(rng.chance(0.5) ? ([['Upgrade', rng.pick(['websocket', 'h2c'])]] as [string, string][]) : []),
      );
      return 'connection/upgrade';
    default:
      r.headers = r.headers.filter(([k]) => k !== 'Host' || rng.chance(0.3));
      if (rng.chance(0.5)) r.headers.push(['Host', rng.pick(['a', '', 'b:99999', 'x'.repeat(1000)])]);
      return 'host';
  }
};

function chunked(body: Buffer, rng: Rng): Buffer {
  const pieces = splitAt(body, rng.cuts(body.length, rng.int(0, 4))).filter((p) => p.length > 0);
  return Buffer.concat([
    ...pieces.map((p) => Buffer.concat([Buffer.from(`${p.length.toString(16)}\r\n`), p, Buffer.from('\r\n')])),
    Buffer.from('0\r\n\r\n'),
  ]);
}

export interface HttpCase extends CaseSpec {
  /** The bytes with the key slot (`KEY`) unfilled. */
  bytes: Buffer;
  cuts: number[];
  delays: number[];
  /** Answers to wait for (pipelined requests). */
  expect: number;
  halfClose: boolean;
  abortAfterMs: number | null;
  head: boolean;
  seed: number;
}

export function buildHttpCase(seed: number, n: number): HttpCase {
  const rng = Rng.forCase(seed, 'client-http', n);
  if (n % 4 === 0) {
    // A sweep case changes nothing else, so what the byte does is all that is seen.
    const r = baseRequest();
    const label = sweepByte(rng, r, n);
    return {
      n,
      bytes: encode(r),
      cuts: [],
      delays: [],
      expect: 1,
      halfClose: false,
      abortAfterMs: null,
      head: false,
      seed,
      label,
      files: () => ({}),
    };
  }
  const labels: string[] = [];
  const requests: Request[] = [];
  const count = rng.chance(0.1) ? rng.int(2, 4) : 1;
  for (let i = 0; i < count; i++) {
    const r = baseRequest();
    for (let m = i === 0 || rng.chance(0.5) ? rng.int(1, 2) : 0; m > 0; m--) {
      const f = rng.weighted<Mutator>([
        [headerByte, 5],
        [requestLine, 2],
        [framing, 4],
      ]);
      labels.push(f(rng, r, n));
    }
    requests.push(r);
  }
  if (count > 1) labels.push(`pipelined ×${count}`);
  let bytes: Buffer = Buffer.concat(requests.map(encode));
  if (rng.chance(0.1)) {
    bytes = mutateBytes(rng, bytes);
    labels.push('bytes');
  }
  let cuts: number[] = [];
  let delays: number[] = [];
  const style = rng.weighted([
    ['one', 70],
    ['split', 20],
    ['slow', 5],
    ['early-close', 5],
  ] as const);
  if (style === 'split') {
    cuts = rng.cuts(bytes.length, rng.int(1, 6));
    delays = [0, ...cuts.map(() => rng.int(0, 50))];
  } else if (style === 'slow') {
    // At most ~1.5 s of pauses in all.
    const pieces = Math.min(bytes.length - 1, rng.int(5, 60));
    cuts = rng.cuts(bytes.length, pieces);
    delays = [0, ...cuts.map(() => rng.int(0, Math.floor(1500 / Math.max(1, pieces))))];
  } else if (style === 'early-close') {
    bytes = bytes.subarray(0, rng.int(0, bytes.length));
  }
  if (style !== 'one') labels.push(style);
  const head = requests[0]?.line.startsWith('HEAD ') ?? false;
  return {
    n,
    bytes,
    cuts,
    delays,
    expect: count,
    halfClose: rng.chance(0.1),
    abortAfterMs: style === 'early-close' ? rng.int(0, 200) : null,
    head,
    seed,
    label: labels.join('; '),
    files: () => ({}),
  };
}

/** The case's writes with `key` in the key slot. */
export function httpWrites(c: HttpCase, key: string): { bytes: Buffer; steps: WriteStep[] } {
  const slot = Buffer.from(KEY, 'latin1');
  let bytes = c.bytes;
  let cuts = c.cuts;
  for (let at = bytes.indexOf(slot); at !== -1; at = bytes.indexOf(slot, at + key.length)) {
    bytes = Buffer.concat([bytes.subarray(0, at), Buffer.from(key, 'latin1'), bytes.subarray(at + slot.length)]);
    const shift = key.length - slot.length;
    cuts = cuts.map((x) => (x > at ? Math.max(at, x + shift) : x));
  }
  return { bytes, steps: splitAt(bytes, cuts).map((b, i) => ({ bytes: b, delayMs: c.delays[i] ?? 0 })) };
}

export function httpCaseFiles(c: HttpCase, key: string, observed: object | undefined): FindingFiles {
  const w = httpWrites(c, key);
  return {
    'request.bin': w.bytes,
    'meta.json': {
      target: 'client-http',
      seed: c.seed,
      case: c.n,
      label: c.label,
      key,
      writes: w.steps.map((s) => ({ bytes: s.bytes.length, delayMs: s.delayMs ?? 0 })),
      expect: c.expect,
      halfClose: c.halfClose,
      abortAfterMs: c.abortAfterMs,
      head: c.head,
      replay: 'npm run fuzz -- --replay <this directory>',
    },
    ...(observed === undefined ? {} : { 'observed.json': observed }),
  };
}

function observedOf(r: ExchangeResult): object {
  return {
    ms: r.ms,
    answers: r.answers.map((a) => ({
      status: a.status,
      headers: a.headers,
      body: a.body.subarray(0, 4096).toString('utf8'),
    })),
    closedByServer: r.closedByServer,
    timedOut: r.timedOut,
    partial: r.partial,
    error: r.error,
  };
}

/** The liveness probe: a well-formed chat request on a new connection, answered 200 with a completion. */
export async function probe(
  port: number,
  key: string,
  deadlineMs: number,
): Promise<{ ok: boolean; signature: string; result: ExchangeResult }> {
  const bytes = Buffer.from(
    `POST /v1/chat/completions HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(BODY)}\r\n\r\n${BODY}`,
    'latin1',
  );
  const r = await exchange({ port, steps: [{ bytes }], deadlineMs });
  const a = r.answers[0];
  let ok = false;
  if (a && a.status === 200) {
    try {
      ok = Array.isArray((JSON.parse(a.body.toString('utf8')) as { choices?: unknown }).choices);
    } catch {
      ok = false;
    }
  }
  const signature = a
    ? a.status === 200
      ? '200 without a completion'
      : statusSignature(a)
    : r.timedOut
      ? 'no answer'
      : 'closed without an answer';
  return { ok, signature, result: r };
}

export const clientHttp: Target = {
  name: 'client-http',
  describe: 'raw HTTP/1.1 framing, request lines and header bytes over node:net (simulator upstream)',
  async run(opts: TargetOptions): Promise<TargetSummary> {
    const started = performance.now();
    const sim: Simulator = await startSimulator({ record: false });
    const covDir = opts.coverage ? join(opts.workDir, 'coverage', 'client-http') : null;
    const session = new GatewaySession(join(opts.workDir, 'client-http'), () => sim.url, covDir, {
      limits: CLIENT_HTTP_LIMITS,
    });
    let closedUnanswered = 0;
    let answered = 0;
    let probes = 0;
    let cases = 0;
    try {
      cases = await runHttpCampaign<HttpCase>({
        target: 'client-http',
        opts,
        session,
        // Many at once: a case the server leaves unanswered waits out its idle close (8–12 s).
        concurrency: opts.concurrency ?? 32,
        build: (n) => {
          const c = buildHttpCase(opts.seed, n);
          c.files = () =>
            httpCaseFiles(c, session.generations[session.generations.length - 1]?.db.key ?? '', undefined);
          return c;
        },
        async exec(c, g, quiet) {
          const r = await exchange({
            port: g.child.port,
            steps: httpWrites(c, g.db.key).steps,
            deadlineMs: opts.hangMs,
            writeAll: true,
            expect: c.expect,
            halfClose: c.halfClose,
            head: c.head,
            ...(c.abortAfterMs !== null ? { abortAfterMs: c.abortAfterMs } : {}),
          });
          if (quiet) return;
          for (const a of r.answers)
            if (a.status >= 500 && !libraryVersionRefusal(a))
              opts.findings.record(
                'client-http',
                '5xx',
                statusSignature(a),
                c.label,
                httpCaseFiles(c, g.db.key, observedOf(r)),
              );
          if (r.answers.length > 0) answered++;
          else if (r.timedOut)
            opts.findings.record(
              'client-http',
              'hang',
              `connection neither answered nor closed within ${opts.hangMs} ms`,
              c.label,
              httpCaseFiles(c, g.db.key, observedOf(r)),
            );
          else if (!r.aborted && g.child.exit() === null) closedUnanswered++;
        },
        async after(c, g) {
          probes++;
          const p = await probe(g.child.port, g.db.key, Math.min(opts.hangMs, 15_000));
          if (!p.ok && g.child.exit() === null)
            opts.findings.record('client-http', 'liveness', `probe after a case: ${p.signature}`, c.label, {
              ...httpCaseFiles(c, g.db.key, undefined),
              'probe.json': observedOf(p.result),
            });
        },
      });
    } catch (err) {
      await session.kill();
      await sim.close();
      throw err;
    }
    const checks = await session.finish();
    await sim.close();
    const ledger = ledgerNotes('client-http', checks, opts.findings);
    const coverage = covDir ? await coverageReport(covDir, join(opts.workDir, 'coverage-report', 'client-http')) : null;
    return {
      target: 'client-http',
      cases,
      seconds: (performance.now() - started) / 1000,
      hits: hitsFrom(opts.findings, 'client-http'),
      ledgerVerify: ledger.verify,
      openHolds: ledger.openHolds,
      settlementsChecked: null,
      notes: [
        `cases answered: ${answered}; closed without an answer: ${closedUnanswered}; liveness probes: ${probes}`,
        `gateway processes: ${session.generations.length}`,
        ...ledger.notes,
      ],
      coverage,
    };
  },
};
