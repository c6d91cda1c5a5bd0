// Every `--json` output of the CLI speaks like every other JSON the gateway writes: snake_case keys
// and times in ISO 8601 UTC. Each command that prints JSON is run once against a temp database and
// its whole document is walked (keys at every depth; every value of a key that names a time).
import t, { type Test } from 'tap';
import { openStore } from '../../src/store/sqlite/store.ts';
import { masterKey, tempDbFile } from '../store/sqlite/fixtures/temp-db.ts';
import { cliInProcess, cliProcess, CONFIG, fixtureWorkspace, type Run } from './fixtures/run-cli.ts';

const SNAKE = /^[a-z][a-z0-9]*(_[a-z0-9]+)*$/;
const ISO_UTC = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
/** Keys whose values are instants. */
const TIME_KEY = /(^time$|_at$|^since$)/;

function walk(t: Test, label: string, v: unknown, path = '$'): void {
  if (Array.isArray(v)) {
    for (const [i, x] of v.entries()) walk(t, label, x, `${path}[${i}]`);
    return;
  }
  if (v === null || typeof v !== 'object') return;
  for (const [k, x] of Object.entries(v)) {
    if (!SNAKE.test(k)) t.fail(`${label}: ${path}.${k} is not snake_case`);
    if (TIME_KEY.test(k) && x !== null && !(typeof x === 'string' && ISO_UTC.test(x)))
      t.fail(`${label}: ${path}.${k} = ${JSON.stringify(x)} is not ISO 8601 UTC`);
    walk(t, label, x, `${path}.${k}`);
  }
}

function document(t: Test, label: string, r: Run, code = 0): unknown {
  t.equal(r.code, code, `${label}: exit ${code} ${r.stderr}`);
  const v = JSON.parse(r.stdout) as unknown;
  walk(t, label, v);
  return v;
}

t.test('every --json output: snake_case keys, ISO 8601 UTC times', async (t) => {
  const db = tempDbFile(t);
  const KEY = masterKey(9);
  const env = { PI_DB: db, PI_MASTER_KEY: KEY };
  const WS = fixtureWorkspace();

  document(t, 'check', await cliInProcess(['check', '--config', CONFIG, '--json', '--warn-expiring', '3650']));
  document(
    t,
    'check (problems)',
    await cliInProcess(['check', '--config', 'test/fixtures/config/does-not-exist', '--json']),
    1,
  );
  document(
    t,
    'secret set',
    await cliProcess(['secret', 'set', 'OPENAI_API_KEY', '--json'], { env, input: 'sk-test\n' }),
  );
  document(t, 'secret list', await cliInProcess(['secret', 'list', '--json'], env));
  document(
    t,
    'secret rotate-master',
    await cliProcess(['secret', 'rotate-master', '--json'], { env, input: `${masterKey(22)}\n` }),
  );
  const env2 = { ...env, PI_MASTER_KEY: masterKey(22) };
  document(t, 'secret rm', await cliInProcess(['secret', 'rm', 'OPENAI_API_KEY', '--json'], env2));
  const created = document(
    t,
    'key create',
    await cliInProcess(['key', 'create', '--workspace', WS, '--expires-at', '2099-01-01T00:00:00Z', '--json'], env2),
  ) as { id: string };
  document(t, 'key list', await cliInProcess(['key', 'list', '--json'], env2));
  document(t, 'key revoke', await cliInProcess(['key', 'revoke', created.id, '--json'], env2));
  document(
    t,
    'wallet credit',
    await cliInProcess(['wallet', 'credit', '--workspace', WS, '--usd', '2', '--json'], env2),
  );
  document(t, 'wallet show', await cliInProcess(['wallet', 'show', WS, '--json'], env2));
  const store = openStore(db, { masterKey: masterKey(22) });
  store.requestLog.append({
    trace_id: 'tr-json',
    ts: Date.UTC(2026, 0, 1),
    workspace: WS,
    key_id: 'key_x',
    endpoint: 'chat_completions',
    model_requested: 'v/m',
    model_served: null,
    provider: null,
    deployment: null,
    attempts: 1,
    attempts_json: [{ provider: 'p1', model: 'v/m', deployment: 'p1/m', outcome: 'status_500', status: 500, ms: 3 }],
    stream: false,
    status: 502,
    error_code: 'provider_error',
    latency_ms: 12,
    ttfb_ms: null,
    prompt_tokens: null,
    completion_tokens: null,
    reasoning_tokens: null,
    cached_tokens: null,
    cost_nano: null,
    app_title: null,
    app_origin: null,
    session_id: null,
    ended: 'failed',
  });
  store.close();
  document(t, 'usage', await cliInProcess(['usage', '--workspace', WS, '--since', '2020-01-01', '--json'], env2));
  const logs = document(t, 'logs', await cliInProcess(['logs', '--json'], env2)) as Record<string, unknown>[];
  t.match(
    logs[0],
    { id: 1, time: '2026-01-01T00:00:00.000Z', trace_id: 'tr-json', cost_usd: null },
    'a log row: its time as `time`',
  );
  t.notOk('ts' in (logs[0] as object), 'no epoch-ms ts');
  document(t, 'ledger verify', await cliInProcess(['ledger', 'verify', '--json'], env2));
  document(t, 'backup', await cliInProcess(['backup', '--to', `${db}.bak`, '--json'], env2));
});
