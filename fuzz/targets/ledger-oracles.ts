// The money oracles every target over a gateway child shares, judged per generation after the
// campaign: a graceful stop exits 0; then `ledger verify` passes, no hold is left open and every
// settlement has its request-log row. A generation that crashed is reported apart: its open holds
// belong to the requests in flight when it died (the crash is the finding), and its `ledger verify`
// result is shown, not judged.
import type { FindingBook, FindingFiles } from '../lib/findings.ts';
import type { GenerationCheck } from '../lib/session.ts';

export interface LedgerNotes {
  verify: string;
  openHolds: number;
  notes: string[];
}

/** `traceFiles`: the files of the case a trace id belongs to (with the key of the database it ran
 *  against), when the target knows it. */
export function ledgerNotes(
  target: string,
  checks: GenerationCheck[],
  book: FindingBook,
  traceFiles: (traceId: string, key: string) => FindingFiles | null = () => null,
): LedgerNotes {
  let failed = 0;
  let open = 0;
  let orphaned = 0;
  const notes: string[] = [];
  for (const c of checks) {
    const g = c.generation;
    const crashed = g.ended?.crashed ?? false;
    if (crashed) {
      orphaned += c.ledger?.openHolds.size ?? 0;
      notes.push(
        `gateway process ${g.index} crashed; ledger verify on its database: ${c.verify.ok ? 'ok' : 'failed'}, holds left open: ${c.ledger?.openHolds.size ?? '?'}`,
      );
      continue;
    }
    const where = { generation: g.index, db: g.db.file };
    if (!g.ended?.graceful)
      book.record(
        target,
        'stop',
        `graceful stop ended with ${g.ended?.signal ?? `exit ${g.ended?.code}`}`,
        `generation ${g.index}`,
        { 'meta.json': where },
      );
    if (!c.verify.ok) {
      failed++;
      book.record(
        target,
        'ledger-verify',
        'ledger verify failed after a graceful stop',
        c.verify.output.split('\n')[0] ?? '',
        { 'verify.txt': c.verify.output, 'meta.json': where },
      );
    }
    if (!c.ledger) continue;
    for (const [trace, amount] of c.ledger.openHolds) {
      open++;
      book.record(target, 'open-hold', 'hold open after a graceful stop', `trace ${trace} holds ${amount} nano-USD`, {
        ...(traceFiles(trace, g.db.key) ?? {}),
        'hold.json': { trace, amountNano: amount, ...where },
      });
    }
    for (const s of c.ledger.settlements) {
      if (c.ledger.loggedTraces.has(s.traceId)) continue;
      book.record(target, 'log-row', 'settlement without its request-log row', `trace ${s.traceId}`, {
        ...(traceFiles(s.traceId, g.db.key) ?? {}),
        'settlement.json': { ...s, ...where },
      });
    }
  }
  const graceful = checks.filter((c) => !(c.generation.ended?.crashed ?? false)).length;
  if (orphaned > 0) notes.push(`holds left open by crashed processes: ${orphaned}`);
  return {
    verify:
      graceful === 0
        ? 'n/a (no graceful stop)'
        : failed === 0
          ? `ok (${graceful} database(s))`
          : `failed on ${failed} of ${graceful} database(s)`,
    openHolds: open,
    notes,
  };
}
