// The loop the two client targets share: cases built from (seed, case number), run a few at a time
// against the gateway child, each judged by its target; when the child exits on its own, every case
// in flight is a suspect. The suspects are then run again one at a time on a fresh child: the one
// that stops it again is the confirmed reproduction, saved with the crash; when none does (a crash
// that needs concurrency or timing), all suspects are saved.
import type { FindingFiles } from './findings.ts';
import { type Generation, type GatewaySession, crashSignature, isCrashed } from './session.ts';
import { type TargetOptions, budgetLeft } from './target.ts';

export interface CaseSpec {
  n: number;
  /** One line: what the case does. */
  label: string;
  files(): FindingFiles;
}

export interface HttpCampaign<C extends CaseSpec> {
  target: string;
  opts: TargetOptions;
  session: GatewaySession;
  concurrency: number;
  build(n: number): C;
  /** Runs and judges one case. `quiet`: a confirmation run, which must record nothing. */
  exec(c: C, g: Generation, quiet: boolean): Promise<void>;
  /** Runs after each case on the same generation (e.g. a liveness probe); not on confirmation runs. */
  after?(c: C, g: Generation): Promise<void>;
}

export async function runHttpCampaign<C extends CaseSpec>(camp: HttpCampaign<C>): Promise<number> {
  const { opts } = camp;
  let nextCase = 0;
  let done = 0;
  let gen = await camp.session.child();
  const active = new Map<number, C>();
  // Cases that ended just before the exit was seen are suspects too: their connection may have
  // closed a moment before the process's exit event arrived.
  const recent: { c: C; at: number }[] = [];
  let suspects: C[] | null = null;
  let restarting: Promise<void> | null = null;

  const watch = (g: Generation): void => {
    void g.child.exited.then(() => {
      if (!isCrashed(g) || suspects !== null) return;
      const since = performance.now() - 2000;
      const list = [...active.values()];
      for (const r of recent) if (r.at >= since && !list.includes(r.c)) list.push(r.c);
      suspects = list.slice(0, 16);
    });
  };
  watch(gen);

  const recover = async (): Promise<void> => {
    const crashed = gen;
    // Let the other workers' cases end (their connections died with the process).
    while (active.size > 0) await new Promise((r) => setTimeout(r, 20));
    const list = suspects ?? [];
    suspects = null;
    const signature = crashSignature(crashed.child.stderrTail(), crashed.child.exit());
    let confirmed: C | null = null;
    // Replays cost a process start each: only while the signature still gets saved.
    const confirm = opts.findings.wouldSave(camp.target, 'crash', signature);
    for (const c of confirm ? list : []) {
      gen = await camp.session.child();
      await camp.exec(c, gen, true);
      await new Promise((r) => setTimeout(r, 200));
      if (gen.child.exit() !== null) {
        confirmed = c;
        break;
      }
    }
    const saved = confirmed ? [confirmed] : list;
    const files: FindingFiles = {
      'stderr.txt': crashed.child.stderrTail(),
      'crash.json': {
        target: camp.target,
        seed: opts.seed,
        confirmed: confirmed !== null,
        cases: saved.map((c) => ({ n: c.n, label: c.label })),
      },
    };
    saved.forEach((c, i) => {
      for (const [name, content] of Object.entries(c.files()))
        files[saved.length === 1 ? name : `case-${i + 1}-${name}`] = content;
    });
    const how = confirmed
      ? 'confirmed by a replay on a fresh process'
      : confirm
        ? `${list.length} case(s) in flight, none stopped a fresh process alone`
        : `${list.length} case(s) in flight (not replayed: this signature is saved enough)`;
    const where = camp.opts.findings.record(
      camp.target,
      'crash',
      signature,
      `${how}: ${saved.map((c) => c.label).join(' | ')}`,
      files,
    );
    opts.log(`[${camp.target}] crash: ${signature}${where ? ` → ${where}` : ''}`);
    gen = await camp.session.child();
    watch(gen);
  };

  const worker = async (): Promise<void> => {
    for (;;) {
      if (restarting) await restarting;
      if (!budgetLeft(opts.budget, nextCase)) return;
      const c = camp.build(nextCase++);
      active.set(c.n, c);
      const g = gen;
      try {
        await camp.exec(c, g, false);
        if (g.child.exit() === null && camp.after) await camp.after(c, g);
      } finally {
        active.delete(c.n);
        recent.push({ c, at: performance.now() });
        if (recent.length > 32) recent.shift();
        done++;
      }
      if (isCrashed(g)) {
        if (!restarting) {
          restarting = recover().finally(() => (restarting = null));
        }
        await restarting;
      }
    }
  };
  await Promise.all(Array.from({ length: camp.concurrency }, worker));
  return done;
}
