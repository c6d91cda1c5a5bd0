// The Spend page's warnings, series and per-key spend and the Wallets page's low-balance highlight in
// a real browser (headless Chromium, playwright-core), against a gateway with known traffic and
// request-log rows of known latencies: spend, requests and last use per key equal the API's exact
// figures; the wallet below its workspace's low_balance_usd is highlighted and listed with a key
// about to expire; the series charts carry the exact nearest-rank percentiles and counts; the range
// the page states is the one it sums, with its times when a bound is not 00:00 UTC; the range is in
// the URL (a link shows it, a reload keeps it); a per-group series that fails to load says so.
import t from 'tap';
import { type AdminBody, knownTraffic, startConsoleStack } from '../helpers/console.ts';
import { launchBrowser, signIn } from '../helpers/browser.ts';
import { seriesRows } from '../helpers/spend-rows.ts';

const cellsOf = (rows: string[][]) => rows.map((r) => r.map((c) => c.trim().replace(/\s+/g, ' ')));

t.test('spend per key, warnings, series and the low-balance highlight, in Chromium', async (t) => {
  const browser = await launchBrowser(t);
  if (!browser) return;
  const s = await startConsoleStack(t);
  await knownTraffic(s);
  for (const row of seriesRows()) s.store.requestLog.append(row);
  const soon = s.store.apiKeys.create({
    workspace: 'open',
    name: 'expires-soon',
    expiresAt: s.clock.now() + 3 * 86_400_000,
  });
  const backend = s.store.apiKeys.list().find((k) => k.name === 'backend');
  if (!backend) throw new Error('no backend key');
  const apiKeys = (await s.call('/admin/spend/keys')).body.keys as AdminBody[];
  const cheap = (await s.call('/admin/wallets')).body.wallets.find((w: AdminBody) => w.workspace === 'cheap');

  const page = await browser.newPage();
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  t.equal(await signIn(page, s.adminUrl), 200);

  await page.click('[data-testid=nav-spend]');
  await page.waitForSelector(`[data-testid=by-key] tr[data-key="${backend.id}"]`);
  const row = async (sel: string): Promise<string[]> =>
    cellsOf([await page.$$eval(`${sel} td`, (tds) => tds.map((td) => td.textContent ?? ''))])[0] ?? [];
  t.same(
    await row(`[data-testid=by-key] tr[data-key="${backend.id}"]`),
    [`backend ${backend.prefix}…`, 'open', 'active', '2', '1', '0', '2,000', '1,000', '$0.004', '2026-01-15 12:00:00'],
    'spend, requests (the refused one apart) and last use of the key',
  );
  t.equal(
    await page.locator('[data-testid=by-key] tbody tr').count(),
    apiKeys.length,
    'every key the API lists, used or not',
  );
  t.same(
    (await row(`[data-testid=by-key] tr[data-key="${soon.id}"]`)).slice(3),
    ['0', '0', '0', '0', '0', '$0', 'never'],
    'a key never used',
  );

  // Warnings: the cheap wallet ($10 − its request) is below its $25 threshold; a key expires in 3 days.
  t.same(await row('[data-testid=low-balance] tr[data-workspace=cheap]'), [
    'cheap Cheapest first',
    `$${cheap.available_usd}`,
    '$25',
  ]);
  t.equal(await page.locator('[data-testid=low-balance] tbody tr').count(), 1, 'open ($99.996 over $50) is not listed');
  t.same(await row(`[data-testid=keys-expiring] tr[data-key="${soon.id}"]`), [
    `expires-soon ${soon.prefix}…`,
    'open',
    '2026-01-18 12:00:00',
    '3 days',
  ]);

  // Series: thirty days, daily; 2026-01-14 holds the rows of known latencies.
  await page.waitForSelector('[data-testid=latency-chart]');
  const titles = async (chart: string) =>
    page.$$eval(`[data-testid=${chart}] title`, (ts) => ts.map((x) => x.textContent ?? ''));
  t.ok(
    (await titles('requests-chart')).includes('2026-01-14 00:00:00: 13 billed, 1 errors, 1 rejected, 1 unbilled'),
    'the day of the known rows: billed, errors, rejected and unbilled',
  );
  t.ok(
    (await titles('latency-chart')).includes('2026-01-14 00:00:00: p50 400 ms, p95 5,000 ms'),
    'exact nearest-rank percentiles',
  );
  t.ok((await titles('cost-chart')).includes('2026-01-14 00:00:00: $1.234567893'), 'exact cost');
  t.equal(
    await page.textContent('[data-testid=cost-chart] text.chart-label'),
    '$1.234567893',
    "the cost axis' top: the largest bucket's exact cost, not a float rounded to three digits",
  );
  t.equal(
    await page.locator('[data-testid=latency-chart] circle').count(),
    4,
    'p50 and p95 on the two days with traffic',
  );
  t.equal(await page.getAttribute('[data-testid=latency-chart]', 'aria-label'), 'Latency p50 and p95 over time');
  await page.selectOption('[data-testid=series] select[name=by]', 'model');
  await page.waitForSelector('[data-testid=series-table] tr[data-key="acme/chat-big"]');
  t.same(
    await row('[data-testid=series-table] tr[data-key="acme/chat-big"]'),
    ['acme/chat-big', '3', '0', '0', '0', '70 ms', '$0.000000003'],
    'per model over the range',
  );
  await page.click('[data-testid=series-table] tr[data-key="acme/chat-big"]');
  await page.waitForSelector('[data-testid=series-focus] strong');
  t.equal(await page.textContent('[data-testid=series-focus] strong'), 'acme/chat-big');
  t.ok(
    (await titles('latency-chart')).includes('2026-01-14 00:00:00: p50 60 ms, p95 70 ms'),
    "the charts show the clicked model's own series",
  );

  // Wallets: the low wallet is highlighted, with its threshold.
  await page.click('[data-testid=nav-wallets]');
  await page.waitForSelector('[data-testid=wallets-table] tr[data-workspace=cheap]');
  t.match(await page.getAttribute('[data-testid=wallets-table] tr[data-workspace=cheap]', 'class'), /\blow\b/);
  t.equal(
    await page.textContent('[data-testid=wallets-table] tr[data-workspace=cheap] [data-testid=low-balance]'),
    'low: below $25',
  );
  t.notMatch(
    (await page.getAttribute('[data-testid=wallets-table] tr[data-workspace=open]', 'class')) ?? '',
    /\blow\b/,
    'open is not low',
  );
  const background = await page.$eval(
    '[data-testid=wallets-table] tr[data-workspace=cheap] td:nth-child(2)',
    // Runs in the page (the test's types have no DOM library).
    (td) =>
      (globalThis as unknown as { getComputedStyle(e: unknown): { backgroundColor: string } }).getComputedStyle(td)
        .backgroundColor,
  );
  t.equal(background, 'rgb(255, 244, 229)', 'the highlight is drawn');
  t.same(errors, [], 'no script error');
});

