// Finding a request in the console, in headless Chromium: a deep link to a request (filters and the
// open request in the URL) survives a reload; a pasted trace id finds and opens its request; rows are
// reached with Tab and opened with Enter, Escape closes the drawer and gives the focus back; text
// half-typed in a filter survives the live tail's re-renders until Enter applies it; the live tail
// never leaves a hidden gap (more new rows than one fetch takes stand alone, Older goes on); a
// 60,000-character model string does not widen the Requests or Spend page at 1,440 or 800 px; a
// key's expiry is picked with a date input that refuses a past day, and the server refuses one too.
import t from 'tap';
import type { Page } from 'playwright-core';
import { chat, knownTraffic, startConsoleStack } from '../helpers/console.ts';
import { launchBrowser, signIn, until } from '../helpers/browser.ts';
import { logRow } from '../helpers/log-rows.ts';

const rowCount = (page: Page) => page.locator('[data-testid=requests-table] tbody tr').count();
const hashOf = (page: Page) => new URL(page.url()).hash;

t.test('deep links, trace search, keyboard and Escape on the Requests page', async (t) => {
  const browser = await launchBrowser(t);
  if (!browser) return;
  const s = await startConsoleStack(t);
  const k = await knownTraffic(s);
  const page = await browser.newPage();
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  t.equal(await signIn(page, s.adminUrl), 200);

  // A link a colleague pasted: workspace open, one request open.
  await page.goto(`${s.adminUrl}/console#requests?workspace=open&open=${k.traces.small2}`);
  await page.waitForSelector('[data-testid=detail-trace]');
  t.equal(await page.textContent('[data-testid=detail-trace]'), k.traces.small2, 'the linked request is open');
  await until(async () => (await rowCount(page)) === 3, 'the three rows of workspace open');
  await page.reload();
  await page.waitForSelector('[data-testid=detail-trace]');
  t.equal(await page.textContent('[data-testid=detail-trace]'), k.traces.small2, 'still open after a reload');
  t.equal(await page.inputValue('select[name=workspace]'), 'open', 'the filter too');
  await until(async () => (await rowCount(page)) === 3, 'the same rows after the reload');

  // Escape closes the drawer and the URL forgets the open request; the focus goes back to its row.
  await page.keyboard.press('Escape');
  await until(async () => (await page.locator('[data-testid=request-detail]').count()) === 0, 'the drawer closes');
  t.notMatch(hashOf(page), /open=/, 'the URL no longer opens it');
  t.equal(await page.locator(':focus').getAttribute('data-trace'), k.traces.small2, 'the focus is back on its row');

  // Keyboard: from the Live box, Tab reaches the first row and Enter opens it.
  await page.focus('[data-testid=live]');
  await page.keyboard.press('Tab');
  const focused = await page.locator(':focus').getAttribute('data-trace');
  t.equal(focused, k.traces.missing, 'Tab reaches the newest row');
  await page.keyboard.press('Enter');
  await page.waitForSelector('[data-testid=detail-trace]');
  t.equal(await page.textContent('[data-testid=detail-trace]'), k.traces.missing, 'Enter opens it');
  t.equal(await page.locator(':focus').getAttribute('data-testid'), 'detail-close', 'the focus moves into the drawer');
  await page.keyboard.press('Escape');
  await until(async () => (await page.locator('[data-testid=request-detail]').count()) === 0, 'closed again');

  // A customer's X-Pi-Trace-Id, pasted: its request, and only it, opened.
  await page.goto(`${s.adminUrl}/console#requests`);
  await until(async () => (await rowCount(page)) === 4, 'all four requests');
  await page.fill('input[name=trace]', k.traces.cheap);
  await page.press('input[name=trace]', 'Enter');
  await page.waitForSelector('[data-testid=detail-trace]');
  t.equal(await page.textContent('[data-testid=detail-trace]'), k.traces.cheap, 'the pasted trace opens');
  t.equal(await rowCount(page), 1, 'one row');
  t.match(hashOf(page), new RegExp(`trace=${k.traces.cheap}`), 'the search is in the URL');
  await page.reload();
  await page.waitForSelector('[data-testid=detail-trace]');
  t.equal(await page.inputValue('input[name=trace]'), k.traces.cheap, 'and survives a reload');

  // A key by name.
  await page.goto(`${s.adminUrl}/console#requests?key=batch`);
  // The table of the trace search above also has this one row: wait for the link's filter itself,
  // so the text typed next is not typed before the page has taken the link.
  await until(async () => (await page.inputValue('input[name=key]')) === 'batch', 'the link fills the key filter');
  await until(async () => (await rowCount(page)) === 1, "the batch key's one request");
  t.equal(await page.getAttribute('[data-testid=requests-table] tbody tr', 'data-trace'), k.traces.cheap);
  // A whole key typed in: refused, and no stale table under the error.
  await page.fill('input[name=key]', k.cheapKey);
  await page.press('input[name=key]', 'Enter');
  await page.waitForSelector('[data-testid=requests-error]');
  t.match(await page.textContent('[data-testid=requests-error]'), /whole API key/);
  t.equal(await page.locator('[data-testid=requests-table]').count(), 0, 'the old rows are gone');
  t.same(errors, [], 'no script error');
});

