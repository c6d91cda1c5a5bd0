// `pi-gateway wallet`, `ledger verify`, `usage`, `logs` against a temp database: credit/show and
// verify as real subprocesses, the rest in-process.
import t from 'tap';
import { openDatabase } from '../../src/store/sqlite/db.ts';
import { openStore } from '../../src/store/sqlite/store.ts';
import { hold, settle, write } from '../store/sqlite/fixtures/ledger.ts';
import { tempDbFile } from '../store/sqlite/fixtures/temp-db.ts';
import { createInterface } from 'node:readline';
import type { RequestLogRow } from '../../src/store/sqlite/store.ts';
import { cliInProcess, cliProcess, fixtureWorkspace, spawnCli } from './fixtures/run-cli.ts';

const WS = fixtureWorkspace();

t.test('wallet credit and show, ledger verify, usage, logs', async (t) => {
  const db = tempDbFile(t);
  const env = { PI_DB: db };
  const credit = await cliProcess(
    ['wallet', 'credit', '--workspace', WS, '--usd', '12.5', '--note', 'first top-up', '--json'],
    { env },
  );
  t.equal(credit.code, 0, credit.stderr);
  t.match(JSON.parse(credit.stdout), {
    workspace: WS,
    credited_usd: '12.5',
    balance_usd: '12.5',
    trace_id: /^credit_/,
  });
  const tiny = await cliInProcess(['wallet', 'credit', '--workspace', WS, '--usd', '0.000000001'], env);
  t.equal(tiny.code, 0, tiny.stderr);
  t.match(tiny.stdout, /balance 12\.500000001 USD/, 'exact to the nano-dollar');
  for (const bad of ['0', '-1', '1.0000000001', 'ten']) {
    t.equal((await cliInProcess(['wallet', 'credit', '--workspace', WS, `--usd=${bad}`], env)).code, 2, `--usd ${bad}`);
  }
  t.equal(
    (await cliInProcess(['wallet', 'credit', '--workspace', 'nope', '--usd', '1'], env)).code,
    1,
    'unknown workspace',
  );

  const store = openStore(db);
  write(store, hold(WS, 'tr-1', 2_000_000_000n));
  write(
    store,
    settle(WS, 'tr-1', 2_000_000_000n, 1_250_000_000n, { model: 'v/m', provider: 'p1' }),
    hold(WS, 'tr-2', 1_000_000_000n),
  );
  store.requestLog.append({
    trace_id: 'tr-1',
    ts: Date.UTC(2026, 0, 1),
    workspace: WS,
    key_id: 'key_x',
    endpoint: 'chat.completions',
    model_requested: 'v/m',
    model_served: 'v/m',
    provider: 'p1',
    deployment: 'p1/m',
    attempts: 1,
    attempts_json: [],
    stream: false,
    status: 200,
    error_code: null,
    latency_ms: 12,
    ttfb_ms: 5,
    prompt_tokens: 3,
    completion_tokens: 4,
    reasoning_tokens: null,
    cached_tokens: null,
    cost_nano: 1_250_000_000n,
    app_title: 'App',
    app_origin: null,
    session_id: null,
    ended: 'completed',
  });
  store.close();

  const [show, showText, ok] = await Promise.all([
    cliProcess(['wallet', 'show', WS, '--json'], { env }),
    cliProcess(['wallet', 'show', WS], { env }),
    cliProcess(['ledger', 'verify'], { env }),
  ]);
  t.equal(show.code, 0, show.stderr);
  t.same(JSON.parse(show.stdout), {
    workspace: WS,
    balance_usd: '11.250000001',
    held_usd: '1',
    available_usd: '10.250000001',
    spend_today_usd: '1.25',
    open_holds: 1,
  });
  t.match(showText.stdout, /BALANCE USD[\s\S]*11\.250000001/);
  t.equal(ok.code, 0, ok.stderr);
  t.match(ok.stdout, /^ok: 1 wallet/);

  const usage = await cliInProcess(['usage', '--workspace', WS, '--json'], env);
  t.equal(usage.code, 0, usage.stderr);
  t.same(JSON.parse(usage.stdout), {
    workspace: WS,
    since: null,
    lines: [{ model: 'v/m', provider: 'p1', requests: 1, cost_usd: '1.25' }],
    requests: 1,
    total_usd: '1.25',
  });
  const later = await cliInProcess(['usage', '--workspace', WS, '--since', '2999-01-01', '--json'], env);
  t.match(JSON.parse(later.stdout), { since: '2999-01-01T00:00:00.000Z', lines: [], total_usd: '0' });
  const before = await cliInProcess(['usage', '--workspace', WS, '--until', '2000-01-01', '--json'], env);
  t.match(JSON.parse(before.stdout), { until: '2000-01-01T00:00:00.000Z', lines: [], requests: 0 }, '--until');
  const within = await cliInProcess(
    ['usage', '--workspace', WS, '--since', '2000-01-01', '--until', '2999-01-01', '--json'],
    env,
  );
  t.match(JSON.parse(within.stdout), { requests: 1, total_usd: '1.25' }, 'a range around the settlement');
  t.equal(
    (await cliInProcess(['usage', '--workspace', WS, '--since', '2026-01-02', '--until', '2026-01-01'], env)).code,
    2,
    '--until before --since is a usage error',
  );
  t.match(
    (await cliInProcess(['usage', '--workspace', WS], env)).stdout,
    /^MODEL\s+PROVIDER\s+REQUESTS\s+COST USD\nv\/m\s+p1\s+1\s+1\.25\ntotal/,
  );

  const logs = await cliInProcess(['logs', '--json', '--limit', '5'], env);
  t.equal(logs.code, 0, logs.stderr);
  t.match(JSON.parse(logs.stdout), [
    { id: 1, trace_id: 'tr-1', time: '2026-01-01T00:00:00.000Z', cost_usd: '1.25', status: 200 },
  ]);
  t.match((await cliInProcess(['logs', '--workspace', WS], env)).stdout, /^ID\s+TIME\s+TRACE[\s\S]*tr-1/);
  t.same(JSON.parse((await cliInProcess(['logs', '--workspace', 'other', '--json'], env)).stdout), []);

  const raw = openDatabase(db);
  raw.prepare('UPDATE wallets SET balance_nano = balance_nano + 1').run();
  raw.close();
  const bad = await cliProcess(['ledger', 'verify', '--json'], { env });
  t.equal(bad.code, 1, 'exit 1 on problems');
  t.match(JSON.parse(bad.stdout), { ok: false, problems: [/balance/] });
});

