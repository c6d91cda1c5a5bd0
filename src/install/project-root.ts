// Where the gateway's own files are (schemas/, console/dist/, the example config/, package.json):
// the folder above the code that holds package.json — a checkout, or an installed npm package
// (running from dist/src/) — or, in the single executable, the folder its files were unpacked into.
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { singleExecutableRoot } from './single-executable.ts';

let root: string | null = null;

export function projectRoot(): string {
  if (root !== null) return root;
  root = singleExecutableRoot() ?? rootAbove(fileURLToPath(import.meta.url));
  return root;
}

/** The nearest folder above `file` with a package.json. */
export function rootAbove(file: string): string {
  let d = dirname(file);
  while (!existsSync(join(d, 'package.json'))) {
    const up = dirname(d);
    if (up === d)
      throw new Error(
        `no package.json above ${file}: the gateway's files (schemas/, config/) are not where they were installed`,
      );
    d = up;
  }
  return d;
}

/** A path under the project root. */
export function projectPath(...parts: string[]): string {
  return join(projectRoot(), ...parts);
}
