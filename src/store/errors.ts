// The errors both store backends throw (the embedded SQLite file and PostgreSQL), so that callers —
// the CLI, the console, the admission seams — tell them apart without knowing which store they hold.

/** A store that cannot be opened, migrated or used as asked (a message for the operator). */
export class StoreError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'StoreError';
  }
}

export type WalletErrorCode =
  | 'duplicate_trace'
  | 'unknown_trace'
  | 'balance_overflow'
  | 'amount_out_of_range'
  | 'idempotency_key_reused';

/** A ledger operation the wallet rules refuse (its code says which rule). */
export class WalletError extends Error {
  readonly code: WalletErrorCode;
  constructor(code: WalletErrorCode, message: string) {
    super(message);
    this.name = 'WalletError';
    this.code = code;
  }
}
