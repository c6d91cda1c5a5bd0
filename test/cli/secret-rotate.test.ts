// `pi-gateway secret rotate-master` end to end: the new key read from stdin (never argv), every
// credential re-sealed, a running gateway still serving, `serve` refusing the old key and starting
// with the new one; a tampered row or a wrong current key changes nothing.
import { spawnSync } from 'node:child_process';
import t from 'tap';
import { openDatabase } from '../../src/store/sqlite/db.ts';
import { openStore } from '../../src/store/sqlite/store.ts';
import { fixtureConfig, startStack } from '../helpers/stack.ts';
import { masterKey, tempDbFile } from '../store/sqlite/fixtures/temp-db.ts';
import { cliProcess, spawnCli, type Run } from './fixtures/run-cli.ts';

const OLD = masterKey(21);
const NEW = masterKey(22);
const UPSTREAM = 'sk-sim-DO-NOT-PRINT-rotated';
const CONFIG = 'test/fixtures/config/gateway';

/** A database holding every credential of the gateway fixture, sealed under OLD. */
function seeded(t: Parameters<typeof tempDbFile>[0]): { db: string; credentials: string[] } {
  const db = tempDbFile(t);
  const store = openStore(db, { masterKey: OLD });
  const credentials = [...new Set(fixtureConfig('gateway').resources.map((r) => r.credential))].sort();
  for (const c of credentials) store.secrets.set(c, UPSTREAM);
  store.close();
  return { db, credentials };
}

function rows(db: string): unknown[] {
  const raw = openDatabase(db);
  try {
    return raw.prepare('SELECT * FROM secrets ORDER BY name').all();
  } finally {
    raw.close();
  }
}

async function chat(s: Awaited<ReturnType<typeof startStack>>, key: string): Promise<number> {
  const res = await s.post(
    '/v1/chat/completions',
    { model: 'acme/chat-small', messages: [{ role: 'user', content: 'hi' }] },
    { key },
  );
  await res.arrayBuffer();
  return res.status;
}

/** `serve` as a subprocess until it logs "listening" (then stopped) or exits. */
function serveOnce(db: string, key: string): Promise<{ listening: boolean; code: number | null; stderr: string }> {
  const child = spawnCli(['serve', '--config', CONFIG, '--db', db, '--port', '0'], { PI_MASTER_KEY: key });
  let stderr = '';
  let listening = false;
  child.stderr.on('data', (d: Buffer) => {
    stderr += d.toString();
    if (!listening && stderr.includes('"event":"listening"')) {
      listening = true;
      child.kill('SIGTERM');
    }
  });
  return new Promise((resolve) => child.on('close', (code) => resolve({ listening, code, stderr })));
}

t.test('rotation: a running gateway keeps serving, serve refuses the old key and starts with the new', async (t) => {
  const { db, credentials } = seeded(t);
  const outputs: Run[] = [];
  const events: string[] = [];
  const running = await startStack(t, {
    store: openStore(db, { masterKey: OLD }),
    simulator: { apiKey: UPSTREAM },
    log: (event) => events.push(event),
  });
  t.teardown(() => running.store.close());
  const key = running.key('open');
  running.credit('open', '10');
  t.equal(await chat(running, key), 200, 'served before the rotation');

  const rotated = await cliProcess(['secret', 'rotate-master', '--db', db], {
    input: `${NEW}\n`,
    env: { PI_MASTER_KEY: OLD },
  });
  outputs.push(rotated);
  t.equal(rotated.code, 0, rotated.stderr);
  t.match(
    rotated.stdout,
    new RegExp(
      `^re-sealed ${credentials.length} secret\\(s\\) from master key [0-9a-f]{16} to [0-9a-f]{16}: ${credentials.join(', ')}\\n`,
    ),
  );
  t.match(rotated.stdout, /next: restart the gateway with PI_MASTER_KEY set to the new key/);
  t.equal(rotated.stderr, '', 'the log was checkpointed: no warning');

  t.equal(await chat(running, key), 200, 'the running gateway keeps the credentials it opened');
  t.ok(events.includes('sealed_secret_kept_after_rotation'), 'and says so in its log');
  t.notOk(events.includes('sealed_secret_refused'));

  const withOld = await serveOnce(db, OLD);
  t.equal(withOld.code, 1, 'serve with the old key exits 1');
  t.notOk(withOld.listening, 'and never listens');
  t.match(withOld.stderr, /secrets were sealed with master key [0-9a-f]{16} but PI_MASTER_KEY is key [0-9a-f]{16}/);
  const withNew = await serveOnce(db, NEW);
  t.ok(withNew.listening, `serve starts with the new key: ${withNew.stderr}`);

  const restarted = await startStack(t, { store: openStore(db, { masterKey: NEW }), simulator: { apiKey: UPSTREAM } });
  t.teardown(() => restarted.store.close());
  t.equal(
    await chat(restarted, restarted.key('open')),
    200,
    'a gateway restarted with the new key serves with the re-sealed credentials',
  );

  const setOld = await cliProcess(['secret', 'set', 'another', '--db', db], {
    input: 'v',
    env: { PI_MASTER_KEY: OLD },
  });
  outputs.push(setOld);
  t.equal(setOld.code, 1, '`secret set` with the old key is refused');
  t.match(setOld.stderr, /sealed with master key/);

  for (const text of [...outputs.map((o) => o.stdout + o.stderr), withOld.stderr, withNew.stderr]) {
    t.notMatch(text, UPSTREAM, 'no credential printed');
    t.notMatch(text, NEW, 'nor the new key');
    t.notMatch(text, OLD, 'nor the old one');
  }
});

