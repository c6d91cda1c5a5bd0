// Operator accounts and the audit trail as both store backends keep them: an account's role and
// stored password hash, an audit entry and the page of them a reader asks for, the operator-name rule,
// and the one view of an entry the CLI's --json and the admin API show.

export type OperatorRole = 'admin' | 'viewer';

export interface OperatorAccount {
  name: string;
  role: OperatorRole;
  passwordHash: string;
  /** Epoch ms. */
  createdAt: number;
}

export interface AuditEntry {
  id: number;
  /** Epoch ms. */
  at: number;
  /** An operator's name, or "token" for the shared operator token. */
  actor: string;
  /** What was done: `sign_in`, `sign_out`, `wallet.credit`, `key.create`, `key.revoke`, `key.expiry`, `config.reload`. */
  action: string;
  /** What it was done to (a workspace, a key id), or null. */
  target: string | null;
  /** The client's address, or null when it came from the command line. */
  client: string | null;
  /** `ok`, `failed` (wrong credentials), `limited`, or `refused: <code>`. */
  outcome: string;
  /** A short JSON object of what else matters (an amount and note, an expiry); never a secret. */
  detail: string | null;
}

/** An audit entry as `pi-gateway audit --json` and `GET /admin/audit` show it: ISO time, the detail
 *  parsed back from its stored JSON. */
export function auditEntryView(e: AuditEntry) {
  return {
    id: e.id,
    time: new Date(e.at).toISOString(),
    actor: e.actor,
    action: e.action,
    target: e.target,
    client: e.client,
    outcome: e.outcome,
    detail: e.detail === null ? null : (JSON.parse(e.detail) as unknown),
  };
}

export type NewAuditEntry = Omit<AuditEntry, 'id'>;

export interface AuditPage {
  /** Rows at or after this time (epoch ms). */
  since?: number;
  /** Rows older than this id (paging back). */
  beforeId?: number;
  /** 1–1000. */
  limit: number;
}

/** Operator names: what a person types at sign-in and reads in the audit trail. */
export const OPERATOR_NAME = /^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$/;
