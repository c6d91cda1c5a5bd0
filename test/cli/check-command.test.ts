// `pi-gateway check` and `pi-gateway build` as the CLI runs them (output captured, nothing written).
import t, { type Test } from 'tap';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ManualClock } from '../../src/clock.ts';
import { checkCommand, command as check } from '../../src/cli/commands/check.ts';
import { command as build } from '../../src/cli/commands/build.ts';
import { MINI, overlayTree } from '../config/fixture-tree.ts';

async function run(
  cmd: typeof check,
  argv: string[],
  env: Record<string, string> = {},
): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const o = process.stdout.write.bind(process.stdout);
  const e = process.stderr.write.bind(process.stderr);
  const saved: Record<string, string | undefined> = {};
  for (const [k, v] of Object.entries(env)) {
    saved[k] = process.env[k];
    process.env[k] = v;
  }
  process.stdout.write = ((s: string | Uint8Array) => {
    out += String(s);
    return true;
  }) as typeof process.stdout.write;
  process.stderr.write = ((s: string | Uint8Array) => {
    err += String(s);
    return true;
  }) as typeof process.stderr.write;
  try {
    return { code: await cmd.run(argv), out, err };
  } finally {
    process.stdout.write = o;
    process.stderr.write = e;
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  }
}

t.test('check: ok with counts', async (t) => {
  const r = await run(check, ['--config', MINI]);
  t.equal(r.code, 0);
  t.equal(r.out, 'ok: 6 models (5 enabled), 3 platforms, 4 resources, 10 deployments, 2 workspaces\n');
});

t.test('check: PI_CONFIG is the fallback for --config', async (t) => {
  const r = await run(check, ['--json'], { PI_CONFIG: MINI });
  t.equal(r.code, 0);
  t.match(JSON.parse(r.out), { ok: true, counts: { models: 6, enabled_models: 5, platforms: 3 } });
});

t.test('check: every issue, one per line, exit 1', async (t) => {
  const dir = overlayTree('workspace-rules');
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const r = await run(check, ['--config', dir]);
  t.equal(r.code, 1);
  t.strictSame(r.out.trimEnd().split('\n'), [
    `${dir}/workspaces.yaml:4:22 workspaces[0].routing.allow[1]: unknown platform "zulu"`,
    `${dir}/workspaces.yaml:5:29 workspaces[0].routing.ignore[1]: "alpha" names the same platform as "ALPHA-CLOUD" ("alpha")`,
  ]);
  t.match(r.err, /2 issues/);
  const j = await run(check, ['--config', dir, '--json']);
  t.equal(j.code, 1);
  t.match(JSON.parse(j.out), {
    ok: false,
    issues: [{ line: 4, col: 22, path: 'workspaces[0].routing.allow[1]', message: 'unknown platform "zulu"' }, {}],
  });
});

t.test('check: unknown options are usage errors', async (t) => {
  await t.rejects(run(check, ['--nope']), /nope/);
});

t.test('build: an invalid config prints its issues and writes nothing', async (t) => {
  const dir = overlayTree('file-names');
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const r = await run(build, ['--config', dir]);
  t.equal(r.code, 1);
  t.match(r.err, /vendor id "zed" does not match the file name "zeta.yaml"/);
  t.match(r.err, /4 config issues .*nothing written/);
});

/**
 * mini/ with known expiration dates: acme/chat-1 on 2027-01-14, acme/think-1 on 2026-12-11, acme/old-1
 * long past (2024-01-01, as shipped), and the disabled beta/hidden-1 on 2026-12-01.
 */
function datedTree(t: Test): string {
  const dir = overlayTree(null);
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const date = (file: string, after: string, day: string) => {
    const path = join(dir, 'models', file);
    const text = readFileSync(path, 'utf8');
    if (!text.includes(after)) throw new Error(`${file}: no "${after}"`);
    writeFileSync(path, text.replace(after, `${after}\n    expiration_date: "${day}"`));
  };
  date('acme.yaml', '    model_page_url: https://acme.example/models/chat-1', '2027-01-14');
  date('acme.yaml', '    release_date: "2025-06-01"', '2026-12-11');
  date('beta.yaml', '    enabled: false', '2026-12-01');
  return dir;
}

