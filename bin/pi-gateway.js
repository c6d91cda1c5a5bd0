#!/usr/bin/env node
// Entry point of the `pi-gateway` CLI. Runs the compiled build (dist/, made by `npm run build`, which
// `npm install` runs through `prepare`); in a checkout without dist/ it falls back to the TypeScript
// sources through tsx.
import { existsSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';

const compiled = fileURLToPath(new URL('../dist/src/cli/main.js', import.meta.url));
if (existsSync(compiled)) {
  await import(pathToFileURL(compiled).href);
} else {
  const { register } = await import('tsx/esm/api');
  register();
  await import(new URL('../src/cli/main.ts', import.meta.url).href);
}
