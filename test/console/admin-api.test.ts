// The admin JSON endpoints on the embedded store (`serve`): the console API contract
// (test/helpers/console-api-contract.ts, run on PostgreSQL by admin-api-pg.test.ts) over a gateway +
// simulator + admin listener on 127.0.0.1 with a database file (so `pi-gateway usage` reads the same
// store), and the admin listener's switch: without an operator token the console is off.
import t from 'tap';
import { consoleApiContract } from '../helpers/console-api-contract.ts';
import { embeddedConsoleRig } from '../helpers/console-rigs.ts';
import { startConsoleStack, TOKEN } from '../helpers/console.ts';
import { startStack } from '../helpers/stack.ts';

t.test('the console API on the embedded store', async (t) => {
  consoleApiContract(t, embeddedConsoleRig);
});

// The admin listener's own switch, not the store's: checked once, on the embedded stack.
t.test('without PI_ADMIN_TOKEN the console and admin endpoints are off; health and metrics stay open', async (t) => {
  const s = await startStack(t, { admin: true, telemetry: { metrics: { processMetrics: false } } });
  const url = (s.admin as NonNullable<typeof s.admin>).url;
  const api = await fetch(`${url}/admin/requests`, { headers: { authorization: `Bearer ${TOKEN}` } });
  t.equal(api.status, 404);
  t.match(await api.json(), { error: { code: 'console_off', message: /PI_ADMIN_TOKEN/ } });
  const page = await fetch(`${url}/console`);
  t.equal(page.status, 404);
  t.match(await page.text(), /PI_ADMIN_TOKEN/);
  t.equal((await fetch(`${url}/health/ready`)).status, 200, 'health without a token');
  t.equal((await fetch(`${url}/metrics`)).status, 200, 'metrics without a token');

  const on = await startConsoleStack(t);
  t.equal((await fetch(`${on.adminUrl}/health/live`)).status, 200, 'with a token, health stays unauthenticated');
  t.equal(
    (await fetch(`${on.adminUrl}/metrics`)).status,
    404,
    'metrics as configured (off here), not behind the token',
  );
});
