// A first end-to-end pass through the stack: chat JSON and stream, messages, catalog.
import t from 'tap';
import { startStack, sseEvents } from '../../helpers/stack.ts';

t.test('chat completion through the simulator', async (t) => {
  const s = await startStack(t);
  const key = s.key('open');
  s.credit('open', '10');
  const res = await s.post(
    '/v1/chat/completions',
    { model: 'acme/chat-small', messages: [{ role: 'user', content: 'hi' }] },
    { key },
  );
  t.equal(res.status, 200);
  const body = (await res.json()) as { model: string };
  t.equal(body.model, 'acme/chat-small');
  t.equal(res.headers.get('x-pi-model'), 'acme/chat-small');
  t.ok(res.headers.get('x-pi-provider'));

  const st = await s.post(
    '/v1/chat/completions',
    { model: 'acme/chat-small', stream: true, messages: [{ role: 'user', content: 'hi' }] },
    { key },
  );
  t.equal(st.status, 200);
  const events = await sseEvents(st);
  t.equal(events.at(-1), 'data: [DONE]');
  t.match(events.at(-2), /"usage":\{/);
});
