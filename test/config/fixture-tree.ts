// Test helper: builds a temp config dir from test/fixtures/config/mini plus an overlay folder of
// test/fixtures/config/invalid/, and prints loadConfig issues with the temp dir shown as `config`.
import { cpSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { formatIssue, loadConfig } from '../../src/config/load-config.ts';
import { ADAPTERS } from '../../src/platforms/index.ts';

export const FIXTURES = fileURLToPath(new URL('../fixtures/config/', import.meta.url));
export const MINI = join(FIXTURES, 'mini');

/** A temp copy of mini/ with `overlay` (a folder of invalid/) copied over it and `remove` deleted. */
export function overlayTree(overlay: string | null, remove: string[] = []): string {
  const dir = mkdtempSync(join(tmpdir(), 'pi-config-'));
  cpSync(MINI, dir, { recursive: true });
  if (overlay !== null) {
    const src = join(FIXTURES, 'invalid', overlay);
    if (!existsSync(src)) throw new Error(`no fixture folder ${src}`);
    cpSync(src, dir, { recursive: true });
  }
  for (const r of remove) rmSync(join(dir, r));
  return dir;
}

/** Every issue of a config dir as printed, with the dir spelled `config`; [] when it loads. */
export function issueLines(dir: string): string[] {
  const r = loadConfig(dir, { adapters: ADAPTERS });
  if (r.ok) return [];
  return r.issues.map((i) => formatIssue(i).split(dir).join('config'));
}