t.test('help, usage errors and a missing database', async (t) => {
  const env = { PI_DB: tempDbFile(t) };
  for (const name of ['secret', 'key', 'wallet', 'ledger', 'usage', 'logs']) {
    const r = await cliInProcess([name, '--help'], env);
    t.equal(r.code, 0, `${name} --help`);
    t.match(r.stdout, /^Usage/);
    t.match(r.stdout, /--db FILE/);
  }
  const missing = await cliInProcess(['wallet', 'show', WS], env);
  t.equal(missing.code, 1);
  t.match(missing.stderr, /no database at/);
  t.equal((await cliInProcess(['wallet'], env)).code, 2);
  t.equal((await cliInProcess(['wallet', 'show'], env)).code, 2);
  t.equal((await cliInProcess(['ledger', 'check'], env)).code, 2);
  t.equal((await cliInProcess(['logs', '--limit', '0'], env)).code, 2);
  t.equal((await cliInProcess(['usage'], env)).code, 2);
  const badConfig = await cliInProcess(['wallet', 'show', WS], { ...env, PI_CONFIG: 'no/such/dir' });
  t.equal(badConfig.code, 1);
  t.equal(
    badConfig.stderr,
    'pi-gateway wallet: config directory no/such/dir does not exist\n',
    'said as it is, not as a config issue',
  );
});

