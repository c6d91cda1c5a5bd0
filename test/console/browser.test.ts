// The console in a real browser (headless Chromium from Debian's package, driven by playwright-core):
// a wrong token is refused at the sign-in form; with the right one each page loads against a gateway
// with known traffic and shows the right numbers — the request log and one request's attempts, spend
// by workspace and provider, wallets and a credit with its note, a key created and revoked, the route
// preview (in the order the gateway then tried), and the breaker and failure rate on Health.
import t from 'tap';
import { chat, knownTraffic, startConsoleStack } from '../helpers/console.ts';
import { hashPassword } from '../../src/admin/passwords.ts';
import { launchBrowser, signIn, until } from '../helpers/browser.ts';

const cells = (rows: string[][]) => rows.map((r) => r.map((c) => c.trim()));

t.test('every page of the console, in Chromium', async (t) => {
  const browser = await launchBrowser(t);
  if (!browser) return;
  const s = await startConsoleStack(t);
  const k = await knownTraffic(s);
  // A request that fails over: the route preview's first choice answers 503 once.
  const preview = (await s.call('/admin/route-preview', { body: { workspace: 'cheap', model: 'acme/chat-small' } }))
    .body;
  const order = preview.models[0].deployments.map((d: { deployment: string }) => d.deployment) as string[];
  s.sim.script(preview.models[0].deployments[0].upstream_model, { status: 503 }, 1);
  const failover = await chat(s, k.cheapKey, { model: 'acme/chat-small' });
  const spend = (await s.call('/admin/spend')).body;

  const page = await browser.newPage();
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  page.on('dialog', (d) => void d.accept());

  t.equal(await signIn(page, s.adminUrl, 'not-the-token'), 401, 'a wrong token is refused');
  t.match(await page.textContent('.error'), /not the operator token/);
  t.same(await page.context().cookies(), [], 'and no session cookie');
  t.equal(await signIn(page, s.adminUrl), 200, 'the right token signs in');
  const [cookie] = await page.context().cookies();
  t.match(cookie, { name: `pi_console_${new URL(s.adminUrl).port}`, httpOnly: true, sameSite: 'Strict' });

  // Requests
  await page.waitForSelector('[data-testid=requests-table] tbody tr');
  const rows = cells(
    await page.$$eval('[data-testid=requests-table] tbody tr', (trs) =>
      trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent ?? '')),
    ),
  );
  t.equal(rows.length, 5, 'five requests');
  t.same(
    rows[4]?.slice(1),
    [
      'open',
      'chat_completions',
      'acme/chat-small',
      'alpha',
      '200',
      'completed',
      '1',
      rows[4]?.[8],
      '1,000 / 500',
      '$0.002',
      'backend',
    ],
    'the oldest row, exact',
  );
  t.equal(rows[2]?.[5], '404 model_not_found', 'the refused request');
  await page.selectOption('select[name=status]', '4xx');
  await until(
    async () => (await page.locator('[data-testid=requests-table] tbody tr').count()) === 1,
    'one row is left',
  );
  t.pass('the status filter leaves the 404');
  await page.selectOption('select[name=status]', '');
  await until(
    async () => (await page.locator('[data-testid=requests-table] tbody tr').count()) === 5,
    'all five rows are back',
  );
  await page.click(`tr[data-trace="${failover.trace}"]`);
  await page.waitForSelector('[data-testid=detail-attempts] tbody tr');
  t.equal(await page.textContent('[data-testid=detail-trace]'), failover.trace);
  const attempts = cells(
    await page.$$eval('[data-testid=detail-attempts] tbody tr', (trs) =>
      trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent ?? '')),
    ),
  );
  t.same(
    attempts.map((a) => [a[0], a[1], a[3], a[4]]),
    [
      ['1', order[0], 'status_503', '503'],
      ['2', order[1], 'ok', '200'],
    ],
    'the drawer shows why it failed over',
  );
  await page.click('.drawer .close');

  // Spend
  await page.click('[data-testid=nav-spend]');
  await page.waitForSelector('[data-testid=by-workspace] tbody tr');
  t.equal(await page.textContent('[data-testid=total-cost]'), `$${spend.total.cost_usd}`, 'total cost');
  t.equal(await page.textContent('[data-testid=total-requests]'), '4', 'billed requests, as pi-gateway usage counts');
  t.equal(await page.textContent('[data-testid=total-rejected]'), '1', 'the refused one apart');
  const openSpend = cells(
    await page.$$eval('[data-testid=by-workspace] tr[data-key=open] td', (tds) => [
      tds.map((td) => td.textContent ?? ''),
    ]),
  )[0];
  t.same(openSpend, ['open', '2', '1', '0', '2,000', '1,000', '$0.004'], 'spend of workspace open');
  const alphaSpend = cells(
    await page.$$eval('[data-testid=by-provider] tr[data-key=alpha] td', (tds) => [
      tds.map((td) => td.textContent ?? ''),
    ]),
  )[0];
  t.same(alphaSpend, ['alpha', '2', '0', '0', '2,000', '1,000', '$0.004'], 'spend through alpha');
  t.equal(
    await page.locator('[data-testid=by-workspace-chart] rect').count(),
    spend.by_workspace.length,
    'a bar per workspace',
  );
  t.equal(await page.locator('[data-testid=day-chart] rect').count(), 1, 'a column per day');
  t.equal(
    await page.getAttribute('[data-testid=by-workspace-chart]', 'aria-label'),
    'Cost by workspace',
    'a chart is named for screen readers',
  );
  t.equal(await page.getAttribute('[data-testid=day-chart]', 'aria-label'), 'Cost by day');
  const csvHref = await page.getAttribute('[data-testid=csv]', 'href');
  const csv = await page.evaluate(async (href) => (await fetch(href as string)).text(), csvHref);
  t.match(
    csv,
    /^day,workspace,model,provider,requests,rejected,unbilled,prompt_tokens,completion_tokens,cost_usd\r\n2026-01-15,cheap,/,
    'the CSV downloads with the session',
  );

  // Wallets & keys
  await page.click('[data-testid=nav-wallets]');
  await page.waitForSelector('[data-testid=wallets-table] tr[data-workspace=open]');
  const openWallet = cells(
    await page.$$eval('[data-testid=wallets-table] tr[data-workspace=open] td', (tds) => [
      tds.map((td) => td.textContent ?? ''),
    ]),
  )[0];
  t.same(openWallet?.slice(1), ['$99.996', '$0', '$99.996', '$0.004', '0'], 'wallet open');
  await page.click('[data-testid=wallets-table] tr[data-workspace=open]');
  await page.fill('[data-testid=credit-form] input[name=usd]', '5');
  await page.fill('[data-testid=credit-form] input[name=note]', 'invoice 9');
  await page.click('[data-testid=credit-form] button');
  await page.waitForSelector('[data-testid=credit-message]');
  t.equal(await page.textContent('[data-testid=credit-message]'), 'Credited $5; balance $104.996.');
  await until(
    async () => (await page.textContent('[data-testid=ledger-table] tbody tr td:nth-child(5)')) === 'invoice 9',
    'the credit is listed',
  );
  t.equal(s.store.wallets.ledger('open', { limit: 1 })[0]?.note, 'invoice 9', 'the ledger row has the note');
  await page.fill('[data-testid=key-form] input[name=name]', 'from-the-browser');
  await page.click('[data-testid=key-form] button');
  await page.waitForSelector('[data-testid=created-key] code');
  const newKey = (await page.textContent('[data-testid=created-key] code')) ?? '';
  t.match(newKey, /^sk-pi-/, 'the new key, shown once');
  t.equal((await chat(s, newKey, { model: 'acme/chat-small' })).status, 200, 'and it works');
  const id = s.store.apiKeys.list().find((x) => x.name === 'from-the-browser')?.id as string;
  await page.click(`tr[data-key="${id}"] button.danger`);
  await until(
    async () => (await page.textContent(`tr[data-key="${id}"] [data-testid=key-state]`)) === 'revoked',
    'the key shows revoked',
  );
  t.equal((await chat(s, newKey, { model: 'acme/chat-small' })).status, 401, 'revoked from the browser');

  // Routing
  await page.click('[data-testid=nav-routing]');
  await page.selectOption('[data-testid=route-form] select[name=workspace]', 'cheap');
  await page.fill('[data-testid=route-form] input[name=model]', 'acme/chat-small');
  await page.click('[data-testid=route-form] button');
  await page.waitForSelector('[data-testid=route-table] tbody tr');
  const shown = await page.$$eval('[data-testid=route-table] tbody tr', (trs) =>
    trs.map((tr) => tr.getAttribute('data-deployment')),
  );
  t.same(shown, order, 'the preview lists the order the gateway tried');
  t.match(await page.textContent('[data-testid=funnel]'), /gcp: deployment inactive/, 'and why gcp was filtered');

  // Health
  await page.click('[data-testid=nav-health]');
  await page.waitForSelector('[data-testid=health-table] tbody tr');
  t.equal(await page.textContent('[data-testid=config-hash]'), s.config.sourceHash.slice(0, 12));
  t.equal(await page.textContent('[data-testid=health-state]'), 'ready');
  // Later requests (the browser-made key's) may have gone to the same deployment: compare with the API.
  const health = (await s.call('/admin/health')).body.deployments.find((d: { id: string }) => d.id === order[0]);
  t.equal(health.recent.failures, 1, 'the API counts the one 503');
  const failed = `[data-testid=health-table] tr[data-deployment="${order[0]}"]`;
  t.equal(await page.textContent(`${failed} [data-testid=breaker]`), health.breaker.state);
  t.equal(await page.textContent(`${failed} [data-testid=recent-attempts]`), String(health.recent.attempts));
  t.equal(
    await page.textContent(`${failed} [data-testid=failure-rate]`),
    `${((1 / health.recent.attempts) * 100).toFixed(0)}%`,
    'its recent failure rate',
  );

  t.same(errors, [], 'no script error on any page');
});

