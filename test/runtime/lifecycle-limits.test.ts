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

t.test('a timer limit past what Node.js keeps is refused, not cut to a millisecond', async (t) => {
  // Node fires a setTimeout longer than 2^31 − 1 ms after 1 ms: a stream would be cut at once, or a
  // timer re-armed every millisecond. The schema refuses such a value where it is written.
  const dir = t.testdir({});
  cpSync('test/fixtures/config/gateway', dir, { recursive: true });
  const cases: [string, string][] = [
    ['limits:\n  stream_idle_timeout_ms: 2147483648\n', 'limits.stream_idle_timeout_ms'],
    ['limits:\n  first_byte_timeout_ms: 3000000000\n', 'limits.first_byte_timeout_ms'],
    ['limits:\n  drain_timeout_ms: 2147483648\n', 'limits.drain_timeout_ms'],
    ['health:\n  cooldown_ms: 2147483648\n', 'health.cooldown_ms'],
    ['health:\n  max_cooldown_ms: 2147483648\n', 'health.max_cooldown_ms'],
    ['request_log:\n  flush_interval_ms: 2147483648\n', 'request_log.flush_interval_ms'],
  ];
  for (const [yaml, field] of cases) {
    writeFileSync(join(dir, 'gateway.yaml'), yaml);
    const bad = await loadConfigDir(dir);
    t.equal(bad.ok, false, field);
    t.match(bad.ok ? [] : bad.problems, [
      new RegExp(`gateway\\.yaml:2:\\d+ ${field.replace('.', '\\.')}: .*2147483647`),
    ]);
  }
  writeFileSync(join(dir, 'gateway.yaml'), 'limits:\n  stream_idle_timeout_ms: 2147483647\n');
  const longest = await loadConfigDir(dir);
  t.equal(longest.ok && longest.config.settings.limits.streamIdleTimeoutMs, 2147483647, 'the longest timer is taken');
});
