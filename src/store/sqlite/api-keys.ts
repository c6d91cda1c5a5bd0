// Gateway API keys: issued once in plaintext, stored as sha256 plus a short lookup prefix.
// No cache: `verify` is one indexed query (prefix), so a revocation committed by another process is
// seen by the very next request. A caller that wants a cache must drop it on `changedSinceLastCheck()`
// (which also reports this instance's own creates and revocations, through `onChange`).
import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { Clock } from '../../clock.ts';
import { Statements, type SqliteDatabase } from './db.ts';
import type { ApiKeyRecord, CreatedApiKey, VerifyResult } from '../types.ts';
import {
  type CreateKeyInput,
  hashKey,
  isWellFormedKey,
  KEY_PREFIX,
  keyNameProblem,
  keyState,
  lookupPrefix,
} from '../key-format.ts';

interface KeyRow {
  id: string;
  prefix: string;
  hash: Buffer;
  workspace: string;
  name: string | null;
  rpm: number | null;
  expires_at: number | null;
  created_at: number;
  revoked_at: number | null;
}

const COLUMNS = 'id, prefix, hash, workspace, name, rpm, expires_at, created_at, revoked_at';

export class ApiKeys {
  private readonly sql: Statements;
  private readonly clock: Clock;
  private readonly onChange: () => void;

  constructor(db: SqliteDatabase, clock: Clock, onChange: () => void = () => undefined) {
    this.sql = new Statements(db);
    this.clock = clock;
    this.onChange = onChange;
  }

  create(input: CreateKeyInput): CreatedApiKey {
    if (typeof input.workspace !== 'string' || input.workspace === '') throw new RangeError('workspace is required');
    if (input.rpm !== undefined && !(Number.isSafeInteger(input.rpm) && input.rpm > 0)) {
      throw new RangeError(`rpm must be a positive integer, got ${input.rpm}`);
    }
    if (input.expiresAt !== undefined && !Number.isSafeInteger(input.expiresAt)) {
      throw new RangeError('expiresAt must be an integer epoch-milliseconds time');
    }
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
    this.sql
      .get(`INSERT INTO api_keys (${COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, NULL)`)
      .run(
        record.id,
        record.prefix,
        hashKey(key),
        record.workspace,
        record.name,
        record.rpm,
        record.expiresAt,
        record.createdAt,
      );
    this.onChange();
    return { ...record, key };
  }

  /**
   * Classifies a presented key. Malformed strings never reach the database. Candidates sharing the
   * prefix are compared by hash with timingSafeEqual, so timing reveals nothing about the secret part.
   */
  verify(presented: string, now: number): VerifyResult {
    if (!isWellFormedKey(presented)) return { status: 'invalid' };
    const key = this.find(presented);
    if (!key) return { status: 'not_found' };
    const state = keyState(key, now);
    if (state === 'revoked') return { status: 'revoked' };
    if (state === 'expired') return { status: 'expired' };
    return { status: 'ok', key };
  }

  /**
   * The record of a presented key whatever its state (active, revoked, expired), or null when it is
   * malformed or was never issued: a refused request is still logged against its key's workspace.
   */
  find(presented: string): ApiKeyRecord | null {
    if (!isWellFormedKey(presented)) return null;
    const hash = hashKey(presented);
    const rows = this.sql
      .get(`SELECT ${COLUMNS} FROM api_keys WHERE prefix = ?`)
      .all(lookupPrefix(presented)) as KeyRow[];
    let match: KeyRow | undefined;
    for (const row of rows) {
      if (row.hash.length === hash.length && timingSafeEqual(row.hash, hash)) match = row;
    }
    return match ? toRecord(match) : null;
  }

  get(id: string): ApiKeyRecord | null {
    const row = this.sql.get(`SELECT ${COLUMNS} FROM api_keys WHERE id = ?`).get(id) as KeyRow | undefined;
    return row ? toRecord(row) : null;
  }

  /** Oldest first. */
  list(workspace?: string): ApiKeyRecord[] {
    const rows = (
      workspace === undefined
        ? this.sql.get(`SELECT ${COLUMNS} FROM api_keys ORDER BY created_at, id`).all()
        : this.sql.get(`SELECT ${COLUMNS} FROM api_keys WHERE workspace = ? ORDER BY created_at, id`).all(workspace)
    ) as KeyRow[];
    return rows.map(toRecord);
  }

  /**
   * Sets (or, with null, clears) a key's expiry; true when the key exists and is not revoked. An
   * expiry in the past expires it at once; clearing one revives an expired key.
   */
  setExpiry(id: string, expiresAt: number | null): boolean {
    if (expiresAt !== null && !Number.isSafeInteger(expiresAt))
      throw new RangeError('expiresAt must be an integer epoch-milliseconds time');
    const changed =
      this.sql.get('UPDATE api_keys SET expires_at = ? WHERE id = ? AND revoked_at IS NULL').run(expiresAt, id)
        .changes > 0;
    if (changed) this.onChange();
    return changed;
  }

  /** True when an active (or expired) key became revoked; false when unknown or already revoked. */
  revoke(id: string): boolean {
    const changed =
      this.sql.get('UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL').run(this.clock.now(), id)
        .changes > 0;
    if (changed) this.onChange();
    return changed;
  }
}

function toRecord(r: KeyRow): ApiKeyRecord {
  return {
    id: r.id,
    prefix: r.prefix,
    workspace: r.workspace,
    name: r.name,
    expiresAt: r.expires_at,
    rpm: r.rpm,
    createdAt: r.created_at,
    revokedAt: r.revoked_at,
  };
}
