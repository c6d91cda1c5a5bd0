// The commands a deployment leans on: `backup` copies the database while a server writes to it (the
// copy verifies and is private to its owner, an existing file is never overwritten), `probe` answers
// a container health check from readiness, and the master key and operator token can come from files
// (PI_MASTER_KEY_FILE, systemd's credentials folder) instead of the environment — a file that cannot
// be read stops the command naming the file, never its content.
import { statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { startSimulator } from '../../src/simulator/server.ts';
import { cli, GATEWAY_CONFIG, tempDir } from '../helpers/admission.ts';
import { prepareDb, startServe } from '../helpers/serve-process.ts';

t.test('backup: an online copy that verifies, private, never over an existing file', async (t) => {
  const sim = await startSimulator({});
  t.teardown(() => sim.close());
  const db = prepareDb(t);
  const serve = await startServe(t, { config: GATEWAY_CONFIG, db, upstream: sim.url });
  const ask = () =>
    fetch(`${serve.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${db.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'acme/chat-small', messages: [{ role: 'user', content: 'hi' }] }),
    }).then((r) => r.text());
  await Promise.all([ask(), ask(), ask()]);
  const copy = join(tempDir(t, 'pi-backup-'), 'copy.db');
  // Copied while requests keep arriving.
  const [r] = await Promise.all([cli(['backup', '--db', db.file, '--to', copy]), ask(), ask()]);
  t.equal(r.code, 0, r.stderr);
  t.match(r.stdout, /^backed up .* \(\d+ bytes\)\n$/);
  t.equal(statSync(copy).mode & 0o777, 0o600, 'readable by its owner only');
  const verify = await cli(['ledger', 'verify', '--db', copy]);
  t.equal(verify.code, 0, `the copy verifies: ${verify.stdout}${verify.stderr}`);
  const again = await cli(['backup', '--db', db.file, '--to', copy]);
  t.equal(again.code, 1, 'refused');
  t.match(again.stderr, /exists: a backup never overwrites a file/);
  const pg = await cli(['backup', '--db', 'postgres://u@127.0.0.1:1/x', '--to', join(tempDir(t), 'x.db')]);
  t.equal(pg.code, 1);
  t.match(pg.stderr, /pg_dump/, 'PostgreSQL is pointed at pg_dump');
  const none = await cli(['backup', '--db', db.file]);
  t.equal(none.code, 2, 'no --to: a usage error');
});

t.test('probe: 0 when ready, 1 when there is no answer or no readiness', async (t) => {
  const sim = await startSimulator({});
  t.teardown(() => sim.close());
  const db = prepareDb(t);
  const serve = await startServe(t, { config: GATEWAY_CONFIG, db, upstream: sim.url, args: ['--admin-port', '0'] });
  const listening = serve.events.find((e) => e.event === 'listening');
  const admin = new URL(String(listening?.['admin']));
  const ready = await cli(['probe', '--port', admin.port]);
  t.equal(ready.code, 0, `ready: ${ready.stderr}`);
  const live = await cli(['probe', '--live'], { PI_ADMIN_PORT: admin.port });
  t.equal(live.code, 0, 'live, port from PI_ADMIN_PORT');
  serve.child.kill('SIGTERM');
  await serve.exited;
  const gone = await cli(['probe', '--port', admin.port, '--timeout-ms', '500']);
  t.equal(gone.code, 1, 'no listener: 1');
  t.match(gone.stderr, /no answer from http:\/\/127\.0\.0\.1:\d+\/health\/ready/);
  const noPort = await cli(['probe'], { PI_ADMIN_PORT: '' });
  t.equal(noPort.code, 2, 'no port: a usage error');
});

t.test('the master key from a file: PI_MASTER_KEY_FILE and systemd credentials', async (t) => {
  const dir = tempDir(t, 'pi-secret-file-');
  const db = join(dir, 'gateway.db');
  const key = Buffer.alloc(32, 9).toString('base64');
  writeFileSync(join(dir, 'master-key'), `${key}\n`);
  const viaFile = await cli(
    ['secret', 'set', 'openai-prod', '--db', db],
    { PI_MASTER_KEY: '', PI_MASTER_KEY_FILE: join(dir, 'master-key') },
    'sk-upstream',
  );
  t.equal(viaFile.code, 0, `sealed with the key from PI_MASTER_KEY_FILE: ${viaFile.stderr}`);
  const creds = tempDir(t, 'pi-credentials-');
  writeFileSync(join(creds, 'pi-master-key'), key);
  const viaSystemd = await cli(
    ['secret', 'set', 'openai-prod', '--db', db],
    { PI_MASTER_KEY: '', CREDENTIALS_DIRECTORY: creds },
    'sk-upstream-2',
  );
  t.equal(viaSystemd.code, 0, `the same key from $CREDENTIALS_DIRECTORY/pi-master-key: ${viaSystemd.stderr}`);
  const wrong = join(dir, 'other-key');
  writeFileSync(wrong, Buffer.alloc(32, 1).toString('base64'));
  const refused = await cli(
    ['secret', 'set', 'openai-prod', '--db', db],
    { PI_MASTER_KEY: '', PI_MASTER_KEY_FILE: wrong },
    'x',
  );
  t.equal(refused.code, 1, 'another key is refused as it would be from the environment');
  const missing = await cli(['secret', 'list', '--db', db], {
    PI_MASTER_KEY: '',
    PI_MASTER_KEY_FILE: join(dir, 'nope'),
  });
  t.equal(missing.code, 1, 'an unreadable file stops the command');
  t.match(missing.stderr, /cannot read PI_MASTER_KEY from .*nope \(ENOENT\)/);
  writeFileSync(join(dir, 'empty'), '\n');
  const empty = await cli(['secret', 'list', '--db', db], {
    PI_MASTER_KEY: '',
    PI_MASTER_KEY_FILE: join(dir, 'empty'),
  });
  t.equal(empty.code, 1);
  t.match(empty.stderr, /is empty/);
  t.notMatch(
    viaFile.stderr + viaSystemd.stderr + refused.stderr + missing.stderr,
    new RegExp(key.replace(/[+/=]/g, '.')),
    'the key is never printed',
  );
});
