// Gateway API keys in PostgreSQL: the same format, hashing and states as the embedded store
// (src/store/key-format.ts, whose helpers this reuses), so a key moved by `migrate --from` verifies
// unchanged.
import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { Clock } from '../../clock.ts';
import {
  type CreateKeyInput,
  hashKey,
  isWellFormedKey,
  KEY_PREFIX,
  keyNameProblem,
  keyState,
  lookupPrefix,
} from '../key-format.ts';
import type { ApiKeyRecord, CreatedApiKey, VerifyResult } from '../types.ts';
import type { PgPool } from './db.ts';

const COLUMNS = 'id, prefix, hash, workspace, name, rpm, expires_at, created_at, revoked_at';

interface KeyRow {
  id: string;
  prefix: string;
  hash: Buffer;
  workspace: string;
  name: string | null;
  rpm: bigint | null;
  expires_at: bigint | null;
  created_at: bigint;
  revoked_at: bigint | null;
}

const num = (v: bigint | null): number | null => (v === null ? null : Number(v));

function toRecord(r: KeyRow): ApiKeyRecord {
  return {
    id: r.id,
    prefix: r.prefix,
    workspace: r.workspace,
    name: r.name,
    expiresAt: num(r.expires_at),
    rpm: num(r.rpm),
    createdAt: Number(r.created_at),
    revokedAt: num(r.revoked_at),
  };
}

export class PgApiKeys {
  private readonly pool: PgPool;
  private readonly clock: Clock;
  constructor(pool: PgPool, clock: Clock) {
    this.pool = pool;
    this.clock = clock;
  }

  async create(input: CreateKeyInput): Promise<CreatedApiKey> {
    if (typeof input.workspace !== 'string' || input.workspace === '') throw new RangeError('workspace is required');
    if (input.rpm !== undefined && !(Number.isSafeInteger(input.rpm) && input.rpm > 0))
      throw new RangeError(`rpm must be a positive integer, got ${input.rpm}`);
    if (input.expiresAt !== undefined && !Number.isSafeInteger(input.expiresAt))
      throw new RangeError('expiresAt must be an integer epoch-milliseconds time');
    const nameProblem = input.name === undefined ? null : keyNameProblem(input.name);
    if (nameProblem !== null) throw new RangeError(nameProblem);
    const key = KEY_PREFIX + randomBytes(32).toString('base64url');
    const record: ApiKeyRecord = {
      id: 'key_' + randomBytes(8).toString('hex'),
      prefix: lookupPrefix(key),
      workspace: input.workspace,
      name: input.name ?? null,
      expiresAt: input.expiresAt ?? null,
      rpm: input.rpm ?? null,
      createdAt: this.clock.now(),
      revokedAt: null,
    };
    await this.pool.query(`INSERT INTO api_keys (${COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, NULL)`, [
      record.id,
      record.prefix,
      hashKey(key),
      record.workspace,
      record.name,
      record.rpm,
      record.expiresAt,
      record.createdAt,
    ]);
    return { ...record, key };
  }

  async verify(presented: string, now: number): Promise<VerifyResult> {
    if (!isWellFormedKey(presented)) return { status: 'invalid' };
    const key = await this.find(presented);
    if (!key) return { status: 'not_found' };
    const state = keyState(key, now);
    if (state !== 'active') return { status: state };
    return { status: 'ok', key };
  }

  /** The record of an issued key whatever its state; candidates compared by hash in constant time. */
  async find(presented: string): Promise<ApiKeyRecord | null> {
    if (!isWellFormedKey(presented)) return null;
    const hash = hashKey(presented);
    const r = await this.pool.query<KeyRow>(`SELECT ${COLUMNS} FROM api_keys WHERE prefix = $1`, [
      lookupPrefix(presented),
    ]);
    let match: KeyRow | undefined;
    for (const row of r.rows) if (row.hash.length === hash.length && timingSafeEqual(row.hash, hash)) match = row;
    return match ? toRecord(match) : null;
  }

  /** The digest (base64) of every issued key, revoked and expired ones included. */
  async digests(): Promise<Set<string>> {
    const r = await this.pool.query<{ hash: Buffer }>('SELECT hash FROM api_keys');
    return new Set(r.rows.map((row) => row.hash.toString('base64')));
  }

  /** The keys with these ids as they are now, each with its digest (base64); ids not found are left out. */
  async byIds(ids: readonly string[]): Promise<{ record: ApiKeyRecord; digest: string }[]> {
    if (ids.length === 0) return [];
    const r = await this.pool.query<KeyRow>(`SELECT ${COLUMNS} FROM api_keys WHERE id = ANY($1)`, [ids]);
    return r.rows.map((row) => ({ record: toRecord(row), digest: row.hash.toString('base64') }));
  }

  async get(id: string): Promise<ApiKeyRecord | null> {
    const r = await this.pool.query<KeyRow>(`SELECT ${COLUMNS} FROM api_keys WHERE id = $1`, [id]);
    const row = r.rows[0];
    return row ? toRecord(row) : null;
  }

  async list(workspace?: string): Promise<ApiKeyRecord[]> {
    const r =
      workspace === undefined
        ? await this.pool.query<KeyRow>(`SELECT ${COLUMNS} FROM api_keys ORDER BY created_at, id`)
        : await this.pool.query<KeyRow>(
            `SELECT ${COLUMNS} FROM api_keys WHERE workspace = $1 ORDER BY created_at, id`,
            [workspace],
          );
    return r.rows.map(toRecord);
  }

  /**
   * Sets (or, with null, clears) a key's expiry; true when the key exists and is not revoked — the
   * embedded store's `setExpiry`. The change trigger moves `store_changes`, so nodes drop cached keys.
   */
  async setExpiry(id: string, expiresAt: number | null): Promise<boolean> {
    if (expiresAt !== null && !Number.isSafeInteger(expiresAt))
      throw new RangeError('expiresAt must be an integer epoch-milliseconds time');
    const r = await this.pool.query('UPDATE api_keys SET expires_at = $1 WHERE id = $2 AND revoked_at IS NULL', [
      expiresAt,
      id,
    ]);
    return (r.rowCount ?? 0) > 0;
  }

  async revoke(id: string): Promise<boolean> {
    const r = await this.pool.query('UPDATE api_keys SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL', [
      this.clock.now(),
      id,
    ]);
    return (r.rowCount ?? 0) > 0;
  }
}
