// The console's HTML: the page shell that loads the built bundle (console/dist/, see
// scripts/build-console.ts), the login form, and the page saying the console is off. No inline
// script or style: the Content-Security-Policy allows only this listener's own files.
import { readFileSync } from 'node:fs';
import { projectPath } from '../install/project-root.ts';

/** Where `npm run build:console` writes the bundle (the project's console/dist/). */
export const ASSETS_DIR = projectPath('console', 'dist') + '/';

/** Files the console serves, with their types. */
export const ASSETS: Record<string, string> = {
  'app.js': 'text/javascript; charset=utf-8',
  'app.css': 'text/css; charset=utf-8',
};

export const CONSOLE_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'";

const cache = new Map<string, Buffer>();

/** A built asset, read once; null when the bundle was not built. */
export function asset(name: string): Buffer | null {
  const hit = cache.get(name);
  if (hit) return hit;
  try {
    const data = readFileSync(ASSETS_DIR + name);
    cache.set(name, data);
    return data;
  } catch {
    return null;
  }
}

const escapeHtml = (s: string): string => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

function page(title: string, body: string, head = ''): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">${head}
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<link rel="stylesheet" href="/console/assets/app.css">
</head>
<body>
${body}
</body>
</html>
`;
}

/** The console's page; `sessionTag` (public) tells the page which session its kept secret must belong to. */
export function shellPage(sessionTag: string): string {
  return page(
    'pi-gateway console',
    '<div id="app"><p class="boot">Loading the console…</p></div>\n<script type="module" src="/console/assets/app.js"></script>',
    `\n<meta name="pi-console-session" content="${escapeHtml(sessionTag)}">`,
  );
}

export function loginPage(error: string | null): string {
  return page(
    'pi-gateway console: sign in',
    `<main class="login">
<h1>pi-gateway console</h1>
<form method="post" action="/console/login">
<label for="name">Operator name (empty to sign in with <code>PI_ADMIN_TOKEN</code>)</label>
<input id="name" name="name" type="text" autocomplete="username" autofocus>
<label for="token">Password, or the operator token</label>
<input id="token" name="token" type="password" autocomplete="current-password" required>
<button type="submit">Sign in</button>
${error ? `<p class="error" role="alert">${escapeHtml(error)}</p>` : ''}
</form>
</main>`,
  );
}

export function offPage(): string {
  return page(
    'pi-gateway console is off',
    `<main class="login"><h1>The console is off</h1>
<p>Start the gateway with <code>PI_ADMIN_TOKEN</code> set (and an admin port) to turn on the console and the admin JSON endpoints.</p></main>`,
  );
}

export function notBuiltPage(): string {
  return page(
    'pi-gateway console not built',
    '<main class="login"><h1>The console is not built</h1><p>Run <code>npm run build:console</code> (part of <code>npm run build</code>).</p></main>',
  );
}
