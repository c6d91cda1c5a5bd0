// Opening the SQLite file: pragmas and versioned migrations. The only place a connection is made.
//
// Durability: WAL with synchronous=NORMAL. A committed transaction survives a crash of the process
// (the WAL is in the OS page cache and is replayed on the next open), but the last commits before a
// power loss or kernel crash may be lost; the database itself stays consistent either way.
// WAL needs shared memory, so every process using the file must run on the same host
// (no network file systems).
import { existsSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import Database from 'better-sqlite3';
import type { Clock } from '../../clock.ts';
import { systemClock } from '../../clock.ts';
import { isSingleExecutable, loadNativeAddon } from '../../install/single-executable.ts';
import { MIGRATIONS, type Migration } from './migrations.ts';
import { createPrivateFile } from './private-file.ts';
import { StoreError } from '../errors.ts';

export type SqliteDatabase = Database.Database;

export interface OpenDatabaseOptions {
  clock?: Clock;
  /** Open read-only: the file must exist and be fully migrated; nothing is ever written. */
  readonly?: boolean;
  /** Migrations to run; tests pass extra ones. Default: the shipped list. */
  migrations?: readonly Migration[];
}

/** The single executable loads better-sqlite3's addon from its unpacked files; elsewhere the package
 *  finds its own. The package takes the loaded addon object as `nativeBinding` (lib/database.js);
 *  its typings name only the path form, which the executable cannot use (it cannot require a file). */
export function sqliteAddon(): Database.Options {
  if (!isSingleExecutable()) return {};
  addon ??= loadNativeAddon('better_sqlite3') as object;
  return { nativeBinding: addon } as unknown as Database.Options;
}
let addon: object | null = null;

/**
 * The page size of a new database file, in bytes. Every commit writes each page it changed to the
 * WAL whole, and a commit of the writer thread changes the last page of about eight b-trees (the
 * ledger, the request log, their indexes, the wallet) however little it adds to each: at SQLite's
 * default of 4 KiB that was ~37 KiB of WAL per commit carrying one request; at 1 KiB it is ~12 KiB
 * (bench/RESULTS.md, `node bench/run.js wal`). A request-log row up to ~990 bytes still fits a page.
 */
export const PAGE_SIZE = 1024;

/**
 * Each connection's page cache, in KiB. better-sqlite3 builds SQLite with a 16 MB default
 * (SQLITE_DEFAULT_CACHE_SIZE=-16000), and `serve` holds three connections (the serving thread's, the
 * writer's, the checkpointer's): the writer's cache filled with the pages it had just appended to and
 * stayed at ~24 MB of the process's memory after about 17,000 requests. What the writer touches again
 * is the last page of each of a dozen b-trees and their interior pages, a few hundred pages; a page
 * read again after eviction comes from the operating system's page cache. At 2 MiB, peak RSS under the
 * continuous benchmark fell by ~20 MB with no change in CPU per request (bench/RESULTS.md, memory).
 */
export const PAGE_CACHE_KIB = 2048;

/** A size of WAL in pages of this database (auto-checkpoint thresholds are counted in pages). */
export function walPages(db: SqliteDatabase, bytes: number): number {
  return Math.ceil(bytes / (db.pragma('page_size', { simple: true }) as number));
}

/** Milliseconds a connection waits for another writer before SQLITE_BUSY. */
export const BUSY_TIMEOUT_MS = 5000;

export function openDatabase(file: string, opts: OpenDatabaseOptions = {}): SqliteDatabase {
  const migrations = opts.migrations ?? MIGRATIONS;
  if (opts.readonly) {
    let db: SqliteDatabase;
    try {
      db = new Database(file, { readonly: true, fileMustExist: true, ...sqliteAddon() });
    } catch (err) {
      throw new StoreError(
        `cannot open database ${file} read-only: ${err instanceof Error ? err.message : String(err)}`,
      );
    }
    db.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
    db.pragma(`cache_size = -${PAGE_CACHE_KIB}`);
    const current = appliedVersion(db);
    const latest = latestVersion(migrations);
    if (current !== latest) {
      db.close();
      throw new StoreError(
        `database ${file} is at schema version ${current}, this build expects ${latest}; ` +
          'open it once with a writing command (or `pi-gateway serve`) to migrate',
      );
    }
    return db;
  }

  const db = openWritable(file);
  try {
    // busy_timeout first: switching to WAL and migrating may have to wait for another process.
    db.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
    db.pragma(`cache_size = -${PAGE_CACHE_KIB}`);
    // Takes effect on a new file only (before its first table); a database made earlier keeps its own.
    db.pragma(`page_size = ${PAGE_SIZE}`);
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = NORMAL');
    // Checkpoint the WAL every ~16 MB instead of every 4 MB: each checkpoint fsyncs twice, and at a few
    // thousand ledger rows a second the default made that a per-second cost on the request path.
    db.pragma(`wal_autocheckpoint = ${walPages(db, 16 * 2 ** 20)}`);
    db.pragma('foreign_keys = ON');
    migrate(db, migrations, opts.clock ?? systemClock);
  } catch (err) {
    db.close();
    throw err;
  }
  return db;
}

/** A writable connection, or a StoreError naming the file (and the missing directory, the usual cause). */
function openWritable(file: string): SqliteDatabase {
  try {
    createPrivateFile(file);
    return new Database(file, sqliteAddon());
  } catch (err) {
    const dir = dirname(resolve(file));
    const why = existsSync(dir)
      ? err instanceof Error
        ? err.message
        : String(err)
      : `the directory ${dir} does not exist (create it, or choose another --db / PI_DB)`;
    throw new StoreError(`cannot open database ${file}: ${why}`);
  }
}

function latestVersion(migrations: readonly Migration[]): number {
  return migrations.reduce((max, m) => Math.max(max, m.version), 0);
}

function appliedVersion(db: SqliteDatabase): number {
  const table = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'").get();
  if (!table) return 0;
  const row = db.prepare('SELECT MAX(version) AS v FROM schema_migrations').get() as { v: number | null };
  return row.v ?? 0;
}

/**
 * Runs every migration newer than the database, in version order, all in one IMMEDIATE transaction:
 * two processes opening a fresh file at once serialise here, and the second finds nothing to do.
 */
export function migrate(db: SqliteDatabase, migrations: readonly Migration[], clock: Clock): number[] {
  const sorted = [...migrations].sort((a, b) => a.version - b.version);
  for (let i = 1; i < sorted.length; i++) {
    if ((sorted[i] as Migration).version === (sorted[i - 1] as Migration).version) {
      throw new StoreError(`duplicate migration version ${(sorted[i] as Migration).version}`);
    }
  }
  const run = db.transaction((): number[] => {
    db.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
      version     INTEGER PRIMARY KEY,
      name        TEXT NOT NULL,
      applied_at  INTEGER NOT NULL
    ) STRICT`);
    const current = appliedVersion(db);
    const latest = latestVersion(sorted);
    if (current > latest) {
      throw new StoreError(
        `database schema version ${current} is newer than this build (${latest}); upgrade pi-gateway`,
      );
    }
    const applied: number[] = [];
    const record = db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)');
    for (const m of sorted) {
      if (m.version <= current) continue;
      db.exec(m.sql);
      record.run(m.version, m.name, clock.now());
      applied.push(m.version);
    }
    return applied;
  });
  return run.immediate();
}

/**
 * Prepared statements by SQL text, prepared on first use and reused (hot paths such as key
 * verification and holds run one per request). `bigints` makes every statement read INTEGER
 * columns as bigint, which is how money columns must be read.
 */
export class Statements {
  private readonly db: SqliteDatabase;
  private readonly bigints: boolean;
  private readonly cache = new Map<string, Database.Statement>();

  constructor(db: SqliteDatabase, bigints = false) {
    this.db = db;
    this.bigints = bigints;
  }

  get(sql: string): Database.Statement {
    let s = this.cache.get(sql);
    if (!s) {
      s = this.db.prepare(sql);
      if (this.bigints && s.reader) s.safeIntegers(true);
      this.cache.set(sql, s);
    }
    return s;
  }
}
