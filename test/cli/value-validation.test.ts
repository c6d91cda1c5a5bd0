// CLI values: amounts exact or refused clearly (never a raw driver error), negative numbers reach
// the option's own check (not node's "argument is ambiguous"), integers in range, and dates checked
// against the calendar. Every refusal names the option and leaves the database unchanged.
import t from 'tap';
import { openStore } from '../../src/store/sqlite/store.ts';
import { tempDbFile } from '../store/sqlite/fixtures/temp-db.ts';
import { cliInProcess, cliProcess, fixtureWorkspace } from './fixtures/run-cli.ts';

const WS = fixtureWorkspace();

function balance(db: string): string {
  const store = openStore(db, { readonly: true });
  try {
    return String(store.wallets.show(WS, Date.now()).balance);
  } finally {
    store.close();
  }
}

t.test('wallet credit: big amounts are exact up to what a wallet holds, refused clearly past it', async (t) => {
  const db = tempDbFile(t);
  const env = { PI_DB: db };
  const huge = await cliProcess(['wallet', 'credit', '--workspace', WS, '--usd', '99999999999999'], { env });
  t.equal(huge.code, 2, 'a usage error');
  t.equal(
    huge.stderr.split('\n')[0],
    `pi-gateway wallet: --usd 99999999999999 is more than a wallet can hold: at most 9223372036.854775807 USD (SQLite's 64-bit integer in nano-USD)`,
  );

  const first = await cliProcess(['wallet', 'credit', '--workspace', WS, '--usd', '9000000000'], { env });
  t.equal(first.code, 0, first.stderr);
  t.match(first.stdout, /balance 9000000000 USD/);
  const second = await cliProcess(['wallet', 'credit', '--workspace', WS, '--usd', '9000000000'], { env });
  t.equal(second.code, 1, 'refused');
  t.equal(
    second.stderr,
    `pi-gateway wallet: crediting 9000000000 USD to ${WS} would take its balance from 9000000000 to 18000000000 USD, above the most a wallet can hold (9223372036.854775807 USD); nothing was credited\n`,
  );
  t.notMatch(second.stderr, /REAL|INTEGER|SQLITE|BigInt/i, 'no driver message');
  t.equal(balance(db), '9000000000000000000', 'the balance is unchanged');

  // Up to the last nano-dollar, exactly.
  const rest = await cliInProcess(['wallet', 'credit', '--workspace', WS, '--usd', '223372036.854775807'], env);
  t.equal(rest.code, 0, rest.stderr);
  t.match(rest.stdout, /balance 9223372036\.854775807 USD/, 'exact to the nano-dollar at the very top');
  const oneMore = await cliInProcess(['wallet', 'credit', '--workspace', WS, '--usd', '0.000000001'], env);
  t.equal(oneMore.code, 1);
  t.match(oneMore.stderr, /above the most a wallet can hold/);
  const verify = await cliProcess(['ledger', 'verify'], { env });
  t.equal(verify.code, 0, 'the ledger still verifies');
});

t.test('negative numbers reach the option’s own check', async (t) => {
  const db = tempDbFile(t);
  const env = { PI_DB: db };
  const cases: [string[], RegExp][] = [
    [['wallet', 'credit', '--workspace', WS, '--usd', '-5'], /^pi-gateway wallet: --usd must be positive, got "-5"$/m],
    [
      ['wallet', 'credit', '--workspace', WS, '--usd', '-0.5'],
      /^pi-gateway wallet: --usd must be positive, got "-0.5"$/m,
    ],
    [
      ['key', 'create', '--workspace', WS, '--rpm', '-5'],
      /^pi-gateway key: --rpm must be an integer from 1 to 9007199254740991, got -5$/m,
    ],
    [['logs', '--limit', '-3'], /^pi-gateway logs: --limit must be an integer from 1 to 10000, got -3$/m],
  ];
  for (const [args, message] of cases) {
    const r = await cliInProcess(args, env);
    t.equal(r.code, 2, args.join(' '));
    t.match(r.stderr, message, `${args.join(' ')}: names the option and the value`);
    t.notMatch(r.stderr, /ambiguous/, `${args.join(' ')}: not "argument is ambiguous"`);
  }
  // A value that is an option name is still an option (only numbers are joined).
  const missing = await cliInProcess(['wallet', 'credit', '--workspace', WS, '--usd', '--note', 'x'], env);
  t.equal(missing.code, 2, '--usd followed by another option');
});

