// A database path whose directory does not exist is named, with the directory, by every command
// that would create the file (not better-sqlite3's bare "the directory does not exist").
import t from 'tap';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { tempDbFile } from '../store/sqlite/fixtures/temp-db.ts';
import { cliInProcess, cliProcess, fixtureWorkspace } from './fixtures/run-cli.ts';

t.test('a missing directory is named', async (t) => {
  const dir = join(tempDbFile(t), '..', 'no-such-dir');
  const db = join(dir, 'gateway.db');
  const expected = `cannot open database ${db}: the directory ${dir} does not exist (create it, or choose another --db / PI_DB)`;
  const key = await cliInProcess(['key', 'create', '--workspace', fixtureWorkspace(), '--db', db]);
  t.equal(key.code, 1);
  t.equal(key.stderr, `pi-gateway key: ${expected}\n`);
  const credit = await cliInProcess(['wallet', 'credit', '--workspace', fixtureWorkspace(), '--usd', '1'], {
    PI_DB: db,
  });
  t.equal(credit.stderr, `pi-gateway wallet: ${expected}\n`, 'the same from PI_DB');
  const serve = await cliProcess(['serve', '--config', 'test/fixtures/config/mini', '--db', db, '--port', '0'], {
    env: { PI_MASTER_KEY: randomBytes(32).toString('base64') },
  });
  t.equal(serve.code, 1);
  t.match(serve.stderr, `pi-gateway serve: ${expected}`);
});
