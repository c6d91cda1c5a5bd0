// The console session's secret, which every write carries (X-Pi-Console-Secret). The server hands it
// over once, right after signing in; the page keeps it in memory and, so a reload or another tab of
// the console does not mean signing in again, in this tab's sessionStorage and on a BroadcastChannel
// to the console's other tabs. Both are scoped to this exact origin — scheme, host and port — unlike
// the cookie, which every server on the same host name receives: a script that replays the cookie
// from elsewhere never sees the secret. The shell page names its session (a public tag), so a secret
// kept from an earlier session is never sent with a new one.

export interface Operator {
  name: string;
  role: 'admin' | 'viewer';
}

interface Kept {
  secret: string;
  tag: string;
  operator: Operator;
}

const STORAGE_KEY = 'pi-console-session';
const channel = typeof BroadcastChannel === 'function' ? new BroadcastChannel('pi-console-session') : null;
let current: Kept | null = null;

channel?.addEventListener('message', (e: MessageEvent) => {
  if (e.data === 'ask' && current !== null) channel.postMessage({ kept: current });
});

/** The session tag the shell page carries. */
const pageTag = (): string => document.querySelector('meta[name=pi-console-session]')?.getAttribute('content') ?? '';

function fromStorage(tag: string): Kept | null {
  try {
    const kept = JSON.parse(sessionStorage.getItem(STORAGE_KEY) ?? 'null') as Kept | null;
    return kept !== null && kept.tag === tag ? kept : null;
  } catch {
    return null;
  }
}

/** Another open tab of this console, same session: it answers within a moment or not at all. */
function fromSiblings(tag: string): Promise<Kept | null> {
  if (channel === null) return Promise.resolve(null);
  return new Promise((resolve) => {
    const on = (e: MessageEvent) => {
      const kept = (e.data as { kept?: Kept } | null)?.kept;
      if (kept?.tag === tag) done(kept);
    };
    const timer = setTimeout(() => done(null), 300);
    const done = (kept: Kept | null) => {
      clearTimeout(timer);
      channel.removeEventListener('message', on);
      resolve(kept);
    };
    channel.addEventListener('message', on);
    channel.postMessage('ask');
  });
}

async function handedOver(): Promise<Kept | null> {
  const res = await fetch('/console/session', { headers: { 'x-pi-console': '1' }, credentials: 'same-origin' });
  if (!res.ok) return null;
  const body = (await res.json()) as Kept;
  return { secret: body.secret, tag: body.tag, operator: body.operator };
}

/** The session's secret and operator, or null: the page must sign in again. */
export async function startSession(): Promise<Operator | null> {
  const tag = pageTag();
  current = fromStorage(tag) ?? (await fromSiblings(tag)) ?? (await handedOver());
  if (current === null) return null;
  sessionStorage.setItem(STORAGE_KEY, JSON.stringify(current));
  return current.operator;
}

export const sessionSecret = (): string => current?.secret ?? '';

/** Forgets the secret (the session ended or was replaced). */
export function forgetSession(): void {
  current = null;
  sessionStorage.removeItem(STORAGE_KEY);
}

/** Signs out (a write: it carries the secret), then shows the sign-in form. */
export async function signOut(): Promise<void> {
  await fetch('/console/logout', {
    method: 'POST',
    headers: { 'x-pi-console-secret': sessionSecret() },
    credentials: 'same-origin',
  });
  forgetSession();
  location.href = '/console';
}
