// Master-key rotation in the store: every row re-sealed under the new key in one transaction and
// verified before the commit; the old key opens nothing afterwards; a row that does not open, or does
// not verify, changes nothing; the old ciphertexts are gone from the files.
import { existsSync, readFileSync } from 'node:fs';
import t, { type Test } from 'tap';
import { ManualClock } from '../../../src/clock.ts';
import { openDatabase } from '../../../src/store/sqlite/db.ts';
import { keyFingerprint, seal, type MasterKey } from '../../../src/store/seal.ts';
import { openStore, SecretError } from '../../../src/store/sqlite/store.ts';
import { masterKey, tempDbFile } from './fixtures/temp-db.ts';

const OLD = masterKey(1);
const NEW = masterKey(2);
const VALUES: Record<string, string> = {
  'anthropic-main': 'sk-ant-ROTATE-ME-1',
  'aws.us-east-1': 'AKIA-ROTATE-ME-2',
  'gcp-vertex-sa': '{"type":"service_account","private_key":"ROTATE-ME-3"}',
};
const errors: string[] = [];

interface Row {
  name: string;
  nonce: Buffer;
  ciphertext: Buffer;
  tag: Buffer;
  key_id: string;
  created_at: number;
  updated_at: number;
}

function rows(file: string): Row[] {
  const raw = openDatabase(file);
  try {
    return raw.prepare('SELECT * FROM secrets ORDER BY name').all() as Row[];
  } finally {
    raw.close();
  }
}

function seeded(t: Parameters<typeof tempDbFile>[0], clock = new ManualClock()): string {
  const file = tempDbFile(t);
  const s = openStore(file, { masterKey: OLD, clock });
  for (const [name, value] of Object.entries(VALUES)) s.secrets.set(name, value);
  s.close();
  return file;
}

/** Runs fn, expects a SecretError with `code`, keeps its message for the leak check. */
function refused(t: Pick<Test, 'fail' | 'equal' | 'type'>, fn: () => unknown, code: string): string {
  try {
    fn();
    t.fail(`expected SecretError ${code}`);
    return '';
  } catch (err) {
    t.type(err, SecretError);
    t.equal((err as SecretError).code, code);
    const message = (err as Error).message;
    errors.push(message);
    return message;
  }
}

t.test('every row moves to the new key; the old key opens nothing afterwards', async (t) => {
  const clock = new ManualClock();
  const file = seeded(t, clock);
  const before = rows(file);
  clock.advance(60_000);
  const s = openStore(file, { masterKey: OLD, clock });
  s.changedSinceLastCheck();
  const r = s.secrets.rotateMaster(NEW);
  t.same(r, {
    resealed: Object.keys(VALUES).sort(),
    fromKeyId: keyFingerprint(Buffer.alloc(32, 1)),
    toKeyId: keyFingerprint(Buffer.alloc(32, 2)),
    scrubbed: true,
  });
  t.ok(s.changedSinceLastCheck(), 'a running view of this store is told the rows changed');
  refused(t, () => s.secrets.reveal('anthropic-main'), 'wrong_master_key');
  s.close();

  const after = rows(file);
  for (const [i, row] of after.entries()) {
    const old = before[i] as Row;
    t.equal(row.key_id, r.toKeyId, `${row.name}: new key id`);
    t.notOk(row.nonce.equals(old.nonce), `${row.name}: fresh nonce`);
    t.notOk(row.ciphertext.equals(old.ciphertext), `${row.name}: new ciphertext`);
    t.equal(row.updated_at, old.updated_at, `${row.name}: the value did not change, so neither did updated_at`);
    t.equal(row.created_at, old.created_at);
  }

  const next = openStore(file, { masterKey: NEW });
  next.secrets.assertUsable();
  for (const [name, value] of Object.entries(VALUES))
    t.equal(next.secrets.reveal(name), value, `${name} opens under the new key`);
  next.close();

  const stale = openStore(file, { masterKey: OLD });
  t.match(
    refused(t, () => stale.secrets.assertUsable(), 'wrong_master_key'),
    /set the original PI_MASTER_KEY/,
    'a server with the old key refuses to start',
  );
  refused(t, () => stale.secrets.reveal('aws.us-east-1'), 'wrong_master_key');
  refused(t, () => stale.secrets.set('another', 'v'), 'wrong_master_key');
  t.same(stale.secrets.verifyAll().ok, []);
  stale.close();

  const files = [file, `${file}-wal`].filter((f) => existsSync(f)).map((f) => readFileSync(f));
  for (const old of before) {
    t.notOk(
      files.some((b) => b.includes(old.ciphertext)),
      `${old.name}: the old ciphertext is gone from the database and its WAL`,
    );
  }
  for (const value of Object.values(VALUES))
    t.notOk(
      files.some((b) => b.includes(value)),
      'no plaintext in the files',
    );
});

t.test('a value that does not verify under the new key rolls back every row', async (t) => {
  const file = seeded(t);
  const before = rows(file);
  const s = openStore(file, { masterKey: OLD });
  // Damages the second row's ciphertext after sealing, as a faulty cipher or a bad write would.
  let n = 0;
  const faulty = (master: MasterKey, name: string, plaintext: string) => {
    const sealed = seal(master, name, plaintext);
    if (n++ === 1) sealed.ciphertext[0] = (sealed.ciphertext[0] as number) ^ 0xff;
    return sealed;
  };
  const message = refused(t, () => s.secrets.rotateMaster(NEW, faulty), 'rotation_failed');
  t.match(message, /secret "aws\.us-east-1" did not open under the new key after re-sealing; nothing was rotated/);
  t.same(rows(file), before, 'every row byte for byte as before, the good ones too');
  for (const [name, value] of Object.entries(VALUES))
    t.equal(s.secrets.reveal(name), value, `${name} still opens under the old key`);
  t.equal(n, 3, 'every row was re-sealed before the check');
  s.close();

  const wrongId = openStore(file, { masterKey: OLD });
  const sealedUnderOld = (_: MasterKey, name: string, plaintext: string) => seal(oldKey(), name, plaintext);
  t.match(
    refused(t, () => wrongId.secrets.rotateMaster(NEW, sealedUnderOld), 'rotation_failed'),
    /did not open under the new key/,
    'a row sealed under the wrong key is caught too',
  );
  t.same(rows(file), before);
  wrongId.close();
});

