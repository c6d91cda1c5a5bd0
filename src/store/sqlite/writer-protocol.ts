// Messages between a serving thread and the SQLite writer thread (src/store/sqlite/writer-thread.ts). One
// commit request is one transaction; every request gets one reply, in order, and bumps the shared
// signal word after its reply is posted (so a thread may wait for it synchronously at shutdown).
import type { MessagePort } from 'node:worker_threads';
import type { LogRowValues } from './request-log.ts';
import type { LedgerOp, LedgerRefusal } from '../types.ts';

export interface WriterData {
  file: string;
  /** Where requests arrive and replies go (a MessagePort, so the client can read replies synchronously). */
  port: MessagePort;
  /** Int32Array word 0: replies posted so far. */
  signal: SharedArrayBuffer;
}

/** A ledger operation as it crosses: a settlement's log row as its values (`logValues`). */
export type WireLedgerOp =
  | Exclude<LedgerOp, { kind: 'settle' }>
  | (Omit<Extract<LedgerOp, { kind: 'settle' }>, 'logRow'> & { logValues?: LogRowValues });

export type WriterRequest =
  /** Ledger operations (with the log rows of their settlements) and finished requests' log rows. */
  { kind: 'commit'; seq: number; ops: WireLedgerOp[]; rows: LogRowValues[] } | { kind: 'close'; seq: number };

export type WriterReply =
  | { kind: 'ready' }
  | { kind: 'failed'; error: string }
  | {
      kind: 'reply';
      seq: number;
      /** Why the ledger part was refused (the whole batch rolled back; its log rows were retried
       *  alone), or null. */
      ledgerError: string | null;
      /** Operations refused one by one while the rest of the batch was committed (empty: none). */
      refused: LedgerRefusal[];
      /** Why log rows could not be written (all of them, or the ones refused alone), or null. */
      rowsError: string | null;
    };
