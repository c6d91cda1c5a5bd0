// The admin listener is closed to other origins and to guessing: no CORS header on any answer (the
// public port keeps its CORS), failed sign-ins limited per client and globally with back-off and
// logged, a short operator token refused at start, sessions bound to a secret the page keeps in
// memory (a replayed cookie alone cannot write) with an idle timeout, and a protected sign-out.
import t from 'tap';
import { startConsoleStack, TOKEN } from '../helpers/console.ts';
import { checkNoCors } from '../helpers/console-security.ts';

t.test('no answer of the admin listener carries CORS headers; the public API keeps its own', async (t) => {
  const s = await startConsoleStack(t, { telemetry: { metrics: { processMetrics: false } } });
  await checkNoCors(t, { adminUrl: s.adminUrl, token: TOKEN });
  const pub = await fetch(`${s.url}/v1/models`, { headers: { origin: 'https://app.example' } });
  await pub.arrayBuffer();
  t.equal(pub.headers.get('access-control-allow-origin'), '*', 'the public API still answers browsers');
});