t.test('integers: in range, whole, named', async (t) => {
  const db = tempDbFile(t);
  const env = { PI_DB: db };
  const cases: [string[], RegExp][] = [
    [
      ['key', 'create', '--workspace', WS, '--rpm', '99999999999999999999'],
      /--rpm must be an integer from 1 to 9007199254740991, got 99999999999999999999/,
    ],
    [['key', 'create', '--workspace', WS, '--rpm', '1.5'], /--rpm must be an integer, got "1\.5"/],
    [['key', 'create', '--workspace', WS, '--rpm', '0'], /--rpm must be an integer from 1/],
    [['logs', '--limit', '10001'], /--limit must be an integer from 1 to 10000/],
  ];
  for (const [args, message] of cases) {
    const r = await cliInProcess(args, env);
    t.equal(r.code, 2, args.join(' '));
    t.match(r.stderr, message, args.join(' '));
  }
  // serve, demo and simulator too: every usage error exits 2, named after the command.
  const port = await cliInProcess(['serve', '--port', '70000'], env);
  t.equal(port.code, 2);
  t.match(port.stderr, /^pi-gateway serve: --port must be an integer from 0 to 65535, got 70000$/m);
  const fromEnv = await cliInProcess(['serve'], { ...env, PI_PORT: '-1' });
  t.equal(fromEnv.code, 2);
  t.match(
    fromEnv.stderr,
    /PI_PORT must be an integer from 0 to 65535, got -1/,
    'a bad environment value names the variable',
  );
  const mode = await cliInProcess(['serve', '--db', 'postgres://127.0.0.1:1/x', '--wallet-admission', 'lazy'], env);
  t.equal(mode.code, 2);
  t.match(mode.stderr, /^pi-gateway serve: --wallet-admission must be escrow or per-request, not "lazy"$/m);
  const embedded = await cliInProcess(['serve', '--wallet-admission', 'escrow'], env);
  t.equal(embedded.code, 2);
  t.match(
    embedded.stderr,
    /--wallet-admission \(PI_WALLET_ADMISSION\) chooses how fleet nodes share wallets on PostgreSQL; give --db postgres:\/\/… too/,
  );
});

t.test('dates are checked against the calendar', async (t) => {
  const db = tempDbFile(t);
  const env = { PI_DB: db };
  const cases: [string, RegExp][] = [
    ['2099-02-30', /--expires-at 2099-02-30 is not a valid time: February 2099 has days 01-28/],
    ['2099-13-01', /month 13 is not 01-12/],
    ['2099-01-01T24:00:00Z', /hour 24 is not 00-23/],
    ['2099-01-01T12:60', /minute 60 is not 00-59/],
    ['2099-01-01T12:00:00+15:00', /offset \+15:00 is not between -14:00 and \+14:00/],
    ['tomorrow', /--expires-at must be an ISO date or date-time such as 2026-02-01/],
    ['2001-01-01', /--expires-at 2001-01-01 is in the past/],
  ];
  for (const [value, message] of cases) {
    const r = await cliInProcess(['key', 'create', '--workspace', WS, '--expires-at', value], env);
    t.equal(r.code, 2, value);
    t.match(r.stderr, message, value);
  }
  // A leap day exists; a time without an offset is UTC, whatever the machine's zone.
  const ok = await cliInProcess(['key', 'create', '--workspace', WS, '--expires-at', '2096-02-29T12:30', '--json'], {
    ...env,
    TZ: 'America/New_York',
  });
  t.equal(ok.code, 0, ok.stderr);
  t.equal((JSON.parse(ok.stdout) as { expires_at: string }).expires_at, '2096-02-29T12:30:00.000Z');
  const since = await cliInProcess(['usage', '--workspace', WS, '--since', '2026-02-29'], env);
  t.equal(since.code, 2);
  t.match(since.stderr, /--since 2026-02-29 is not a valid time: February 2026 has days 01-28/);
});

t.test('a whole API key in a credit note or a key name is refused; neither is stored', async (t) => {
  const db = tempDbFile(t);
  const env = { PI_DB: db };
  const made = await cliProcess(['key', 'create', '--workspace', WS, '--json'], { env });
  t.equal(made.code, 0, made.stderr);
  const secret = JSON.parse(made.stdout).key as string;
  const credit = await cliProcess(['wallet', 'credit', '--workspace', WS, '--usd', '5', '--note', `for ${secret}`], {
    env,
  });
  t.equal(credit.code, 2, 'a usage error');
  t.match(credit.stderr, /--note holds a whole API key, a secret/);
  t.notOk(credit.stderr.includes(secret), 'the key is not repeated');
  t.equal(balance(db), '0', 'nothing was credited');
  const named = await cliProcess(['key', 'create', '--workspace', WS, '--name', `replaces ${secret}`], { env });
  t.not(named.code, 0, 'refused');
  t.match(named.stderr, /may not hold a whole API key/);
  t.notOk(named.stderr.includes(secret), 'the key is not repeated');
  const store = openStore(db, { readonly: true });
  t.teardown(() => store.close());
  t.equal(store.apiKeys.list().length, 1, 'no second key');
  const byPrefix = await cliProcess(
    ['wallet', 'credit', '--workspace', WS, '--usd', '5', '--note', secret.slice(0, 14)],
    {
      env,
    },
  );
  t.equal(byPrefix.code, 0, 'a note naming a key by its prefix is taken');
});
