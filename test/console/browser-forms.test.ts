// The console's forms in headless Chromium say why the server refuses what was typed, and create or
// change nothing the operator did not ask for: a key's requests-per-minute that is not a number is
// refused with the server's reason (before, it went as JSON null, "no per-key limit", and the key was
// created without the limit typed), and the key created before is not left beside that error; a
// failed first fetch (the workspaces, models and providers every page needs) is said, not left under
// "Loading…", and can be tried again; an error answer that is not JSON is told by its HTTP status;
// Credit or Create key clicked again while the first post is out sends nothing more (no second
// credit, no second key); a key's expiry saved with its day unchanged keeps its time of day; an
// audit page that failed to load leaves Newer, not only a reload; a credit whose answer was lost and
// that is sent again is credited once (the page sends one idempotency key per credit meant).
import t from 'tap';
import { revokeEntries, startConsoleStack } from '../helpers/console.ts';
import { holdOne, launchBrowser, signIn, until } from '../helpers/browser.ts';

t.test('a key with a requests-per-minute that is not a number is refused, with the reason', async (t) => {
  const browser = await launchBrowser(t);
  if (!browser) return;
  const s = await startConsoleStack(t);
  const page = await browser.newPage();
  t.equal(await signIn(page, s.adminUrl), 200);
  await page.click('[data-testid=nav-wallets]');
  await page.waitForSelector('[data-testid=key-form]');
  for (const typed of ['60/min', 'Infinity']) {
    await page.fill('[data-testid=key-form] input[name=name]', `limited-${typed}`);
    await page.fill('[data-testid=key-form] input[name=rpm]', typed);
    const answer = page.waitForResponse((r) => r.request().method() === 'POST' && r.url().endsWith('/admin/keys'));
    await page.click('[data-testid=key-form] button[type=submit]');
    t.equal((await answer).status(), 400, `${typed}: refused`);
    await page.waitForSelector('[data-testid=keys] .error');
    t.match(await page.textContent('[data-testid=keys] .error'), /rpm must be a positive whole number/, typed);
    t.same(
      s.store.apiKeys.list().map((k) => k.name),
      [],
      `no key created without the limit typed (${typed})`,
    );
    await page.fill('[data-testid=key-form] input[name=rpm]', '');
  }
  await page.fill('[data-testid=key-form] input[name=name]', 'limited');
  await page.fill('[data-testid=key-form] input[name=rpm]', ' 60 ');
  await page.click('[data-testid=key-form] button[type=submit]');
  await page.waitForSelector('[data-testid=created-key]');
  t.same(
    s.store.apiKeys.list().map((k) => [k.name, k.rpm]),
    [['limited', 60]],
    'a number is taken',
  );
  t.equal(await page.locator('[data-testid=keys] .error').count(), 0, 'and the error is gone');
  // The next create refused: the key created before is not left beside its error as if just made.
  await page.fill('[data-testid=key-form] input[name=rpm]', 'fast');
  const refused = page.waitForResponse((r) => r.request().method() === 'POST' && r.url().endsWith('/admin/keys'));
  await page.click('[data-testid=key-form] button[type=submit]');
  t.equal((await refused).status(), 400);
  await page.waitForSelector('[data-testid=keys] .error');
  t.equal(await page.locator('[data-testid=created-key]').count(), 0, 'no "New key … copy it now" under the error');
});

t.test('a failed first fetch of the console says so, with no "Loading…" left, and can be tried again', async (t) => {
  const browser = await launchBrowser(t);
  if (!browser) return;
  const s = await startConsoleStack(t);
  const page = await browser.newPage();
  let failures = 1;
  await page.route(
    (url) => url.pathname === '/admin/meta',
    async (route) => {
      if (failures-- > 0)
        return route.fulfill({
          status: 503,
          contentType: 'application/json',
          body: JSON.stringify({ error: { code: 'unavailable', message: 'the store is not answering' } }),
        });
      return route.continue();
    },
  );
  t.equal(await signIn(page, s.adminUrl), 200);
  await until(
    async () => ((await page.textContent('main')) ?? '').includes('the store is not answering'),
    'the reason',
  );
  t.match(await page.textContent('main'), /the store is not answering/, 'the reason');
  t.notMatch(await page.textContent('main'), /Loading/, 'not waiting on a fetch that is over');
  await page.click('[data-testid=meta-retry]');
  await page.waitForSelector('[data-testid=page-requests]');
  t.equal(await page.locator('[data-testid=meta-error]').count(), 0, 'the error is gone once it answered');
});

