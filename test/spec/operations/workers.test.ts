// `pi-gateway serve --workers 2` as a real process on the embedded store: the fleet's exactness drills
// across serving threads (zero overdraft on a wallet worth a few requests, `--rpm 50`
// exact, a session pin honoured whichever thread answers, one breaker view, SIGKILL mid-burst with
// no lost or doubled settlement), drain and reload across every thread, the admin listener
// reporting every worker, and the port rule (a busy port fails). Which thread answers is the
// kernel's choice (SO_REUSEPORT spreads connections): requests go on fresh connections, and the
// per-worker request counts in /metrics show both threads answered.
import t, { type Test } from 'tap';
import { createServer } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { decimalToNano } from '../../../src/money.ts';
import { startSimulator, type Simulator } from '../../../src/simulator/server.ts';
import { openDatabase } from '../../../src/store/sqlite/db.ts';
import { openStore } from '../../../src/store/sqlite/store.ts';
import { cli, patchedFixture, USER } from '../../helpers/admission.ts';
import { prepareDb, type PreparedDb, type ServeProcess, startServe } from '../../helpers/serve-process.ts';
import { FIXTURES } from '../../helpers/stack.ts';

const CONFIG = 'test/fixtures/config/gateway';
let sim: Simulator;

// Several multi-process drills in one file: two minutes is tight on a shared machine.
t.setTimeout(300_000);

t.before(async () => {
  sim = await startSimulator({});
});
t.teardown(() => sim?.close());

interface Answer {
  status: number;
  retryAfter: string | null;
  provider: string | null;
  trace: string | null;
  code: string | null;
  body: string;
}

async function chat(
  s: ServeProcess,
  key: string,
  extra: Record<string, unknown> = {},
  headers: Record<string, string> = {},
): Promise<Answer> {
  try {
    const res = await fetch(`${s.url}/v1/chat/completions`, {
      method: 'POST',
      // A fresh connection each time: the kernel picks the thread per connection.
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', connection: 'close', ...headers },
      body: JSON.stringify({ model: 'acme/chat-small', messages: USER, max_tokens: 20, ...extra }),
    });
    const body = await res.text();
    let code: string | null = null;
    if (res.status !== 200)
      code = ((JSON.parse(body) as { error?: { code?: string } }).error?.code ?? null) as string | null;
    return {
      status: res.status,
      retryAfter: res.headers.get('retry-after'),
      provider: res.headers.get('x-pi-provider'),
      trace: res.headers.get('x-pi-trace-id'),
      code,
      body,
    };
  } catch (err) {
    return { status: 0, retryAfter: null, provider: null, trace: null, code: null, body: String(err) };
  }
}

async function workers(
  t: Test,
  db: PreparedDb,
  args: string[] = [],
  config = CONFIG,
): Promise<ServeProcess & { admin: string }> {
  const s = await startServe(t, {
    config,
    db,
    upstream: sim.url,
    args: ['--workers', '2', '--admin-port', '0', '--access-log', 'off', ...args],
  });
  const listening = s.events.find((e) => e.event === 'listening');
  return Object.assign(s, { admin: String(listening?.admin) });
}

async function metrics(s: { admin: string }): Promise<string> {
  return (await fetch(`${s.admin}/metrics`)).text();
}

/** Requests each worker answered, from /metrics. */
async function perWorker(s: { admin: string }): Promise<number[]> {
  const text = await metrics(s);
  return [1, 2].map((w) =>
    Number(new RegExp(`^pi_gateway_worker_requests_total\\{worker="${w}"\\} (\\d+)`, 'm').exec(text)?.[1] ?? 'NaN'),
  );
}

/** Waits (at most 3 s) until `n` streams are in progress, summed over the workers by the coordinator's
 *  scrape: a signal sent after a fixed sleep could come before a loaded machine delivered them all. */
async function streamsInFlight(s: { admin: string }, n: number): Promise<void> {
  for (let i = 0; i < 150; i++) {
    const text = await metrics(s);
    const streams = [...text.matchAll(/^pi_gateway_in_flight_streams\{[^}]*\} (\d+)/gm)].reduce(
      (sum, m) => sum + Number(m[1]),
      0,
    );
    if (streams >= n) return;
    await sleep(20);
  }
}

function withStore<T>(db: PreparedDb, fn: (store: ReturnType<typeof openStore>) => T): T {
  const store = openStore(db.file, { masterKey: db.masterKey });
  try {
    return fn(store);
  } finally {
    store.close();
  }
}

