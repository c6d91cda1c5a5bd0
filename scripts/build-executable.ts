// `npm run dist`: builds the single executable, dist/pi-gateway-linux-x64 — a Node.js 22 single
// executable application (SEA) that runs every CLI command with no Node.js, npm, compiler or source
// tree on the host.
//
// What goes in: one CommonJS bundle of the CLI (esbuild; SEA runs CommonJS only), used as the main
// script and, unpacked, as the file every worker thread starts from (src/cli/executable.ts); the two
// native addons (uWebSockets.js, better-sqlite3) for linux-x64 and Node.js 22's ABI; the project's
// files read at run time (schemas/, console/dist/, the example config/, package.json) and the build's
// version and commit. At first start the executable unpacks them once into a content-addressed cache
// folder (src/install/single-executable.ts). What it does not carry: codegen (`pi-gateway build`
// needs json-schema-to-typescript and prettier; it says so and points to a checkout).
//
// The Node.js binary is the one `npm ci` installs for the npm scripts (the `node` devDependency), so
// the executable embeds exactly the Node.js the test suite runs on.
import { execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build, type Plugin } from 'esbuild';
import { MANIFEST_ASSET } from '../src/install/single-executable.ts';
import { BUILD_INFO_FILE } from '../src/install/build-info.ts';
import { EXECUTABLE_BUNDLE } from '../src/thread.ts';
import { STARTUP_V8_FLAGS } from '../src/cli/v8-flags.ts';

const root = fileURLToPath(new URL('..', import.meta.url));
const out = join(root, 'dist');
const work = join(out, 'executable');
const target = join(out, 'pi-gateway-linux-x64');
const require = createRequire(import.meta.url);

/** The SEA fuse postject flips (Node.js's documented sentinel). */
const SEA_FUSE = 'NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2';

function fail(message: string): never {
  process.stderr.write(`npm run dist: ${message}\n`);
  process.exit(1);
}

if (process.platform !== 'linux' || process.arch !== 'x64')
  fail(`the executable is built for linux-x64 only (this is ${process.platform}-${process.arch})`);
const [major] = process.versions.node.split('.').map(Number);
if (major !== 22)
  fail(
    `build with Node.js 22 (run it as \`npm run dist\`, which uses the Node.js 22 npm ci installed); this is ${process.version}`,
  );

/** The addon files for this platform and the running Node.js's ABI. */
const NATIVES: Record<string, string> = {
  uws: join(root, 'node_modules', 'uWebSockets.js', `uws_linux_x64_${process.versions.modules}.node`),
  better_sqlite3: join(root, 'node_modules', 'better-sqlite3', 'prebuilds', 'linux-x64.node'),
};
for (const [name, file] of Object.entries(NATIVES))
  if (!existsSync(file)) fail(`the ${name} addon for Node.js ABI ${process.versions.modules} is missing: ${file}`);

/** Modules replaced inside the bundle. */
const replaced: Plugin = {
  name: 'executable-modules',
  setup(b) {
    b.onResolve({ filter: /^(uWebSockets\.js|json-schema-to-typescript|bindings)$/ }, (args) => ({
      path: args.path,
      namespace: 'replaced',
    }));
    b.onLoad({ filter: /.*/, namespace: 'replaced' }, (args) => {
      const installer = JSON.stringify(join(root, 'src', 'install', 'single-executable.ts'));
      if (args.path === 'uWebSockets.js')
        return {
          contents: `module.exports = require(${installer}).loadNativeAddon('uws');`,
          loader: 'js',
          resolveDir: root,
        };
      if (args.path === 'json-schema-to-typescript')
        return {
          contents:
            "exports.compile = () => { throw new Error('code generation (pi-gateway build) is not part of the single executable: run it from a checkout of the project (npm ci, then npx pi-gateway build)'); };",
          loader: 'js',
        };
      // better-sqlite3 finds its addon through `bindings` only when none is given; the executable always gives one.
      return {
        contents: "module.exports = () => { throw new Error('the executable passes better-sqlite3 its addon'); };",
        loader: 'js',
      };
    });
  },
};

function commit(): string {
  try {
    return execFileSync('git', ['rev-parse', 'HEAD'], { cwd: root, stdio: ['ignore', 'pipe', 'ignore'] })
      .toString()
      .trim();
  } catch {
    return 'unknown';
  }
}

/** Every file under `dir` (relative to the root, `/`-separated). */
function filesUnder(dir: string): string[] {
  const outFiles: string[] = [];
  for (const name of readdirSync(join(root, dir))) {
    const rel = `${dir}/${name}`;
    if (statSync(join(root, rel)).isDirectory()) outFiles.push(...filesUnder(rel));
    else outFiles.push(rel);
  }
  return outFiles.sort();
}

