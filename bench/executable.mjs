// The single executable: its size (as built and gzipped) and how long it takes to start, the first
// time (unpacking its files into an empty cache folder) and every later time, for `--version` and for
// `serve` until it listens. Medians of --rounds runs (default 7), each start a fresh process.
//
//   node bench/run.js executable [--rounds N]
//
// Builds dist/pi-gateway-linux-x64 with `npm run dist` when it is missing.
import { spawn, spawnSync } from 'node:child_process';
import { createReadStream, existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createGzip } from 'node:zlib';
import { median } from './lib/stats.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
const exe = join(root, 'dist', 'pi-gateway-linux-x64');
const roundsAt = process.argv.indexOf('--rounds');
const rounds = roundsAt > 0 ? Number(process.argv[roundsAt + 1]) : 7;

if (!existsSync(exe)) {
  const r = spawnSync('npm', ['run', 'dist'], { cwd: root, stdio: 'inherit' });
  if (r.status !== 0) process.exit(1);
}

function gzipSize(file) {
  return new Promise((resolve, reject) => {
    let n = 0;
    createReadStream(file)
      .pipe(createGzip({ level: 9 }))
      .on('data', (c) => (n += c.length))
      .on('end', () => resolve(n))
      .on('error', reject);
  });
}

const work = mkdtempSync(join(tmpdir(), 'pi-exe-bench-'));
const cache = join(work, 'cache');
const env = { PATH: '/nonexistent', HOME: work, PI_CACHE_DIR: cache };

function timeVersion() {
  const t0 = performance.now();
  const r = spawnSync(exe, ['--version'], { env, cwd: work });
  if (r.status !== 0) throw new Error(r.stderr.toString());
  return performance.now() - t0;
}

function timeServe(i) {
  return new Promise((resolve, reject) => {
    const db = join(work, `serve-${i}-${Math.random().toString(36).slice(2)}.db`);
    const t0 = performance.now();
    const child = spawn(
      exe,
      ['serve', '--config', join(root, 'test/fixtures/config/gateway'), '--db', db, '--port', '0'],
      { env, cwd: work, stdio: ['ignore', 'ignore', 'pipe'] },
    );
    let err = '';
    child.stderr.on('data', (d) => {
      err += d.toString();
      if (err.includes('"event":"listening"')) {
        const ms = performance.now() - t0;
        child.kill('SIGTERM');
        child.on('exit', () => resolve(ms));
      }
    });
    child.on('exit', (code) => {
      if (!err.includes('"event":"listening"')) reject(new Error(`serve exited ${code}: ${err}`));
    });
  });
}

const size = statSync(exe).size;
const gz = await gzipSize(exe);
const out = { coldVersion: [], warmVersion: [], coldServe: [], warmServe: [] };
for (let i = 0; i < rounds; i++) {
  rmSync(cache, { recursive: true, force: true });
  out.coldVersion.push(timeVersion());
  out.warmVersion.push(timeVersion());
  rmSync(cache, { recursive: true, force: true });
  out.coldServe.push(await timeServe(i));
  out.warmServe.push(await timeServe(i));
}
rmSync(work, { recursive: true, force: true });
const mib = (n) => (n / 1024 / 1024).toFixed(1);
const ms = (xs) => median(xs).toFixed(0);
process.stdout.write(
  `| measure | value |\n|---|---|\n` +
    `| size | ${mib(size)} MiB (${mib(gz)} MiB gzipped) |\n` +
    `| \`--version\`, first start (unpacks into an empty cache) | ${ms(out.coldVersion)} ms |\n` +
    `| \`--version\`, later starts | ${ms(out.warmVersion)} ms |\n` +
    `| \`serve\` until listening, first start | ${ms(out.coldServe)} ms |\n` +
    `| \`serve\` until listening, later starts | ${ms(out.warmServe)} ms |\n` +
    `\nmedians of ${rounds} rounds, ${new Date().toISOString()}\n`,
);
