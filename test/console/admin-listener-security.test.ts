// The admin listener is closed to other origins and to guessing: no CORS header on any answer (the
// public port keeps its CORS), failed sign-ins limited per client and globally with back-off and
// logged, a short operator token refused at start, sessions bound to a secret the page keeps in
// memory (a replayed cookie alone cannot write) with an idle timeout, and a protected sign-out.
import t, { type Test } from 'tap';
import { randomBytes } from 'node:crypto';
import { cli } from '../helpers/admission.ts';
import { startConsoleStack, TOKEN } from '../helpers/console.ts';
import { checkNoCors, checkSessionBinding, checkSignInLimits, type TimedConsole } from '../helpers/console-security.ts';

t.test('no answer of the admin listener carries CORS headers; the public API keeps its own', async (t) => {
  const s = await startConsoleStack(t, { telemetry: { metrics: { processMetrics: false } } });
  await checkNoCors(t, { adminUrl: s.adminUrl, token: TOKEN });
  const pub = await fetch(`${s.url}/v1/models`, { headers: { origin: 'https://app.example' } });
  await pub.arrayBuffer();
  t.equal(pub.headers.get('access-control-allow-origin'), '*', 'the public API still answers browsers');
});

/** A console stack whose log lines the checks read. */
async function timedStack(t: Test): Promise<TimedConsole> {
  const logs: { event: string; fields: Record<string, unknown> }[] = [];
  const s = await startConsoleStack(t, { log: (event, fields = {}) => logs.push({ event, fields }) });
  s.credit('open', '100');
  return {
    adminUrl: s.adminUrl,
    token: TOKEN,
    advance: (ms) => s.clock.advance(ms),
    logs: () => logs,
    balance: async () => (await s.call('/admin/wallets/open')).body.balance_usd,
  };
}

t.test(
  'wrong tokens: the 11th in a minute and after are refused with 429 and Retry-After, logged, backing off',
  async (t) => {
    await checkSignInLimits(t, await timedStack(t));
  },
);

t.test('a session is bound to its page secret, idles out, and its sign-out is protected', async (t) => {
  await checkSessionBinding(t, await timedStack(t));
});

t.test('a short operator token is refused at start, saying how to make one', async (t) => {
  for (const token of ['a', 'changeme', 'operator-token', '0123456789abcdef']) {
    const r = await cli(['serve', '--db', ':memory:', '--port', '0', '--admin-port', '0'], {
      PI_ADMIN_TOKEN: token,
      PI_MASTER_KEY: randomBytes(32).toString('base64'),
    });
    t.equal(r.code, 1, `PI_ADMIN_TOKEN=${token}: serve exits 1`);
    t.match(r.stderr, /PI_ADMIN_TOKEN is too easy to guess .*at least 128.*openssl rand -base64 32/);
    t.notOk(r.stderr.includes(`=${token}`), 'without printing the token');
  }
});
