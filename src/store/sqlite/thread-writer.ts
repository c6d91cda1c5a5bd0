// The serving thread's end of the SQLite writer thread (src/store/sqlite/writer-thread.ts): ledger batches
// from the wallet book and finished requests' log rows go there through a bounded queue, and come
// back as acknowledgements the serving thread awaits without blocking. Only shutdown and tests wait
// synchronously (`flush`, `commitNow`: Atomics.wait on the reply counter, then the replies read
// with receiveMessageOnPort).
//
// Bound: `behind()` is true once `capacity` items (ledger operations and log rows) are queued or
// sent and not yet acknowledged; the gateway then refuses new requests (503 provider_unavailable,
// Retry-After 1) rather than let memory grow. Requests already admitted still settle and log. Log
// rows beyond twice the capacity are dropped and counted (only rows of requests that charged
// nothing can be lost that way: a settlement carries its own row).
import { MessageChannel, type MessagePort, receiveMessageOnPort, type Worker } from 'node:worker_threads';
import { siblingModule, spawnThread } from '../../thread.ts';
import type { LedgerOp, LedgerRefusal, LedgerWriter, RequestLogRow } from '../types.ts';
import { type LogRowValues, logRowValues } from './request-log.ts';
import type { WireLedgerOp, WriterData, WriterReply, WriterRequest } from './writer-protocol.ts';

export const DEFAULT_WRITER_CAPACITY = 10_000;
/**
 * How long what nobody waits for (finished requests' log rows here, holds in the wallet book) may
 * wait for a settlement's batch to ride with before going alone. At a modest rate a turn carries
 * about one request; sending each request's hold, settlement and final row separately cost three
 * transactions and three message round trips per request, mostly one with this wait. A crash can
 * lose only rows of requests that charged nothing (a settlement carries its own row) and holds the
 * restart would have released.
 */
export const WRITER_BATCH_WAIT_MS = 10;
/** How long a synchronous wait (shutdown) waits for the writer before giving up. */
const SYNC_WAIT_MS = 30_000;

interface Sent {
  items: number;
  resolve: (refused: LedgerRefusal[]) => void;
  reject: (err: Error) => void;
}

export interface WriterStats {
  /** Items queued or sent and not yet acknowledged. */
  backlog: number;
  transactions: number;
  rowsDropped: number;
  failures: number;
}

export class WriterError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'WriterError';
  }
}

/** A ledger operation as the writer thread takes it: a settlement's log row as its values. */
function wireOp(op: LedgerOp): WireLedgerOp {
  if (op.kind !== 'settle' || op.logRow === undefined) return op;
  const { logRow, ...settle } = op;
  return { ...settle, logValues: logRowValues(logRow) };
}

/** The writer thread from the build or from the sources (src/thread.ts). */
function spawnWriter(data: WriterData, port: MessagePort): Worker {
  // A small young generation: what the writer allocates (each batch as it arrives) dies at once, and
  // V8's default lets it grow to 16 MB per semi-space under load (measured: ~3 MB less peak RSS).
  return spawnThread(siblingModule('writer-thread', import.meta.url), {
    workerData: data,
    transferList: [port],
    resourceLimits: { maxYoungGenerationSizeMb: 4 },
  });
}

export class ThreadWriter implements LedgerWriter {
  private seq = 0;
  private acked = 0;
  private readonly sent = new Map<number, Sent>();
  private rows: LogRowValues[] = [];
  private backlog = 0;
  private timer: ReturnType<typeof setTimeout> | null = null;
  private dead: string | null = null;
  private readonly counts = { transactions: 0, rowsDropped: 0, failures: 0 };

  private readonly worker: Worker;
  private readonly port: MessagePort;
  private readonly signal: Int32Array;
  private readonly capacity: number;
  private readonly onError: (event: string, err: unknown) => void;
  private constructor(
    worker: Worker,
    port: MessagePort,
    signal: Int32Array,
    capacity: number,
    onError: (event: string, err: unknown) => void,
  ) {
    this.worker = worker;
    this.port = port;
    this.signal = signal;
    this.capacity = capacity;
    this.onError = onError;
    port.on('message', (m: WriterReply) => this.handle(m));
    worker.on('error', (err) => this.fail(`writer thread failed: ${err.message}`));
    worker.on('exit', (code) => this.fail(`writer thread exited (${code})`));
  }

  /** Starts the thread on `file` (already migrated) and waits until its connection is open. */
  static async start(
    file: string,
    opts: { capacity?: number; onError?: (event: string, err: unknown) => void } = {},
  ): Promise<ThreadWriter> {
    const channel = new MessageChannel();
    const signal = new SharedArrayBuffer(4);
    const data: WriterData = { file, port: channel.port2, signal };
    const worker = spawnWriter(data, channel.port2);
    const first = await new Promise<WriterReply>((resolve, reject) => {
      channel.port1.once('message', resolve);
      worker.once('error', reject);
      worker.once('exit', (code) => reject(new WriterError(`writer thread exited (${code}) before it opened ${file}`)));
    });
    if (first.kind !== 'ready') {
      await worker.terminate();
      throw new WriterError(first.kind === 'failed' ? first.error : 'writer thread answered out of turn');
    }
    worker.removeAllListeners();
    const w = new ThreadWriter(
      worker,
      channel.port1,
      new Int32Array(signal),
      opts.capacity ?? DEFAULT_WRITER_CAPACITY,
      opts.onError ?? (() => undefined),
    );
    return w;
  }

