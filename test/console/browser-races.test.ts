// A slow answer to an earlier question never replaces the answer to the operator's latest one, in
// headless Chromium: the browser holds one admin answer back (playwright's request routing) while the
// operator asks something else, then lets it through; the page must go on showing what was asked
// last — the Spend page's workspace, the request open in the drawer, the Requests filter under a
// live-tail fetch started before it, the wallet selected (with no message of another wallet's
// credit under it), the ledger page, the route preview submitted last and the audit page; no
// paging cursor of an old filter's rows is offered under a new filter before its answer came; and
// the Health page asks for no refresh while one is out.
import t, { type Test } from 'tap';
import type { Page } from 'playwright-core';
import { knownTraffic, revokeEntries, startConsoleStack } from '../helpers/console.ts';
import { holdOne, launchBrowser, signIn, until } from '../helpers/browser.ts';
import { logRow } from '../helpers/log-rows.ts';

const admin =
  (path: string, has: Record<string, string | null> = {}) =>
  (url: URL) =>
    url.pathname === path &&
    Object.entries(has).every(([k, v]) => (v === null ? !url.searchParams.has(k) : url.searchParams.get(k) === v));

/**
 * Older clicked, its page held back; Newer clicked, and its answer (the newest page, no `before`)
 * arrives first; then the held older page's answer arrives late. `testid` names the pager's buttons.
 */
async function newerBeforeOlder(page: Page, path: string, testid: string): Promise<void> {
  const slow = await holdOne(page, (u) => u.pathname === path && u.searchParams.has('before'));
  await page.click(`[data-testid=${testid}-older]`);
  await slow.held;
  const newestAnswer = page.waitForResponse((r) => {
    const u = new URL(r.url());
    return u.pathname === path && !u.searchParams.has('before');
  });
  await page.click(`[data-testid=${testid}-newer]`);
  await newestAnswer;
  const delivered = slow.delivered();
  slow.release();
  await delivered;
}

t.test('Spend: the figures of the workspace chosen last, whatever answer comes last', async (t) => {
  const browser = await launchBrowser(t);
  if (!browser) return;
  const s = await startConsoleStack(t);
  await knownTraffic(s);
  const page = await browser.newPage();
  t.equal(await signIn(page, s.adminUrl), 200);
  await page.goto(`${s.adminUrl}/console#spend`);
  await until(async () => (await page.textContent('[data-testid=total-requests]')) === '3', 'all three billed');
  const slow = await holdOne(page, admin('/admin/spend', { workspace: 'cheap' }));
  await page.selectOption('[data-testid=page-spend] select:not([name])', 'cheap');
  await slow.held;
  await page.selectOption('[data-testid=page-spend] select:not([name])', 'open');
  await until(async () => (await page.textContent('[data-testid=total-requests]')) === '2', "open's two billed");
  const delivered = slow.delivered();
  slow.release();
  await delivered;
  t.equal(await page.textContent('[data-testid=total-requests]'), '2', "cheap's late answer is not shown under open");
  t.equal(await page.textContent('[data-testid=total-cost]'), '$0.004');
});

t.test('Requests: the drawer shows the request the URL opens, not an earlier one answered late', async (t) => {
  const browser = await launchBrowser(t);
  if (!browser) return;
  const s = await startConsoleStack(t);
  const k = await knownTraffic(s);
  const page = await browser.newPage();
  t.equal(await signIn(page, s.adminUrl), 200);
  const slow = await holdOne(page, admin(`/admin/requests/${k.traces.small1}`));
  await page.goto(`${s.adminUrl}/console#requests?open=${k.traces.small1}`);
  await slow.held;
  await page.goto(`${s.adminUrl}/console#requests?open=${k.traces.cheap}`);
  await until(
    async () => (await page.textContent('[data-testid=detail-trace]').catch(() => '')) === k.traces.cheap,
    'the second request',
  );
  const delivered = slow.delivered();
  slow.release();
  await delivered;
  t.equal(await page.textContent('[data-testid=detail-trace]'), k.traces.cheap, 'the first one did not replace it');
});

