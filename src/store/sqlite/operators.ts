// Operator accounts and the audit trail in the embedded store. Accounts: a name, a role (admin or
// viewer) and a password hash (scrypt with its salt and parameters in one string, made by
// src/admin/passwords.ts — the store never sees a password). The audit trail is append-only: who
// acted, when, what (the action and its target), from which address and how it ended; triggers
// refuse any UPDATE or DELETE, so no code path (and no CLI command) can rewrite it.
import type { Clock } from '../../clock.ts';
import { Statements, type SqliteDatabase } from './db.ts';

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

interface OperatorRow {
  name: string;
  role: OperatorRole;
  password_hash: string;
  created_at: number;
}

const toAccount = (r: OperatorRow): OperatorAccount => ({
  name: r.name,
  role: r.role,
  passwordHash: r.password_hash,
  createdAt: r.created_at,
});

export class Operators {
  private readonly sql: Statements;
  private readonly clock: Clock;
  constructor(db: SqliteDatabase, clock: Clock) {
    this.sql = new Statements(db);
    this.clock = clock;
  }

  /** Adds an account; false when the name is taken. */
  add(name: string, role: OperatorRole, passwordHash: string): boolean {
    const r = this.sql
      .get(
        'INSERT INTO operators (name, role, password_hash, created_at) VALUES (?, ?, ?, ?) ON CONFLICT(name) DO NOTHING',
      )
      .run(name, role, passwordHash, this.clock.now());
    return r.changes === 1;
  }

  get(name: string): OperatorAccount | null {
    const r = this.sql.get('SELECT * FROM operators WHERE name = ?').get(name) as OperatorRow | undefined;
    return r === undefined ? null : toAccount(r);
  }

  list(): OperatorAccount[] {
    return (this.sql.get('SELECT * FROM operators ORDER BY name').all() as OperatorRow[]).map(toAccount);
  }

  remove(name: string): boolean {
    return this.sql.get('DELETE FROM operators WHERE name = ?').run(name).changes === 1;
  }
}

export class AuditLog {
  private readonly sql: Statements;
  constructor(db: SqliteDatabase) {
    this.sql = new Statements(db);
  }

  append(e: NewAuditEntry): void {
    this.sql
      .get('INSERT INTO audit_log (at, actor, action, target, client, outcome, detail) VALUES (?, ?, ?, ?, ?, ?, ?)')
      .run(e.at, e.actor, e.action, e.target, e.client, e.outcome, e.detail);
  }

  /** Newest first. */
  list(page: AuditPage): AuditEntry[] {
    return this.sql
      .get(
        'SELECT id, at, actor, action, target, client, outcome, detail FROM audit_log WHERE at >= ? AND id < ? ORDER BY id DESC LIMIT ?',
      )
      .all(page.since ?? 0, page.beforeId ?? Number.MAX_SAFE_INTEGER, page.limit) as AuditEntry[];
  }
}
