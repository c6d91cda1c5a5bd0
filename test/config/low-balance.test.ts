// `low_balance_usd` of a workspace (workspaces.yaml): a decimal string of at most 9 decimals (the
// wallet's precision) compiled to exact nano-USD; absent, no threshold; anything else is refused at
// load with the field's own message. The warning rule compares exactly: at the threshold is not below.
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { belowLowBalance } from '../../src/billing/low-balance.ts';
import { loadConfig } from '../../src/config/load-config.ts';
import { ADAPTERS } from '../../src/platforms/index.ts';
import { issueLines, overlayTree } from './fixture-tree.ts';

type Teardown = { teardown(fn: () => void): void };

/** A temp copy of the mini fixture with one workspace of the given workspaces.yaml tail. */
function workspaces(t: Teardown, tail: string): string {
  const dir = overlayTree(null);
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(join(dir, 'workspaces.yaml'), `workspaces:\n  - id: team\n${tail}`);
  return dir;
}

const withThreshold = (t: Teardown, value: string): string => workspaces(t, `    low_balance_usd: ${value}\n`);

t.test('a threshold compiles to exact nano-USD; absent is none', async (t) => {
  for (const [yaml, nano] of [
    ['"25"', 25_000_000_000n],
    ['"0.000000001"', 1n],
    ['"999999999.999999999"', 999_999_999_999_999_999n],
    ['"0"', 0n],
  ] as const) {
    const r = loadConfig(withThreshold(t, yaml), { adapters: ADAPTERS });
    t.ok(r.ok, yaml);
    if (r.ok) t.equal(r.config.workspaces[0]?.lowBalanceNano, nano, `${yaml} → ${nano} nano-USD`);
  }
  const r = loadConfig(workspaces(t, ''), { adapters: ADAPTERS });
  t.ok(r.ok);
  if (r.ok) t.equal(r.config.workspaces[0]?.lowBalanceNano, null, 'no threshold');
});

t.test('anything but a decimal string of at most 9 decimals is refused with the field named', async (t) => {
  for (const bad of ['25', '"1.0000000001"', '"-1"', '"1e3"', '"1000000000"', '"twenty"']) {
    const lines = issueLines(withThreshold(t, bad));
    t.match(
      lines,
      [/workspaces\[0\]\.low_balance_usd: must be a decimal USD string such as "25" or "12\.5" \(at most 9 decimals/],
      `${bad} refused`,
    );
  }
});

t.test('below is strictly below, in exact nano-USD', async (t) => {
  t.equal(belowLowBalance(24_999_999_999n, 25_000_000_000n), true, 'one nano-dollar under');
  t.equal(belowLowBalance(25_000_000_000n, 25_000_000_000n), false, 'at the threshold');
  t.equal(belowLowBalance(-1n, 0n), true, 'a negative available amount under a $0 threshold');
  t.equal(belowLowBalance(0n, null), false, 'no threshold, never');
});