t.test('text half-typed in a filter stays while the live tail adds rows, and applies on Enter', async (t) => {
  const browser = await launchBrowser(t);
  if (!browser) return;
  const s = await startConsoleStack(t);
  const k = await knownTraffic(s);
  const page = await browser.newPage();
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  t.equal(await signIn(page, s.adminUrl), 200);
  await page.goto(`${s.adminUrl}/console#requests`);
  await until(async () => (await rowCount(page)) === 4, 'all four requests');
  await page.check('[data-testid=live]');
  // Typed, not applied: no Enter, the field keeps the focus.
  await page.fill('input[name=key]', 'batc');
  const more = await chat(s, k.cheapKey, { model: 'acme/chat-small' });
  await until(async () => (await rowCount(page)) === 5, 'the live tail adds the new request');
  t.equal(
    await page.getAttribute('[data-testid=requests-table] tbody tr', 'data-trace'),
    more.trace,
    'the new request is on top',
  );
  t.equal(await page.inputValue('input[name=key]'), 'batc', 'the half-typed text survived the re-render');
  t.notMatch(hashOf(page), /key=/, 'and is not applied yet');
  await page.type('input[name=key]', 'h');
  await page.press('input[name=key]', 'Enter');
  await until(async () => /key=batch/.test(hashOf(page)), 'Enter applies it');
  await until(async () => (await rowCount(page)) === 2, "the batch key's two requests");
  t.equal(await page.inputValue('input[name=key]'), 'batch');
  // Following another link replaces the text with that link's filter.
  await page.goto(`${s.adminUrl}/console#requests?key=backend`);
  await until(async () => (await page.inputValue('input[name=key]')) === 'backend', "the link's filter shows");
  await until(async () => (await rowCount(page)) === 3, "the backend key's three requests");
  t.same(errors, [], 'no script error');
});