t.test('an error answer that is not JSON (a proxy in front) is told by its status', async (t) => {
  const browser = await launchBrowser(t);
  if (!browser) return;
  const s = await startConsoleStack(t);
  const page = await browser.newPage();
  await page.route(
    (url) => url.pathname === '/admin/spend',
    (route) => route.fulfill({ status: 502, contentType: 'text/html', body: '<html><body>Bad Gateway</body></html>' }),
  );
  t.equal(await signIn(page, s.adminUrl), 200);
  await page.click('[data-testid=nav-spend]');
  await page.waitForSelector('[data-testid=page-spend] > .error');
  t.equal(await page.textContent('[data-testid=page-spend] > .error'), 'HTTP 502');
});

t.test('Credit or Create key clicked again while the first is out sends nothing more', async (t) => {
  const browser = await launchBrowser(t);
  if (!browser) return;
  const s = await startConsoleStack(t);
  s.key('open', { name: 'backend' });
  s.credit('open', '100');
  const page = await browser.newPage();
  t.equal(await signIn(page, s.adminUrl), 200);
  await page.click('[data-testid=nav-wallets]');
  await page.click('[data-testid=wallets-table] tr[data-workspace=open]');
  await page.fill('[data-testid=credit-form] input[name=usd]', '5');
  await page.fill('[data-testid=credit-form] input[name=note]', 'invoice 9');
  const credit = await holdOne(page, (u) => u.pathname === '/admin/wallets/open/credit', 'POST');
  await page.click('[data-testid=credit-form] button');
  await credit.held;
  await page.click('[data-testid=credit-form] button', { force: true, timeout: 2000 }).catch(() => undefined);
  await page.press('[data-testid=credit-form] input[name=usd]', 'Enter');
  credit.release();
  await page.waitForSelector('[data-testid=credit-message]');
  const open = async () =>
    (await s.call('/admin/wallets')).body.wallets.find((w: { workspace: string }) => w.workspace === 'open');
  t.equal((await open()).balance_usd, '105', 'credited once');
  t.equal(await page.textContent('[data-testid=credit-message]'), 'Credited $5; balance $105.');

  await page.fill('[data-testid=key-form] input[name=name]', 'once');
  const create = await holdOne(page, (u) => u.pathname === '/admin/keys', 'POST');
  await page.click('[data-testid=key-form] button[type=submit]');
  await create.held;
  await page.click('[data-testid=key-form] button[type=submit]', { force: true, timeout: 2000 }).catch(() => undefined);
  await page.press('[data-testid=key-form] input[name=name]', 'Enter');
  create.release();
  await page.waitForSelector('[data-testid=created-key]');
  await new Promise((r) => setTimeout(r, 300));
  t.same(
    s.store.apiKeys
      .list()
      .map((k) => k.name)
      .filter((n) => n === 'once'),
    ['once'],
    'one key created',
  );
});

t.test(
  'a credit whose answer was lost, sent again after another wallet was looked at, is credited once; a new credit after it is not',
  async (t) => {
    const browser = await launchBrowser(t);
    if (!browser) return;
    const s = await startConsoleStack(t);
    s.credit('open', '100');
    const page = await browser.newPage();
    t.equal(await signIn(page, s.adminUrl), 200);
    await page.click('[data-testid=nav-wallets]');
    await page.click('[data-testid=wallets-table] tr[data-workspace=open]');
    await page.fill('[data-testid=credit-form] input[name=usd]', '5');
    await page.fill('[data-testid=credit-form] input[name=note]', 'invoice 10');
    // The first post reaches the gateway and is credited, but its answer never reaches the page.
    const keys: string[] = [];
    let lost = false;
    await page.route(
      (url) => url.pathname === '/admin/wallets/open/credit',
      async (route) => {
        keys.push(route.request().headers()['idempotency-key'] ?? '');
        if (lost) return route.continue();
        lost = true;
        await route.fetch();
        await route.abort('connectionreset');
      },
    );
    const balance = async () =>
      (await s.call('/admin/wallets')).body.wallets.find((w: { workspace: string }) => w.workspace === 'open')
        .balance_usd;
    await page.click('[data-testid=credit-form] button');
    await page.waitForSelector('[data-testid=credit-message].error');
    t.equal(await balance(), '105', 'the lost one was credited');
    // The operator looks at another wallet, comes back and types the same credit again (the note
    // with a trailing space, which the server trims).
    await page.click('[data-testid=wallets-table] tr[data-workspace=cheap]');
    await page.locator('[data-testid=wallet-detail] h2', { hasText: 'cheap' }).waitFor();
    await page.click('[data-testid=wallets-table] tr[data-workspace=open]');
    await page.locator('[data-testid=wallet-detail] h2', { hasText: 'open' }).waitFor();
    await page.fill('[data-testid=credit-form] input[name=usd]', '5');
    await page.fill('[data-testid=credit-form] input[name=note]', 'invoice 10 ');
    await page.click('[data-testid=credit-form] button');
    await page.waitForSelector('[data-testid=credit-message].ok');
    t.match(
      await page.textContent('[data-testid=credit-message]'),
      /^Already credited \$5 .*nothing added; balance \$105\.$/,
    );
    t.equal(await balance(), '105', 'sent again: still credited once');
    t.equal(keys.length, 2);
    t.match(keys[0], /^[0-9a-f]{32}$/, 'the page sends an idempotency key');
    t.equal(keys[1], keys[0], 'the same key for the same credit sent again');

    // The same amount and note typed again after the success is a new credit, with a new key.
    await page.fill('[data-testid=credit-form] input[name=usd]', '5');
    await page.fill('[data-testid=credit-form] input[name=note]', 'invoice 10');
    await page.click('[data-testid=credit-form] button');
    await page.locator('[data-testid=credit-message]', { hasText: /^Credited \$5; balance \$110\.$/ }).waitFor();
    t.equal(await balance(), '110', 'credited');
    t.not(keys[2], keys[0], 'a new key');
  },
);

