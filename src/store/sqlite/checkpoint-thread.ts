// The WAL checkpointer: a thread of its own, beside the SQLite writer thread, so that no commit ever
// waits for a checkpoint. A checkpoint copies the WAL's pages into the database file and fsyncs
// both; the fsync of the WAL flushes every page appended since the last one (megabytes at a few
// thousand commits a second), and when the writer ran it inside a commit (SQLite's auto-checkpoint)
// every settlement queued behind that commit waited for the disk: the largest part of the gateway's
// p99 at 1,000 req/s. Here checkpoints are PASSIVE: they never take the write lock, so the writer
// keeps committing while one runs.
//
// A PASSIVE checkpoint can only copy what was committed when it began; the WAL is reset (written
// from its start again) only when a transaction begins with every frame copied. Under sustained
// load a commit almost always lands during the checkpoint, so the writer keeps a high
// auto-checkpoint of its own (`WRITER_WAL_AUTOCHECKPOINT`) that bounds the file: by then this
// thread has copied all but the last few frames, and the writer's own checkpoint is short.
import { workerData } from 'node:worker_threads';
import { openDatabase } from './db.ts';

export interface CheckpointData {
  file: string;
  /** Int32Array word 0: commits made by the writer so far (it bumps it after each). */
  commits: SharedArrayBuffer;
  /** How often to look for new commits, in ms. */
  intervalMs: number;
}

const data = workerData as CheckpointData;
const commits = new Int32Array(data.commits);
const db = openDatabase(data.file);
// From 0, not the counter's value now: commits made while this thread started are checkpointed too.
let seen = 0;

setInterval(() => {
  const now = Atomics.load(commits, 0);
  if (now === seen) return;
  seen = now;
  try {
    db.pragma('wal_checkpoint(PASSIVE)');
  } catch {
    // SQLITE_BUSY or a transient I/O error: the next tick (or the writer's own auto-checkpoint)
    // copies what this one could not. Nothing is lost by a checkpoint that did not run.
  }
}, data.intervalMs);