t.test('logs --follow prints rows written by another process, stops on SIGINT', async (t) => {
  const db = tempDbFile(t);
  const writer = openStore(db, { requestLog: { flushIntervalMs: 60_000, maxBatch: 1000 } });
  const row = (trace: string): RequestLogRow => ({
    trace_id: trace,
    ts: Date.UTC(2026, 0, 1),
    workspace: WS,
    key_id: null,
    endpoint: 'messages',
    model_requested: 'v/m',
    model_served: null,
    provider: null,
    deployment: null,
    attempts: 0,
    attempts_json: [],
    stream: true,
    status: 429,
    error_code: 'rate_limited',
    latency_ms: 1,
    ttfb_ms: null,
    prompt_tokens: null,
    completion_tokens: null,
    reasoning_tokens: null,
    cached_tokens: null,
    cost_nano: null,
    app_title: null,
    app_origin: null,
    session_id: null,
    ended: 'completed',
  });
  writer.requestLog.append(row('before'));
  writer.requestLog.flush();

  const child = spawnCli(['logs', '--follow', '--json'], { PI_DB: db });
  const lines: string[] = [];
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
  const seen = (n: number) =>
    new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no line ${n} within 60s: ${stderr}`)), 60_000);
      const check = () => {
        if (lines.length >= n) {
          clearTimeout(timer);
          resolve();
        }
      };
      rl.on('line', check);
      check();
    });
  const rl = createInterface({ input: child.stdout });
  rl.on('line', (l) => lines.push(l));

  await seen(1);
  t.match(JSON.parse(lines[0] as string), {
    trace_id: 'before',
    status: 429,
    error_code: 'rate_limited',
    cost_usd: null,
  });
  writer.requestLog.append(row('after-1'));
  writer.requestLog.append(row('after-2'));
  writer.requestLog.flush();
  await seen(3);
  t.same(
    lines.map((l) => (JSON.parse(l) as { trace_id: string }).trace_id),
    ['before', 'after-1', 'after-2'],
  );
  child.kill('SIGINT');
  t.equal(await exited, 0, stderr);
  writer.close();
});

t.test('wallet credit --idempotency-key credits once; the key reused for another credit is refused', async (t) => {
  const db = tempDbFile(t);
  const env = { PI_DB: db };
  const args = ['wallet', 'credit', '--workspace', WS, '--usd', '3', '--note', 'invoice 77'];
  const first = await cliInProcess([...args, '--idempotency-key', 'inv-77', '--json'], env);
  t.equal(first.code, 0, first.stderr);
  const made = JSON.parse(first.stdout) as { trace_id: string; replayed: boolean; balance_usd: string };
  t.match(made, { balance_usd: '3', replayed: false });
  const again = await cliInProcess([...args, '--idempotency-key', 'inv-77'], env);
  t.equal(again.code, 0, again.stderr);
  t.equal(
    again.stdout,
    `already credited: this idempotency key credited 3 USD to ${WS} before (${made.trace_id}); nothing added; balance 3 USD\n`,
  );
  const spaced = await cliInProcess(
    ['wallet', 'credit', '--workspace', WS, '--usd', '3', '--note', ' invoice 77 ', '--idempotency-key', 'inv-77'],
    env,
  );
  t.match(spaced.stdout, /^already credited/, 'the note compared without its outer spaces (the console trims it)');
  const other = await cliInProcess(
    ['wallet', 'credit', '--workspace', WS, '--usd', '4', '--note', 'invoice 77', '--idempotency-key', 'inv-77'],
    env,
  );
  t.equal(other.code, 1, 'another amount under the key');
  t.match(other.stderr, /already credited 3 USD .*not applied \(send it with a new key\)/);
  t.equal((await cliInProcess([...args, '--idempotency-key', 'a b'], env)).code, 2, 'a key with a space');
  t.equal((await cliInProcess([...args], env)).code, 0, 'without a key, a second credit');
  const store = openStore(db);
  t.teardown(() => store.close());
  t.equal(store.wallets.show(WS, Date.now()).balance, 6_000_000_000n, 'two credits of 3');
  t.ok(store.wallets.verify().ok);
});
