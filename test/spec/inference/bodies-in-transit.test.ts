// `limits.max_body_bytes_in_transit` on a real `pi-gateway serve`: request bodies are read before
// the key is checked, so connections without a key that send most of a body and trickle the rest
// could pin memory; past the budget a body still arriving is answered 503 (Retry-After: 1) in the
// endpoint's error shape, and a body that arrives whole afterwards is served as usual.
import t from 'tap';
import { cpSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir, waitFor } from '../../helpers/admission.ts';
import { parseResponses, rawConnect } from '../../helpers/raw-client.ts';
import { prepareDb, startServe } from '../../helpers/serve-process.ts';
import { FIXTURES } from '../../helpers/stack.ts';
import { startSimulator } from '../../../src/simulator/server.ts';

const KIB = 1024;

t.test('past the budget, a body still arriving is 503 whoever sends it; the budget frees as bodies end', async (t) => {
  const config = join(tempDir(t, 'pi-transit-config-'), 'gateway');
  cpSync(join(FIXTURES, 'gateway'), config, { recursive: true });
  const yaml = join(config, 'gateway.yaml');
  writeFileSync(
    yaml,
    readFileSync(yaml, 'utf8').replace(
      'max_body_bytes: 65536',
      `max_body_bytes: ${1024 * KIB}\n  max_body_bytes_in_transit: ${1024 * KIB}`,
    ),
  );
  const sim = await startSimulator({});
  t.teardown(() => sim.close());
  const db = prepareDb(t);
  const p = await startServe(t, { config, db, upstream: sim.url });
  const port = Number(new URL(p.url).port);
  const open = async (path: string, key: string | null, declared: number, sent: number) => {
    const c = await rawConnect(port);
    t.teardown(() => c.destroy());
    const auth = key === null ? '' : `Authorization: Bearer ${key}\r\n`;
    await c.write(
      `POST ${path} HTTP/1.1\r\nHost: x\r\n${auth}Content-Type: application/json\r\nContent-Length: ${declared}\r\n\r\n`,
    );
    await c.write(Buffer.alloc(sent, 0x20));
    return c;
  };
  // Two uploads without a key, each most of a body, then nothing: 900 + 300 KiB of a 1 MiB budget.
  // Whichever passes the budget first is refused; the other keeps its place.
  const chat = await open('/v1/chat/completions', null, 1000 * KIB, 900 * KIB);
  const messages = await open('/v1/messages', null, 600 * KIB, 300 * KIB);
  const is503 = (text: string) => /^HTTP\/1\.1 503 [\s\S]*\r\n\r\n\{.*\}$/s.test(text);
  t.ok(await waitFor(() => is503(chat.text()) || is503(messages.text())), 'one upload is refused');
  const [refused, kept, rest] = is503(chat.text()) ? [chat, messages, 300 * KIB] : [messages, chat, 100 * KIB];
  const r = parseResponses(refused.text())[0];
  t.equal(r?.status, 503);
  t.equal(r?.header('retry-after'), '1');
  t.match(r?.body, /request bodies at once/);
  t.ok(r?.header('x-pi-trace-id'));
  const logged = await p.waitForEvent('body_budget_spent');
  t.match(
    logged,
    { level: 'warn', refused: 1, limit_bytes: 1024 * KIB },
    'the operator is told, once a second at most',
  );
  // The other finishes its body: read whole, its missing key refused as usual.
  await kept.write(Buffer.alloc(rest, 0x20));
  t.match(await kept.until(/\r\n\r\n\{.*\}$/s), /^HTTP\/1\.1 401 /);
  // Nothing in transit now: a whole body with a key goes through.
  const body = JSON.stringify({
    model: 'acme/chat-small',
    messages: [{ role: 'user', content: 'x'.repeat(700 * KIB) }],
  });
  const ok = await fetch(`${p.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${db.key}`, 'content-type': 'application/json' },
    body,
  });
  t.equal(ok.status, 200, await ok.text());
});