  /** True when new requests must be refused: the queue (with `waiting` items not yet handed over,
   *  the wallet book's gathering batch) is full, or the writer is gone. */
  behind(waiting = 0): boolean {
    return this.dead !== null || this.backlog + waiting >= this.capacity;
  }

  stats(): WriterStats {
    return { backlog: this.backlog, ...this.counts };
  }

  /** Commits a ledger batch (and the log rows queued so far) in one transaction; resolves on its
   *  acknowledgement with the operations refused one by one (the rest were written), rejects when
   *  the writer could not commit the batch at all (nothing of it was written). */
  commit(ops: LedgerOp[]): Promise<LedgerRefusal[]> {
    return this.send(ops);
  }

  /** `commit`, waiting synchronously (shutdown, tests); throws when the batch was refused. */
  commitNow(ops: LedgerOp[]): LedgerRefusal[] {
    this.send(ops).catch(() => undefined);
    this.syncSeq = this.seq;
    try {
      this.waitFor(this.seq);
    } finally {
      this.syncSeq = 0;
    }
    const refused = this.syncRefusal;
    const refusedOps = this.syncRefused ?? [];
    this.syncRefusal = null;
    this.syncRefused = null;
    if (refused) throw refused;
    return refusedOps;
  }

  /** Queues a finished request's log row; it goes with the next ledger batch, or alone after
   *  WRITER_BATCH_WAIT_MS. */
  append(row: RequestLogRow): void {
    if (this.backlog >= 2 * this.capacity || this.dead !== null) {
      this.counts.rowsDropped++;
      return;
    }
    this.rows.push(logRowValues(row));
    this.backlog++;
    if (this.timer === null) {
      this.timer = setTimeout(() => {
        this.timer = null;
        if (this.rows.length > 0) this.send([]).catch(() => undefined);
      }, WRITER_BATCH_WAIT_MS);
      this.timer.unref();
    }
  }

  /** Writes every queued row and waits for every acknowledgement, synchronously. */
  flush(): void {
    if (this.dead !== null) return;
    if (this.rows.length > 0) this.send([]).catch(() => undefined);
    if (this.seq > this.acked) this.waitFor(this.seq);
  }

  /** Writes what is queued, closes the connection (its last checkpoint) and ends the thread. */
  async close(): Promise<void> {
    if (this.dead !== null) return;
    this.flush();
    const seq = ++this.seq;
    this.post({ kind: 'close', seq });
    this.waitFor(seq);
    this.dead = 'closed';
    this.port.close();
    await this.worker.terminate();
  }

  /** The batch commitNow waits for, its refusal, and the operations refused alone. */
  private syncSeq = 0;
  private syncRefusal: Error | null = null;
  private syncRefused: LedgerRefusal[] | null = null;

  private send(ops: LedgerOp[]): Promise<LedgerRefusal[]> {
    if (this.dead !== null) return Promise.reject(new WriterError(this.dead));
    const rows = this.rows;
    this.rows = [];
    if (this.timer !== null) {
      clearTimeout(this.timer);
      this.timer = null;
    }
    const seq = ++this.seq;
    const items = ops.length + rows.length;
    if (ops.length > 0) this.backlog += ops.length; // rows were counted when queued
    return new Promise<LedgerRefusal[]>((resolve, reject) => {
      this.sent.set(seq, { items, resolve, reject });
      this.post({ kind: 'commit', seq, ops: ops.map(wireOp), rows });
    });
  }

  private post(m: WriterRequest): void {
    this.port.postMessage(m);
  }

  private handle(m: WriterReply): void {
    if (m.kind !== 'reply') return;
    this.acked = Math.max(this.acked, m.seq);
    const s = this.sent.get(m.seq);
    if (!s) return;
    this.sent.delete(m.seq);
    this.backlog -= s.items;
    this.counts.transactions++;
    if (m.rowsError !== null) {
      this.counts.failures++;
      this.onError('request_log_write_failed', new WriterError(m.rowsError));
    }
    if (m.ledgerError !== null) {
      this.counts.failures++;
      const err = new WriterError(m.ledgerError);
      if (m.seq === this.syncSeq) this.syncRefusal = err;
      s.reject(err);
    } else {
      if (m.refused.length > 0) this.counts.failures++;
      if (m.seq === this.syncSeq) this.syncRefused = m.refused;
      s.resolve(m.refused);
    }
  }

  /** Blocks until the reply to `seq` was handled (shutdown and tests only). */
  private waitFor(seq: number): void {
    const deadline = Date.now() + SYNC_WAIT_MS;
    for (;;) {
      const seen = Atomics.load(this.signal, 0);
      for (let r = receiveMessageOnPort(this.port); r !== undefined; r = receiveMessageOnPort(this.port))
        this.handle(r.message as WriterReply);
      if (this.acked >= seq) return;
      const left = deadline - Date.now();
      if (left <= 0 || this.dead !== null)
        throw new WriterError(`the writer thread did not answer within ${SYNC_WAIT_MS} ms`);
      Atomics.wait(this.signal, 0, seen, left);
    }
  }

  private fail(why: string): void {
    if (this.dead !== null) return;
    this.dead = why;
    this.onError('writer_thread_failed', new WriterError(why));
    const err = new WriterError(why);
    for (const s of this.sent.values()) s.reject(err);
    this.sent.clear();
  }
}
