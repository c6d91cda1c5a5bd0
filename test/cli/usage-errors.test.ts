// Every bad option value is a usage error: the message names the option (or the environment variable
// it came from), the exit code is 2 whatever the command, and the command ends at once — nothing is
// started first (a bad --upstream-override used to start the writer thread, fail, and hang).
import t from 'tap';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { tempDir } from '../helpers/admission.ts';
import { boundedCli } from './fixtures/bounded-cli.ts';
import { CONFIG, cliInProcess } from './fixtures/run-cli.ts';

t.test('serve, demo and simulator: a bad value exits 2 naming the option, without starting', async (t) => {
  const dir = tempDir(t, 'pi-usage-');
  const db = join(dir, 'gateway.db');
  const serve = ['serve', '--config', CONFIG, '--db', db, '--port', '0'];
  const tooMany = String(Math.min(256, 4 * availableParallelism()) + 1);
  const cases: [string[], Record<string, string>, RegExp][] = [
    [
      [...serve, '--upstream-override', 'notaurl'],
      {},
      /^pi-gateway serve: --upstream-override must be a URL such as http:\/\/127\.0\.0\.1:4010 \(http or https\), got "notaurl"$/m,
    ],
    [[...serve, '--upstream-override', 'ftp://127.0.0.1:21'], {}, /--upstream-override must be a URL/],
    [serve, { PI_UPSTREAM_OVERRIDE: 'notaurl' }, /^pi-gateway serve: PI_UPSTREAM_OVERRIDE must be a URL/m],
    [[...serve, '--port', '70000'], {}, /--port must be an integer from 0 to 65535, got 70000/],
    [[...serve, '--port', 'http'], {}, /--port must be an integer, got "http"/],
    [[...serve, '--workers', '0'], {}, /--workers must be a whole number from 1 to/],
    [
      [...serve, '--workers', tooMany],
      {},
      new RegExp(
        `--workers must be a whole number from 1 to \\d+ \\(at most 4 per core; this machine has \\d+\\), or auto, got "${tooMany}"`,
      ),
    ],
    [serve, { PI_WORKERS: 'lots' }, /PI_WORKERS must be a whole number/],
    [
      [...serve, '--redis', 'localhost:6379', '--db', 'postgres://gw@127.0.0.1:1/gw'],
      {},
      /--redis must be a URL such as redis:\/\/127\.0\.0\.1:6379 \(redis or rediss\), got "localhost:6379"/,
    ],
    [[...serve, '--db', 'sqlite:///var/lib/gw.db'], {}, /--db must be a database file or a postgres:\/\/… URL/],
    [
      ['demo', '--dir', dir, '--port', '0', '--sim-port', '-1'],
      {},
      /^pi-gateway demo: --sim-port must be an integer from 0 to 65535, got -1$/m,
    ],
    [['demo', '--dir', dir, '--port', '65536'], {}, /--port must be an integer from 0 to 65535/],
    [
      ['simulator', '--port', '99999'],
      {},
      /^pi-gateway simulator: --port must be an integer from 0 to 65535, got 99999$/m,
    ],
    [
      ['simulator', '--port', '0', '--max-recorded', '-1'],
      {},
      /--max-recorded must be an integer from 0 to 1000000, got -1/,
    ],
    [['simulator', '--port', '0', '--bogus'], {}, /Unknown option '--bogus'/],
  ];
  for (const [args, env, message] of cases) {
    const r = await boundedCli(args, { env: { PI_CONFIG: undefined, PI_ADMIN_PORT: undefined, ...env } });
    const label = `${Object.entries(env)
      .map(([k, v]) => `${k}=${v} `)
      .join('')}${args.join(' ')}`;
    t.notOk(r.timedOut, `${label}: ends on its own`);
    t.equal(r.code, 2, `${label}: exit 2`);
    t.match(r.stderr, message, `${label}: names the option`);
    t.notMatch(r.stderr, /"event":"listening"|simulator listening/, `${label}: nothing started`);
  }
});

t.test('every other command: exit 2 and the option named', async (t) => {
  const db = join(tempDir(t, 'pi-usage-'), 'gateway.db');
  const cases: [string[], RegExp][] = [
    [
      ['reload', '--db', db, '--timeout', '0'],
      /^pi-gateway reload: --timeout must be an integer from 1 to 3600, got 0$/m,
    ],
    [['reload', '--db', db, '--timeout', 'soon'], /--timeout must be an integer, got "soon"/],
    [
      ['probe', '--url', 'notaurl'],
      /^pi-gateway probe: --url must be a URL such as http:\/\/127\.0\.0\.1:9090\/health\/ready \(http or https\), got "notaurl"$/m,
    ],
    [['probe', '--port', '9090', '--timeout-ms', '0'], /--timeout-ms must be an integer from 1 to 600000/],
    [['check', '--nope'], /^pi-gateway check: Unknown option '--nope'$/m],
    [['check', '--warn-expiring', '-1'], /--warn-expiring must be an integer from 0 to 3650/],
    [['build', '--nope'], /Unknown option '--nope'/],
    [['logs', '--db', db, '--limit', 'all'], /--limit must be an integer, got "all"/],
    [['backup', '--db', db, '--to', 'postgres://gw@127.0.0.1/gw'], /--to must be a file/],
    [['migrate', '--db', 'mysql://gw@127.0.0.1/gw'], /--db must be a postgres:\/\/… URL/],
    [
      ['key', 'list', '--db', 'redis://127.0.0.1:6379'],
      /--db must be a database file or a postgres:\/\/… URL, got "redis:\/\/127\.0\.0\.1:6379"/,
    ],
  ];
  for (const [args, message] of cases) {
    const r = await cliInProcess(args);
    t.equal(r.code, 2, `${args.join(' ')}: exit 2`);
    t.match(r.stderr, message, `${args.join(' ')}: names the option`);
  }
});

t.test('no command or an unknown one is a usage error too', async (t) => {
  const none = await cliInProcess([]);
  t.equal(none.code, 2);
  t.match(none.stderr, /^Usage: pi-gateway <command>/);
  const unknown = await cliInProcess(['serv']);
  t.equal(unknown.code, 2);
  t.match(unknown.stderr, /^pi-gateway: unknown command "serv"/);
  const help = await cliInProcess(['--help']);
  t.equal(help.code, 0, '--help is not an error');
  t.match(help.stdout, /init\s+write a starter config/);
});
