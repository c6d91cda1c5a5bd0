// Screenshots of every console page for docs/console.md (docs/console-*.png): the bundled config served
// offline through the simulator, a week of generated traffic on an injected clock (several
// workspaces, models and providers, a few failovers and refusals), a few admin writes and sign-ins
// for the audit trail, then headless Chromium (Debian's package, through playwright-core) signs in as
// an operator and captures each page.
// Run: npm run build:console && npm run console:screenshots
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { hashPassword } from '../src/admin/passwords.ts';
import { ManualClock } from '../src/clock.ts';
import { tables } from '../src/generated/tables.ts';
import { startGateway } from '../src/gateway.ts';
import { decimalToNano } from '../src/money.ts';
import { Lifecycle } from '../src/observe/lifecycle.ts';
import { startAdminListener } from '../src/server/admin-app.ts';
import { startSimulator } from '../src/simulator/server.ts';
import { openStore } from '../src/store/sqlite/store.ts';

const DAY = 86_400_000;
const TOKEN = randomBytes(24).toString('base64url');
const docs = fileURLToPath(new URL('../docs/', import.meta.url));
const today = Date.now() - (Date.now() % DAY);
const clock = new ManualClock(today - 6 * DAY + 9 * 3_600_000);

const sim = await startSimulator({ port: 0 });
const store = openStore(':memory:', {
  clock,
  masterKey: randomBytes(32).toString('base64'),
  requestLog: { flushIntervalMs: 10 },
});
for (const r of tables.resources) if (!store.secrets.names().has(r.credential)) store.secrets.set(r.credential, 'demo');
const admin = await startAdminListener({
  host: '127.0.0.1',
  port: 0,
  lifecycle: new Lifecycle(clock),
  metrics: null,
  token: TOKEN,
});
const gw = await startGateway({ config: tables, store, clock, upstreamOverride: sim.url, admin, log: () => undefined });

const workspaces = ['acme', 'globex', 'initech', 'umbrella'];
const keys = new Map(workspaces.map((w) => [w, store.apiKeys.create({ workspace: w, name: `${w}-backend` }).key]));
for (const w of workspaces) store.wallets.credit(w, decimalToNano(w === 'acme' ? '250' : '100'), 'opening balance');
const models = [
  'openai/gpt-6-luna',
  'openai/gpt-6.2-sol',
  'google/gemini-3.8-flash',
  'meta-llama/llama-3.3-70b-instruct',
  'anthropic/claude-haiku-5.5',
];
const titles = ['Support bot', 'Docs search', 'Batch summariser'];
// mulberry32: a small seeded generator, so every run draws the same traffic.
let seed = 42;
const rand = (n: number): number => {
  seed = (seed + 0x6d2b79f5) | 0;
  let x = Math.imul(seed ^ (seed >>> 15), 1 | seed);
  x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
  return Math.floor((((x ^ (x >>> 14)) >>> 0) / 4294967296) * n);
};

for (let day = 0; day < 7; day++) {
  const n = 6 + rand(10);
  for (let i = 0; i < n; i++) {
    const ws = workspaces[rand(workspaces.length)] as string;
    const model = models[rand(models.length)] as string;
    if (rand(9) === 0) sim.script(rand(2) === 0 ? 'gpt-6-luna' : 'gemini-3.8-flash', { status: 503 }, 1);
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${keys.get(ws)}`,
        'content-type': 'application/json',
        'x-title': titles[rand(titles.length)] as string,
        'http-referer': 'https://app.example.com/',
      },
      body: JSON.stringify({
        model: rand(15) === 0 ? 'openai/gpt-5-turbo' : model,
        messages: [{ role: 'user', content: 'Hello' }],
        sim: { usage: { prompt: 200 + rand(3000), completion: 50 + rand(900) } },
      }),
    });
    await res.arrayBuffer();
    clock.advance(25 * 60_000 + rand(40) * 60_000);
  }
  if (day < 6) clock.set(today - (5 - day) * DAY + 9 * 3_600_000);
}
store.requestLog.flush();

const browser = await chromium.launch({
  executablePath: process.env.PI_CHROMIUM ?? '/usr/bin/chromium',
  headless: true,
  args: ['--no-sandbox', '--disable-gpu'],
});
// A few entries for the Audit page: named operators, a wrong password, writes by the token.
const PASSWORD = randomBytes(18).toString('base64url');
store.operators.add('ana', 'admin', await hashPassword(PASSWORD));
store.operators.add('vic', 'viewer', await hashPassword(PASSWORD));
const asToken = (path: string, body: unknown) =>
  fetch(`${admin.url}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  }).then((r) => r.arrayBuffer());
await fetch(`${admin.url}/console/login`, {
  method: 'POST',
  headers: { 'content-type': 'application/x-www-form-urlencoded' },
  body: new URLSearchParams({ name: 'vic', token: 'a wrong password' }).toString(),
}).then((r) => r.arrayBuffer());
await asToken('/admin/keys', { workspace: 'globex', name: 'ci' });
await asToken('/admin/wallets/acme/credit', { usd: '250', note: 'invoice 2041' });
const page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
await page.goto(`${admin.url}/console`);
await page.fill('#name', 'ana');
await page.fill('#token', PASSWORD);
await Promise.all([page.waitForNavigation(), page.click('button[type=submit]')]);
const shot = async (name: string) => {
  await page.waitForTimeout(300);
  await page.screenshot({ path: `${docs}console-${name}.png` });
  process.stdout.write(`docs/console-${name}.png\n`);
};

await page.waitForSelector('[data-testid=requests-table] tbody tr');
await page
  .click('[data-testid=requests-table] tbody tr.bad >> nth=0')
  .catch(() => page.click('[data-testid=requests-table] tbody tr >> nth=0'));
await page.waitForSelector('[data-testid=request-detail] dl');
await shot('requests');
await page.click('[data-testid=nav-spend]');
await page.waitForSelector('[data-testid=by-workspace] tbody tr');
await shot('spend');
await page.click('[data-testid=nav-wallets]');
await page.click('[data-testid=wallets-table] tr[data-workspace=acme]');
await page.waitForSelector('[data-testid=ledger-table] tbody tr');
await shot('wallets');
await page.click('[data-testid=nav-routing]');
await page.selectOption('[data-testid=route-form] select[name=workspace]', 'globex');
await page.fill('[data-testid=route-form] input[name=model]', 'openai/gpt-6-luna');
await page.click('[data-testid=route-form] button');
await page.waitForSelector('[data-testid=route-table] tbody tr');
await shot('routing');
await page.click('[data-testid=nav-health]');
await page.waitForSelector('[data-testid=health-table] tbody tr');
await shot('health');
await page.click('[data-testid=nav-audit]');
await page.waitForSelector('[data-testid=audit-table] tbody tr');
await shot('audit');

await browser.close();
await gw.close();
await sim.close();
store.close();
