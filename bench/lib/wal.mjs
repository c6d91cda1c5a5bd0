// Reading what a SQLite WAL holds, for the WAL benchmarks (wal.mjs, wal-shape.mjs): the wal-index
// header (frames so far, salt, page size), the frames of a window (commits, pages) and the b-tree
// each page belongs to.
import { closeSync, openSync, readSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { ROOT } from './proc.mjs';

export const Database = createRequire(join(ROOT, 'package.json'))('better-sqlite3');

/**
 * The wal-index header (the first of its two copies, which must agree): frames, salt, page size; and
 * how many frames the last checkpoint copied (nBackfill). `fd` stays open for the whole round: closing
 * a descriptor of the -shm file would drop every POSIX lock this process holds on it, the reader's too.
 */
export function walIndex(fd) {
  const b = Buffer.alloc(100);
  for (let tries = 0; tries < 100; tries++) {
    readSync(fd, b, 0, 100, 0);
    if (b.subarray(0, 48).equals(b.subarray(48, 96))) {
      return {
        mxFrame: b.readUInt32LE(16),
        salt: b.subarray(32, 40).toString('hex'),
        pageSize: b.readUInt16LE(14),
        backfilled: b.readUInt32LE(96),
      };
    }
  }
  throw new Error('the wal-index header never read consistently');
}

/** Frames [from, to) of the WAL: commits among them and frames per page number. */
export function walFrames(dbFile, pageSize, from, to) {
  const fd = openSync(`${dbFile}-wal`, 'r');
  const head = Buffer.alloc(24);
  const pages = new Map();
  let commits = 0;
  try {
    for (let i = from; i < to; i++) {
      readSync(fd, head, 0, 24, 32 + i * (pageSize + 24));
      const pgno = head.readUInt32BE(0);
      if (head.readUInt32BE(4) !== 0) commits++;
      pages.set(pgno, (pages.get(pgno) ?? 0) + 1);
    }
  } finally {
    closeSync(fd);
  }
  return { commits, pages };
}

/** Frames per b-tree (table or index name), largest first. */
export function byTree(dbFile, pages) {
  const db = new Database(dbFile, { readonly: true });
  try {
    const owner = new Map(
      db
        .prepare('SELECT pageno, name FROM dbstat')
        .all()
        .map((r) => [r.pageno, r.name]),
    );
    const out = new Map();
    for (const [pgno, n] of pages) {
      const name = owner.get(pgno) ?? '(freelist or new)';
      out.set(name, (out.get(name) ?? 0) + n);
    }
    return [...out.entries()].sort((a, b) => b[1] - a[1]);
  } finally {
    db.close();
  }
}

/**
 * Holds a read transaction on `file` so the WAL is not restarted while it lasts, and reads the
 * wal-index; `end()` gives the window's frames, commits and frames by b-tree. A read transaction
 * that began on a WAL every frame of which was copied reads the database file alone and does not
 * keep the WAL from a restart: then it is given up, and null returned (try again after a commit).
 */
export function holdWal(file) {
  const reader = new Database(file, { readonly: true });
  const shm = openSync(`${file}-shm`, 'r');
  const before = walIndex(shm);
  reader.exec('BEGIN');
  reader.prepare('SELECT COUNT(*) FROM sqlite_schema').get();
  const start = walIndex(shm);
  if (!(before.backfilled < before.mxFrame && before.salt === start.salt && start.backfilled < before.mxFrame)) {
    reader.exec('COMMIT');
    reader.close();
    closeSync(shm);
    return null;
  }
  return {
    /** null when the WAL was restarted anyway (the window is lost). */
    end() {
      const end = walIndex(shm);
      const same = end.salt === start.salt;
      const read = same ? walFrames(file, start.pageSize, start.mxFrame, end.mxFrame) : null;
      reader.exec('COMMIT');
      reader.close();
      closeSync(shm);
      if (!same) return null;
      return {
        pageSize: start.pageSize,
        frames: end.mxFrame - start.mxFrame,
        commits: read.commits,
        trees: byTree(file, read.pages),
      };
    },
  };
}
