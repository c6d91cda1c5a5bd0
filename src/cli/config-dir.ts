// Which config directory a command reads, and the one problem that comes before any config issue: a
// directory that is not there. The store commands that check workspace ids (key, wallet, usage) and
// credential names (secret set) read, when neither --config nor PI_CONFIG is given, the directory the
// server of their database runs with (recorded beside the database), so a workspace a reload added
// is known to them; they say so when they use it.
import { isPostgresUrl } from '../store/admin-store-interface.ts';
import { str, type Parsed } from './args.ts';
import { readServedConfigDir } from '../runtime/owner-files.ts';
import { configDirProblem } from '../runtime/config-dir-check.ts';

export { configDirProblem };

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
