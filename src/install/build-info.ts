// What this build is: the package version and the commit it was built from. The single executable
// and the npm package carry both, written when they were built (`build-info.json` beside
// package.json); a checkout reads the commit from git, and says `unknown` without git.
import { execFileSync } from 'node:child_process';
import { readFileSync, realpathSync } from 'node:fs';
import { projectPath } from './project-root.ts';

export interface BuildInfo {
  version: string;
  /** Full commit hash, or `unknown`. */
  commit: string;
  /** The Node.js version running it. */
  node: string;
}

/** The file the packaging steps write beside package.json. */
export const BUILD_INFO_FILE = 'build-info.json';

let cached: BuildInfo | null = null;

export function buildInfo(): BuildInfo {
  if (cached !== null) return cached;
  const pkg = JSON.parse(readFileSync(projectPath('package.json'), 'utf8')) as { version?: string };
  cached = {
    version: pkg.version ?? 'unknown',
    commit: recordedCommit() ?? gitCommit() ?? 'unknown',
    node: process.version,
  };
  return cached;
}

/** `pi-gateway 0.1.0 (commit 1a2b3c4d5e6f, Node.js v22.23.3)`. */
export function versionLine(info: BuildInfo = buildInfo()): string {
  return `pi-gateway ${info.version} (commit ${info.commit === 'unknown' ? 'unknown' : info.commit.slice(0, 12)}, Node.js ${info.node})`;
}

function recordedCommit(): string | null {
  try {
    const v = JSON.parse(readFileSync(projectPath(BUILD_INFO_FILE), 'utf8')) as { commit?: unknown };
    return typeof v.commit === 'string' && v.commit !== '' ? v.commit : null;
  } catch {
    return null;
  }
}

/** HEAD of the checkout the gateway runs from — only when the project root is that repository's top
 *  (an installed package inside someone else's repository must not report their commit). */
function gitCommit(): string | null {
  const root = projectPath();
  try {
    const [top = '', head = ''] = execFileSync('git', ['rev-parse', '--show-toplevel', 'HEAD'], {
      cwd: root,
      stdio: ['ignore', 'pipe', 'ignore'],
      timeout: 2000,
    })
      .toString()
      .trim()
      .split('\n');
    return realpathSync(top) === realpathSync(root) && /^[0-9a-f]{40}$/.test(head) ? head : null;
  } catch {
    return null;
  }
}