t.test('the live tail hides no gap: more new rows than one fetch takes stand alone, Older goes on', async (t) => {
  const browser = await launchBrowser(t);
  if (!browser) return;
  const s = await startConsoleStack(t);
  await knownTraffic(s);
  const page = await browser.newPage();
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  t.equal(await signIn(page, s.adminUrl), 200);
  await page.goto(`${s.adminUrl}/console#requests`);
  await until(async () => (await rowCount(page)) === 4, 'all four requests');
  await page.check('[data-testid=live]');
  // 250 rows at once, between two of the tail's fetches of 200: this process runs the gateway too,
  // so no fetch is answered in the middle of this loop.
  const traces = Array.from({ length: 250 }, (_, i) => `tail-${String(i).padStart(3, '0')}`);
  for (const trace of traces) s.store.requestLog.append(logRow(trace, { ts: Date.now() }));
  s.store.requestLog.flush();
  const shown = () =>
    page.$$eval('[data-testid=requests-table] tbody tr', (rows) => rows.map((r) => r.getAttribute('data-trace')));
  await until(async () => (await shown())[0] === traces.at(-1), 'the tail shows the newest row');
  t.same(await shown(), traces.slice(50).reverse(), 'the newest 200 alone: no older row under a hidden gap');
  await page.uncheck('[data-testid=live]');
  await page.click('[data-testid=older]');
  await until(async () => (await shown())[0] === traces[49], 'Older goes on from the last row shown');
  t.same(await shown(), traces.slice(0, 50).reverse(), 'the 50 rows the tail did not fetch');
  await page.click('[data-testid=older]');
  await until(async () => (await rowCount(page)) === 4, 'and the page after them');
  t.notOk(
    (await shown()).some((x) => x?.startsWith('tail-')),
    'holds the four requests from before',
  );
  t.same(errors, [], 'no script error');
});

t.test('a 60,000-character model string does not widen the pages', async (t) => {
  const browser = await launchBrowser(t);
  if (!browser) return;
  const s = await startConsoleStack(t);
  await knownTraffic(s);
  const key = s.key('open', { name: 'k'.repeat(128) });
  const huge = `acme/${'w'.repeat(60_000)}`;
  const long = await chat(s, key, { model: huge });
  const page = await browser.newPage();
  t.equal(await signIn(page, s.adminUrl), 200);
  for (const width of [1440, 800]) {
    await page.setViewportSize({ width, height: 900 });
    for (const [hash, ready] of [
      ['#requests', '[data-testid=requests-table] tbody tr'],
      ['#spend', '[data-testid=by-workspace] tbody tr'],
      ['#wallets', '[data-testid=keys-table] tbody tr'],
      ['#health', '[data-testid=health-table] tbody tr'],
    ] as const) {
      await page.goto(`${s.adminUrl}/console${hash}`);
      await page.waitForSelector(ready);
      const w = await page.$eval('html', (el) => ({ scroll: el.scrollWidth, view: el.clientWidth }));
      t.ok(w.scroll <= w.view, `${hash} at ${width} px: page ${w.scroll} px wide in a ${w.view} px window`);
    }
  }
  await page.goto(`${s.adminUrl}/console#requests?open=${long.trace}`);
  await page.waitForSelector('[data-testid=detail-model]');
  t.equal(
    await page.textContent('[data-testid=detail-model]'),
    `${huge.slice(0, 255)}…`,
    'the drawer shows the whole stored value',
  );
  const cell = page.locator(`tr[data-trace="${long.trace}"] td`).nth(3);
  t.equal(await cell.getAttribute('title'), `${huge.slice(0, 255)}…`, 'the table cell carries it as its title');
  t.ok(((await cell.boundingBox())?.width ?? 9999) < 400, 'and is cut to its column');
});

