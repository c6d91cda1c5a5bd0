// Health: the gateway's state and readiness, the serving config's hash and the last reload's result,
// and every deployment's breaker, recent failure rate and time to first byte (refreshed every 5 s).
import { useEffect, useState } from 'preact/hooks';
import { get, type Health } from './api.ts';
import { ms, pct, utc } from './format.ts';

export function HealthPage() {
  const [h, setH] = useState<Health | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    const load = () => get<Health>('/admin/health').then(setH, (e: Error) => setError(e.message));
    load();
    const timer = setInterval(load, 5000);
    return () => clearInterval(timer);
  }, []);
  if (!h)
    return (
      <section data-testid="page-health">{error ? <p class="error">{error}</p> : <p class="boot">Loading…</p>}</section>
    );
  const r = h.last_reload;
  return (
    <section data-testid="page-health">
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
      <table class="grid" data-testid="health-table">
        <thead>
          <tr>
            <th>Deployment</th>
            <th>Provider</th>
            <th>Model</th>
            <th>Callable</th>
            <th>Breaker</th>
            <th class="n">In a row</th>
            <th class="n">Window failures</th>
            <th class="n">Attempts</th>
            <th class="n">Failure rate</th>
            <th class="n">TTFB p50</th>
            <th class="n">TTFB p95</th>
          </tr>
        </thead>
        <tbody>
          {h.deployments.map((d) => (
            <tr data-deployment={d.id} class={d.down || !d.callable ? 'bad' : ''}>
              <td>{d.id}</td>
              <td>{d.provider}</td>
              <td>{d.model}</td>
              <td>{d.callable ? 'yes' : d.unservable_reason}</td>
              <td data-testid="breaker">
                {d.declared_status === 'down' ? 'declared down' : d.breaker.state}
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
      </table>
    </section>
  );
}
