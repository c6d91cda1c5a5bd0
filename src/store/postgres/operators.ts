// Operator accounts and the append-only audit trail in PostgreSQL: the same rows and rules as the
// embedded store (src/store/sqlite/operators.ts), so every node of a fleet signs in the same operators and
// writes one trail. A trigger refuses UPDATE and DELETE on the trail.
import type { Clock } from '../../clock.ts';
import type { AuditEntry, AuditPage, NewAuditEntry, OperatorAccount, OperatorRole } from '../operator-types.ts';
import type { PgPool } from './db.ts';

interface OperatorRow {
  name: string;
  role: OperatorRole;
  password_hash: string;
  created_at: string;
}

interface AuditRow {
  id: string;
  at: string;
  actor: string;
  action: string;
  target: string | null;
  client: string | null;
  outcome: string;
  detail: string | null;
}

const toAccount = (r: OperatorRow): OperatorAccount => ({
  name: r.name,
  role: r.role,
  passwordHash: r.password_hash,
  createdAt: Number(r.created_at),
});

export class PgOperators {
  private readonly pool: PgPool;
  private readonly clock: Clock;
  constructor(pool: PgPool, clock: Clock) {
    this.pool = pool;
    this.clock = clock;
  }

  async add(name: string, role: OperatorRole, passwordHash: string): Promise<boolean> {
    const r = await this.pool.query(
      'INSERT INTO operators (name, role, password_hash, created_at) VALUES ($1, $2, $3, $4) ON CONFLICT (name) DO NOTHING',
      [name, role, passwordHash, this.clock.now()],
    );
    return r.rowCount === 1;
  }

  async get(name: string): Promise<OperatorAccount | null> {
    const r = await this.pool.query<OperatorRow>('SELECT * FROM operators WHERE name = $1', [name]);
    const row = r.rows[0];
    return row === undefined ? null : toAccount(row);
  }

  async list(): Promise<OperatorAccount[]> {
    return (await this.pool.query<OperatorRow>('SELECT * FROM operators ORDER BY name')).rows.map(toAccount);
  }

  async remove(name: string): Promise<boolean> {
    return (await this.pool.query('DELETE FROM operators WHERE name = $1', [name])).rowCount === 1;
  }
}

export class PgAuditLog {
  private readonly pool: PgPool;
  constructor(pool: PgPool) {
    this.pool = pool;
  }

  async append(e: NewAuditEntry): Promise<void> {
    await this.pool.query(
      'INSERT INTO audit_log (at, actor, action, target, client, outcome, detail) VALUES ($1, $2, $3, $4, $5, $6, $7)',
      [e.at, e.actor, e.action, e.target, e.client, e.outcome, e.detail],
    );
  }

  async list(page: AuditPage): Promise<AuditEntry[]> {
    const r = await this.pool.query<AuditRow>(
      'SELECT id, at, actor, action, target, client, outcome, detail FROM audit_log WHERE at >= $1 AND id < $2 ORDER BY id DESC LIMIT $3',
      [page.since ?? 0, page.beforeId ?? Number.MAX_SAFE_INTEGER, page.limit],
    );
    return r.rows.map((x) => ({ ...x, id: Number(x.id), at: Number(x.at) }));
  }
}
