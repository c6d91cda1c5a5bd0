// `npm test`'s last step: runs tap with its raw TAP output, prints one line per test file as it
// finishes, then every failing file's output in full and a summary. tap's own reporters redraw the
// terminal with escape codes, which a CI log shows as noise; raw TAP of 16,000 assertions is
// unreadable. The raw output is kept in .tap/last-run.tap for whoever wants all of it.
import { spawn, spawnSync } from 'node:child_process';
import { createWriteStream, mkdirSync, readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

// tap rebuilds its Test class when .taprc's plugin list differs from the one it was built with (as
// after every `npm ci`), but that run still starts each test file with the loaders of the old build:
// the TypeScript plugin's ts-node among them, which .taprc turns off, and a first run in a fresh clone
// took minutes longer for it. So the plugins are built first, when they differ — or when tap's own
// packages (its config and its built Test class) no longer say, as a later tap might not.
async function pluginsBuiltAsConfigured() {
  try {
    const { TapConfig } = await import('@tapjs/config');
    const built = readFileSync(fileURLToPath(import.meta.resolve('@tapjs/test/built')), 'utf8');
    const builtWith = /signature = `([^`]*)`/.exec(built)?.[1];
    return builtWith !== undefined && builtWith === (await TapConfig.load()).pluginSignature;
  } catch {
    return false;
  }
}
if (!(await pluginsBuiltAsConfigured())) {
  process.stdout.write("building tap's plugins as .taprc lists them\n");
  const built = spawnSync('npx', ['tap', 'build'], { stdio: ['ignore', 'inherit', 'inherit'] });
  if (built.status !== 0) process.exit(built.status ?? 1);
}

const args = ['tap', '--reporter=tap', ...process.argv.slice(2)];
mkdirSync('.tap', { recursive: true });
const raw = createWriteStream('.tap/last-run.tap');
const child = spawn('npx', args, { stdio: ['ignore', 'pipe', 'inherit'] });
const started = Date.now();

/** Lines of the file whose result line has not come yet (tap prints a file's block, then its line). */
let block = [];
const failed = [];
let files = 0;
let asserts = null;

const TOP = /^(not ok|ok) \d+ - (\S+)(?: # time=([\d.]+)ms)?(.*)$/;

createInterface({ input: child.stdout }).on('line', (line) => {
  raw.write(line + '\n');
  const top = TOP.exec(line);
  if (top) {
    files += 1;
    const [, status, file, ms, rest] = top;
    const secs = ms ? `${(Number(ms) / 1000).toFixed(1)}s` : '';
    process.stdout.write(
      `${status === 'ok' ? 'ok    ' : 'FAIL  '} ${file} ${secs}${/# (SKIP|TODO)/.test(rest) ? rest : ''}\n`,
    );
    if (status === 'not ok') failed.push({ file, lines: [...block, line] });
    block = [];
    return;
  }
  const total = /^# \{ total: (\d+), pass: (\d+)(?:, fail: (\d+))?/.exec(line);
  if (total) asserts = { total: Number(total[1]), pass: Number(total[2]), fail: Number(total[3] ?? 0) };
  block.push(line);
});

child.on('close', (code) => {
  raw.end();
  for (const f of failed) {
    process.stdout.write(`\n======== FAILED: ${f.file} ========\n${f.lines.join('\n')}\n`);
  }
  const mins = ((Date.now() - started) / 60000).toFixed(1);
  process.stdout.write(
    `\n${failed.length === 0 ? 'PASS' : 'FAIL'}: ${files - failed.length} of ${files} test files passed` +
      (asserts ? `; ${asserts.pass} of ${asserts.total} assertions` : '') +
      ` in ${mins} min` +
      (failed.length ? `\nfailed files:\n${failed.map((f) => `  ${f.file}`).join('\n')}` : '') +
      `\n(full TAP output: .tap/last-run.tap)\n`,
  );
  process.exit(code ?? 1);
});
