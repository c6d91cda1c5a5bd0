// Sealed secrets: AES-256-GCM round trip, key handling, tamper refusal, no plaintext leaks.
import { readFileSync } from 'node:fs';
import t from 'tap';
import { ManualClock } from '../../../src/clock.ts';
import { openDatabase } from '../../../src/store/sqlite/db.ts';
import { keyFingerprint, parseMasterKey } from '../../../src/store/seal.ts';
import { openStore, SecretError } from '../../../src/store/sqlite/store.ts';
import { masterKey, tempDbFile } from './fixtures/temp-db.ts';

const PLAIN = 'sk-upstream-SUPER-SECRET-0123456789';
const KEY = masterKey(1);
const errors: string[] = [];

/** Asserts a SecretError with `code` and remembers its message for the leak check at the end. */
function refuses(
  t: Pick<typeof import('tap').default, 'type' | 'equal' | 'fail'>,
  fn: () => unknown,
  code: string,
  msg = code,
): void {
  try {
    fn();
    t.fail(`expected SecretError ${code}`);
  } catch (err) {
    t.type(err, SecretError, msg);
    t.equal((err as SecretError).code, code, msg);
    errors.push(String((err as Error).message));
  }
}

t.test('round trip, list, names, remove, times', async (t) => {
  const clock = new ManualClock();
  const s = openStore(':memory:', { clock, masterKey: KEY });
  s.secrets.set('OPENAI_API_KEY', PLAIN);
  t.equal(s.secrets.reveal('OPENAI_API_KEY'), PLAIN);
  t.equal(s.secrets.reveal('absent'), null);
  clock.advance(5000);
  s.secrets.set('OPENAI_API_KEY', PLAIN + '2');
  s.secrets.set('azure.eastus-1_key', 'ünïcødé ✓');
  t.equal(s.secrets.reveal('azure.eastus-1_key'), 'ünïcødé ✓');
  const list = s.secrets.list();
  t.same(list, [
    { name: 'OPENAI_API_KEY', createdAt: clock.now() - 5000, updatedAt: clock.now() },
    { name: 'azure.eastus-1_key', createdAt: clock.now(), updatedAt: clock.now() },
  ]);
  t.notMatch(JSON.stringify(list), /SECRET|ünïcødé/, 'list never carries values');
  t.same([...s.secrets.names()].sort(), ['OPENAI_API_KEY', 'azure.eastus-1_key']);
  t.equal(s.secrets.remove('OPENAI_API_KEY'), true);
  t.equal(s.secrets.remove('OPENAI_API_KEY'), false);
  t.same([...s.secrets.names()], ['azure.eastus-1_key']);
  t.same(s.secrets.verifyAll(), { ok: ['azure.eastus-1_key'], bad: [] });
  refuses(t, () => s.secrets.set('x', ''), 'empty_value');
  refuses(t, () => s.secrets.set('bad name', 'v'), 'bad_name');
  refuses(t, () => s.secrets.set('', 'v'), 'bad_name');
  s.close();
});

t.test('master key formats', async (t) => {
  const bytes = Buffer.from(Array.from({ length: 32 }, (_, i) => i * 7 + 3));
  const id = keyFingerprint(bytes);
  t.equal(parseMasterKey(bytes.toString('base64')).id, id, 'base64');
  t.equal(parseMasterKey(bytes.toString('base64').replace(/=$/, '')).id, id, 'base64 without padding');
  t.equal(parseMasterKey(bytes.toString('base64url')).id, id, 'base64url');
  t.equal(parseMasterKey(bytes.toString('hex')).id, id, 'hex');
  t.equal(parseMasterKey(bytes.toString('hex').toUpperCase() + '\n').id, id, 'upper-case hex, trailing newline');
  t.match(id, /^[0-9a-f]{16}$/);
  for (const bad of [
    'abc',
    Buffer.alloc(31).toString('base64'),
    Buffer.alloc(33).toString('base64'),
    'a'.repeat(63),
    'g'.repeat(64),
    bytes.toString('base64').slice(0, -2) + 'B=',
    'correct horse battery staple',
  ]) {
    refuses(t, () => parseMasterKey(bad), 'bad_master_key', JSON.stringify(bad));
    t.notMatch(errors.at(-1) ?? '', bad, 'the key is not echoed');
    t.match(errors.at(-1) ?? '', /openssl rand -base64 32/);
  }
  refuses(t, () => parseMasterKey(undefined), 'no_master_key');
  refuses(t, () => parseMasterKey('  '), 'no_master_key');
});