t.test("a key's expiry: a date input that refuses the past, and a server that does too", async (t) => {
  const browser = await launchBrowser(t);
  if (!browser) return;
  const s = await startConsoleStack(t);
  s.key('open', { name: 'backend' });
  const id = s.store.apiKeys.list()[0]?.id as string;
  const page = await browser.newPage();
  const dialogs: string[] = [];
  page.on('dialog', (d) => {
    dialogs.push(d.type());
    void d.dismiss();
  });
  t.equal(await signIn(page, s.adminUrl), 200);
  await page.click('[data-testid=nav-wallets]');
  await page.click(`tr[data-key="${id}"] [data-testid=expiry-edit]`);
  const input = `tr[data-key="${id}"] [data-testid=expiry-form] input[type=date]`;
  await page.waitForSelector(input);
  const min = (await page.getAttribute(input, 'min')) ?? '';
  t.match(min, /^\d{4}-\d{2}-\d{2}$/, 'the picker starts at a day');
  t.ok(min > new Date().toISOString().slice(0, 10), 'after today (a date means 00:00 UTC, passed today)');
  await page.fill(input, '2001-01-01');
  await page.click(`tr[data-key="${id}"] [data-testid=expiry-form] button[type=submit]`);
  t.equal(
    await page.$eval(
      input,
      (el) => (el as unknown as { validity: { rangeUnderflow: boolean } }).validity.rangeUnderflow,
    ),
    true,
    'a past day does not pass the form',
  );
  t.equal(s.store.apiKeys.get(id)?.expiresAt, null, 'and nothing was sent');

  // Whatever the page offers, the server refuses a past day (the gateway's clock: 2026-01-15T12:00Z).
  await page.$eval(input, (el) => el.removeAttribute('min'));
  await page.fill(input, '2026-01-15');
  await page.click(`tr[data-key="${id}"] [data-testid=expiry-form] button[type=submit]`);
  await page.waitForSelector('[data-testid=keys] .error');
  t.match(await page.textContent('[data-testid=keys] .error'), /not in the future/, 'the server says why');
  t.equal(s.store.apiKeys.get(id)?.expiresAt, null, 'the key keeps no expiry');

  await page.fill(input, '2099-01-01');
  await page.click(`tr[data-key="${id}"] [data-testid=expiry-form] button[type=submit]`);
  await until(async () => s.store.apiKeys.get(id)?.expiresAt === Date.UTC(2099, 0, 1), 'the expiry is set');
  await until(
    async () => ((await page.textContent(`tr[data-key="${id}"]`)) ?? '').includes('2099-01-01 00:00:00'),
    'the row shows it',
  );
  t.same(dialogs, [], 'no prompt or other dialog');
  const createMin = await page.getAttribute('[data-testid=key-form] input[name=expires_at]', 'min');
  t.equal(createMin, min, 'the create form offers no past day either');
});

t.test('Health by platform with a filter and the declared state; the route preview by share', async (t) => {
  const browser = await launchBrowser(t);
  if (!browser) return;
  const s = await startConsoleStack(t);
  const page = await browser.newPage();
  t.equal(await signIn(page, s.adminUrl), 200);
  await page.click('[data-testid=nav-health]');
  await page.waitForSelector('[data-testid=health-table] tbody[data-platform=gamma]');
  const down = '[data-testid=health-table] tbody[data-platform=gamma] tr[data-deployment="gamma/chat-big"]';
  t.equal(await page.textContent(`${down} [data-testid=declared]`), 'down');
  t.equal(
    await page.textContent(`${down} [data-testid=serves]`),
    'last resort — declared down in the config',
    'declared down does not read as serving',
  );
  t.same(
    await page.$$eval('[data-testid=health-table] tbody', (bs) => bs.map((b) => b.getAttribute('data-platform'))),
    ['alpha', 'beta', 'delta', 'gamma', 'gcp', 'zeta'],
    'grouped by platform',
  );
  await page.fill('input[name=filter]', 'gcp');
  await until(
    async () => (await page.locator('[data-testid=health-table] tbody').count()) === 1,
    'only the gcp group is left',
  );
  t.equal(await page.getAttribute('[data-testid=health-table] tbody', 'data-platform'), 'gcp');

  await page.click('[data-testid=nav-routing]');
  await page.selectOption('[data-testid=route-form] select[name=workspace]', 'open');
  await page.fill('[data-testid=route-form] input[name=model]', 'acme/chat-small');
  const orders = new Set<string>();
  for (let i = 0; i < 5; i++) {
    await page.click('[data-testid=route-form] button');
    await page.waitForSelector('[data-testid=route-table] tbody tr');
    orders.add(
      (
        await page.$$eval('[data-testid=route-table] tbody tr', (trs) =>
          trs.map((tr) => tr.getAttribute('data-deployment')),
        )
      ).join(' '),
    );
  }
  t.same([...orders], ['alpha/chat-small beta/chat-small gamma/chat-small zeta/chat-small'], 'one order, by share');
  t.match(await page.textContent('[data-testid=route-result]'), /listed by share of the first place/);
});
