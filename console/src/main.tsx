// The operator console: one page app over the admin JSON endpoints of the listener that served it.
// Pages by URL hash: #requests, #spend, #wallets, #routing, #health, #audit. Starts once the page
// holds its session's secret (./session.ts); without it, it asks to sign in again.
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { get, type Meta } from './api.ts';
import { AuditPage } from './page-audit.tsx';
import { HealthPage } from './page-health.tsx';
import { RequestsPage } from './page-requests.tsx';
import { RoutingPage } from './page-routing.tsx';
import { SpendPage } from './page-spend.tsx';
import { WalletsPage } from './page-wallets.tsx';
import { type Operator, signOut, startSession } from './session.ts';

const PAGES = [
  { id: 'requests', title: 'Requests' },
  { id: 'spend', title: 'Spend' },
  { id: 'wallets', title: 'Wallets & keys' },
  { id: 'routing', title: 'Routing' },
  { id: 'health', title: 'Health' },
  { id: 'audit', title: 'Audit' },
] as const;

type PageId = (typeof PAGES)[number]['id'];

const pageOf = (hash: string): PageId => {
  const id = hash.replace(/^#\/?/, '').split('?')[0];
  return PAGES.find((p) => p.id === id)?.id ?? 'requests';
};

function App({ operator }: { operator: Operator }) {
  const [page, setPage] = useState<PageId>(pageOf(location.hash));
  const [meta, setMeta] = useState<Meta | null>(null);
  const [error, setError] = useState<string | null>(null);
  // Bumped by "Try again": the pages need the meta, so a failed fetch of it is asked again, not waited on.
  const [attempt, setAttempt] = useState(0);
  useEffect(() => {
    const on = () => setPage(pageOf(location.hash));
    addEventListener('hashchange', on);
    return () => removeEventListener('hashchange', on);
  }, []);
  useEffect(() => {
    setError(null);
    get<Meta>('/admin/meta').then(setMeta, (e: Error) => setError(e.message));
  }, [attempt]);
  return (
    <>
      <header class="top">
        <span class="brand">pi-gateway console</span>
        <nav>
          {PAGES.map((p) => (
            <a href={`#${p.id}`} class={p.id === page ? 'active' : ''} data-testid={`nav-${p.id}`}>
              {p.title}
            </a>
          ))}
        </nav>
        <span class="signout">
          <span data-testid="operator">
            {operator.name} ({operator.role})
          </span>{' '}
          <button type="button" data-testid="sign-out" onClick={() => void signOut()}>
            Sign out
          </button>
        </span>
      </header>
      <main>
        {meta === null && error !== null ? (
          <p class="error" data-testid="meta-error">
            {error}{' '}
            <button type="button" data-testid="meta-retry" onClick={() => setAttempt(attempt + 1)}>
              Try again
            </button>
          </p>
        ) : meta === null ? (
          <p class="boot">Loading…</p>
        ) : page === 'requests' ? (
          <RequestsPage meta={meta} />
        ) : page === 'spend' ? (
          <SpendPage meta={meta} />
        ) : page === 'wallets' ? (
          <WalletsPage meta={meta} />
        ) : page === 'routing' ? (
          <RoutingPage meta={meta} />
        ) : page === 'health' ? (
          <HealthPage />
        ) : (
          <AuditPage />
        )}
      </main>
    </>
  );
}

const root = document.getElementById('app') as HTMLElement;
startSession().then(
  (operator) => {
    if (operator === null) {
      // The secret went to another page already (a closed tab, another window): sign in again.
      location.href = '/console/login';
      return;
    }
    // The page's "Loading…" placeholder goes: render() would keep children it did not create.
    root.textContent = '';
    render(<App operator={operator} />, root);
  },
  () => {
    root.textContent = 'The console could not reach its gateway; reload to try again.';
  },
);
