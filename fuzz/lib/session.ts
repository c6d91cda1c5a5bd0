// The gateway child over a campaign, one "generation" per process: each generation gets a fresh
// database, so the ledger checks of a graceful stop see only that process's requests, and a crash
// leaves its own database behind (its open holds belong to the requests in flight when it died).
// A target asks for the running child, reports a crash when it sees one, and calls `finish()` at the
// end: SIGTERM, then `ledger verify` and the holds and log rows of every generation's database.
import { join } from 'node:path';
import type { CompiledConfig } from '../../src/config/compiled.ts';
import {
  type CampaignDb,
  type ChildExit,
  type GatewayChild,
  campaignConfig,
  prepareCampaignDb,
  startGatewayChild,
} from './gateway-child.ts';
import { type LedgerState, ledgerVerify, readLedger } from './ledger-check.ts';

export interface ConfigPatch {
  limits?: Record<string, number>;
  health?: Record<string, number>;
}

export interface Generation {
  index: number;
  db: CampaignDb;
  child: GatewayChild;
  /** How it ended (null while running). */
  ended: (ChildExit & { graceful: boolean; crashed: boolean }) | null;
  /** A graceful stop was asked for: an exit from now on is not a crash. */
  stopping: boolean;
}

/** The process has exited without being asked to. */
export function isCrashed(g: Generation): boolean {
  return g.child.exit() !== null && !g.stopping;
}

export interface GenerationCheck {
  generation: Generation;
  /** Null when the database could not be read. */
  ledger: LedgerState | null;
  verify: { ok: boolean; output: string };
}

export class GatewaySession {
  readonly config: CompiledConfig;
  readonly configDir: string;
  readonly generations: Generation[] = [];
  private current: Generation | null = null;

  private readonly workDir: string;
  private readonly upstream: () => string;
  private readonly coverageDir: string | null;
  constructor(workDir: string, upstream: () => string, coverageDir: string | null, patch: ConfigPatch) {
    this.workDir = workDir;
    this.upstream = upstream;
    this.coverageDir = coverageDir;
    const c = campaignConfig(workDir, patch);
    this.config = c.compiled;
    this.configDir = c.dir;
  }

  /** The running child (a new generation when none runs). */
  async child(): Promise<Generation> {
    if (this.current && this.current.child.exit() === null) return this.current;
    const index = this.generations.length;
    const db = prepareCampaignDb(join(this.workDir, `gen-${index}`), this.config);
    const child = await startGatewayChild({
      config: this.configDir,
      db,
      upstream: this.upstream(),
      coverageDir: this.coverageDir,
    });
    const g: Generation = { index, db, child, ended: null, stopping: false };
    void child.exited.then((e) => {
      if (g.ended === null) g.ended = { ...e, graceful: false, crashed: !g.stopping };
    });
    this.generations.push(g);
    this.current = g;
    return g;
  }

  /** Whether the current generation's process has exited on its own. */
  crashed(): Generation | null {
    const g = this.current;
    return g !== null && isCrashed(g) ? g : null;
  }

  /** Stops the running generation gracefully (SIGTERM, the drain) and checks every generation's database. */
  async finish(): Promise<GenerationCheck[]> {
    const g = this.current;
    if (g && g.child.exit() === null) {
      g.stopping = true;
      const e = await g.child.stop();
      g.ended = { ...e, crashed: false };
    }
    this.current = null;
    const out: GenerationCheck[] = [];
    for (const gen of this.generations) {
      let ledger: LedgerState | null = null;
      try {
        ledger = readLedger(gen.db.file);
      } catch {
        ledger = null;
      }
      const v = await ledgerVerify(gen.db.file, gen.db.masterKey);
      out.push({ generation: gen, ledger, verify: { ok: v.ok, output: v.output } });
    }
    return out;
  }

  /** Kills whatever still runs (a campaign torn down by an error). */
  async kill(): Promise<void> {
    for (const g of this.generations) await g.child.kill();
  }
}

/** The error of a crash from the child's stderr, for a signature: its `…Error…:` line (with the
 *  line after it when that one only introduces it, as an assertion's does), else the last line. */
export function crashSignature(stderr: string, exit: ChildExit | null): string {
  const lines = stderr.split('\n').map((l) => l.trim());
  let pick = '';
  const at = lines.findIndex((l) => /^[A-Za-z]*Error\b[^{]*:/.test(l));
  if (at !== -1) {
    pick = lines[at] as string;
    const next = lines.slice(at + 1).find((l) => l !== '');
    if (pick.endsWith(':') && next !== undefined && !next.startsWith('at ')) pick = `${pick} ${next}`;
  } else pick = lines.filter((l) => l !== '' && !l.startsWith('at ') && !l.startsWith('{')).pop() ?? '';
  const exitText = exit ? (exit.signal ? `signal ${exit.signal}` : `exit ${exit.code}`) : 'exit';
  return `${exitText}: ${pick.replace(/\b[0-9a-f]{8}-[0-9a-f-]{27}\b/g, '<id>').slice(0, 200)}`;
}
