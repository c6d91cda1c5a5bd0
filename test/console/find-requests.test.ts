// Finding a request and the console's polish on the embedded store: the find-requests contract
// (test/helpers/find-requests-contract.ts, run on PostgreSQL by find-requests-pg.test.ts) over the
// embedded store's stack; then what does not depend on a store: the bound on stored text itself, and
// the CLI refusing long key names and past expiries as the admin API does.
import t from 'tap';
import { boundedText } from '../../src/store/log-bounds.ts';
import { cliInProcess, fixtureWorkspace } from '../cli/fixtures/run-cli.ts';
import { embeddedConsoleRig } from '../helpers/console-rigs.ts';
import { findRequestsContract } from '../helpers/find-requests-contract.ts';
import { tempDbFile } from '../store/sqlite/fixtures/temp-db.ts';

t.test('finding requests on the embedded store', async (t) => {
  findRequestsContract(t, embeddedConsoleRig);
});

t.test('bounded text never splits a character', async (t) => {
  t.equal(boundedText(`${'😀'.repeat(300)}`, 256), `${'😀'.repeat(255)}…`, 'a surrogate pair is never split');
  t.equal(boundedText(null, 10), null);
});

t.test('the CLI bounds key names and refuses past expiries alike', async (t) => {
  const env = { PI_DB: tempDbFile(t) };
  const ws = fixtureWorkspace();
  const long = await cliInProcess(['key', 'create', '--workspace', ws, '--name', 'n'.repeat(129)], env);
  t.equal(long.code, 2);
  t.match(long.stderr, /--name: a key name is at most 128 characters, got 129/);
  t.notMatch(long.stdout, /sk-pi-/);
  const past = await cliInProcess(['key', 'create', '--workspace', ws, '--expires-at', '2001-01-01'], env);
  t.equal(past.code, 2);
  t.match(past.stderr, /is in the past.*revoke it/);
  const ok = await cliInProcess(['key', 'create', '--workspace', ws, '--name', 'n'.repeat(128)], env);
  t.equal(ok.code, 0, '128 characters are fine');
});
