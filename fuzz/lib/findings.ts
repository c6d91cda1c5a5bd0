// What a campaign found, per target and oracle, and the files that reproduce it. Each finding has a
// signature (what failed and how, without the case's random details: "503 provider_unavailable on
// /v1/chat/completions"), and the first few inputs of each signature are written under
//   OUT/findings/<target>/<oracle>/<signature-slug>/<n>/
// as the exact bytes the client sent (request.bin, or one file per write), the upstream's script
// (upstream.json: every byte the provider wrote, per attempt) and meta.json (seed, case, what was
// observed, how to replay). Later hits of a signature are only counted, so an hour-long campaign that
// re-finds one bug a thousand times writes a handful of directories.
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

/** Every oracle a target can name. */
export type Oracle =
  /** The gateway process exited on its own. */
  | 'crash'
  /** A request or connection got no answer and was not closed within the bound. */
  | 'hang'
  /** A well-formed request (only its body mutated) whose connection was closed without an answer. */
  | 'unanswered'
  /** A 5xx answer to a client's input (no upstream was told to fail). */
  | '5xx'
  /** A settlement above what the request could possibly have cost. */
  | 'over-bound'
  /** An estimated charge (no usage reported) above the request's hold. */
  | 'estimate-over-hold'
  /** A hold still open after a graceful stop. */
  | 'open-hold'
  /** A settled request without its request-log row. */
  | 'log-row'
  /** `pi-gateway ledger verify` failed after a graceful stop. */
  | 'ledger-verify'
  /** The graceful stop did not exit 0. */
  | 'stop'
  /** A well-formed request after a case was not answered correctly. */
  | 'liveness'
  /** The gateway's peak memory grew past the bound. */
  | 'memory'
  /** What reached the client is neither what the provider sent nor an error: a 200 that is not whole
   *  JSON, an error body passed as 200, `model` in the body not the one X-Pi-Model names, events
   *  after an image stream's terminal event. */
  | 'broken-answer'
  /** A parser threw something other than its documented error. */
  | 'exception'
  /** A parser's result depended on where its input was split. */
  | 'split-dependence'
  /** A scanner disagreed with JSON.parse about a document JSON.parse accepts. */
  | 'disagreement'
  /** A parser's cost per byte far above its median (and again on a second run). */
  | 'superlinear';

export const ORACLES: readonly Oracle[] = [
  'crash',
  'hang',
  'unanswered',
  '5xx',
  'over-bound',
  'estimate-over-hold',
  'open-hold',
  'log-row',
  'ledger-verify',
  'stop',
  'liveness',
  'memory',
  'broken-answer',
  'exception',
  'split-dependence',
  'disagreement',
  'superlinear',
];

export interface FindingFiles {
  /** File name → contents, written as given (Buffers byte for byte, objects as JSON). */
  [name: string]: Buffer | string | object;
}

export interface SignatureRecord {
  target: string;
  oracle: Oracle;
  signature: string;
  count: number;
  /** Directories written for this signature (at most `keepPerSignature`). */
  saved: string[];
  /** What the first hit looked like (one line). */
  example: string;
}

export class FindingBook {
  private readonly bySignature = new Map<string, SignatureRecord>();

  private readonly outDir: string | null;
  private readonly keepPerSignature: number;
  constructor(outDir: string | null, keepPerSignature = 3) {
    this.outDir = outDir;
    this.keepPerSignature = keepPerSignature;
  }

  /** Counts a hit; writes its files when the signature has fewer than `keepPerSignature` saved. Returns the directory written, if any. */
  record(target: string, oracle: Oracle, signature: string, example: string, files: FindingFiles): string | null {
    const id = `${target}\u0000${oracle}\u0000${signature}`;
    let rec = this.bySignature.get(id);
    if (!rec) this.bySignature.set(id, (rec = { target, oracle, signature, count: 0, saved: [], example }));
    rec.count++;
    if (this.outDir === null || rec.saved.length >= this.keepPerSignature) return null;
    const dir = join(this.outDir, 'findings', target, oracle, slug(signature), String(rec.saved.length + 1));
    mkdirSync(dir, { recursive: true });
    for (const [name, content] of Object.entries(files)) {
      const data = Buffer.isBuffer(content)
        ? content
        : typeof content === 'string'
          ? content
          : JSON.stringify(content, jsonReplacer, 2) + '\n';
      // A name may hold one folder level (a round's cases: case-12/request.bin).
      mkdirSync(dirname(join(dir, name)), { recursive: true });
      writeFileSync(join(dir, name), data);
    }
    writeFileSync(join(dir, 'finding.txt'), `${target} ${oracle}: ${signature}\n${example}\n`);
    rec.saved.push(dir);
    return dir;
  }

  /** Whether a hit of this signature would still be written (fewer than `keepPerSignature` saved):
   *  costly confirmation work is skipped for a signature already saved enough times. */
  wouldSave(target: string, oracle: Oracle, signature: string): boolean {
    const rec = this.bySignature.get(`${target}\u0000${oracle}\u0000${signature}`);
    return this.outDir !== null && (rec === undefined || rec.saved.length < this.keepPerSignature);
  }

  /** Adds what another book (another process's) recorded: counts and the directories it wrote. */
  merge(records: SignatureRecord[]): void {
    for (const r of records) {
      const id = `${r.target}\u0000${r.oracle}\u0000${r.signature}`;
      const mine = this.bySignature.get(id);
      if (!mine) this.bySignature.set(id, { ...r, saved: [...r.saved] });
      else {
        mine.count += r.count;
        mine.saved.push(...r.saved);
      }
    }
  }

  /** Hits per oracle for one target. */
  counts(target: string): Map<Oracle, number> {
    const out = new Map<Oracle, number>();
    for (const r of this.bySignature.values())
      if (r.target === target) out.set(r.oracle, (out.get(r.oracle) ?? 0) + r.count);
    return out;
  }

  signatures(target?: string): SignatureRecord[] {
    return [...this.bySignature.values()].filter((r) => target === undefined || r.target === target);
  }
}

/** A signature as a directory name. */
export function slug(s: string): string {
  const out = s
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-|-$/g, '')
    .slice(0, 80);
  return out === '' ? 'unnamed' : out;
}

/** JSON for meta files: bigint as a decimal string, Buffers as base64. */
export function jsonReplacer(_key: string, value: unknown): unknown {
  if (typeof value === 'bigint') return value.toString();
  if (
    value &&
    typeof value === 'object' &&
    (value as { type?: unknown }).type === 'Buffer' &&
    Array.isArray((value as { data?: unknown }).data)
  ) {
    return { base64: Buffer.from((value as { data: number[] }).data).toString('base64') };
  }
  return value;
}