t.test('Requests: a live-tail fetch of the old filter adds no row under the new one', async (t) => {
  const browser = await launchBrowser(t);
  if (!browser) return;
  const s = await startConsoleStack(t);
  await knownTraffic(s);
  const page = await browser.newPage();
  t.equal(await signIn(page, s.adminUrl), 200);
  await page.goto(`${s.adminUrl}/console#requests`);
  await until(async () => (await page.locator('[data-testid=requests-table] tbody tr').count()) === 4, 'four rows');
  s.store.requestLog.append(logRow('elsewhere', { ts: Date.now(), workspace: 'w' }));
  s.store.requestLog.flush();
  // The tail's fetch (it has `since`) of the unfiltered page.
  const tail = await holdOne(
    page,
    (url) => admin('/admin/requests', { workspace: null })(url) && url.searchParams.has('since'),
  );
  await page.check('[data-testid=live]');
  await tail.held;
  await page.selectOption('select[name=workspace]', 'open');
  const traces = () =>
    page.$$eval('[data-testid=requests-table] tbody tr', (rows) => rows.map((r) => r.getAttribute('data-trace')));
  await until(async () => (await traces()).length === 3, "open's three rows");
  const delivered = tail.delivered();
  tail.release();
  await delivered;
  t.notOk((await traces()).includes('elsewhere'), "the old filter's tail row is not shown under workspace open");
  t.equal((await traces()).length, 3);
});

t.test('Wallets: the wallet selected last, without the message or amount of the one before', async (t) => {
  const browser = await launchBrowser(t);
  if (!browser) return;
  const s = await startConsoleStack(t);
  const k = await knownTraffic(s);
  const page = await browser.newPage();
  t.equal(await signIn(page, s.adminUrl), 200);
  await page.click('[data-testid=nav-wallets]');
  await page.click('[data-testid=wallets-table] tr[data-workspace=open]');
  await page.fill('[data-testid=credit-form] input[name=usd]', '5');
  await page.fill('[data-testid=credit-form] input[name=note]', 'invoice 9');
  await page.click('[data-testid=credit-form] button');
  await page.waitForSelector('[data-testid=credit-message]');
  await page.fill('[data-testid=credit-form] input[name=usd]', '7');
  await page.click('[data-testid=wallets-table] tr[data-workspace=cheap]');
  await until(
    async () => ((await page.textContent('[data-testid=ledger-table]')) ?? '').includes(k.traces.cheap),
    "cheap's ledger",
  );
  t.equal(
    await page.locator('[data-testid=credit-message]').count(),
    0,
    "open's credit message is not shown under cheap",
  );
  t.equal(
    await page.inputValue('[data-testid=credit-form] input[name=usd]'),
    '',
    'the amount typed for open is not kept for cheap',
  );

  const slow = await holdOne(page, admin('/admin/wallets/open'));
  await page.click('[data-testid=wallets-table] tr[data-workspace=open]');
  await slow.held;
  await page.click('[data-testid=wallets-table] tr[data-workspace=cheap]');
  await until(
    async () => ((await page.textContent('[data-testid=ledger-table]')) ?? '').includes(k.traces.cheap),
    "cheap's ledger again",
  );
  const delivered = slow.delivered();
  slow.release();
  await delivered;
  const ledger = (await page.textContent('[data-testid=ledger-table]')) ?? '';
  t.match(await page.textContent('[data-testid=wallet-detail] h2'), 'Wallet cheap');
  t.ok(ledger.includes(k.traces.cheap), "cheap's ledger");
  t.notOk(ledger.includes(k.traces.small1), "open's late answer is not shown under cheap");
});