function oldKey(): MasterKey {
  const key = Buffer.alloc(32, 1);
  return { key, id: keyFingerprint(key) };
}

t.test('a row that does not open under the current key stops the rotation before any write', async (t) => {
  const file = seeded(t);
  const raw = openDatabase(file);
  const row = raw.prepare("SELECT ciphertext FROM secrets WHERE name = 'gcp-vertex-sa'").get() as {
    ciphertext: Buffer;
  };
  const damaged = Buffer.from(row.ciphertext);
  damaged[3] = (damaged[3] as number) ^ 0x01;
  raw.prepare("UPDATE secrets SET ciphertext = ? WHERE name = 'gcp-vertex-sa'").run(damaged);
  raw.close();
  const before = rows(file);

  const s = openStore(file, { masterKey: OLD });
  const message = refused(t, () => s.secrets.rotateMaster(NEW), 'tampered');
  t.match(message, /secret "gcp-vertex-sa" failed authentication/);
  t.match(
    message,
    /nothing was rotated \(set that secret again with `pi-gateway secret set gcp-vertex-sa`, or remove it, then rotate\)/,
  );
  t.same(rows(file), before, 'nothing written');
  s.secrets.remove('gcp-vertex-sa');
  t.same(
    s.secrets.rotateMaster(NEW).resealed,
    ['anthropic-main', 'aws.us-east-1'],
    'once the operator removes it, the rest rotate',
  );
  s.close();
});

t.test('the current key must be the one the rows use; the new key must be well formed and new', async (t) => {
  const file = seeded(t);
  const before = rows(file);
  const attempts: [string | undefined, string, string, RegExp][] = [
    [
      masterKey(3),
      NEW,
      'wrong_master_key',
      /secret "anthropic-main" is sealed with master key \w+ but PI_MASTER_KEY is key \w+; nothing was rotated/,
    ],
    [undefined, NEW, 'no_master_key', /PI_MASTER_KEY is not set/],
    [OLD, OLD, 'same_master_key', /the new master key is the current one/],
    [
      OLD,
      OLD.slice(0, 20),
      'bad_master_key',
      /^the new master key is malformed \(20 characters\); the new master key must be 32 random bytes/,
    ],
    [OLD, '', 'no_master_key', /^the new master key is not set/],
  ];
  for (const [current, next, code, pattern] of attempts) {
    const s = openStore(file, { masterKey: current });
    const message = refused(t, () => s.secrets.rotateMaster(next), code);
    t.match(message, pattern, code);
    if (next !== '') t.notMatch(message, next, 'the key is not echoed');
    s.close();
  }
  t.same(rows(file), before, 'nothing written by any of them');
});

t.test('a lone secret cannot be re-sealed under the retired key', async (t) => {
  const file = tempDbFile(t);
  const s = openStore(file, { masterKey: OLD });
  s.secrets.set('only', 'v1');
  s.secrets.rotateMaster(NEW);
  const before = rows(file);
  refused(t, () => s.secrets.set('only', 'v2'), 'wrong_master_key');
  t.same(rows(file), before, 'the row stays under the new key');
  t.ok(s.secrets.remove('only'), 'removing it needs no key');
  s.secrets.set('only', 'v3');
  t.equal(s.secrets.reveal('only'), 'v3', 'after which a key may start afresh');
  s.close();
});

t.test('no sealed rows: nothing to do, and no current key needed', async (t) => {
  const s = openStore(tempDbFile(t), { masterKey: undefined });
  t.same(s.secrets.rotateMaster(NEW), {
    resealed: [],
    fromKeyId: null,
    toKeyId: keyFingerprint(Buffer.alloc(32, 2)),
    scrubbed: true,
  });
  t.notOk(s.changedSinceLastCheck(), 'nothing changed');
  s.close();
});

t.test('a reader holding the WAL: rotated, but reported as not scrubbed', async (t) => {
  const file = seeded(t);
  const reader = openDatabase(file);
  reader.pragma('busy_timeout = 0');
  reader.prepare('BEGIN').run();
  reader.prepare('SELECT COUNT(*) FROM secrets').get();
  const s = openStore(file, { masterKey: OLD });
  const r = s.secrets.rotateMaster(NEW);
  t.equal(r.resealed.length, 3);
  t.equal(r.scrubbed, false, 'the checkpoint could not truncate the log under an open read transaction');
  reader.prepare('COMMIT').run();
  reader.close();
  s.close();
  const next = openStore(file, { masterKey: NEW });
  t.equal(next.secrets.reveal('anthropic-main'), VALUES['anthropic-main']);
  next.close();
});

t.test('no error message carries a value or a key', async (t) => {
  t.ok(errors.length >= 10);
  for (const m of errors) {
    for (const v of Object.values(VALUES)) t.notMatch(m, v);
    t.notMatch(m, OLD);
    t.notMatch(m, NEW);
  }
});
