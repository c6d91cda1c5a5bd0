// Writes (or, with --remove, deletes) build-info.json beside package.json: the commit the npm package
// is packed from, which `pi-gateway --version` prints (src/install/build-info.ts). `npm pack` runs it
// before and after packing (prepack/postpack), so a checkout never keeps a stale one.
import { execFileSync } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BUILD_INFO_FILE } from '../src/install/build-info.ts';

const root = fileURLToPath(new URL('..', import.meta.url));
const file = join(root, BUILD_INFO_FILE);
if (process.argv.includes('--remove')) {
  rmSync(file, { force: true });
} else {
  let commit = 'unknown';
  try {
    commit = execFileSync('git', ['rev-parse', 'HEAD'], { cwd: root, stdio: ['ignore', 'pipe', 'ignore'] })
      .toString()
      .trim();
  } catch {
    // Packed outside a git checkout: the version alone identifies it.
  }
  writeFileSync(file, JSON.stringify({ commit, built_with: process.version }) + '\n');
}