t.test('the admin listener reports every worker; both threads answer on the one port', async (t) => {
  const db = prepareDb(t);
  const s = await workers(t, db);
  const ready = (await (await fetch(`${s.admin}/health/ready`)).json()) as {
    status: string;
    workers: { worker: number; state: string; thread_id: number }[];
  };
  t.equal(ready.status, 'ready');
  t.same(
    ready.workers.map((w) => [w.worker, w.state]),
    [
      [1, 'ready'],
      [2, 'ready'],
    ],
  );
  t.not(ready.workers[0]?.thread_id, ready.workers[1]?.thread_id, 'two threads');
  for (let i = 0; i < 40; i++) t.equal((await chat(s, db.key)).status, 200);
  const counts = await perWorker(s);
  t.equal(counts[0]! + counts[1]!, 40, `per-worker counts add up (${counts.join(' + ')})`);
  t.ok(
    counts.every((n) => n > 0),
    'both threads answered',
  );
  const text = await metrics(s);
  t.match(
    text,
    /pi_gateway_requests_total\{endpoint="chat_completions",model="acme\/chat-small",provider="[a-z]+",status="200"\} \d+/,
  );
  const total = [...text.matchAll(/^pi_gateway_requests_total\{[^}]*status="200"\} (\d+)/gm)].reduce(
    (n, m) => n + Number(m[1]),
    0,
  );
  t.equal(total, 40, 'the request counters are summed over the workers');
  t.match(
    text,
    /^pi_gateway_worker_holds_total\{decided="shared_memory"\} 40$/m,
    'every hold taken in shared memory, none by message',
  );
  t.match(text, /^pi_gateway_worker_holds_total\{decided="message"\} 0$/m);
  t.match(text, /^pi_gateway_worker_ready\{worker="2"\} 1/m);
  t.match(text, /^pi_gateway_config_info\{hash="[0-9a-f]{64}"\} 1/m);
  // uWS reads its head-size cap once per process: the serving threads take the gateway's 16 KiB too.
  for (let i = 0; i < 4; i++)
    t.equal((await fetch(`${s.url}/v1/models?q=${'a'.repeat(10_000)}`)).status, 200, 'a 10,000-character query');
});

t.test(
  'bursts of 200 concurrent requests on a wallet worth five: zero overdraft across workers, ledger verify clean',
  async (t) => {
    const db = prepareDb(t);
    // A wallet of one nano-USD: the 402 names what one request holds.
    const key = withStore(db, (store) => {
      store.wallets.credit('cheap', 1n, 'seed');
      return store.apiKeys.create({ workspace: 'cheap', name: 'drill' }).key;
    });
    const s = await workers(t, db);
    const probe = await chat(s, key);
    t.equal(probe.status, 402, probe.body);
    const hold = decimalToNano(/needs up to \$([0-9.]+) held/.exec(probe.body)?.[1] ?? '0');
    t.ok(hold > 0n, `one request holds ${hold} nano-USD`);
    const all: Answer[] = [];
    for (let burst = 0; burst < 5; burst++) {
      // The first burst's wallet is worth five requests (less a nano-USD); later ones get two more.
      withStore(db, (store) => store.wallets.credit('cheap', burst === 0 ? hold * 5n - 2n : hold * 2n, 'drill'));
      // Credited by another connection: the workers notice it on their next request.
      const answers = await Promise.all(Array.from({ length: 200 }, () => chat(s, key)));
      all.push(...answers);
    }
    const ok = all.filter((x) => x.status === 200);
    t.same([...new Set(all.map((x) => x.status))].sort(), [200, 402], 'every answer a 200 or a 402');
    // Answers cost far less than their holds, so more than five fit; what matters is below.
    t.ok(ok.length >= 5, `${ok.length} of ${all.length} answered`);
    withStore(db, (store) => {
      const w = store.wallets.show('cheap', Date.now());
      t.ok(w.balance >= 0n, `no overdraft (balance ${w.balance})`);
      t.equal(w.held, 0n, 'no hold left');
      t.same(store.wallets.verify(), { ok: true, problems: [] });
      for (const x of ok)
        t.equal(store.wallets.ledgerOf(x.trace as string).filter((e) => e.kind === 'settle').length, 1);
    });
    const counts = await perWorker(s);
    t.ok(
      counts.every((n) => n > 0),
      `both threads admitted and refused (${counts.join(' + ')})`,
    );
  },
);

