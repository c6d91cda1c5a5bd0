// `npm run fuzz -- --replay DIR`: runs one saved finding again, as it was saved.
//   client-body, client-http  the exact request bytes (the key swapped for a fresh database's), in the
//                             same writes, to a fresh `serve` child over the simulator; then, for
//                             client-http, the liveness probe
//   provider                  every case of the finding (a round: case-N/ folders) at once, each
//                             upstream attempt answered with the exact bytes saved in upstream.json;
//                             then the graceful stop, `ledger verify` and the open holds
//   parsers                   the input through its parser's checks at the saved split points (a
//                             `superlinear` finding: timed)
// Prints what happened; exits 1 when the finding's failure shows again, 0 when it does not.
import { existsSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startSimulator } from '../src/simulator/server.ts';
import { rawUpstream } from '../test/helpers/raw-upstream.ts';
import { type ExchangeResult, type WriteStep, exchange, statusSignature } from './lib/raw-http.ts';
import { GatewaySession, isCrashed } from './lib/session.ts';
import { readLedger } from './lib/ledger-check.ts';
import { CLIENT_BODY_LIMITS } from './targets/client-body.ts';
import { CLIENT_HTTP_LIMITS, probe } from './targets/client-http.ts';
import { SUBJECTS } from './targets/parser-subjects.ts';
import { PROVIDER_HEALTH, PROVIDER_LIMITS, perform } from './targets/provider.ts';
import type { UpstreamAction } from './targets/provider-answers.ts';

type Log = (line: string) => void;

interface Meta {
  target: string;
  key?: string;
  writes?: { bytes: number; delayMs: number }[];
  expect?: number;
  halfClose?: boolean;
  abortAfterMs?: number | null;
  head?: boolean;
  subject?: string;
  shape?: string;
  cuts?: number[];
  marker?: string;
  bound?: { nano: string | null };
}

function readMeta(dir: string): Meta {
  return JSON.parse(readFileSync(join(dir, 'meta.json'), 'utf8')) as Meta;
}

export async function replayFinding(dir: string, log: Log): Promise<number> {
  const meta = readMeta(dir);
  log(`replaying ${dir} (${meta.target})`);
  if (existsSync(join(dir, 'finding.txt'))) log(readFileSync(join(dir, 'finding.txt'), 'utf8').trim());
  if (meta.target === 'parsers') return replayParsers(dir, meta, log);
  if (meta.target === 'provider') return replayProvider(dir, log);
  return replayClient(dir, meta, log);
}

/** The case directories of a finding: itself, or its case-N/ folders (a provider round). */
function caseDirs(dir: string): string[] {
  const subs = readdirSync(dir, { withFileTypes: true }).filter((e) => e.isDirectory() && e.name.startsWith('case-'));
  return subs.length > 0 ? subs.map((e) => join(dir, e.name)) : [dir];
}

function swapKey(bytes: Buffer, oldKey: string | undefined, key: string): Buffer {
  if (!oldKey) return bytes;
  const from = Buffer.from(oldKey, 'latin1');
  const at = bytes.indexOf(from);
  return at === -1
    ? bytes
    : Buffer.concat([bytes.subarray(0, at), Buffer.from(key, 'latin1'), bytes.subarray(at + from.length)]);
}

function describe(r: ExchangeResult): string {
  const answers = r.answers.map((a) => statusSignature(a)).join(', ');
  return `${answers || 'no answer'}${r.closedByServer ? ', closed by the server' : ''}${r.timedOut ? ', timed out' : ''} (${r.ms.toFixed(0)} ms)`;
}

async function replayClient(dir: string, meta: Meta, log: Log): Promise<number> {
  const files = readdirSync(dir).filter((f) => f === 'request.bin' || /^case-\d+-request\.bin$/.test(f));
  const sim = await startSimulator({ record: false });
  const work = mkdtempSync(join(tmpdir(), 'pi-fuzz-replay-'));
  const session = new GatewaySession(work, () => sim.url, null, {
    limits: meta.target === 'client-http' ? CLIENT_HTTP_LIMITS : CLIENT_BODY_LIMITS,
  });
  let reproduced = false;
  try {
    for (const f of files) {
      const g = await session.child();
      const caseMeta =
        f === 'request.bin'
          ? meta
          : (JSON.parse(readFileSync(join(dir, f.replace('request.bin', 'meta.json')), 'utf8')) as Meta);
      const bytes = swapKey(readFileSync(join(dir, f)), caseMeta.key, g.db.key);
      const steps: WriteStep[] = [];
      let at = 0;
      for (const w of caseMeta.writes ?? [{ bytes: bytes.length, delayMs: 0 }]) {
        steps.push({ bytes: bytes.subarray(at, at + w.bytes), delayMs: w.delayMs });
        at += w.bytes;
      }
      if (at < bytes.length) steps.push({ bytes: bytes.subarray(at) });
      const r = await exchange({
        port: g.child.port,
        steps,
        deadlineMs: 30_000,
        writeAll: true,
        expect: caseMeta.expect ?? 1,
        halfClose: caseMeta.halfClose ?? false,
        head: caseMeta.head ?? false,
        ...(caseMeta.abortAfterMs ? { abortAfterMs: caseMeta.abortAfterMs } : {}),
      });
      log(`${f}: ${describe(r)}`);
      await new Promise((res) => setTimeout(res, 300));
      if (isCrashed(g)) {
        reproduced = true;
        log(`the gateway exited: ${JSON.stringify(g.child.exit())}\n${g.child.stderrTail().slice(-3000)}`);
        continue;
      }
      if (r.timedOut || r.answers.some((a) => a.status >= 500)) reproduced = true;
      if (meta.target === 'client-http') {
        const p = await probe(g.child.port, g.db.key, 15_000);
        log(`liveness probe: ${p.ok ? 'ok' : p.signature}`);
        if (!p.ok) reproduced = true;
      }
    }
  } finally {
    await session.finish().catch(() => session.kill());
    await sim.close();
  }
  log(reproduced ? 'reproduced' : 'not reproduced');
  return reproduced ? 1 : 0;
}

