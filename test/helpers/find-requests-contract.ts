// Finding a request and the console's polish, over the admin JSON endpoints, whichever store is
// behind them: a trace id a customer pastes, a key by name, prefix or id (a whole key refused: it is
// a secret), pages both ways; client-chosen text bounded where the log stores it (a 60,000-character
// model); key names bounded and past expiries refused; the route preview the same on every call, by
// share; Health saying a declared-down deployment serves only as a last resort; the wallet ledger
// paged back and forth. One suite, run once per store (test/console/find-requests.test.ts,
// find-requests-pg.test.ts).
import type { Test } from 'tap';
import { decimalToNano } from '../../src/money.ts';
import { LOG_TEXT_BOUNDS } from '../../src/store/log-bounds.ts';
import { type ConsoleRig, chatOn, makeKey, rigTraffic } from './console-api-contract.ts';
import type { AdminBody } from './console.ts';
import { logRow } from './log-rows.ts';

type Make = (t: Test) => Promise<ConsoleRig>;

const traces = (b: AdminBody): string[] => b.requests.map((r: { trace_id: string }) => r.trace_id);

export function findRequestsContract(t: Test, make: Make): void {
  t.test('a pasted trace id finds its request; a key by name, prefix or id; a whole key is refused', async (t) => {
    const s = await make(t);
    const k = await rigTraffic(s);
    const one = await s.call(`/admin/requests?trace=${k.traces.small2}`);
    t.equal(one.status, 200);
    t.same(traces(one.body), [k.traces.small2], 'exactly the pasted trace');
    t.same(
      traces((await s.call(`/admin/requests?trace=%20${k.traces.small2}%20`)).body),
      [k.traces.small2],
      'spaces around it are ignored',
    );
    t.same(
      traces((await s.call(`/admin/requests?trace=${encodeURIComponent(`X-Pi-Trace-Id: ${k.traces.small2}`)}`)).body),
      [k.traces.small2],
      'pasted with its header name',
    );
    t.same((await s.call('/admin/requests?trace=no-such-trace')).body.requests, [], 'an unknown trace: nothing');
    t.equal((await s.call(`/admin/requests?trace=${'x'.repeat(300)}`)).status, 400, 'not a trace id');

    const open = [k.traces.missing, k.traces.small2, k.traces.small1];
    const keys = await s.store.apiKeys.list();
    const backend = keys.find((x) => x.name === 'backend');
    t.ok(backend);
    const named = ['backend', 'BACK', 'Backend', backend?.id ?? '', backend?.prefix ?? ''];
    for (const q of [...named, (backend?.prefix ?? '').slice(0, 9), k.openKey.slice(0, 12)]) {
      const r = await s.call(`/admin/requests?key=${encodeURIComponent(q)}`);
      t.equal(r.status, 200, q);
      t.same(traces(r.body), open, `key=${q}: the three requests of the key named backend`);
      t.equal(r.body.requests[0].key_name, 'backend');
    }
    const listed = (await s.call('/admin/requests?key=backend')).body.requests[0];
    t.match(
      listed,
      { key_id: backend?.id, key_name: 'backend', key_prefix: backend?.prefix },
      'each row names its key',
    );
    t.same((await s.call('/admin/requests?key=nobody-has-this-name')).body.requests, [], 'no key matches: no row');
    t.same(
      traces((await s.call('/admin/requests?key=batch')).body),
      [k.traces.cheap],
      'the other key: its request only',
    );
    t.same(traces((await s.call('/admin/requests?key=batch&workspace=open')).body), [], 'with the other filters');
    const whole = await s.call(`/admin/requests?key=${encodeURIComponent(k.openKey)}`);
    t.equal(whole.status, 400);
    t.equal(whole.body.error.code, 'whole_key', 'a whole key is a secret, not a search');
    t.notOk(whole.text.includes(k.openKey), 'and the answer does not repeat it');
  });

  t.test('pages of the request log, older and back newer', async (t) => {
    const s = await make(t);
    const k = await rigTraffic(s);
    const all = [k.traces.cheap, k.traces.missing, k.traces.small2, k.traces.small1];
    const first = (await s.call('/admin/requests?limit=2')).body;
    t.same(traces(first), all.slice(0, 2));
    t.equal(first.prev_after, null, 'the newest page has no newer one');
    const second = (await s.call(`/admin/requests?limit=2&before=${first.next_before}`)).body;
    t.same(traces(second), all.slice(2));
    t.equal(second.next_before, null, 'the oldest page has no older one');
    const back = (await s.call(`/admin/requests?limit=2&after=${second.prev_after}`)).body;
    t.same(traces(back), all.slice(0, 2), 'after the second page: the first again, newest first');
    t.equal(back.prev_after, null, 'and nothing newer');
    t.equal(back.next_before, first.next_before, 'its older cursor is the same');
    const mid = (await s.call(`/admin/requests?limit=1&after=${second.prev_after}`)).body;
    t.same(traces(mid), [all[1]], 'paging forward one row: the nearest newer row');
    t.not(mid.prev_after, null, 'with newer rows above it');
    t.equal((await s.call('/admin/requests?before=5&after=2')).status, 400, 'both cursors at once: 400');
  });

  t.test(
    'client-chosen text is bounded where the log stores it; the whole stored value is in the detail',
    async (t) => {
      const s = await make(t);
      const key = await makeKey(s, 'open', { name: 'backend' });
      await s.store.wallets.credit('open', decimalToNano('10'), 'test credit');
      const huge = `acme/${'m'.repeat(60_000)}`;
      const r = await chatOn(s, key, { model: huge }, { 'X-Pi-Session-Id': 's'.repeat(200) });
      t.equal(r.status, 404, 'no such model');
      const row = (await s.call(`/admin/requests/${r.trace}`)).body;
      t.equal(
        Array.from(row.model_requested as string).length,
        LOG_TEXT_BOUNDS.model_requested,
        'the model: 256 characters',
      );
      t.equal(row.model_requested, `${huge.slice(0, 255)}…`, 'its first 255 and an ellipsis');
      t.equal(row.model_requested, `acme/${'m'.repeat(250)}…`, '255 characters and an ellipsis');
      t.equal(row.session_id, 's'.repeat(200), 'text within its bound is kept whole');
      const listed = (await s.call(`/admin/requests?trace=${r.trace}`)).text;
      t.ok(listed.length < 5000, `the list answer stays small (${listed.length} bytes)`);
    },
  );

  t.test('a model holding U+0000 is logged as U+FFFD, found by it, and holds back no other row', async (t) => {
    const s = await make(t);
    const key = await makeKey(s, 'open', { name: 'backend' });
    await s.store.wallets.credit('open', decimalToNano('10'), 'test credit');
    const r = await chatOn(s, key, { model: 'acme/a\u0000b' });
    t.equal(r.status, 404, 'no such model');
    const after = await chatOn(s, key, { model: 'acme/after' });
    t.equal(after.status, 404);
    const row = await s.call(`/admin/requests/${r.trace}`);
    t.equal(row.status, 200);
    t.equal(row.body.model_requested, 'acme/a\uFFFDb', 'stored with U+FFFD');
    for (const q of ['acme/a\u0000b', 'acme/a\uFFFDb']) {
      const found = await s.call(`/admin/requests?model=${encodeURIComponent(q)}`);
      t.equal(found.status, 200);
      t.same(traces(found.body), [r.trace], `model=${JSON.stringify(q)} finds it`);
    }
    t.same(traces((await s.call(`/admin/requests?trace=${after.trace}`)).body), [after.trace], 'the next row is there');
  });

  t.test('U+0000 in a filter or a credit note: answered, never a 500, and the refused credit audited', async (t) => {
    const s = await make(t);
    const z = encodeURIComponent('a\u0000');
    for (const path of [
      `/admin/requests?workspace=${z}`,
      `/admin/requests?key=${z}`,
      `/admin/requests?model=${z}`,
      `/admin/requests?provider=${z}`,
      `/admin/spend?workspace=${z}`,
      `/admin/spend?group=model&model=${z}`,
      `/admin/spend/keys?workspace=${z}`,
      `/admin/spend/series?workspace=${z}`,
      `/admin/spend.csv?workspace=${z}`,
      `/admin/keys?workspace=${z}`,
      `/admin/audit?actor=${z}`,
      `/admin/wallets/${z}`,
    ]) {
      const r = await s.call(path);
      t.ok(r.status === 200 || r.status === 404, `${path}: ${r.status}`);
    }
    // A NUL no store keeps as sent (the embedded store keeps it, PostgreSQL would not): refused.
    const credit = await s.call('/admin/wallets/open/credit', { body: { usd: '1', note: 'top-up \u0000 x' } });
    t.equal(credit.status, 400, credit.text);
    const audit = (await s.call('/admin/audit')).body as { entries: { action: string; outcome: string }[] };
    t.ok(
      audit.entries.some((e) => e.action === 'wallet.credit' && e.outcome === 'refused: invalid_request'),
      'the refused credit is in the audit log',
    );
  });

  t.test("a provider's largest token counts, logged over and over, never make a spend view fail", async (t) => {
    const s = await make(t);
    const key = await makeKey(s, 'open', { name: 'backend' });
    await s.store.wallets.credit('open', decimalToNano('10'), 'test credit');
    // The largest count the usage reader accepts (a safe integer); a provider may report it.
    const most = Number.MAX_SAFE_INTEGER;
    const usage = { prompt: most, completion: most };
    const r = await chatOn(s, key, { model: 'acme/chat-small', provider: { only: ['alpha'] }, sim: { usage } });
    t.equal(r.status, 200);
    const row = (await s.call(`/admin/requests/${r.trace}`)).body;
    t.match(row, { prompt_tokens: most, completion_tokens: most }, 'logged as the provider reported them');
    // 1100 such answers: their sums pass what a 64-bit integer holds (2^63 / (2^53 − 1) ≈ 1024 rows).
    const ts = (await s.store.requestLog.query({ limit: 1 }))[0]?.ts ?? 0;
    const rows = Array.from({ length: 1100 }, (_, i) =>
      logRow(`absurd-${i}`, {
        ts,
        workspace: 'open',
        model_served: 'acme/chat-small',
        prompt_tokens: most,
        completion_tokens: most,
        cost_nano: 1n,
      }),
    );
    await s.appendLog(rows);
    for (const path of [
      '/admin/spend',
      '/admin/spend?group=model',
      '/admin/spend.csv',
      '/admin/spend/series',
      '/admin/spend/series?interval=day&by=workspace',
    ]) {
      const res = await s.call(path);
      t.equal(res.status, 200, `${path}: ${res.text.slice(0, 200)}`);
    }
    const total = (await s.call('/admin/spend')).body.total;
    t.equal(total.requests, 1101, 'every billed row counted');
    t.ok(total.prompt_tokens > 2 ** 63, `the token sum is carried past 2^63: ${total.prompt_tokens}`);
  });

  t.test('key names are bounded and expiries in the past refused, on the admin API', async (t) => {
    const s = await make(t);
    const long = await s.call('/admin/keys', { body: { workspace: 'open', name: 'n'.repeat(129) } });
    t.equal(long.status, 400);
    t.equal(long.body.error.code, 'invalid_name');
    t.match(long.body.error.message, /at most 128 characters, got 129/);
    t.equal(
      (await s.call('/admin/keys', { body: { workspace: 'open', name: 'a\nb' } })).body.error.code,
      'invalid_name',
    );
    const ok = await s.call('/admin/keys', { body: { workspace: 'open', name: 'é'.repeat(128) } });
    t.equal(ok.status, 201, '128 characters are fine');
    t.equal((await s.store.apiKeys.list()).length, 1, 'nothing minted by the refusals');
    await t.rejects(
      s.store.apiKeys.create({ workspace: 'open', name: 'n'.repeat(129) }),
      RangeError,
      'nor by the store',
    );

    // The rig's clock: 2026-01-15T12:00:00Z.
    const pasts = ['2026-01-15T11:59:59Z', '2026-01-15T12:00:00Z', '2026-01-15T11:00:00Z', '2026-01-15', '2001-01-01'];
    for (const past of pasts) {
      const created = await s.call('/admin/keys', { body: { workspace: 'open', expires_at: past } });
      t.equal(created.status, 400, `create, expiry ${past}`);
      t.equal(created.body.error.code, 'expiry_in_past');
      t.match(created.body.error.message, /is not in the future.*revoke it/);
      const set = await s.call(`/admin/keys/${ok.body.id}/expiry`, { body: { expires_at: past } });
      t.equal(set.status, 400, `set, expiry ${past}`);
      t.equal(set.body.error.code, 'expiry_in_past');
    }
    t.equal((await s.store.apiKeys.get(ok.body.id))?.expiresAt, null, 'the key kept no expiry');
    const future = await s.call(`/admin/keys/${ok.body.id}/expiry`, { body: { expires_at: '2026-01-16' } });
    t.match(future.body, { state: 'active', expires_at: '2026-01-16T00:00:00.000Z' }, 'tomorrow is fine');
    t.match((await s.call(`/admin/keys/${ok.body.id}/expiry`, { body: { expires_at: '2026-02-01' } })).body, {
      state: 'active',
      expires_at: '2026-02-01T00:00:00.000Z',
    });
    t.equal(
      (await s.call('/admin/keys', { body: { workspace: 'open', expires_at: '2026-01-15T12:00:01Z' } })).status,
      201,
      'a second ahead is the future',
    );
  });

  t.test('the route preview lists a weighted tier by share, the same on every call', async (t) => {
    const s = await make(t);
    const orders = new Set<string>();
    let first: AdminBody = null;
    for (let i = 0; i < 20; i++) {
      const p = (await s.call('/admin/route-preview', { body: { workspace: 'open', model: 'acme/chat-small' } })).body;
      first ??= p;
      orders.add(p.models[0].deployments.map((d: { deployment: string }) => d.deployment).join(' '));
    }
    t.equal(orders.size, 1, 'twenty previews, one order');
    t.equal(first.ordering, 'weighted_random', 'the gateway itself still draws');
    const shown = first.models[0].deployments.map(
      (d: { deployment: string; weight: number; share_of_tier: number }) => [d.deployment, d.weight, d.share_of_tier],
    );
    const weights = shown.map((x: [string, number, number]) => x[1]);
    t.same(
      weights,
      [...weights].sort((a: number, b: number) => b - a),
      'largest share first',
    );
    const total = weights.reduce((a: number, b: number) => a + b, 0);
    for (const [id, w, share] of shown) t.equal(share, w / total, `${id}: its share is shown`);
  });

  t.test('Health: declared down serves only as a last resort; unservable says why', async (t) => {
    const s = await make(t);
    const h = (await s.call('/admin/health')).body;
    const of = (id: string) => h.deployments.find((d: { id: string }) => d.id === id);
    t.match(of('gamma/chat-big'), {
      declared_status: 'down',
      serves: 'last_resort',
      serves_why: 'declared down in the config',
    });
    t.match(of('gcp/chat-small'), { serves: 'no', serves_why: 'deployment inactive', callable: false });
    t.match(of('alpha/chat-small'), { serves: 'yes', serves_why: null });
  });

  t.test('the wallet ledger pages older and back', async (t) => {
    const s = await make(t);
    for (let i = 1; i <= 5; i++) await s.store.wallets.credit('open', decimalToNano(String(i)), `credit ${i}`);
    const first = (await s.call('/admin/wallets/open?limit=2')).body;
    t.same(
      first.ledger.map((l: { amount_usd: string }) => l.amount_usd),
      ['5', '4'],
    );
    const second = (await s.call(`/admin/wallets/open?limit=2&before=${first.next_before}`)).body;
    t.same(
      second.ledger.map((l: { amount_usd: string }) => l.amount_usd),
      ['3', '2'],
    );
    const last = (await s.call(`/admin/wallets/open?limit=2&before=${second.next_before}`)).body;
    t.same(
      last.ledger.map((l: { amount_usd: string }) => l.amount_usd),
      ['1'],
    );
    t.equal(last.next_before, null, 'no older page');
    t.equal((await s.call('/admin/wallets/open?limit=1000')).status, 400, 'at most 999 a page');

    await rigTraffic(s);
    const ids = (b: AdminBody): number[] => b.ledger.map((l: { id: number }) => l.id);
    const all = ids((await s.call('/admin/wallets/open?limit=100')).body);
    t.ok(all.length >= 5, `${all.length} ledger rows`);
    const seen: number[] = [];
    let before: number | null = null;
    for (let n = 0; n < all.length; n++) {
      const page: AdminBody = (await s.call(`/admin/wallets/open?limit=2${before === null ? '' : `&before=${before}`}`))
        .body;
      seen.push(...ids(page));
      before = page.next_before;
      if (before === null) break;
    }
    t.same(seen, all, 'the pages, older and older, are the whole ledger once');
  });
}