t.test('--rpm 50 across two workers: exactly 50 answered, the rest 429 with Retry-After', async (t) => {
  const db = prepareDb(t);
  const key = withStore(db, (store) => store.apiKeys.create({ workspace: 'open', name: 'rpm', rpm: 50 }).key);
  const s = await workers(t, db);
  // A burst takes well under a second; start it away from a minute boundary.
  const second = new Date().getUTCSeconds();
  if (second > 50) await sleep((61 - second) * 1000);
  const answers = await Promise.all(Array.from({ length: 90 }, () => chat(s, key)));
  t.equal(answers.filter((x) => x.status === 200).length, 50, 'exactly 50 answered');
  const limited = answers.filter((x) => x.status === 429);
  t.equal(limited.length, 40, 'the rest refused');
  t.ok(
    limited.every((x) => x.code === 'rate_limited' && Number(x.retryAfter) >= 1 && Number(x.retryAfter) <= 60),
    'each rate_limited with Retry-After',
  );
  t.ok(
    (await perWorker(s)).every((n) => n > 0),
    'both threads counted against the one window',
  );
});

t.test('a session pin is honoured whichever worker answers', async (t) => {
  const db = prepareDb(t, 'gateway', ['strict']);
  const s = await workers(t, db);
  const key = db.extra.strict as string;
  const only = { provider: { only: ['alpha', 'zeta'] } };
  const unpinned = new Set<string | null>();
  for (let i = 0; i < 30 && unpinned.size < 2; i++) unpinned.add((await chat(s, key, only)).provider);
  t.same([...unpinned].sort(), ['alpha', 'zeta'], 'without a session both deployments answer');
  const before = await perWorker(s);
  const first = await chat(s, key, only, { 'x-pi-session-id': 'workers-session' });
  t.equal(first.status, 200, first.body);
  for (let i = 0; i < 30; i++)
    t.equal((await chat(s, key, only, { 'x-pi-session-id': 'workers-session' })).provider, first.provider);
  const after = await perWorker(s);
  t.ok(
    after.every((n, i) => n > (before[i] as number)),
    `both threads served the pinned session (${before.join('+')} → ${after.join('+')})`,
  );
  // The pin is stored before the answer is whole: a session's next request, sent the moment the
  // first answer ends, finds it on either thread (the pin rides with the settlement's message).
  const strayed: string[] = [];
  for (let i = 0; i < 60; i++) {
    const session = { 'x-pi-session-id': `at-once-${i}` };
    const [a, b] = [await chat(s, key, only, session), await chat(s, key, only, session)];
    if (a.status !== 200 || b.provider !== a.provider) strayed.push(`${i}: ${a.provider} → ${b.provider}`);
  }
  t.same(strayed, [], "every session's second request goes where its first was answered");
});

t.test('one breaker view: failures on either worker trip it for both', async (t) => {
  const db = prepareDb(t);
  const s = await workers(t, db);
  const served = async (n: number) =>
    new Set((await Promise.all(Array.from({ length: n }, () => chat(s, db.key)))).map((x) => x.provider));
  t.ok((await served(40)).has('alpha'), 'alpha serves while its breaker is closed');
  // consecutive_failures: 3 in the fixture; the failures arrive on whichever thread the kernel picks.
  for (let i = 0; i < 3; i++)
    t.not((await chat(s, db.key, { provider: { only: ['alpha'] }, sim: { status: 500 } })).status, 200);
  // An attempt's outcome reaches the coordinator in the background (after the failure's answer went
  // out): its scrape may briefly lag the last one, longer on a machine busy with other test files.
  const open = /^pi_gateway_breaker_state\{deployment="alpha\/chat-small",provider="alpha"\} 2/m;
  let scraped = await metrics(s);
  for (const until = Date.now() + 10_000; !open.test(scraped) && Date.now() < until; ) {
    await sleep(50);
    scraped = await metrics(s);
  }
  t.match(scraped, open, 'the breaker is open');
  const before = await perWorker(s);
  const providers = await served(40);
  t.notOk(providers.has('alpha'), `no worker routes to the open deployment first (${[...providers].join(', ')})`);
  const after = await perWorker(s);
  t.ok(
    after.every((n, i) => n > (before[i] as number)),
    'both threads routed around it',
  );
});

