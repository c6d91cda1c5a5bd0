// Health: the gateway's state and readiness, the serving config's hash and the last reload's result,
// and every deployment — grouped by platform, with a filter — with whether it serves (yes, only as a
// last resort: declared down or down by its breaker, or not at all and why), its breaker, recent
// failure rate and time to first byte (refreshed every 5 s).
import { useEffect, useState } from 'preact/hooks';
import { get, type Health, type HealthDeployment } from './api.ts';
import { ms, pct, utc } from './format.ts';

/** How long a refresh may go unanswered before its figures are no longer shown as current. */
const STUCK_MS = 15_000;

export function HealthPage() {
  const [h, setH] = useState<Health | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [filter, setFilter] = useState('');
  const [problemsOnly, setProblemsOnly] = useState(false);
  // How many refreshes have been answered (or failed) so far, on the page as `data-answered`: the
  // one outward sign that an answer was handled even when the figures it brought did not change.
  const [answered, setAnswered] = useState(0);
  useEffect(() => {
    // One refresh at a time: a gateway slow to answer is not asked again before it has (each tick
    // would add a request to its load), and only the latest question's answer is shown. A question
    // unanswered for STUCK_MS is given up: its figures are no longer current, so they go, the page
    // says why, and the next tick asks again.
    let live = true;
    let asked = 0;
    let askedAt = 0;
    let waiting = false;
    const load = () => {
      if (waiting) {
        if (Date.now() - askedAt < STUCK_MS) return;
        setH(null);
        setError(`the gateway has not answered for ${STUCK_MS / 1000} s`);
      }
      const n = ++asked;
      askedAt = Date.now();
      waiting = true;
      const mine = () => live && n === asked;
      get<Health>('/admin/health').then(
        (x) => {
          if (!mine()) return;
          waiting = false;
          setH(x);
          setError(null);
          setAnswered((a) => a + 1);
        },
        (e: Error) => {
          if (!mine()) return;
          waiting = false;
          // Figures that can no longer be refreshed are not shown as if they were current.
          setH(null);
          setError(e.message);
          setAnswered((a) => a + 1);
        },
      );
    };
    load();
    const timer = setInterval(load, 5000);
    return () => {
      live = false;
      clearInterval(timer);
    };
  }, []);
  if (!h)
    return (
      <section data-testid="page-health" data-answered={answered}>
        {error ? <p class="error">{error}</p> : <p class="boot">Loading…</p>}
      </section>
    );
  const r = h.last_reload;
  return (
    <section data-testid="page-health" data-answered={answered}>
      <h1>Health</h1>
      <div class="cards">
        <div class="card">
          <span>State</span>
          <strong data-testid="health-state" class={h.ready ? 'ok' : 'error'}>
            {h.ready ? 'ready' : `not ready (${h.state})`}
          </strong>
        </div>
        <div class="card">
          <span>Config hash</span>
          <strong class="mono" data-testid="config-hash" title={h.config.hash}>
            {h.config.hash.slice(0, 12)}
          </strong>
        </div>
        <div class="card">
          <span>Last reload</span>
          <strong data-testid="last-reload">
            {r === null ? 'none since start' : `${r.ok ? 'ok' : 'refused'} at ${utc(r.at)}`}
          </strong>
        </div>
      </div>
      {h.reasons.length > 0 && (
        <ul class="error">
          {h.reasons.map((x) => (
            <li>{x}</li>
          ))}
        </ul>
      )}
      {r && r.problems.length > 0 && (
        <ul class="error">
          {r.problems.map((x) => (
            <li>{x}</li>
          ))}
        </ul>
      )}
      <p class="range">Recent figures: the last {h.recent_window_minutes} minutes of the request log.</p>
      <form class="filters" onSubmit={(e) => e.preventDefault()}>
        <label class="wide">
          Filter (deployment, platform or model)
          <input
            name="filter"
            value={filter}
            placeholder="alpha, chat-small…"
            onInput={(e) => setFilter((e.target as HTMLInputElement).value)}
          />
        </label>
        <label class="check">
          <input
            type="checkbox"
            name="problems"
            checked={problemsOnly}
            onChange={(e) => setProblemsOnly((e.target as HTMLInputElement).checked)}
          />{' '}
          Only deployments not serving normally
        </label>
      </form>
      <div class="scroll">
        <table class="grid" data-testid="health-table">
          <thead>
            <tr>
              <th>Deployment</th>
              <th>Model</th>
              <th>Declared</th>
              <th>Serves</th>
              <th>Breaker</th>
              <th class="n">In a row</th>
              <th class="n">Window failures</th>
              <th class="n">Attempts</th>
              <th class="n">Failure rate</th>
              <th class="n">TTFB p50</th>
              <th class="n">TTFB p95</th>
            </tr>
          </thead>
          {byPlatform(h.deployments.filter((d) => shown(d, filter, problemsOnly))).map(([platform, ds]) => (
            <tbody data-platform={platform}>
              <tr class="group">
                <th colSpan={11}>
                  {platform} · {ds.length} deployment{ds.length === 1 ? '' : 's'}
                  {ds.some((d) => d.serves !== 'yes')
                    ? ` · ${ds.filter((d) => d.serves !== 'yes').length} not serving normally`
                    : ''}
                </th>
              </tr>
              {ds.map((d) => (
                <tr data-deployment={d.id} class={d.serves === 'yes' ? '' : 'bad'}>
                  <td>{d.id}</td>
                  <td>{d.model}</td>
                  <td data-testid="declared">{d.declared_status}</td>
                  <td data-testid="serves">
                    {d.serves === 'yes' ? 'yes' : `${d.serves === 'no' ? 'no' : 'last resort'} — ${d.serves_why}`}
                  </td>
                  <td data-testid="breaker">
                    {d.breaker.state}
                    {d.breaker.open_until ? ` until ${utc(d.breaker.open_until)}` : ''}
                  </td>
                  <td class="n">{d.breaker.consecutive_failures}</td>
                  <td class="n">{pct(d.breaker.error_rate)}</td>
                  <td class="n" data-testid="recent-attempts">
                    {d.recent.attempts}
                  </td>
                  <td class="n" data-testid="failure-rate">
                    {pct(d.recent.failure_rate)}
                  </td>
                  <td class="n">{ms(d.recent.ttfb_p50_ms)}</td>
                  <td class="n">{ms(d.recent.ttfb_p95_ms)}</td>
                </tr>
              ))}
            </tbody>
          ))}
        </table>
      </div>
    </section>
  );
}

/** Whether a deployment passes the page's filter: text in its id, platform or model; and, when
 *  asked, only those not serving normally. */
function shown(d: HealthDeployment, filter: string, problemsOnly: boolean): boolean {
  const f = filter.trim().toLowerCase();
  if (problemsOnly && d.serves === 'yes' && d.breaker.state === 'closed') return false;
  return f === '' || [d.id, d.provider, d.model].some((x) => x.toLowerCase().includes(f));
}

/** Deployments by platform, platforms in name order (each platform's deployments as listed). */
function byPlatform(ds: HealthDeployment[]): [string, HealthDeployment[]][] {
  const out = new Map<string, HealthDeployment[]>();
  for (const d of ds) out.set(d.provider, [...(out.get(d.provider) ?? []), d]);
  return [...out.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
}