t.test("a key's expiry saved with its day unchanged keeps its time", async (t) => {
  const browser = await launchBrowser(t);
  if (!browser) return;
  const s = await startConsoleStack(t);
  const at = Date.UTC(2099, 0, 1, 15, 30);
  const key = s.store.apiKeys.create({ workspace: 'open', name: 'afternoon', expiresAt: at });
  const page = await browser.newPage();
  t.equal(await signIn(page, s.adminUrl), 200);
  await page.click('[data-testid=nav-wallets]');
  await page.click(`tr[data-key="${key.id}"] [data-testid=expiry-edit]`);
  const form = `tr[data-key="${key.id}"] [data-testid=expiry-form]`;
  t.equal(await page.inputValue(`${form} input[type=date]`), '2099-01-01', 'the day shown');
  const answer = page.waitForResponse((r) => r.url().endsWith(`/admin/keys/${key.id}/expiry`));
  await page.click(`${form} button[type=submit]`);
  t.equal((await answer).status(), 200);
  t.equal(s.store.apiKeys.get(key.id)?.expiresAt, at, 'still 15:30 UTC, not moved to 00:00');
  await page.click(`tr[data-key="${key.id}"] [data-testid=expiry-edit]`);
  await page.fill(`${form} input[type=date]`, '2099-01-02');
  const changed = page.waitForResponse((r) => r.url().endsWith(`/admin/keys/${key.id}/expiry`));
  await page.click(`${form} button[type=submit]`);
  await changed;
  t.equal(s.store.apiKeys.get(key.id)?.expiresAt, Date.UTC(2099, 0, 2), 'another day: its 00:00 UTC');
});

t.test('an audit page that failed to load leaves Newer, back to the entries', async (t) => {
  const browser = await launchBrowser(t);
  if (!browser) return;
  const s = await startConsoleStack(t);
  await revokeEntries(s, 60); // more than one page of 50
  const page = await browser.newPage();
  await page.route(
    (url) => url.pathname === '/admin/audit' && url.searchParams.has('before'),
    (route) =>
      route.fulfill({
        status: 500,
        contentType: 'application/json',
        body: JSON.stringify({ error: { code: 'internal', message: 'the store failed' } }),
      }),
  );
  t.equal(await signIn(page, s.adminUrl), 200);
  await page.click('[data-testid=nav-audit]');
  await page.waitForSelector('[data-testid=audit-older]:not([disabled])');
  await page.click('[data-testid=audit-older]');
  await page.waitForSelector('[data-testid=page-audit] .error');
  t.match(await page.textContent('[data-testid=page-audit] .error'), /the store failed/);
  await page.click('[data-testid=page-audit] .pager button:not([disabled])', { timeout: 5000 });
  await page.waitForSelector('[data-testid=audit-table]');
  t.equal(await page.locator('[data-testid=audit-table] tbody tr').count(), 50, 'the newest entries again');
  t.equal(await page.locator('[data-testid=page-audit] .error').count(), 0, 'and no error');
});