async function main(): Promise<void> {
  const started = performance.now();
  rmSync(work, { recursive: true, force: true });
  mkdirSync(work, { recursive: true });
  if (!existsSync(join(root, 'console', 'dist', 'app.js')))
    fail('the console bundle is not built: run npm run build:console first');

  const bundle = join(work, EXECUTABLE_BUNDLE);
  await build({
    absWorkingDir: root,
    entryPoints: [join(root, 'src', 'cli', 'executable.ts')],
    outfile: bundle,
    bundle: true,
    platform: 'node',
    target: 'node22',
    format: 'cjs',
    // import.meta does not exist in CommonJS: the bundle's own file stands in for every module's URL
    // (each module that reads it asks the single executable's folder first).
    banner: { js: 'var __pi_bundle_url = require("node:url").pathToFileURL(__filename).href;' },
    define: { 'import.meta.url': '__pi_bundle_url' },
    plugins: [replaced],
    legalComments: 'none',
    logLevel: 'warning',
  });
  const bundleBytes = statSync(bundle).size;

  // The files the executable unpacks: the bundle again (for worker threads), the addons, the project's files.
  const assets: Record<string, string> = { [EXECUTABLE_BUNDLE]: bundle };
  for (const [name, file] of Object.entries(NATIVES)) assets[`natives/${name}.node`] = file;
  for (const dir of ['schemas', 'console/dist', 'config'])
    for (const rel of filesUnder(dir)) assets[rel] = join(root, rel);
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
    name: string;
    version: string;
    license?: string;
  };
  writeFileSync(
    join(work, 'package.json'),
    JSON.stringify({ name: pkg.name, version: pkg.version, license: pkg.license }, null, 2) + '\n',
  );
  assets['package.json'] = join(work, 'package.json');
  writeFileSync(join(work, BUILD_INFO_FILE), JSON.stringify({ commit: commit(), built_with: process.version }) + '\n');
  assets[BUILD_INFO_FILE] = join(work, BUILD_INFO_FILE);

  const hash = createHash('sha256');
  const files: Record<string, number> = {};
  for (const key of Object.keys(assets).sort()) {
    hash
      .update(key)
      .update('\0')
      .update(readFileSync(assets[key] as string))
      .update('\0');
    files[key] = key.startsWith('natives/') ? 0o755 : 0o644;
  }
  const manifest = { id: hash.digest('hex').slice(0, 24), files };
  writeFileSync(join(work, MANIFEST_ASSET), JSON.stringify(manifest));
  assets[MANIFEST_ASSET] = join(work, MANIFEST_ASSET);

  const blob = join(work, 'sea.blob');
  const seaConfig = join(work, 'sea-config.json');
  writeFileSync(
    seaConfig,
    JSON.stringify(
      {
        main: bundle,
        output: blob,
        disableExperimentalSEAWarning: true,
        useCodeCache: true,
        // V8 flags read when the main isolate's heap is created (src/cli/v8-flags.ts): the executable
        // starts with them as `node <flags> main.js` would. NODE_OPTIONS still extends them.
        execArgv: STARTUP_V8_FLAGS,
        assets,
      },
      null,
      2,
    ),
  );
  // The code cache is made under the flags the executable starts with. V8 checks the flags a cache
  // was made under and refuses it when some differ (a heap-size flag in NODE_OPTIONS does that), and
  // the executable would then compile the bundle from source at every start.
  const made = spawnSync(process.execPath, [...STARTUP_V8_FLAGS, '--experimental-sea-config', seaConfig], {
    cwd: work,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  if (made.status !== 0) fail(`node --experimental-sea-config failed:\n${made.stderr.toString()}`);

  // The Node.js binary, without its symbol table (about 17 MB less; the SEA fuse is in the data).
  rmSync(target, { force: true });
  copyFileSync(process.execPath, target);
  chmodSync(target, 0o755);
  const stripped = spawnSync('strip', ['--strip-all', target], { stdio: 'ignore' });
  const { inject } = require('postject') as {
    inject: (file: string, name: string, data: Buffer, opts: { sentinelFuse: string }) => Promise<void>;
  };
  // postject prints a harmless warning per `.note` section it cannot parse; keep the output short.
  const warn = console.warn;
  console.warn = () => undefined;
  try {
    await inject(target, 'NODE_SEA_BLOB', readFileSync(blob), { sentinelFuse: SEA_FUSE });
  } finally {
    console.warn = warn;
  }
  const mib = (n: number): string => `${(n / 1024 / 1024).toFixed(1)} MiB`;
  process.stdout.write(
    `built ${relative(root, target)}: ${mib(statSync(target).size)}${stripped.status === 0 ? '' : ' (strip was not available: symbols kept)'}; ` +
      `bundle ${mib(bundleBytes)}, ${Object.keys(assets).length} files unpacked at first start (id ${manifest.id}); ` +
      `commit ${commit().slice(0, 12)}; ${((performance.now() - started) / 1000).toFixed(1)} s\n`,
  );
}

await main();
