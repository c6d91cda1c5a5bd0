// The admin listener's defences, checked the same way on any console (the embedded store's stack and
// a PostgreSQL fleet node): no CORS on any answer, failed sign-ins limited and logged, sessions bound
// to the page's secret with an idle timeout, a protected sign-out.
import type { Test } from 'tap';

/** A console to attack: its base URL and the operator token it runs with. */
export interface ConsoleTarget {
  adminUrl: string;
  token: string;
}

/** Every kind of answer the admin listener gives, preflights included. */
const PROBES: [string, string, Record<string, string>?][] = [
  ['GET', '/health/live'],
  ['GET', '/health/ready'],
  ['GET', '/metrics'],
  ['GET', '/console'],
  ['POST', '/console/login', { 'content-type': 'application/x-www-form-urlencoded' }],
  ['POST', '/console/logout'],
  ['GET', '/admin/requests'],
  ['POST', '/admin/wallets/open/credit', { 'content-type': 'application/json' }],
  ['GET', '/nowhere'],
  ['OPTIONS', '/console/login', { 'access-control-request-method': 'POST' }],
  ['OPTIONS', '/admin/wallets/open/credit', { 'access-control-request-method': 'POST' }],
  ['OPTIONS', '/metrics', { 'access-control-request-method': 'GET' }],
];

/** No answer of the admin listener carries a CORS header, whatever Origin asks. */
export async function checkNoCors(t: Test, c: ConsoleTarget): Promise<void> {
  for (const [method, path, headers] of PROBES) {
    const res = await fetch(`${c.adminUrl}${path}`, {
      method,
      headers: { origin: 'https://evil.example', ...headers },
      ...(method === 'POST' ? { body: 'token=guess' } : {}),
      redirect: 'manual',
    });
    await res.arrayBuffer();
    const cors = [...res.headers.keys()].filter((h) => h.startsWith('access-control-'));
    t.same(cors, [], `${method} ${path} (${res.status}): no Access-Control-* header`);
  }
}