/** "Today" for the expiry tests: a fixed instant, never the calendar. */
const TODAY = '2026-11-27T15:30:00Z';

t.test('check --warn-expiring: the enabled models expiring within DAYS of the clock, soonest first', async (t) => {
  const dir = datedTree(t);
  const at = checkCommand(new ManualClock(TODAY));
  const r = await run(at, ['--config', dir, '--warn-expiring', '30']);
  t.equal(r.code, 0, 'warnings only');
  t.strictSame(r.out.trimEnd().split('\n').slice(1), [
    'warning: acme/old-1 expired on 2024-01-01 (1061 days ago); routing refuses it from that date',
    'warning: acme/think-1 expires on 2026-12-11 (in 14 days); routing refuses it from that date',
  ]);
  const wide = await run(at, ['--config', dir, '--warn-expiring', '48']);
  t.match(wide.out, /acme\/chat-1 expires on 2027-01-14 \(in 48 days\)/, 'a date on the horizon day counts');
  t.notMatch((await run(at, ['--config', dir, '--warn-expiring', '47'])).out, /chat-1/, 'one day short of it does not');
  t.notMatch(wide.out, /hidden-1/, 'a disabled model is never listed');
  const today = await run(checkCommand(new ManualClock('2026-12-11T23:59:59Z')), [
    '--config',
    dir,
    '--warn-expiring',
    '0',
  ]);
  t.match(today.out, /acme\/think-1 expires today \(2026-12-11\)/);
});

t.test('check --warn-expiring: none near says so; --json lists them; --strict exits 1', async (t) => {
  const dir = datedTree(t);
  const early = checkCommand(new ManualClock('2023-06-01T00:00:00Z'));
  const none = await run(early, ['--config', dir, '--warn-expiring', '30', '--strict']);
  t.equal(none.code, 0, '--strict passes when nothing is near');
  t.match(none.out, /^ok: .*\nno enabled model expires within 30 days\n$/);
  const at = checkCommand(new ManualClock(TODAY));
  const j = await run(at, ['--config', dir, '--warn-expiring', '14', '--json']);
  t.equal(j.code, 0);
  t.strictSame(JSON.parse(j.out).expiring, [
    { id: 'acme/old-1', expiration_date: '2024-01-01', days_left: -1061 },
    { id: 'acme/think-1', expiration_date: '2026-12-11', days_left: 14 },
  ]);
  t.notOk('expiring' in JSON.parse((await run(at, ['--config', dir, '--json'])).out), 'absent without the flag');
  const strict = await run(at, ['--config', dir, '--warn-expiring', '14', '--strict']);
  t.equal(strict.code, 1);
  t.match(strict.err, /2 models expire within 14 days \(--strict\)/);
});

t.test('check --warn-expiring: bad values are usage errors naming the flag', async (t) => {
  await t.rejects(
    run(check, ['--config', MINI, '--warn-expiring', 'soon']),
    /--warn-expiring must be an integer, got "soon"/,
  );
  await t.rejects(
    run(check, ['--config', MINI, '--warn-expiring', '-5']),
    /--warn-expiring must be an integer from 0 to 3650, got -5/,
  );
  await t.rejects(run(check, ['--config', MINI, '--strict']), /--strict needs --warn-expiring DAYS/);
});

t.test('help texts name the options', async (t) => {
  t.match(check.help, /--config DIR/);
  t.match(check.help, /--json/);
  t.match(check.help, /--warn-expiring DAYS/);
  t.match(check.help, /--strict +With --warn-expiring: exit 1/);
  t.match(build.help, /--check/);
  t.match(build.help, /PI_CONFIG/);
});
