// Sealed upstream credentials: one row per name, values only ever leave through `reveal`.
import type { Clock } from '../../clock.ts';
import { Statements, type SqliteDatabase } from './db.ts';
import { rotateSealedRows, type Sealer } from './rotate-master.ts';
import { checkName, type RotationResult, type SecretInfo, wrongKey } from '../secret-rules.ts';
import { parseMasterKey, seal, SecretError, unseal, type MasterKey } from '../seal.ts';

export { SecretError } from '../seal.ts';
export type { RotationResult, SecretInfo } from '../secret-rules.ts';

interface SecretRow {
  name: string;
  nonce: Buffer;
  ciphertext: Buffer;
  tag: Buffer;
  key_id: string;
}

export class Secrets {
  private readonly sql: Statements;
  private readonly db: SqliteDatabase;
  private readonly clock: Clock;
  private readonly rawKey: string | undefined;
  private master: MasterKey | SecretError | null = null;
  /** Tells the store facade a value changed (its readers cache unsealed values and names). */
  private readonly onChange: () => void;

  constructor(db: SqliteDatabase, clock: Clock, masterKey: string | undefined, onChange: () => void = () => undefined) {
    this.sql = new Statements(db);
    this.db = db;
    this.clock = clock;
    this.rawKey = masterKey;
    this.onChange = onChange;
  }

  /**
   * Seals and stores (insert or replace). Refuses a key that differs from the one existing rows use,
   * the row being replaced included: a key retired by `rotateMaster` cannot re-seal even a lone
   * secret (re-keying one on purpose means removing it first).
   */
  set(name: string, plaintext: string): void {
    checkName(name);
    if (plaintext.length === 0) throw new SecretError('empty_value', `secret "${name}" must not be empty`);
    const master = this.key();
    const other = this.sql.get('SELECT key_id FROM secrets WHERE key_id <> ? LIMIT 1').get(master.id) as
      | { key_id: string }
      | undefined;
    if (other) throw wrongKey(other.key_id, master.id);
    const s = seal(master, name, plaintext);
    const now = this.clock.now();
    this.sql
      .get(
        `INSERT INTO secrets (name, nonce, ciphertext, tag, key_id, created_at, updated_at)
         VALUES (?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT(name) DO UPDATE SET nonce = excluded.nonce, ciphertext = excluded.ciphertext,
           tag = excluded.tag, key_id = excluded.key_id, updated_at = excluded.updated_at`,
      )
      .run(name, s.nonce, s.ciphertext, s.tag, master.id, now, now);
    this.onChange();
  }

  /** Names and times, sorted by name; never values. */
  list(): SecretInfo[] {
    const rows = this.sql.get('SELECT name, created_at, updated_at FROM secrets ORDER BY name').all() as {
      name: string;
      created_at: number;
      updated_at: number;
    }[];
    return rows.map((r) => ({ name: r.name, createdAt: r.created_at, updatedAt: r.updated_at }));
  }

  remove(name: string): boolean {
    const removed = this.sql.get('DELETE FROM secrets WHERE name = ?').run(name).changes > 0;
    if (removed) this.onChange();
    return removed;
  }

  names(): Set<string> {
    const rows = this.sql.get('SELECT name FROM secrets').pluck().all() as string[];
    return new Set(rows);
  }

  /** The plaintext, or null when no row has this name. Throws SecretError on a wrong key or tampering. */
  reveal(name: string): string | null {
    const row = this.sql.get('SELECT name, nonce, ciphertext, tag, key_id FROM secrets WHERE name = ?').get(name) as
      | SecretRow
      | undefined;
    if (!row) return null;
    return this.open(row);
  }

  /** Tries every row; values are decrypted and dropped. */
  verifyAll(): { ok: string[]; bad: { name: string; reason: string }[] } {
    const rows = this.sql
      .get('SELECT name, nonce, ciphertext, tag, key_id FROM secrets ORDER BY name')
      .all() as SecretRow[];
    const ok: string[] = [];
    const bad: { name: string; reason: string }[] = [];
    for (const row of rows) {
      try {
        this.open(row);
        ok.push(row.name);
      } catch (err) {
        bad.push({ name: row.name, reason: err instanceof Error ? err.message : String(err) });
      }
    }
    return { ok, bad };
  }

  /**
   * Re-seals every row under `newKey` (32 bytes as base64 or hex) in one transaction, each row
   * verified under the new key before the commit; any failure leaves every row as it was. Afterwards
   * this store's own key (the old one) no longer opens anything: open the store again with the new key.
   * `sealer` is for tests only.
   */
  rotateMaster(newKey: string, sealer?: Sealer): RotationResult {
    const next = parseMasterKey(newKey, 'the new master key');
    const result = rotateSealedRows(this.db, () => this.key(), next, sealer);
    if (result.resealed.length > 0) this.onChange();
    return result;
  }

  /**
   * Startup check: when sealed rows exist, the master key must be present, well-formed and the one
   * they were sealed with (by fingerprint). With no rows, a missing key is fine.
   */
  assertUsable(): void {
    const ids = this.sql.get('SELECT DISTINCT key_id FROM secrets').pluck().all() as string[];
    if (ids.length === 0) return;
    let master: MasterKey;
    try {
      master = this.key();
    } catch (err) {
      if (err instanceof SecretError && err.code === 'no_master_key') {
        throw new SecretError(
          'no_master_key',
          `the database holds ${this.count()} sealed secret(s) but PI_MASTER_KEY is not set`,
        );
      }
      throw err;
    }
    const foreign = ids.find((id) => id !== master.id);
    if (foreign !== undefined) throw wrongKey(foreign, master.id);
  }

  private count(): number {
    return this.sql.get('SELECT COUNT(*) FROM secrets').pluck().get() as number;
  }

  private open(row: SecretRow): string {
    const master = this.key();
    if (row.key_id !== master.id) throw wrongKey(row.key_id, master.id);
    return unseal(master, row.name, { nonce: row.nonce, ciphertext: row.ciphertext, tag: row.tag });
  }

  /** Parsed once; a malformed key keeps failing with the same clear error. */
  private key(): MasterKey {
    if (this.master === null) {
      try {
        this.master = parseMasterKey(this.rawKey);
      } catch (err) {
        if (!(err instanceof SecretError)) throw err;
        this.master = err;
      }
    }
    if (this.master instanceof SecretError) throw this.master;
    return this.master;
  }
}
