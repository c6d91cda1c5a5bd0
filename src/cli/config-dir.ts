// Which config directory a command reads, and the one problem that comes before any config issue: a
// directory that is not there. The store commands that check workspace ids (key, wallet, usage) and
// credential names (secret set) read, when neither --config nor PI_CONFIG is given, the directory the
// server of their database runs with (recorded beside the database), so a workspace a reload added
// is known to them; they say so when they use it.
import { statSync } from 'node:fs';
import { isPostgresUrl } from '../store/admin-store-interface.ts';
import { str, type Parsed } from './args.ts';
import { readServedConfigDir } from './owner-files.ts';

/** "config directory X does not exist" (or is not a directory, or cannot be read); null when it is one. */
export function configDirProblem(dir: string): string | null {
  try {
    return statSync(dir).isDirectory() ? null : `config directory ${dir} is not a directory`;
  } catch (err) {
    const missing = err instanceof Error && 'code' in err && (err.code === 'ENOENT' || err.code === 'ENOTDIR');
    return missing
      ? `config directory ${dir} does not exist`
      : `config directory ${dir} cannot be read (${err instanceof Error ? err.message : String(err)})`;
  }
}

export interface ChosenConfigDir {
  dir: string;
  /** Where the choice came from: the option, the environment, the database's server, or ./config. */
  from: 'option' | 'env' | 'served' | 'default';
}

/** --config, else PI_CONFIG, else the config directory recorded beside database `db`, else ./config. */
export function configDirFor(p: Parsed, db: string): ChosenConfigDir {
  if (typeof p.values.config === 'string') return { dir: p.values.config, from: 'option' };
  const env = str(p, 'config', 'PI_CONFIG');
  if (env !== undefined) return { dir: env, from: 'env' };
  const served = isPostgresUrl(db) ? null : readServedConfigDir(db);
  if (served !== null && configDirProblem(served) === null) return { dir: served, from: 'served' };
  return { dir: 'config', from: 'default' };
}

/** The line a command prints when it read the server's directory rather than one it was given. */
export function servedDirNote(command: string, chosen: ChosenConfigDir, db: string): string | null {
  if (chosen.from !== 'served') return null;
  return `pi-gateway ${command}: using the config directory ${chosen.dir}, the one the server of ${db} was started with (--config DIR or PI_CONFIG to choose another)\n`;
}
