// Operator accounts and the audit trail in the embedded store. Accounts: a name, a role (admin or
// viewer) and a password hash (scrypt with its salt and parameters in one string, made by
// src/admin/passwords.ts — the store never sees a password). The audit trail is append-only: who
// acted, when, what (the action and its target), from which address and how it ended; triggers
// refuse any UPDATE or DELETE, so no code path (and no CLI command) can rewrite it.
import type { Clock } from '../../clock.ts';
import { Statements, type SqliteDatabase } from './db.ts';
import type { AuditEntry, AuditPage, NewAuditEntry, OperatorAccount, OperatorRole } from '../operator-types.ts';

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