t.test(
  'operators in Chromium: sign-in by name, the viewer refused a credit, the audit page, reload and sign-out',
  async (t) => {
    const browser = await launchBrowser(t);
    if (!browser) return;
    const s = await startConsoleStack(t);
    s.credit('open', '100');
    s.store.operators.add('ana', 'admin', await hashPassword('ana-browser-password-1'));
    s.store.operators.add('vic', 'viewer', await hashPassword('vic-browser-password-2'));

    const viewer = await browser.newPage();
    t.equal(await signIn(viewer, s.adminUrl, 'not-vic-password', 'vic'), 401, 'a wrong password is refused');
    t.match(await viewer.textContent('.error'), /Wrong name or password/);
    t.equal(await signIn(viewer, s.adminUrl, 'vic-browser-password-2', 'vic'), 200, 'the viewer signs in');
    await viewer.waitForSelector('[data-testid=operator]');
    t.equal(await viewer.textContent('[data-testid=operator]'), 'vic (viewer)');
    await viewer.click('[data-testid=nav-wallets]');
    await viewer.click('[data-testid=wallets-table] tr[data-workspace=open]');
    await viewer.fill('[data-testid=credit-form] input[name=usd]', '5');
    await viewer.fill('[data-testid=credit-form] input[name=note]', 'viewer credit');
    await viewer.click('[data-testid=credit-form] button');
    await viewer.waitForSelector('[data-testid=credit-message]');
    t.match(await viewer.textContent('[data-testid=credit-message]'), /vic has the viewer role, which reads only/);
    t.equal(s.store.wallets.show('open', s.clock.now()).balance, 100_000_000_000n, 'nothing credited');

    const admin = await browser.newContext().then((c) => c.newPage());
    t.equal(await signIn(admin, s.adminUrl, 'ana-browser-password-1', 'ana'), 200, 'the admin signs in');
    await admin.waitForSelector('[data-testid=operator]');
    await admin.click('[data-testid=nav-wallets]');
    await admin.click('[data-testid=wallets-table] tr[data-workspace=open]');
    await admin.fill('[data-testid=credit-form] input[name=usd]', '7');
    await admin.fill('[data-testid=credit-form] input[name=note]', 'invoice 12');
    await admin.click('[data-testid=credit-form] button');
    await admin.waitForSelector('[data-testid=credit-message]');
    t.equal(await admin.textContent('[data-testid=credit-message]'), 'Credited $7; balance $107.');

    // A reload keeps the session: the secret stays with the tab, not in a cookie.
    await admin.reload();
    await admin.click('[data-testid=nav-audit]');
    await admin.waitForSelector('[data-testid=audit-table] tbody tr');
    const rows = cells(
      await admin.$$eval('[data-testid=audit-table] tbody tr', (trs) =>
        trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent ?? '')),
      ),
    );
    t.same(
      rows.map((r) => [r[1], r[2], r[3], r[5]]),
      [
        ['ana', 'wallet.credit', 'open', 'ok'],
        ['ana', 'sign_in', '—', 'ok'],
        ['vic', 'wallet.credit', 'open', 'refused: role_forbidden'],
        ['vic', 'sign_in', '—', 'ok'],
        ['vic', 'sign_in', '—', 'failed'],
      ],
      'the audit page lists the credit, the refusal and the sign-ins, newest first',
    );
    t.match(rows[0]?.[4], /127\.0\.0\.1/);
    t.match(rows[0]?.[6], /"note":"invoice 12"/);

    // A second tab of the same browser gets the secret from the first, not from the server.
    const second = await admin.context().newPage();
    await second.goto(`${s.adminUrl}/console#audit`);
    await second.waitForSelector('[data-testid=audit-table] tbody tr');
    t.pass('a second tab opens the console without signing in again');

    await admin.click('[data-testid=sign-out]');
    await admin.waitForSelector('#token');
    t.equal(
      (await admin.context().request.get(`${s.adminUrl}/admin/meta`)).status(),
      401,
      'signed out: the cookie no longer reads',
    );
  },
);
