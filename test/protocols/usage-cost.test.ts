// What the gateway adds to an answer's usage: `"cost":<exact digits>` from the settled nano-USD
// integer, appended to the usage object a JSON parser reads (a body's, an event's, or inside the
// Responses `response` of an event), every other byte left as it was; nothing when there is no
// usage object to add it to.
import t from 'tap';
import { addToUsage, costMembers } from '../../src/protocols/usage-cost.ts';

const COST = costMembers(1_234_567n);
const add = (text: string, form: 'json' | 'event', container?: string) =>
  addToUsage(Buffer.from(text), COST, container === undefined ? { form } : { form, container }).toString('utf8');

t.test('the cost member is the exact decimal of the nano-USD integer, a JSON number', async (t) => {
  t.equal(costMembers(0n).toString(), '"cost":0');
  t.equal(costMembers(1n).toString(), '"cost":0.000000001');
  t.equal(costMembers(11_000n).toString(), '"cost":0.000011');
  t.equal(costMembers(2_000_000_000n).toString(), '"cost":2');
  t.equal(
    costMembers(9_223_372_036_854_775_807n).toString(),
    '"cost":9223372036.854775807',
    'the largest wallet amount, digit for digit',
  );
  t.equal(JSON.parse(`{${costMembers(123_456_789_012n).toString()}}`).cost, 123.456789012);
});

t.test('appended to the usage object, whitespace and other members untouched', async (t) => {
  t.equal(
    add('{"id":"x","usage":{"prompt_tokens":1,"completion_tokens":2},"z":[1]}', 'json'),
    '{"id":"x","usage":{"prompt_tokens":1,"completion_tokens":2,"cost":0.001234567},"z":[1]}',
  );
  t.equal(add('{ "usage" : { "a" : 1 }\n}', 'json'), '{ "usage" : { "a" : 1 ,"cost":0.001234567}\n}');
  t.equal(add('{"usage":{}}', 'json'), '{"usage":{"cost":0.001234567}}', 'an empty object takes no comma');
  t.equal(add('{"usage":{ }}', 'json'), '{"usage":{ "cost":0.001234567}}');
  t.equal(
    add('{"usage":{"a":1},"usage":{"b":2}}', 'json'),
    '{"usage":{"a":1},"usage":{"b":2,"cost":0.001234567}}',
    'sent twice: the last, the one a parser reads',
  );
  t.equal(
    add('{"x":{"usage":{"a":1}},"usage":{"b":"}"}}', 'json'),
    '{"x":{"usage":{"a":1}},"usage":{"b":"}","cost":0.001234567}}',
    'only the top-level one; braces in strings are text',
  );
});

t.test('in an event: its data, or the object of a container member', async (t) => {
  t.equal(
    add('data: {"choices":[],"usage":{"a":1}}\n\n', 'event'),
    'data: {"choices":[],"usage":{"a":1,"cost":0.001234567}}\n\n',
  );
  t.equal(
    add('event: message_delta\ndata: {"type":"message_delta","usage":{"output_tokens":4}}\n\n', 'event'),
    'event: message_delta\ndata: {"type":"message_delta","usage":{"output_tokens":4,"cost":0.001234567}}\n\n',
  );
  const completed =
    'event: response.completed\ndata: {"type":"response.completed","response":{"output":[{"usage":{"x":1}}],"usage":{"input_tokens":3}}}\n\n';
  t.equal(
    add(completed, 'event', 'response'),
    completed.replace('"input_tokens":3}', '"input_tokens":3,"cost":0.001234567}'),
  );
  const two = 'data: {"usage":{"n":1}}\n\ndata: [DONE]\n\n';
  t.equal(
    add(two, 'event'),
    'data: {"usage":{"n":1,"cost":0.001234567}}\n\ndata: [DONE]\n\n',
    'an estimated frame followed by [DONE] in one piece',
  );
});

t.test('nothing to add it to: the bytes come back as they were', async (t) => {
  for (const [text, form, container] of [
    ['{"id":"x"}', 'json'],
    ['{"usage":null}', 'json'],
    ['{"usage":[1]}', 'json'],
    ['{"usage":{"a":1}', 'json'],
    ['not json', 'json'],
    ['data: [DONE]\n\n', 'event'],
    [': comment\n\n', 'event'],
    ['data: {"response":null}\n\n', 'event', 'response'],
    ['data: {"usage":{"a":1}}\n\n', 'event', 'response'],
  ] as const) {
    t.equal(add(text, form, container), text, text);
  }
});