t.test('missing or wrong master key is refused clearly', async (t) => {
  const file = tempDbFile(t);
  const s1 = openStore(file, { masterKey: KEY });
  s1.secrets.assertUsable();
  s1.secrets.set('A', PLAIN);
  s1.close();

  const none = openStore(file, { masterKey: undefined });
  refuses(t, () => none.secrets.assertUsable(), 'no_master_key');
  t.match(errors.at(-1), /1 sealed secret\(s\) but PI_MASTER_KEY is not set/);
  refuses(t, () => none.secrets.reveal('A'), 'no_master_key');
  refuses(t, () => none.secrets.set('B', 'v'), 'no_master_key');
  t.same(
    none.secrets.list().map((r) => r.name),
    ['A'],
    'listing needs no key',
  );
  none.close();

  const wrong = openStore(file, { masterKey: masterKey(2) });
  refuses(t, () => wrong.secrets.assertUsable(), 'wrong_master_key');
  t.match(errors.at(-1), new RegExp(keyFingerprint(Buffer.alloc(32, 1))), 'names the fingerprint it expected');
  refuses(t, () => wrong.secrets.reveal('A'), 'wrong_master_key');
  refuses(t, () => wrong.secrets.set('B', 'v'), 'wrong_master_key', 'never mixes two keys in one database');
  t.same(
    wrong.secrets.verifyAll().bad.map((b) => b.name),
    ['A'],
  );
  wrong.close();

  const malformed = openStore(file, { masterKey: 'not-a-key' });
  refuses(t, () => malformed.secrets.assertUsable(), 'bad_master_key');
  malformed.close();

  const empty = openStore(':memory:', { masterKey: undefined });
  empty.secrets.assertUsable();
  t.pass('no rows: a missing key is fine');
  empty.close();
});

t.test('tampering with nonce, ciphertext, tag or name is refused', async (t) => {
  for (const column of ['nonce', 'ciphertext', 'tag', 'name', 'tag-truncated'] as const) {
    const file = tempDbFile(t);
    const s = openStore(file, { masterKey: KEY });
    s.secrets.set('A', PLAIN);
    s.secrets.set('OTHER', 'fine');
    const raw = openDatabase(file);
    const row = raw.prepare('SELECT nonce, ciphertext, tag FROM secrets WHERE name = ?').get('A') as Record<
      string,
      Buffer
    >;
    let name = 'A';
    if (column === 'name') {
      raw.prepare("UPDATE secrets SET name = 'B' WHERE name = 'A'").run();
      name = 'B';
    } else if (column === 'tag-truncated') {
      raw.prepare('UPDATE secrets SET tag = ? WHERE name = ?').run((row.tag as Buffer).subarray(0, 12), 'A');
    } else {
      const b = Buffer.from(row[column] as Buffer);
      b[b.length >> 1] = (b[b.length >> 1] as number) ^ 0x01;
      raw.prepare(`UPDATE secrets SET ${column} = ? WHERE name = ?`).run(b, 'A');
    }
    raw.close();
    refuses(t, () => s.secrets.reveal(name), 'tampered', column);
    t.same(
      s.secrets.verifyAll(),
      { ok: ['OTHER'], bad: [{ name, reason: errors.at(-1) }] },
      `${column}: verifyAll flags only that row`,
    );
    s.secrets.assertUsable();
    s.close();
  }
});

t.test('a fresh nonce per seal', async (t) => {
  const file = tempDbFile(t);
  const s = openStore(file, { masterKey: KEY });
  const raw = openDatabase(file);
  const get = () =>
    raw.prepare("SELECT nonce, ciphertext, tag FROM secrets WHERE name = 'A'").get() as Record<string, Buffer>;
  s.secrets.set('A', PLAIN);
  const first = get();
  s.secrets.set('A', PLAIN);
  const second = get();
  t.equal((first.nonce as Buffer).length, 12);
  t.equal((first.tag as Buffer).length, 16);
  t.notOk((first.nonce as Buffer).equals(second.nonce as Buffer), 'nonce differs');
  t.notOk((first.ciphertext as Buffer).equals(second.ciphertext as Buffer), 'same plaintext, different ciphertext');
  raw.close();
  s.close();
  t.notOk(readFileSync(file).includes(PLAIN), 'the plaintext is not in the file');
});

t.test('no error message carries the plaintext', async (t) => {
  t.ok(errors.length > 10);
  for (const m of errors) t.notMatch(m, PLAIN);
});
