// The money oracles read after a graceful stop: the ledger, the holds and the request log of the
// child's database (a read-only connection), and `pi-gateway ledger verify` run as the operator
// would run it.
import { spawn } from 'node:child_process';
import { openDatabase } from '../../src/store/sqlite/db.ts';
import { REPO } from './gateway-child.ts';

export interface Settled {
  traceId: string;
  amountNano: bigint;
  details: Record<string, unknown>;
}

export interface LedgerState {
  /** Hold amount by trace, every hold ever taken. */
  holds: Map<string, bigint>;
  /** Traces whose hold is still open. */
  openHolds: Map<string, bigint>;
  settlements: Settled[];
  /** Traces with at least one request-log row. */
  loggedTraces: Set<string>;
}

export function readLedger(file: string): LedgerState {
  const db = openDatabase(file, { readonly: true });
  try {
    const holds = new Map<string, bigint>();
    const openHolds = new Map<string, bigint>();
    for (const r of db.prepare('SELECT trace_id, amount_nano, state FROM holds').safeIntegers(true).all() as {
      trace_id: string;
      amount_nano: bigint;
      state: string;
    }[]) {
      holds.set(r.trace_id, r.amount_nano);
      if (r.state === 'open') openHolds.set(r.trace_id, r.amount_nano);
    }
    const settlements: Settled[] = [];
    for (const r of db
      .prepare("SELECT trace_id, amount_nano, details FROM ledger WHERE kind = 'settle'")
      .safeIntegers(true)
      .all() as { trace_id: string; amount_nano: bigint; details: string | null }[]) {
      let details: Record<string, unknown> = {};
      try {
        details = r.details ? (JSON.parse(r.details) as Record<string, unknown>) : {};
      } catch {
        details = { unreadable: r.details };
      }
      settlements.push({ traceId: r.trace_id, amountNano: r.amount_nano, details });
    }
    const loggedTraces = new Set(
      (db.prepare('SELECT DISTINCT trace_id FROM request_log').all() as { trace_id: string }[]).map((r) => r.trace_id),
    );
    return { holds, openHolds, settlements, loggedTraces };
  } finally {
    db.close();
  }
}

export interface VerifyResult {
  ok: boolean;
  code: number | null;
  output: string;
}

/** `pi-gateway ledger verify --db FILE` as a separate process: exit 0 means the ledger agrees. */
export function ledgerVerify(file: string, masterKey: string): Promise<VerifyResult> {
  const env: NodeJS.ProcessEnv = { ...process.env, PI_MASTER_KEY: masterKey };
  delete env['NODE_V8_COVERAGE'];
  const child = spawn(process.execPath, ['src/cli/main.ts', 'ledger', 'verify', '--db', file], {
    cwd: REPO,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr.on('data', (d: Buffer) => (output += d.toString()));
  return new Promise((resolve) =>
    child.on('close', (code) => resolve({ ok: code === 0, code, output: output.slice(-4000) })),
  );
}
