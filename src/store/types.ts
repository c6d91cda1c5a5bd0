// Records the store hands out and takes in: API keys, wallet views, ledger details, request-log rows.
// Money fields are bigint nano-USD; times are epoch milliseconds.

/** An API key as stored: never the key itself or its hash. */
export interface ApiKeyRecord {
  id: string;
  /** Non-secret display/lookup prefix: `sk-pi-` + the first 8 characters of the random part. */
  prefix: string;
  workspace: string;
  name: string | null;
  /** Epoch ms; the key is expired when `expiresAt <= now`. */
  expiresAt: number | null;
  /** Per-key requests per minute; null = the workspace limit applies. */
  rpm: number | null;
  createdAt: number;
  revokedAt: number | null;
}

/** What `ApiKeys.create` returns: the record plus the plaintext key, shown once. */
export interface CreatedApiKey extends ApiKeyRecord {
  key: string;
}

export type ApiKeyState = 'active' | 'revoked' | 'expired';

export type VerifyResult =
  | { status: 'ok'; key: ApiKeyRecord }
  | { status: 'invalid' | 'not_found' | 'revoked' | 'expired' };

/** Facts recorded with a settlement (ledger `details`, JSON). `usage()` groups by model and provider. */
export interface LedgerDetails {
  model?: string;
  provider?: string;
  deployment?: string;
  promptTokens?: number;
  completionTokens?: number;
  reasoningTokens?: number;
  cachedTokens?: number;
  [extra: string]: string | number | boolean | null | undefined;
}

export type LedgerKind = 'credit' | 'hold' | 'settle' | 'release';

/** What a credit did: its ledger row's trace id, the balance after it, and whether an idempotency key
 *  found it already made (then nothing was added and the balance is the wallet's as it is now). */
export interface CreditResult {
  traceId: string;
  balance: bigint;
  replayed: boolean;
}

export interface WalletView {
  workspace: string;
  /** Credits minus settlements; may be negative after an overdraft (a settlement above its hold). */
  balance: bigint;
  /** Sum of open holds. */
  held: bigint;
  /** balance − held: what new holds may take. */
  available: bigint;
  /** Settled cost since 00:00 UTC of `now`. */
  spendToday: bigint;
  openHolds: number;
}

/** One ledger row as read back (`Wallets.ledger`, `Wallets.ledgerOf`). */
export interface LedgerEntry {
  id: number;
  workspace: string;
  kind: LedgerKind;
  amount: bigint;
  traceId: string;
  note: string | null;
  details: LedgerDetails | null;
  createdAt: number;
}

export interface UsageLine {
  model: string;
  provider: string;
  requests: number;
  costNano: bigint;
}

/**
 * One write to the ledger, already decided by admission (which admitted the hold against the
 * balance and knows every open hold's workspace and amount). `Wallets.apply` writes a batch of them.
 * `note` is kept on the ledger row (startup releases say why they released).
 */
export type LedgerOp =
  | { kind: 'hold'; workspace: string; traceId: string; amount: bigint }
  | {
      kind: 'settle';
      workspace: string;
      traceId: string;
      amount: bigint;
      cost: bigint;
      details: LedgerDetails;
      /** The request's log row as known at settlement, committed in the same transaction by a writer
       *  that keeps both (the writer thread); the request's final row later replaces it. */
      logRow?: RequestLogRow;
    }
  | { kind: 'release'; workspace: string; traceId: string; amount: bigint; note?: string };

// The request-log row is what every request observer receives (src/observe/request-row.ts); the
// store writes it as is.
export type { AttemptLogEntry, RequestLogRow } from '../observe/request-row.ts';
import type { RequestLogRow } from '../observe/request-row.ts';

/** A stored row: the appended row plus its sequence id (ascending in commit order). */
export interface RequestLogEntry extends RequestLogRow {
  id: number;
}

export interface RequestLogQuery {
  workspace?: string;
  /** Rows with a larger id, oldest first. Omitted: the newest `limit` rows, still oldest first. */
  afterId?: number;
  /** Default 100, at most 10 000. */
  limit?: number;
}

export interface RequestLogOptions {
  /** Queued rows are written at most this long after being appended. Default 200. */
  flushIntervalMs?: number;
  /** A queue this long is written at once. Default 1000. */
  maxBatch?: number;
}

/**
 * One operation of a batch the store refused on its own (an amount its columns cannot hold, a trace
 * held or closed twice): nothing of it was written, and the rest of its batch was.
 */
export interface LedgerRefusal {
  kind: LedgerOp['kind'];
  traceId: string;
  error: string;
}

/**
 * Where the wallet book's decided ledger operations are committed, one batch per call, in order:
 * on the serving thread's own connection (`commit` returns once committed), or on the writer
 * thread (`commit` resolves when it acknowledged the transaction). `commitNow` commits before it
 * returns, whatever it costs the thread (shutdown, tests). Both answer with the operations the store
 * refused one by one (none: nothing, or an empty list); a batch that could not be committed at all
 * (the disk, a lock never given up) throws or rejects instead, and none of it was written.
 */
export interface LedgerWriter {
  commit(ops: LedgerOp[]): readonly LedgerRefusal[] | undefined | Promise<readonly LedgerRefusal[] | undefined>;
  commitNow(ops: LedgerOp[]): readonly LedgerRefusal[] | undefined;
}
