// No CLI output carries the password of a --db (or --from, --to) URL: `reload` on a fleet's
// PostgreSQL URL says how to reload a node (it used to treat the URL as a file path and print
// it, password and all), a URL that is not PostgreSQL is refused with its password masked, and
// PostgreSQL errors name the database masked.
import t from 'tap';
import { cliInProcess } from './fixtures/run-cli.ts';

const PASSWORD = 'hunter2-Secret';
const PG = `postgres://gw:${PASSWORD}@127.0.0.1:1/gw`;

t.test('reload --db postgres://…: a clear message for a fleet node, the password masked', async (t) => {
  for (const env of [{}, { PI_DB: PG }]) {
    const r = await cliInProcess(Object.keys(env).length ? ['reload'] : ['reload', '--db', PG], env);
    t.equal(r.code, 1);
    t.equal(
      r.stderr,
      'pi-gateway reload: postgres://gw:***@127.0.0.1:1/gw: the database is a PostgreSQL URL: a fleet node has no pid file to signal. Reload each node ' +
        'through its admin listener: pi-gateway reload --admin http://NODE:ADMIN_PORT with PI_ADMIN_TOKEN set (docs/fleet.md), or send SIGHUP to the node on its host\n',
    );
  }
});

t.test('no command prints a --db, --from or --to password', async (t) => {
  const runs: [string[], number][] = [
    [['reload', '--db', PG, '--json'], 1],
    [['reload', '--db', `mysql://gw:${PASSWORD}@127.0.0.1/gw`], 2],
    [['key', 'list', '--db', PG], 1],
    [['secret', 'list', '--db', PG], 1],
    [['ledger', 'verify', '--db', PG], 1],
    [['wallet', 'show', 'acme', '--db', `mysql://gw:${PASSWORD}@127.0.0.1/gw`], 2],
    [['serve', '--db', `mysql://gw:${PASSWORD}@127.0.0.1/gw`], 2],
    [['backup', '--db', PG, '--to', 'copy.db'], 1],
    [['backup', '--to', PG], 2],
    [['migrate', '--db', `mysql://gw:${PASSWORD}@127.0.0.1/gw`], 2],
    [['migrate', '--db', PG], 1],
    [['migrate', '--from', `mysql://gw:${PASSWORD}@127.0.0.1/gw`, '--to', PG], 2],
    [['migrate', '--from', 'x.db', '--to', `https://gw:${PASSWORD}@127.0.0.1/gw`], 2],
  ];
  for (const [args, code] of runs) {
    const r = await cliInProcess(args);
    t.equal(r.code, code, `${args.join(' ')}: exit ${code}`);
    t.notMatch(r.stdout + r.stderr, PASSWORD, `${args.join(' ')}: no password`);
    t.match(r.stdout + r.stderr, /gw:\*\*\*@|backup copies the embedded/, `${args.join(' ')}: the URL shown masked`);
  }
});
