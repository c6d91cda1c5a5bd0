// `pi-gateway check` and `pi-gateway build` as the CLI runs them (output captured, nothing written).
import t from 'tap';
import { rmSync } from 'node:fs';
import { command as check } from '../../src/cli/commands/check.ts';
import { command as build } from '../../src/cli/commands/build.ts';
import { MINI, overlayTree } from '../config/fixture-tree.ts';

async function run(cmd: typeof check, argv: string[], env: Record<string, string> = {}): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const o = process.stdout.write.bind(process.stdout);
  const e = process.stderr.write.bind(process.stderr);
  const saved: Record<string, string | undefined> = {};
  for (const [k, v] of Object.entries(env)) {
    saved[k] = process.env[k];
    process.env[k] = v;
  }
  process.stdout.write = ((s: string | Uint8Array) => ((out += String(s)), true)) as typeof process.stdout.write;
  process.stderr.write = ((s: string | Uint8Array) => ((err += String(s)), true)) as typeof process.stderr.write;
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
  t.match(JSON.parse(r.out), { ok: true, counts: { models: 6, enabledModels: 5, platforms: 3 } });
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
  t.match(JSON.parse(j.out), { ok: false, issues: [{ line: 4, col: 22, path: 'workspaces[0].routing.allow[1]', message: 'unknown platform "zulu"' }, {}] });
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

t.test('help texts name the options', async (t) => {
  t.match(check.help, /--config DIR/);
  t.match(check.help, /--json/);
  t.match(build.help, /--check/);
  t.match(build.help, /PI_CONFIG/);
});