t.test('--json, and refusals that change nothing', async (t) => {
  const { db, credentials } = seeded(t);
  const before = rows(db);
  const env = { PI_MASTER_KEY: OLD, PI_DB: db };

  const onArgv = await cliProcess(['secret', 'rotate-master', NEW], { env });
  t.equal(onArgv.code, 2, 'a key on the command line is a usage error');
  t.match(onArgv.stderr, /rotate-master takes no arguments: give the new key on stdin, never on the command line/);
  t.notMatch(onArgv.stderr, NEW, 'and is not echoed back');

  const empty = await cliProcess(['secret', 'rotate-master'], { env });
  t.equal(empty.code, 1);
  t.match(empty.stderr, /give the new master key on stdin \(create one with `openssl rand -base64 32`\)/);

  const malformed = await cliProcess(['secret', 'rotate-master'], { env, input: 'hunter2' });
  t.equal(malformed.code, 1);
  t.match(malformed.stderr, /the new master key is malformed \(7 characters\)/);
  t.notMatch(malformed.stderr, 'hunter2');

  const wrongCurrent = await cliProcess(['secret', 'rotate-master'], {
    env: { ...env, PI_MASTER_KEY: masterKey(23) },
    input: NEW,
  });
  t.equal(wrongCurrent.code, 1);
  t.match(
    wrongCurrent.stderr,
    /is sealed with master key [0-9a-f]{16} but PI_MASTER_KEY is key [0-9a-f]{16}; nothing was rotated/,
  );

  const raw = openDatabase(db);
  raw.prepare('UPDATE secrets SET tag = zeroblob(16) WHERE name = ?').run(credentials[0]);
  const tamperedRows = raw.prepare('SELECT * FROM secrets ORDER BY name').all();
  raw.close();
  const tampered = await cliProcess(['secret', 'rotate-master'], { env, input: NEW });
  t.equal(tampered.code, 1);
  t.match(tampered.stderr, new RegExp(`secret "${credentials[0]}" failed authentication .*nothing was rotated`));
  t.same(rows(db), tamperedRows, 'nothing written');
  t.notSame(tamperedRows, before);

  const store = openStore(db, { masterKey: OLD });
  store.secrets.remove(credentials[0] as string);
  store.close();
  const json = await cliProcess(['secret', 'rotate-master', '--json'], { env, input: NEW });
  t.equal(json.code, 0, json.stderr);
  t.match(JSON.parse(json.stdout), {
    resealed: credentials.slice(1),
    from_key_id: /^[0-9a-f]{16}$/,
    to_key_id: /^[0-9a-f]{16}$/,
    scrubbed: true,
  });

  const none = tempDbFile(t);
  const nothing = spawnSync(process.execPath, ['src/cli/main.ts', 'secret', 'rotate-master', '--db', none], {
    input: NEW,
    env: { ...process.env, PI_MASTER_KEY: '' },
    encoding: 'utf8',
  });
  t.equal(nothing.status, 0, nothing.stderr);
  t.match(nothing.stdout, /no sealed secrets: nothing to re-seal; use the new key as PI_MASTER_KEY from now on/);
});
