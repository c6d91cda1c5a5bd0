// The one problem with a config directory that comes before any config issue: it is not there. The
// server checks it at start (runtime.ts) and the commands that read a config before they run
// (src/cli/config-dir.ts).
import { statSync } from 'node:fs';

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
