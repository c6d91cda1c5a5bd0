// Whole (non-streamed) answers: a body that is not one complete JSON object is no answer on any
// protocol, and a Messages 2xx whose body is an error object stands for the status of its error type.
import t from 'tap';
import { chatCompletions } from '../../src/protocols/chat-completions.ts';
import { images } from '../../src/protocols/images.ts';
import { messages, messagesErrorStatus } from '../../src/protocols/messages.ts';
import { responses } from '../../src/protocols/responses.ts';

const SLUG = Buffer.from('"vendor/slug"');

t.test('an answer cut short, or with bytes after it, is no answer', async (t) => {
  const bodies: [string, typeof images, string][] = [
    ['images', images, JSON.stringify({ created: 1, data: [{ b64_json: 'aGk=' }], usage: { total_tokens: 3 } })],
    ['chat', chatCompletions, JSON.stringify({ id: 'c', object: 'chat.completion', model: 'm', choices: [] })],
    ['messages', messages, JSON.stringify({ id: 'm', type: 'message', model: 'm', content: [] })],
    ['responses', responses, JSON.stringify({ id: 'r', model: 'm', status: 'completed' })],
  ];
  for (const [name, p, body] of bodies) {
    t.not(p.readJson(Buffer.from(body), SLUG), null, `${name}: whole`);
    t.equal(p.readJson(Buffer.from(body.slice(0, -1)), SLUG), null, `${name}: cut before its closing brace`);
    t.equal(p.readJson(Buffer.from(body.slice(0, body.length - 3)), SLUG), null, `${name}: cut inside`);
    t.equal(p.readJson(Buffer.from(`${body}{}`), SLUG), null, `${name}: bytes after it`);
  }
});

t.test("Messages: an error object in a 2xx body stands for its type's status", async (t) => {
  const status = (v: unknown) => messagesErrorStatus(Buffer.from(JSON.stringify(v)));
  const table: [string, number][] = [
    ['invalid_request_error', 400],
    ['authentication_error', 401],
    ['permission_error', 403],
    ['not_found_error', 404],
    ['request_too_large', 413],
    ['rate_limit_error', 429],
    ['api_error', 500],
    ['overloaded_error', 529],
    ['toString', 502],
    ['a_new_type', 502],
  ];
  for (const [type, want] of table) {
    t.equal(status({ type: 'error', error: { type, message: 'x' } }), want, type);
    t.equal(status({ error: { type, message: 'x' } }), want, `${type}, no top-level type`);
  }
  t.equal(status({ type: 'error' }), 502, 'no error object');
  t.equal(status({ type: 'error', error: 'busy' }), 502, 'an error that is no object');
  t.equal(status({ id: 'm', type: 'message', content: [{ type: 'text', text: '"type":"error"' }] }), null, 'an answer');
  t.equal(status({ id: 'm', type: 'message', error: null }), null, 'a null error member');
  t.equal(messagesErrorStatus(Buffer.from('{"type":"error"')), null, 'not JSON: unusable, not an error');
  t.equal(messages.inbandErrorStatus, messagesErrorStatus);
  t.equal(chatCompletions.inbandErrorStatus, undefined, 'other protocols: an unusable answer');
});
