// An online copy of the embedded database: SQLite's backup API copies it page by page into a new
// file while a server keeps writing (WAL), and the copy is one consistent snapshot — what to keep
// before an upgrade, and what a restore puts back. The copy is readable by its owner only, like the
// database (it holds key hashes, sealed credentials and the ledger).
import { existsSync } from 'node:fs';
import { StoreError } from '../errors.ts';
import { openDatabase } from './db.ts';
import { createPrivateFile } from './private-file.ts';

export interface BackupResult {
  pages: number;
  bytes: number;
}

export async function backupDatabase(file: string, to: string): Promise<BackupResult> {
  if (existsSync(to)) throw new StoreError(`${to} exists: a backup never overwrites a file`);
  const db = openDatabase(file, { readonly: true });
  // Created private before a byte is copied into it, so the copy is never readable by others.
  try {
    createPrivateFile(to);
  } catch (err) {
    db.close();
    throw new StoreError(`cannot create ${to}: ${err instanceof Error ? err.message : String(err)}`);
  }
  try {
    let progress: Awaited<ReturnType<typeof db.backup>>;
    try {
      progress = await db.backup(to);
    } catch (err) {
      throw new StoreError(`cannot back up ${file} to ${to}: ${err instanceof Error ? err.message : String(err)}`);
    }
    const pageSize = db.pragma('page_size', { simple: true }) as number;
    return { pages: progress.totalPages, bytes: progress.totalPages * pageSize };
  } finally {
    db.close();
  }
}
