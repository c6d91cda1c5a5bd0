// The SQLite writer thread: the one write connection of a serving gateway, so no transaction, fsync
// or WAL checkpoint runs on a serving thread's event loop. It commits what it is sent in order, one
// transaction per commit request: ledger operations (Wallets.applyEach, the same code and invariants
// as everywhere) together with the request-log row of every settlement among them — a crash never
// keeps a charge without its log row — and the final log rows of finished requests (each replaces
// its trace's provisional row; a provisional row never replaces a final one). One commit carries
// many requests' writes: one the store refuses is left out alone, never with the others
// (isolated-writes.ts). WAL checkpoints run on a thread of their own (checkpoint-thread.ts), which
// this one starts and stops: a commit never waits for one.
import { parentPort, type Worker, workerData } from 'node:worker_threads';
import { systemClock } from '../../clock.ts';
import { siblingModule, spawnThread } from '../../thread.ts';
import type { CheckpointData } from './checkpoint-thread.ts';
import { openDatabase, Statements, walPages } from './db.ts';
import { transactIsolated } from './isolated-writes.ts';
import {
  insertSettledRequestLogRow,
  ProvisionalRows,
  upsertRequestLogRows,
  upsertRequestLogRowsEach,
} from './request-log.ts';
import { slowCommitLine, slowCommitThreshold } from './slow-commit.ts';
import { Wallets } from './wallets.ts';
import type { WireLedgerOp, WriterData, WriterReply, WriterRequest } from './writer-protocol.ts';

const data = workerData as WriterData;
const slowCommitMs = slowCommitThreshold(process.env['PI_WRITER_SLOW_COMMIT_MS']);
const signal = new Int32Array(data.signal);
const port = data.port;

/**
 * The writer's own auto-checkpoint, in bytes of WAL whatever the page size: only a bound on the
 * WAL's size. The checkpointer thread copies pages every CHECKPOINT_INTERVAL_MS; under sustained load
 * the WAL can only be reset after a checkpoint that found every frame copied, which this one is, and
 * it is short because the checkpointer has copied (and synced) nearly everything before it.
 */
export const WRITER_WAL_AUTOCHECKPOINT = 64 * 2 ** 20;
/** How often the checkpointer looks for new commits. */
export const CHECKPOINT_INTERVAL_MS = 100;

function send(reply: WriterReply): void {
  port.postMessage(reply);
  Atomics.add(signal, 0, 1);
  Atomics.notify(signal, 0);
}

const message = (err: unknown): string => (err instanceof Error ? err.message : String(err));

function start(): void {
  let db: ReturnType<typeof openDatabase>;
  try {
    db = openDatabase(data.file);
  } catch (err) {
    send({ kind: 'failed', error: message(err) });
    port.close();
    return;
  }
  db.pragma(`wal_autocheckpoint = ${walPages(db, WRITER_WAL_AUTOCHECKPOINT)}`);
  const wallets = new Wallets(db, systemClock);
  const sql = new Statements(db, true);
  const commits = new SharedArrayBuffer(4);
  const counter = new Int32Array(commits);
  const checkpointData: CheckpointData = { file: data.file, commits, intervalMs: CHECKPOINT_INTERVAL_MS };
  // It allocates next to nothing: the smallest young generation V8 takes.
  let checkpointer: Worker | null = spawnThread(siblingModule('checkpoint-thread', import.meta.url), {
    workerData: checkpointData,
    resourceLimits: { maxYoungGenerationSizeMb: 1 },
  });
  // A checkpointer that fails leaves checkpoints to the writer's own auto-checkpoint: slower commits
  // now and then, nothing lost.
  checkpointer.on('error', () => undefined);
  checkpointer.unref();

  const immediate = <R>(fn: () => R): R => db.transaction(fn).immediate();
  // A settlement's log row stands or falls with it (a crash never keeps a charge without its row).
  // Where those rows went, so that each request's final row updates its row by rowid.
  const places = new ProvisionalRows();
  const withLogRow = (op: WireLedgerOp): void => {
    if (op.kind === 'settle' && op.logValues) insertSettledRequestLogRow(sql, op.logValues, places);
  };

  const commit = (m: Extract<WriterRequest, { kind: 'commit' }>): WriterReply => {
    let ledgerError: string | null = null;
    try {
      const { refused, rowErrors } = transactIsolated(immediate, (isolated) => ({
        refused: wallets.applyEach(m.ops, isolated, withLogRow),
        rowErrors: upsertRequestLogRowsEach(db, sql, m.rows, isolated, places),
      }));
      Atomics.add(counter, 0, 1);
      return {
        kind: 'reply',
        seq: m.seq,
        ledgerError: null,
        refused,
        rowsError: rowErrors.length > 0 ? rowErrors.join('; ') : null,
      };
    } catch (err) {
      if (m.ops.length === 0)
        return { kind: 'reply', seq: m.seq, ledgerError: null, refused: [], rowsError: message(err) };
      ledgerError = message(err);
    }
    // The transaction itself failed (nothing of it was written): the finished requests' rows still
    // go in, on their own.
    try {
      if (m.rows.length > 0) db.transaction(() => upsertRequestLogRows(sql, m.rows, places)).immediate();
      return { kind: 'reply', seq: m.seq, ledgerError, refused: [], rowsError: null };
    } catch (err) {
      return { kind: 'reply', seq: m.seq, ledgerError, refused: [], rowsError: message(err) };
    }
  };

  port.on('message', async (m: WriterRequest) => {
    if (m.kind === 'commit') {
      const t0 = slowCommitMs === null ? 0 : performance.now();
      const reply = commit(m);
      if (slowCommitMs !== null) {
        const ms = performance.now() - t0;
        if (ms >= slowCommitMs) {
          let settled = 0;
          for (const op of m.ops) if (op.kind === 'settle' && op.logValues) settled++;
          process.stderr.write(slowCommitLine(ms, m.ops.length, m.rows.length + settled));
        }
      }
      send(reply);
    } else {
      let rowsError: string | null = null;
      try {
        // The checkpointer's connection closes first, so this one, the last, checkpoints the rest.
        await checkpointer?.terminate();
        checkpointer = null;
        wallets.close();
        db.close();
      } catch (err) {
        rowsError = message(err);
      }
      send({ kind: 'reply', seq: m.seq, ledgerError: null, refused: [], rowsError });
      port.close();
    }
  });
  send({ kind: 'ready' });
}

if (parentPort === null) throw new Error('writer-thread.ts runs as a worker thread');
start();
