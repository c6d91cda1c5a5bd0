// `serve --workers N|auto`: more threads than cores is allowed with a warning, more than 4 per core
// (at most 256) is refused, auto is one per core.
import t from 'tap';
import { UsageError } from '../../src/cli/args.ts';
import { MAX_WORKERS, workerCap, workerCount, WORKERS_PER_CORE } from '../../src/cli/worker-count.ts';

t.test('up to the core count: no warning', async (t) => {
  t.strictSame(workerCount(undefined, '--workers', 2), { workers: 1, warning: null }, 'unset is one thread');
  t.strictSame(workerCount('', '--workers', 2), { workers: 1, warning: null });
  t.strictSame(workerCount('2', '--workers', 2), { workers: 2, warning: null });
  t.strictSame(workerCount('auto', '--workers', 6), { workers: 6, warning: null });
});

t.test('above the core count: a warning naming both', async (t) => {
  const r = workerCount('3', '--workers', 2);
  t.equal(r.workers, 3);
  t.equal(
    r.warning,
    "--workers 3 is more serving threads than this machine's 2 cores: the extra threads share cores and cost memory without serving faster; auto starts one per core",
  );
  t.match(workerCount('8', 'PI_WORKERS', 2).warning, /^PI_WORKERS 8 is more/, 'named after where it came from');
});

/** The error `fn` throws (it must throw). */
function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (err) {
    return err;
  }
  return null;
}

t.test('above 4 per core, or 256: refused', async (t) => {
  t.equal(WORKERS_PER_CORE, 4);
  t.equal(workerCap(2), 8);
  t.equal(workerCap(1), 4);
  t.equal(workerCap(128), MAX_WORKERS, 'never above 256');
  const nine = thrown(() => workerCount('9', '--workers', 2));
  t.type(nine, UsageError, 'a usage error (exit 2)');
  t.equal(
    (nine as Error).message,
    '--workers must be a whole number from 1 to 8 (at most 4 per core; this machine has 2), or auto, got "9"',
  );
  t.type(
    thrown(() => workerCount('99', '--workers', 2)),
    UsageError,
    '99 threads on 2 cores',
  );
  t.match((thrown(() => workerCount('257', '--workers', 128)) as Error).message, /from 1 to 256/);
  for (const bad of ['0', '-1', '1.5', 'many', ' 2'])
    t.type(
      thrown(() => workerCount(bad, '--workers', 2)),
      UsageError,
      bad,
    );
});