t.test('SIGTERM drains every worker: streams in flight on both threads finish, then exit 0', async (t) => {
  const db = prepareDb(t);
  const s = await workers(t, db);
  const streams = Array.from({ length: 8 }, (_, i) =>
    chat(s, db.key, { stream: true, sim: { chunks: 10, chunkDelayMs: 60 } }, { 'x-n': String(i) }),
  );
  await streamsInFlight(s, 8);
  s.child.kill('SIGTERM');
  await sleep(50);
  const ready = await fetch(`${s.admin}/health/ready`).then(
    (r) => r.status,
    () => 0,
  );
  t.ok(ready === 503 || ready === 0, `readiness is not ready while draining (${ready})`);
  const answers = await Promise.all(streams);
  t.ok(
    answers.every((x) => x.status === 200 && x.body.trimEnd().endsWith('data: [DONE]')),
    'every stream finished',
    { ends: answers.map((x) => `${x.status}: ${x.body.slice(-40)}`) },
  );
  t.same(await s.exited.then((e) => e.code), 0);
  const drained = s.events.find((e) => e.event === 'drained' && e.workers === 2);
  t.equal(
    drained?.['in_flight_at_start'],
    8,
    'the drain counted the streams of both threads (snake_case, like every log field)',
  );
  withStore(db, (store) => {
    t.same(store.wallets.verify(), { ok: true, problems: [] });
    for (const x of answers)
      t.equal(store.wallets.ledgerOf(x.trace as string).filter((e) => e.kind === 'settle').length, 1);
  });
  const log = openDatabase(db.file, { readonly: true });
  try {
    const ended = log
      .prepare('SELECT trace_id, ended FROM request_log WHERE trace_id IN (SELECT value FROM json_each(?))')
      .all(JSON.stringify(answers.map((x) => x.trace))) as { trace_id: string; ended: string }[];
    t.same(
      ended.map((r) => r.ended).sort(),
      answers.map(() => 'completed'),
      "each stream's final log row was written before the exit",
    );
  } finally {
    log.close();
  }
});

t.test('SIGHUP reloads every worker', async (t) => {
  const db = prepareDb(t);
  const dir = patchedFixture(t, 'gateway', {
    'workspaces.yaml': [
      ['workspaces:\n', 'workspaces:\n  - id: newcomer\n    name: Added by a reload\n    rate_limit_rpm: 100000\n'],
    ],
  });
  const s = await workers(t, db, [], `${FIXTURES}/${dir}`);
  const key = withStore(db, (store) => {
    store.wallets.credit('newcomer', decimalToNano('10'), 'test');
    return store.apiKeys.create({ workspace: 'newcomer', name: 'reload' }).key;
  });
  t.equal((await chat(s, key)).status, 200, 'the workspace serves');
  const { writeFileSync, readFileSync } = await import('node:fs');
  const file = `${FIXTURES}/${dir}/workspaces.yaml`;
  writeFileSync(
    file,
    readFileSync(file, 'utf8').replace(
      '  - id: newcomer\n    name: Added by a reload\n    rate_limit_rpm: 100000\n',
      '',
    ),
  );
  s.child.kill('SIGHUP');
  t.ok(await s.waitForEvent('config_reload'), 'reloaded');
  const after = await Promise.all(Array.from({ length: 20 }, () => chat(s, key)));
  t.ok(
    after.every((x) => x.status === 401),
    `no worker serves the removed workspace (${[...new Set(after.map((x) => x.status))].join(',')})`,
  );
  const ready = (await (await fetch(`${s.admin}/health/ready`)).json()) as { last_reload: { ok: boolean } };
  t.equal(ready.last_reload.ok, true);
  t.match(await metrics(s), /^pi_gateway_config_reloads_total\{result="ok"\} 1/m);
});

t.test(
  'SIGKILL mid-burst, three times: no lost or doubled settlement, orphaned holds released at the next start',
  async (t) => {
    const db = prepareDb(t);
    const complete: Answer[] = [];
    const started: ServeProcess[] = [];
    for (let round = 0; round < 3; round++) {
      const s = await workers(t, db);
      started.push(s);
      const burst = Promise.all(
        Array.from({ length: 40 }, (_, i) =>
          chat(s, db.key, i % 2 === 0 ? { stream: true, sim: { chunks: 20, chunkDelayMs: 30 } } : {}),
        ),
      );
      await sleep(300);
      s.child.kill('SIGKILL');
      await s.exited;
      const answers = await burst;
      complete.push(
        ...answers.filter(
          (x) => x.status === 200 && (x.body.startsWith('{') || x.body.trimEnd().endsWith('data: [DONE]')),
        ),
      );
    }
    started.push(await workers(t, db));
    const released = started
      .flatMap((s) => s.events.filter((e) => e.event === 'released_orphaned_holds'))
      .reduce((n, e) => n + Number(e.count), 0);
    t.ok(released > 0, `the holds the killed processes left open were released at the next start (${released})`);
    withStore(db, (store) => {
      t.equal(store.wallets.show('open', Date.now()).held, 0n, 'no hold left');
      t.same(store.wallets.verify(), { ok: true, problems: [] });
      for (const x of complete)
        t.equal(
          store.wallets.ledgerOf(x.trace as string).filter((e) => e.kind === 'settle').length,
          1,
          'settled exactly once',
        );
    });
    t.ok(complete.length > 0, `${complete.length} complete answers checked`);
  },
);

