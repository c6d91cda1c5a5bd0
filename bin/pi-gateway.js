#!/usr/bin/env node
// Entry point of the `pi-gateway` CLI. Refuses a Node.js it was not built for, then runs the
// TypeScript sources in a checkout (Node.js 22 strips the types itself: no build step, no loader) or
// the compiled JavaScript in the npm package, which carries dist/ instead of src/.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

// The oldest Node.js this release runs on (package.json "engines"); 22 is the line it is tested on.
const [major, minor] = process.versions.node.split('.').map(Number);
if (major < 22 || (major === 22 && minor < 19)) {
  process.stderr.write(
    `pi-gateway needs Node.js 22.19 or newer on the 22 line; this is ${process.version} (${process.execPath}).\n` +
      'Install Node.js 22 LTS, run the single executable (npm run dist), or, in a checkout, use the npm scripts (npm start), which run the Node.js 22 that npm ci installs.\n',
  );
  process.exit(1);
}

const sources = new URL('../src/cli/main.ts', import.meta.url);
const cli = await import(
  existsSync(fileURLToPath(sources)) ? sources.href : new URL('../dist/src/cli/main.js', import.meta.url).href
);
cli.runCli(process.argv.slice(2));