t.test('the range the Spend page states is the range it sums, to the minute', async (t) => {
  const browser = await launchBrowser(t);
  if (!browser) return;
  const s = await startConsoleStack(t);
  await knownTraffic(s);
  const page = await browser.newPage();
  t.equal(await signIn(page, s.adminUrl), 200);
  await page.click('[data-testid=nav-spend]');
  await page.waitForSelector('[data-testid=spend-total]');
  t.match(
    await page.textContent('[data-testid=page-spend] p.range'),
    /^\d{4}-\d{2}-\d{2} to 2026-01-16 \(exclusive\), UTC$/,
    'days, when the bounds are days',
  );
  await page.fill('input[name=from]', '2026-01-15T06:30');
  await page.fill('input[name=to]', '2026-01-16T12:00');
  await page.press('input[name=to]', 'Enter');
  const end = Date.now() + 10_000;
  while (!/12:00/.test((await page.textContent('[data-testid=page-spend] p.range')) ?? '') && Date.now() < end)
    await new Promise((r) => setTimeout(r, 50));
  t.equal(
    await page.textContent('[data-testid=page-spend] p.range'),
    '2026-01-15 06:30:00 to 2026-01-16 12:00:00 (exclusive), UTC',
    'the times, when the bounds are not 00:00',
  );
});

t.test(
  "the Spend page's range is in the URL: a link shows it, a change is written there, a reload keeps it",
  async (t) => {
    const browser = await launchBrowser(t);
    if (!browser) return;
    const s = await startConsoleStack(t);
    await knownTraffic(s);
    const page = await browser.newPage();
    t.equal(await signIn(page, s.adminUrl), 200);
    const total = () => page.textContent('[data-testid=total-requests]');
    const until = async (want: string) => {
      const end = Date.now() + 10_000;
      while ((await total().catch(() => null)) !== want && Date.now() < end)
        await new Promise((r) => setTimeout(r, 50));
    };
    await page.goto(`${s.adminUrl}/console#spend?workspace=cheap`);
    await until('1');
    t.equal(await total(), '1', "a link to cheap's spend shows cheap's one billed request");
    t.equal(await page.inputValue('[data-testid=page-spend] select:not([name])'), 'cheap');
    await page.selectOption('[data-testid=page-spend] select:not([name])', 'open');
    await page.fill('input[name=to]', '2026-01-16');
    await page.press('input[name=to]', 'Enter');
    await until('2');
    t.match(new URL(page.url()).hash, /^#spend\?.*workspace=open/, 'the workspace chosen is in the URL');
    t.match(new URL(page.url()).hash, /to=2026-01-16/, 'and the range');
    await page.reload();
    await until('2');
    t.equal(await total(), '2', "a reload keeps open's figures");
    t.equal(await page.inputValue('input[name=to]'), '2026-01-16');
  },
);

t.test('a per-group series that fails to load says why instead of leaving its table out', async (t) => {
  const browser = await launchBrowser(t);
  if (!browser) return;
  const s = await startConsoleStack(t);
  await knownTraffic(s);
  const page = await browser.newPage();
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  t.equal(await signIn(page, s.adminUrl), 200);
  // Only the series per model fails (the total's answer comes as ever).
  await page.route(
    (url) => url.pathname === '/admin/spend/series' && url.searchParams.get('by') === 'model',
    (route) =>
      route.fulfill({
        status: 500,
        contentType: 'application/json',
        body: JSON.stringify({ error: { code: 'internal_error', message: 'the series per model failed' } }),
      }),
  );
  await page.click('[data-testid=nav-spend]');
  await page.waitForSelector('[data-testid=series-focus]');
  await page.selectOption('[data-testid=series] select[name=by]', 'model');
  await page.waitForSelector('[data-testid=series-table-error]');
  t.match(await page.textContent('[data-testid=series-table-error]'), /the series per model failed/);
  t.equal(await page.locator('[data-testid=series-table]').count(), 0, 'no table of figures it does not have');
  t.equal(await page.locator('[data-testid=series-focus]').count(), 1, 'the total series still shows');
  t.same(errors, [], 'no script error');
});