t.test('a busy port fails with --workers, and a second --workers gateway cannot share the port', async (t) => {
  const blocker = createServer();
  await new Promise<void>((resolve) => blocker.listen({ host: '127.0.0.1', port: 0, exclusive: true }, resolve));
  t.teardown(() => blocker.close());
  const port = (blocker.address() as { port: number }).port;
  const busy = await startServe(t, {
    config: CONFIG,
    db: prepareDb(t),
    upstream: sim.url,
    port,
    noWait: true,
    args: ['--workers', '2'],
  });
  t.equal((await busy.exited).code, 1);
  t.match(busy.stderr(), /cannot listen on 127\.0\.0\.1:\d+/);
  const first = await workers(t, prepareDb(t));
  const second = await startServe(t, {
    config: CONFIG,
    db: prepareDb(t),
    upstream: sim.url,
    port: first.port,
    noWait: true,
    args: ['--workers', '2'],
  });
  t.equal((await second.exited).code, 1, 'the second gateway refuses to start');
  t.equal((await chat(first, '')).status, 401, 'the first still answers');
  const bad = await cli(['serve', '--workers', 'many']);
  t.equal(bad.code, 2);
  t.match(
    bad.stderr,
    /--workers must be a whole number from 1 to \d+ \(at most 4 per core; this machine has \d+\), or auto/,
  );
});

t.test('a second SIGTERM during the drain exits at once with 1; nothing stays held', async (t) => {
  const db = prepareDb(t);
  const s = await workers(t, db);
  const slow = Array.from({ length: 4 }, () =>
    chat(s, db.key, { stream: true, sim: { chunks: 50, chunkDelayMs: 100 } }),
  );
  await streamsInFlight(s, 4);
  s.child.kill('SIGTERM');
  await sleep(100);
  s.child.kill('SIGTERM');
  const exit = await s.exited;
  t.same([exit.code, exit.signal], [1, null], 'exit 1, not a crash');
  await Promise.all(slow);
  // The coordinator releases a stopped thread's open holds as it ends (else the next start would).
  await workers(t, db);
  withStore(db, (store) => {
    t.equal(store.wallets.show('open', Date.now()).held, 0n, 'no hold left');
    t.same(store.wallets.verify(), { ok: true, problems: [] });
  });
});

t.test(
  "the console on the coordinator: a credit there admits the next request on any worker; the request log has both threads' rows",
  async (t) => {
    const db = prepareDb(t);
    const key = withStore(db, (store) => {
      store.wallets.credit('cheap', 1n, 'seed');
      return store.apiKeys.create({ workspace: 'cheap', name: 'console' }).key;
    });
    const s = await startServe(t, {
      config: CONFIG,
      db,
      upstream: sim.url,
      env: { PI_ADMIN_TOKEN: 'operator-token-for-tests' },
      args: ['--workers', '2', '--admin-port', '0', '--access-log', 'off'],
    });
    const admin = String(s.events.find((e) => e.event === 'listening')?.admin);
    const auth = { authorization: 'Bearer operator-token-for-tests' };
    t.equal((await chat(s, key)).status, 402, 'a wallet of one nano-USD');
    const credit = await fetch(`${admin}/admin/wallets/cheap/credit`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ usd: '1', note: 'console' }),
    });
    t.equal(credit.status, 200, await credit.text());
    const after = await Promise.all(Array.from({ length: 10 }, () => chat(s, key)));
    t.ok(
      after.every((x) => x.status === 200),
      `every worker admits after the credit (${after.map((x) => x.status).join(',')})`,
    );
    // The final rows come from both threads through the coordinator's writer.
    let rows: { trace_id: string }[] = [];
    for (let i = 0; i < 50 && rows.length < 11; i++) {
      const res = (await (
        await fetch(`${admin}/admin/requests?workspace=cheap&limit=50`, { headers: auth })
      ).json()) as { requests: { trace_id: string }[] };
      rows = res.requests;
      if (rows.length < 11) await sleep(100);
    }
    const traces = new Set(rows.map((r) => r.trace_id));
    t.ok(
      after.every((x) => traces.has(x.trace as string)),
      'every answered request is in the console request log',
    );
  },
);
