// What the tests of one real fleet node (`serve --db postgres://… --redis …` as a child process)
// start from: a private PostgreSQL, Redis and simulator, a migrated database with the gateway
// fixture's credentials sealed, an API key of workspace `open` (rpm 1000) and a credited wallet —
// all stopped when the test ends.
import { randomBytes } from 'node:crypto';
import type { Test } from 'tap';
import { openPgStore } from '../../src/store/postgres/store.ts';
import { type Simulator, startSimulator } from '../../src/simulator/server.ts';
import { USER } from './admission.ts';
import { startPrivatePg } from './pg.ts';
import { type PrivateRedis, startPrivateRedis } from './redis.ts';
import { fixtureConfig } from './stack.ts';

export interface FleetNodeRig {
  url: string;
  masterKey: string;
  key: string;
  redis: PrivateRedis;
  sim: Simulator;
}

export async function fleetNodeRig(t: Test, keyName: string): Promise<FleetNodeRig> {
  const [pg, redis, sim] = await Promise.all([
    startPrivatePg(),
    startPrivateRedis(),
    startSimulator({ record: false }),
  ]);
  t.teardown(async () => {
    await sim.close();
    await redis.destroy();
    await pg.destroy();
  });
  const url = await pg.createDatabase();
  const masterKey = randomBytes(32).toString('base64');
  const m = await openPgStore(url, { checkSchema: false, masterKey });
  await m.migrate();
  for (const r of fixtureConfig('gateway').resources)
    if (!(await m.secrets.list()).some((s) => s.name === r.credential))
      await m.secrets.set(r.credential, `upstream-${r.credential}`);
  const key = (await m.apiKeys.create({ workspace: 'open', name: keyName, rpm: 1000 })).key;
  await m.wallets.credit('open', 10_000_000_000n, 'test');
  await m.close();
  return { url, masterKey, key, redis, sim };
}

/** One chat completion through `nodeUrl` with `key`: its status, the body read. */
export async function chatStatus(nodeUrl: string, key: string): Promise<number> {
  const res = await fetch(`${nodeUrl}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'acme/chat-small', messages: USER }),
  });
  await res.text();
  return res.status;
}