interface SavedAttempt {
  actions: ({ kind: 'write'; delayMs: number; base64: string } | { kind: 'end' | 'reset' | 'stall' })[];
}

async function replayProvider(dir: string, log: Log): Promise<number> {
  const cases = caseDirs(dir).map((d) => {
    const m = JSON.parse(readFileSync(join(d, 'meta.json'), 'utf8')) as Meta & { marker: string };
    const attempts = (
      JSON.parse(readFileSync(join(d, 'upstream.json'), 'utf8')) as { attempts: SavedAttempt[] }
    ).attempts.map((a): UpstreamAction[] =>
      a.actions.map((x) =>
        x.kind === 'write'
          ? { kind: 'write', delayMs: x.delayMs, bytes: Buffer.from(x.base64, 'base64') }
          : { kind: x.kind },
      ),
    );
    return { dir: d, meta: m, attempts, used: 0, request: readFileSync(join(d, 'request.bin')) };
  });
  const teardowns: (() => unknown)[] = [];
  const up = await rawUpstream({ teardown: (fn) => teardowns.push(fn) }, (ex) => {
    const c = cases.find((x) => ex.body.includes(x.meta.marker));
    const actions = c ? c.attempts[Math.min(c.used++, c.attempts.length - 1)] : undefined;
    if (!actions) {
      ex.write('HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n');
      return;
    }
    void perform(ex, actions);
  });
  const work = mkdtempSync(join(tmpdir(), 'pi-fuzz-replay-'));
  const session = new GatewaySession(work, () => up.url, null, { limits: PROVIDER_LIMITS, health: PROVIDER_HEALTH });
  let reproduced = false;
  try {
    const g = await session.child();
    const results = await Promise.all(
      cases.map((c) =>
        exchange({
          port: g.child.port,
          steps: [{ bytes: swapKey(c.request, c.meta.key, g.db.key) }],
          deadlineMs: 30_000,
        }),
      ),
    );
    for (const [i, r] of results.entries()) log(`${cases[i]?.dir}: ${describe(r)}`);
    if (results.some((r) => r.timedOut)) reproduced = true;
    await new Promise((res) => setTimeout(res, 300));
    if (isCrashed(g)) {
      reproduced = true;
      log(`the gateway exited: ${JSON.stringify(g.child.exit())}\n${g.child.stderrTail().slice(-3000)}`);
    }
    const checks = await session.finish();
    for (const chk of checks) {
      log(`ledger verify: ${chk.verify.ok ? 'ok' : chk.verify.output.trim()}`);
      const ledger = chk.ledger ?? readLedger(chk.generation.db.file);
      log(
        `open holds after the stop: ${ledger.openHolds.size}; settlements: ${ledger.settlements.map((s) => `${s.amountNano} nano-USD${s.details['estimated'] ? ' (estimated)' : ''}`).join(', ') || 'none'}`,
      );
      if (!chk.verify.ok || ledger.openHolds.size > 0) reproduced = true;
      const bounds = cases
        .map((c) => (c.meta.bound?.nano ? BigInt(c.meta.bound.nano) : null))
        .filter((b): b is bigint => b !== null);
      // biome-ignore lint/complexity/useMathMinMax: bigints; Math.max throws a TypeError on them.
      const largest = bounds.reduce((m, b) => (b > m ? b : m), 0n);
      if (bounds.length > 0 && ledger.settlements.some((s) => s.amountNano > largest)) {
        reproduced = true;
        log(`a settlement is above the largest bound of the cases (${largest} nano-USD)`);
      }
    }
  } finally {
    await session.kill();
    for (const fn of teardowns) await fn();
  }
  log(
    reproduced
      ? 'reproduced'
      : 'not reproduced (a finding that needs other requests in flight may need its whole round)',
  );
  return reproduced ? 1 : 0;
}

async function replayParsers(dir: string, meta: Meta, log: Log): Promise<number> {
  const subject = SUBJECTS.find((s) => s.name === meta.subject);
  if (!subject) throw new Error(`unknown parser subject ${meta.subject}`);
  const input = readFileSync(join(dir, 'input.bin'));
  if (meta.shape) {
    const shape = subject.shapes.find((s) => s.name === meta.shape);
    if (!shape) throw new Error(`unknown shape ${meta.shape}`);
    const t = performance.now();
    await shape.run(input);
    log(
      `${subject.name} / ${shape.name}: ${input.length} bytes in ${(performance.now() - t).toFixed(0)} ms (4 KiB reads)`,
    );
    return 0;
  }
  const problems = await subject.check(input, meta.cuts ?? []);
  for (const p of problems) log(`${p.oracle}: ${p.signature} — ${p.detail}`);
  log(problems.length > 0 ? 'reproduced' : 'not reproduced');
  return problems.length > 0 ? 1 : 0;
}
