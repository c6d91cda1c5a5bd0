// Builds the operator console's browser bundle: console/src/main.tsx (Preact) and console/src/app.css
// → console/dist/app.js and console/dist/app.css, minified, no source maps, byte-identical on rebuild.
// Run by `npm run build` (so `npm ci` builds it through `prepare`) and by `npm test` before the suite.
// console/dist/ is not checked in. The admin listener serves these files (src/console/pages.ts).
import { mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = fileURLToPath(new URL('..', import.meta.url));
const outdir = `${root}console/dist`;
mkdirSync(outdir, { recursive: true });

await build({
  absWorkingDir: root,
  entryPoints: { app: 'console/src/main.tsx' },
  bundle: true,
  format: 'esm',
  target: ['es2022'],
  minify: true,
  legalComments: 'none',
  jsx: 'automatic',
  jsxImportSource: 'preact',
  outdir,
  logLevel: 'warning',
});
await build({
  absWorkingDir: root,
  entryPoints: { app: 'console/src/app.css' },
  bundle: true,
  minify: true,
  outdir,
  logLevel: 'warning',
});
process.stdout.write(`console bundle written to ${outdir}\n`);
