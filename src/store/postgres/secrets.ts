// Sealed upstream credentials in PostgreSQL: the embedded store's sealing (AES-256-GCM under
// PI_MASTER_KEY, src/store/seal.ts) and rules (one master key per database, names as in config), so
// rows moved by `migrate --from` stay sealed bytes that the same master key opens.
import type { Clock } from '../../clock.ts';
import { type MasterKey, parseMasterKey, seal, SecretError, unseal } from '../seal.ts';
import { checkName, type RotationResult, type SecretInfo, wrongKey } from '../secret-rules.ts';
import { inTransaction, type PgPool } from './db.ts';

interface SecretRow {
  name: string;
  nonce: Buffer;
  ciphertext: Buffer;
  tag: Buffer;
  key_id: string;
}

const SELECT_ALL = 'SELECT name, nonce, ciphertext, tag, key_id FROM secrets ORDER BY name';

export class PgSecrets {
  private master: MasterKey | SecretError | null = null;

  private readonly pool: PgPool;
  private readonly clock: Clock;
  private readonly rawKey: string | undefined;
  constructor(pool: PgPool, clock: Clock, rawKey: string | undefined) {
    this.pool = pool;
    this.clock = clock;
    this.rawKey = rawKey;
  }

  async set(name: string, plaintext: string): Promise<void> {
    checkName(name);
    if (plaintext.length === 0) throw new SecretError('empty_value', `secret "${name}" must not be empty`);
    const master = this.key();
    const s = seal(master, name, plaintext);
    const now = this.clock.now();
    await inTransaction(this.pool, async (c) => {
      // Serialises with a concurrent rotation, which locks every row it re-seals.
      await c.query('LOCK TABLE secrets IN SHARE ROW EXCLUSIVE MODE');
      const other = await c.query<{ key_id: string }>('SELECT key_id FROM secrets WHERE key_id <> $1 LIMIT 1', [
        master.id,
      ]);
      const foreign = other.rows[0];
      if (foreign) throw wrongKey(foreign.key_id, master.id);
      await c.query(
        `INSERT INTO secrets (name, nonce, ciphertext, tag, key_id, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $6)
         ON CONFLICT (name) DO UPDATE SET nonce = excluded.nonce, ciphertext = excluded.ciphertext, tag = excluded.tag,
           key_id = excluded.key_id, updated_at = excluded.updated_at`,
        [name, s.nonce, s.ciphertext, s.tag, master.id, now],
      );
    });
  }

  async list(): Promise<SecretInfo[]> {
    const r = await this.pool.query<{ name: string; created_at: bigint; updated_at: bigint }>(
      'SELECT name, created_at, updated_at FROM secrets ORDER BY name',
    );
    return r.rows.map((x) => ({ name: x.name, createdAt: Number(x.created_at), updatedAt: Number(x.updated_at) }));
  }

  async remove(name: string): Promise<boolean> {
    const r = await this.pool.query('DELETE FROM secrets WHERE name = $1', [name]);
    return (r.rowCount ?? 0) > 0;
  }

  /** Every credential opened at once (the gateway keeps them in memory): name → value, or the
   *  reason that name does not open (tampered, another master key). */
  async revealAll(): Promise<Map<string, { value: string } | { error: SecretError }>> {
    return this.openRows((await this.pool.query<SecretRow>(SELECT_ALL)).rows);
  }

  /** As `revealAll`, for these names only (those stored). */
  async reveal(names: readonly string[]): Promise<Map<string, { value: string } | { error: SecretError }>> {
    if (names.length === 0) return new Map();
    const r = await this.pool.query<SecretRow>(
      'SELECT name, nonce, ciphertext, tag, key_id FROM secrets WHERE name = ANY($1) ORDER BY name',
      [names],
    );
    return this.openRows(r.rows);
  }

  private openRows(rows: readonly SecretRow[]): Map<string, { value: string } | { error: SecretError }> {
    const out = new Map<string, { value: string } | { error: SecretError }>();
    for (const row of rows) {
      try {
        out.set(row.name, { value: this.open(row) });
      } catch (err) {
        if (!(err instanceof SecretError)) throw err;
        out.set(row.name, { error: err });
      }
    }
    return out;
  }

  async assertUsable(): Promise<void> {
    const r = await this.pool.query<{ key_id: string; n: bigint }>(
      'SELECT key_id, COUNT(*) AS n FROM secrets GROUP BY key_id',
    );
    if (r.rows.length === 0) return;
    let master: MasterKey;
    try {
      master = this.key();
    } catch (err) {
      if (err instanceof SecretError && err.code === 'no_master_key') {
        const count = r.rows.reduce((a, x) => a + Number(x.n), 0);
        throw new SecretError(
          'no_master_key',
          `the database holds ${count} sealed secret(s) but PI_MASTER_KEY is not set`,
        );
      }
      throw err;
    }
    const foreign = r.rows.find((x) => x.key_id !== master.id);
    if (foreign) throw wrongKey(foreign.key_id, master.id);
  }

  /**
   * Re-seals every row under `newKey` in one transaction (rows locked), each verified under the new
   * key before the commit. PostgreSQL keeps old row versions until vacuumed: the table is rewritten
   * (VACUUM FULL) afterwards so the old ciphertexts leave the table's files (`scrubbed`); copies in
   * WAL archives and backups are the operator's to expire.
   */
  async rotateMaster(newKey: string): Promise<RotationResult> {
    const next = parseMasterKey(newKey, 'the new master key');
    const result = await inTransaction(this.pool, async (c): Promise<Omit<RotationResult, 'scrubbed'>> => {
      const rows = (await c.query<SecretRow>(`${SELECT_ALL} FOR UPDATE`)).rows;
      if (rows.length === 0) return { resealed: [], fromKeyId: null, toKeyId: next.id };
      const old = this.key();
      if (old.id === next.id)
        throw new SecretError(
          'same_master_key',
          `the new master key is the current one (key ${old.id}); give a different key`,
        );
      const plain = new Map<string, string>();
      for (const row of rows) {
        if (row.key_id !== old.id) {
          throw new SecretError(
            'wrong_master_key',
            `secret "${row.name}" is sealed with master key ${row.key_id} but PI_MASTER_KEY is key ${old.id}; nothing was rotated`,
          );
        }
        plain.set(row.name, unseal(old, row.name, row));
      }
      for (const row of rows) {
        const s = seal(next, row.name, plain.get(row.name) as string);
        await c.query('UPDATE secrets SET nonce = $1, ciphertext = $2, tag = $3, key_id = $4 WHERE name = $5', [
          s.nonce,
          s.ciphertext,
          s.tag,
          next.id,
          row.name,
        ]);
      }
      for (const row of (await c.query<SecretRow>(SELECT_ALL)).rows) {
        let ok = row.key_id === next.id;
        try {
          ok = ok && unseal(next, row.name, row) === plain.get(row.name);
        } catch {
          ok = false;
        }
        if (!ok)
          throw new SecretError(
            'rotation_failed',
            `secret "${row.name}" did not open under the new key after re-sealing; nothing was rotated`,
          );
      }
      return { resealed: rows.map((r) => r.name), fromKeyId: old.id, toKeyId: next.id };
    });
    let scrubbed = result.resealed.length === 0;
    if (!scrubbed) {
      try {
        await this.pool.query('VACUUM FULL secrets');
        scrubbed = true;
      } catch {
        scrubbed = false;
      }
    }
    return { ...result, scrubbed };
  }

  private open(row: SecretRow): string {
    const master = this.key();
    if (row.key_id !== master.id) throw wrongKey(row.key_id, master.id);
    return unseal(master, row.name, row);
  }

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
