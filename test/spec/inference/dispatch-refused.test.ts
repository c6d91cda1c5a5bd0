// A provider call undici refuses to build (it throws inside dispatch: here a sealed credential with a
// line break makes the Authorization header invalid) was never sent: the attempt fails as `not_sent`,
// the next deployment is tried, and no breaker moves, however often it happens.
import t from 'tap';
import { logRow } from '../../helpers/admission.ts';
import { startStack } from '../../helpers/stack.ts';

const CHAT = { model: 'acme/chat-small', messages: [{ role: 'user', content: 'hi' }] };

t.test('a call undici refuses to send is no provider failure', async (t) => {
  const s = await startStack(t, { secrets: { 'alpha-1': 'sk-upstream\nwith-a-line-break' } });
  const key = s.key('open');
  s.credit('open', '10');
  for (let i = 0; i < 8; i++) {
    const res = await s.post('/v1/chat/completions', { ...CHAT, provider: { only: ['alpha'] } }, { key });
    const body = (await res.json()) as { error: { code: string; message: string } };
    t.equal(res.status, 503, `request ${i + 1}: nothing could answer`);
    t.equal(body.error.code, 'provider_unavailable');
    t.match(body.error.message, /the gateway could not send the request: invalid authorization header/, 'saying why');
    const row = await logRow(s, res.headers.get('x-pi-trace-id'));
    t.match(row, { status: 503, attempts: 1 }, 'one attempt, logged');
  }
  t.equal(s.sim.requests.length, 0, 'nothing reached the provider');
  t.match(
    s.gw.ctx.health.state('alpha/chat-small'),
    { state: 'closed', consecutiveFailures: 0 },
    'the breaker never moved',
  );
  const other = await s.post('/v1/chat/completions', CHAT, { key });
  await other.arrayBuffer();
  t.equal(other.status, 200, 'without the restriction another deployment answers');
  t.not(other.headers.get('x-pi-provider'), 'alpha');
});