t.test(
  "Wallets: Newer clicked before Older's page came shows the newest rows, under the newest page's title",
  async (t) => {
    const browser = await launchBrowser(t);
    if (!browser) return;
    const s = await startConsoleStack(t);
    s.key('open', { name: 'backend' });
    // Thirty credits: two ledger pages of 25.
    for (let i = 1; i <= 30; i++) s.credit('open', String(i));
    const page = await browser.newPage();
    t.equal(await signIn(page, s.adminUrl), 200);
    await page.click('[data-testid=nav-wallets]');
    await page.click('[data-testid=wallets-table] tr[data-workspace=open]');
    await page.waitForSelector('[data-testid=ledger-older]');
    const rows = () => page.locator('[data-testid=ledger-table] tbody tr').count();
    await until(async () => (await rows()) === 25, 'the newest page');
    const newest = await page.textContent('[data-testid=ledger-table] tbody');
    await newerBeforeOlder(page, '/admin/wallets/open', 'ledger');
    t.match(await page.textContent('[data-testid=wallet-detail] h3'), 'Recent ledger rows');
    t.equal(
      await page.textContent('[data-testid=ledger-table] tbody'),
      newest,
      "the newest rows, not the older page's",
    );
  },
);

t.test('Routing: the preview of the form as submitted last, whatever answer comes last', async (t) => {
  const browser = await launchBrowser(t);
  if (!browser) return;
  const s = await startConsoleStack(t);
  const page = await browser.newPage();
  t.equal(await signIn(page, s.adminUrl), 200);
  await page.click('[data-testid=nav-routing]');
  const slow = await holdOne(page, admin('/admin/route-preview'));
  await page.fill('[data-testid=route-form] input[name=model]', 'acme/chat-small');
  await page.click('[data-testid=route-form] button');
  await slow.held;
  await page.fill('[data-testid=route-form] input[name=model]', 'acme/chat-big');
  await page.click('[data-testid=route-form] button');
  await until(
    async () => (await page.textContent('[data-testid=route-result] h2').catch(() => '')) === 'acme/chat-big',
    'the preview of acme/chat-big',
  );
  const delivered = slow.delivered();
  slow.release();
  await delivered;
  t.equal(
    await page.textContent('[data-testid=route-result] h2'),
    'acme/chat-big',
    "acme/chat-small's late answer is not shown under the form asking for acme/chat-big",
  );
});

t.test("Audit: Newer clicked before Older's page came shows the newest entries", async (t) => {
  const browser = await launchBrowser(t);
  if (!browser) return;
  const s = await startConsoleStack(t);
  await revokeEntries(s, 60); // more than one page of 50
  const page = await browser.newPage();
  t.equal(await signIn(page, s.adminUrl), 200);
  await page.click('[data-testid=nav-audit]');
  await page.waitForSelector('[data-testid=audit-older]:not([disabled])');
  const targets = () =>
    page.$$eval('[data-testid=audit-table] tbody tr td:nth-child(4)', (tds) => tds.map((td) => td.textContent));
  const newest = await targets();
  t.equal(newest.length, 50);
  await newerBeforeOlder(page, '/admin/audit', 'audit');
  t.same(await targets(), newest, "the newest entries, not the older page's");
});

