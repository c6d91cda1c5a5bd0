// Headless Chromium for the console's browser tests and screenshots: Debian's `chromium` package
// (installed by .ci/run) driven by playwright-core through `executablePath` — no browser download.
// A missing Chromium fails the test with a message saying how to install it; PI_SKIP_BROWSER=1 skips
// instead (loudly), for machines that cannot have it.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { type Browser, chromium, type Page } from 'playwright-core';
import type { Test } from 'tap';
import { TOKEN } from './console.ts';
import { realClockEnv } from './real-clock-env.ts';

export const CHROMIUM = process.env.PI_CHROMIUM ?? '/usr/bin/chromium';
const BUNDLE = fileURLToPath(new URL('../../console/dist/app.js', import.meta.url));

/** Polls `check` from Node until it holds, or throws naming `what` after `ms` (the page's CSP forbids
 *  the string predicates waitForFunction evaluates). */
export async function until(check: () => Promise<boolean>, what: string, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting until ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** A launched browser (closed with the test), or null when PI_SKIP_BROWSER=1 and there is none. */
export async function launchBrowser(t: Test): Promise<Browser | null> {
  if (!existsSync(BUNDLE))
    throw new Error(
      `the console bundle ${BUNDLE} is missing: run npm run build:console (npm test and npm run build do)`,
    );
  if (!existsSync(CHROMIUM)) {
    const message = `Chromium not found at ${CHROMIUM}: install Debian's chromium package (apt-get install -y chromium, as .ci/run does) or set PI_CHROMIUM to a Chromium binary`;
    if (process.env.PI_SKIP_BROWSER === '1') {
      process.stderr.write(`\n*** SKIPPING THE CONSOLE BROWSER TESTS (PI_SKIP_BROWSER=1): ${message} ***\n\n`);
      t.comment(`SKIPPED (PI_SKIP_BROWSER=1): ${message}`);
      return null;
    }
    throw new Error(message);
  }
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
    env: realClockEnv(),
  });
  t.teardown(() => browser.close());
  return browser;
}

/** Signs in through the console's form (the token alone, or a name and password); the page is then on the console. */
export async function signIn(page: Page, adminUrl: string, token = TOKEN, name = ''): Promise<number> {
  await page.goto(`${adminUrl}/console`);
  await page.fill('#name', name);
  await page.fill('#token', token);
  const [res] = await Promise.all([page.waitForNavigation(), page.click('button[type=submit]')]);
  return res?.status() ?? 0;
}

/**
 * Holds back the answer to the first request whose URL `match`es (and whose method is `method`, when
 * given) until `release()` is called; `held` resolves once the page asked. `delivered` resolves once
 * the page received the answer and had a moment to act on it (what a stale answer would do, it has
 * done by then).
 */
export async function holdOne(page: Page, match: (url: URL) => boolean, method?: string) {
  let release = () => {};
  const released = new Promise<void>((r) => {
    release = r;
  });
  let onHeld = () => {};
  const held = new Promise<void>((r) => {
    onHeld = r;
  });
  let taken = false;
  let heldUrl = '';
  await page.route(
    (url) => !taken && match(url),
    async (route) => {
      if (taken || (method !== undefined && route.request().method() !== method)) return route.continue();
      taken = true;
      heldUrl = route.request().url();
      onHeld();
      await released;
      await route.fulfill({ response: await route.fetch() });
    },
  );
  const delivered = async () => {
    await page.waitForEvent('requestfinished', (r) => r.url() === heldUrl);
    await new Promise((r) => setTimeout(r, 300));
  };
  return { held, release, delivered };
}
