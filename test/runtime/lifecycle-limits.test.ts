// The lifecycle limits in gateway.yaml: write_stall_timeout_ms (default 5 s) must stay below the
// server library's own 8–12 s idle drop, so values above 7 s are refused; drain_timeout_ms defaults to
// 30 s. loadConfigDir is what serve and a reload read a directory with.
import t from 'tap';
import { cpSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadConfigDir } from '../../src/runtime/runtime.ts';

t.test('defaults, and a write-stall limit above 7 s refused with its position', async (t) => {
  const dir = t.testdir({});
  cpSync('test/fixtures/config/gateway', dir, { recursive: true });
  const ok = await loadConfigDir(dir);
  t.equal(ok.ok && ok.config.settings.limits.writeStallTimeoutMs, 5000);
  t.equal(ok.ok && ok.config.settings.limits.drainTimeoutMs, 30000);
  writeFileSync(join(dir, 'gateway.yaml'), 'limits:\n  write_stall_timeout_ms: 9000\n  drain_timeout_ms: 1000\n');
  const bad = await loadConfigDir(dir);
  t.equal(bad.ok, false);
  t.match(bad.ok ? [] : bad.problems, [/gateway\.yaml:2:27 limits\.write_stall_timeout_ms: .*7000/]);
  t.match(bad.ok ? null : bad.hash, /^[0-9a-f]{64}$/, 'the refused files are named by their hash');
});