t.test("Requests: no Older from the old filter's rows while the new filter's answer is out", async (t) => {
  const browser = await launchBrowser(t);
  if (!browser) return;
  const s = await startConsoleStack(t);
  // Sixty rows, every other one in workspace open: the unfiltered newest page of 50 ends at row 10,
  // and open has rows 12…58 newer than that.
  for (let i = 0; i < 60; i++)
    s.store.requestLog.append(logRow(`row-${i}`, { ts: Date.now(), workspace: i % 2 === 0 ? 'open' : 'w' }));
  s.store.requestLog.flush();
  const page = await browser.newPage();
  t.equal(await signIn(page, s.adminUrl), 200);
  await page.goto(`${s.adminUrl}/console#requests`);
  await page.waitForSelector('[data-testid=older]');
  const slow = await holdOne(page, admin('/admin/requests', { workspace: 'open' }));
  await page.selectOption('select[name=workspace]', 'open');
  await slow.held;
  t.equal(
    await page.locator('[data-testid=older]').count(),
    0,
    "Older is not offered from the unfiltered page's last row (open's rows 12 to 58 would be skipped)",
  );
  const delivered = slow.delivered();
  slow.release();
  await delivered;
  const traces = await page.$$eval('[data-testid=requests-table] tbody tr', (rows) =>
    rows.map((r) => r.getAttribute('data-trace')),
  );
  t.same(
    traces,
    Array.from({ length: 30 }, (_, i) => `row-${58 - 2 * i}`),
    "open's thirty rows, newest first",
  );
  t.equal(await page.locator('[data-testid=older]').count(), 0, 'all on one page');
});

/**
 * The Health page, signed in, its figures shown, on a clock the test moves (the page's own timers: no
 * waiting out real periods); `asked()` counts the page's questions to /admin/health so far.
 */
async function healthOnClock(t: Test): Promise<{ page: Page; asked: () => number } | null> {
  const browser = await launchBrowser(t);
  if (!browser) return null;
  const s = await startConsoleStack(t);
  const page = await browser.newPage();
  await page.clock.install();
  t.equal(await signIn(page, s.adminUrl), 200);
  let asked = 0;
  page.on('request', (r) => {
    if (new URL(r.url()).pathname === '/admin/health') asked++;
  });
  await page.click('[data-testid=nav-health]');
  await page.waitForSelector('[data-testid=health-table]');
  return { page, asked: () => asked };
}

/** How many refreshes the health page has handled (its `data-answered`). */
async function answeredCount(page: Page): Promise<number> {
  return Number(await page.getAttribute('[data-testid=page-health]', 'data-answered'));
}

t.test('Health: a refresh slower than its 5-s period is not asked again before it answers', async (t) => {
  const h = await healthOnClock(t);
  if (!h) return;
  const { page, asked } = h;
  const slow = await holdOne(page, admin('/admin/health'));
  await page.clock.runFor(5_000);
  await slow.held;
  const before = asked();
  await page.clock.runFor(9_000);
  await new Promise((r) => setTimeout(r, 300));
  t.equal(asked(), before, 'two periods pass while the answer is out: nothing more is asked');
  const answered = await answeredCount(page);
  slow.release();
  // The page has handled the answer (it no longer waits) before its clock moves on: a fixed real-time
  // pause would not be enough on a loaded machine, and the one tick of the next step would find it
  // still waiting.
  await until(async () => (await answeredCount(page)) > answered, 'the page handles the slow answer');
  await page.clock.runFor(5_000);
  await until(async () => asked() === before + 1, 'the next period asks again');
  t.equal(await page.locator('[data-testid=health-table]').count(), 1, 'the figures are shown');
});

t.test('Health: a refresh that never answers is given up after 15 s and asked again', async (t) => {
  const h = await healthOnClock(t);
  if (!h) return;
  const { page, asked } = h;
  // The next refresh is never answered (held for the rest of the test).
  const hung = await holdOne(page, admin('/admin/health'));
  await page.clock.runFor(5_000);
  await hung.held;
  const before = asked();
  await page.clock.runFor(10_000);
  await new Promise((r) => setTimeout(r, 300));
  t.equal(asked(), before, 'not asked again while it may still answer');
  await page.clock.runFor(5_000);
  await until(async () => asked() === before + 1, 'asked again once it is given up');
  await page.waitForSelector('[data-testid=health-table]');
  t.pass('the figures come back with the new answer');
  // The given-up answer, when it comes at last, changes nothing.
  hung.release();
  await hung.delivered();
  t.equal(await page.locator('[data-testid=health-table]').count(), 1);
});
