// Requests: the request log, newest first, with filters, paging back, a live tail (polling `since`)
// and one request's detail in a drawer (attempts with deployment, status and timing; tokens; cost;
// its ledger rows; app title and origin). The log holds no prompts, keys or credentials.
import { useEffect, useRef, useState } from 'preact/hooks';
import { get, type Meta, qs, type RequestDetail, type RequestRow } from './api.ts';
import { ms, num, usd, utc } from './format.ts';

interface Filters {
  workspace: string;
  key: string;
  model: string;
  provider: string;
  status: string;
  ended: string;
  from: string;
  to: string;
}

const EMPTY: Filters = { workspace: '', key: '', model: '', provider: '', status: '', ended: '', from: '', to: '' };
const TAIL_MS = 2000;

function Select(props: {
  label: string;
  name: keyof Filters;
  value: string;
  options: string[];
  onChange: (name: keyof Filters, v: string) => void;
}) {
  return (
    <label>
      {props.label}
      <select
        name={props.name}
        value={props.value}
        onChange={(e) => props.onChange(props.name, (e.target as HTMLSelectElement).value)}
      >
        <option value="">any</option>
        {props.options.map((o) => (
          <option value={o}>{o}</option>
        ))}
      </select>
    </label>
  );
}

function Text(props: {
  label: string;
  name: keyof Filters;
  value: string;
  placeholder?: string;
  onChange: (name: keyof Filters, v: string) => void;
}) {
  return (
    <label>
      {props.label}
      <input
        name={props.name}
        value={props.value}
        placeholder={props.placeholder}
        onChange={(e) => props.onChange(props.name, (e.target as HTMLInputElement).value.trim())}
      />
    </label>
  );
}

export function RequestsPage(props: { meta: Meta }) {
  const [filters, setFilters] = useState<Filters>(EMPTY);
  const [rows, setRows] = useState<RequestRow[]>([]);
  const [nextBefore, setNextBefore] = useState<number | null>(null);
  const [live, setLive] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [open, setOpen] = useState<string | null>(null);
  const newest = useRef<number | null>(null);

  const load = (f: Filters) => {
    get<{ requests: RequestRow[]; next_before: number | null }>(`/admin/requests${qs({ ...f, limit: 50 })}`).then(
      (r) => {
        setRows(r.requests);
        setNextBefore(r.next_before);
        newest.current = r.requests[0]?.id ?? newest.current ?? 0;
        setError(null);
      },
      (e: Error) => setError(e.message),
    );
  };
  useEffect(() => load(filters), [filters]);

  // Live tail: ask for rows newer than the newest shown, and put them on top.
  useEffect(() => {
    if (!live) return;
    const timer = setInterval(() => {
      get<{ requests: RequestRow[] }>(
        `/admin/requests${qs({ ...filters, since: newest.current ?? 0, limit: 200 })}`,
      ).then(
        (r) => {
          if (r.requests.length === 0) return;
          newest.current = r.requests[0]?.id ?? newest.current;
          setRows((old) => [...r.requests, ...old].slice(0, 500));
        },
        () => undefined,
      );
    }, TAIL_MS);
    return () => clearInterval(timer);
  }, [live, filters]);

  const older = () => {
    if (nextBefore === null) return;
    get<{ requests: RequestRow[]; next_before: number | null }>(
      `/admin/requests${qs({ ...filters, before: nextBefore, limit: 50 })}`,
    ).then((r) => {
      setRows((old) => [...old, ...r.requests]);
      setNextBefore(r.next_before);
    });
  };
  const set = (name: keyof Filters, v: string) => setFilters({ ...filters, [name]: v });
  const m = props.meta;

  return (
    <section data-testid="page-requests">
      <h1>Requests</h1>
      <form class="filters" onSubmit={(e) => e.preventDefault()}>
        <Select
          label="Workspace"
          name="workspace"
          value={filters.workspace}
          options={m.workspaces.map((w) => w.id)}
          onChange={set}
        />
        <Text label="Key id" name="key" value={filters.key} placeholder="key_…" onChange={set} />
        <Select label="Model" name="model" value={filters.model} options={m.models} onChange={set} />
        <Select label="Provider" name="provider" value={filters.provider} options={m.providers} onChange={set} />
        <Select
          label="Status"
          name="status"
          value={filters.status}
          options={['2xx', '4xx', '5xx', 'error', '200', '401', '402', '404', '429', '502', '503']}
          onChange={set}
        />
        <Select label="Ended" name="ended" value={filters.ended} options={m.ended} onChange={set} />
        <Text label="From (UTC)" name="from" value={filters.from} placeholder="2026-01-15" onChange={set} />
        <Text label="To (UTC)" name="to" value={filters.to} placeholder="2026-01-16T00:00" onChange={set} />
        <label class="check">
          <input
            type="checkbox"
            checked={live}
            data-testid="live"
            onChange={(e) => setLive((e.target as HTMLInputElement).checked)}
          />{' '}
          Live
        </label>
      </form>
      {error && <p class="error">{error}</p>}
      <table class="grid" data-testid="requests-table">
        <thead>
          <tr>
            <th>Time (UTC)</th>
            <th>Workspace</th>
            <th>Endpoint</th>
            <th>Model</th>
            <th>Provider</th>
            <th>Status</th>
            <th>Ended</th>
            <th class="n">Attempts</th>
            <th class="n">Latency</th>
            <th class="n">Tokens in / out</th>
            <th class="n">Cost</th>
          </tr>
        </thead>
        <tbody>
          {rows.map((r) => (
            <tr
              key={r.id}
              class={`click${r.status >= 400 ? ' bad' : ''}`}
              data-trace={r.trace_id}
              onClick={() => setOpen(r.trace_id)}
            >
              <td>{utc(r.time)}</td>
              <td>{r.workspace ?? '—'}</td>
              <td>{r.endpoint}</td>
              <td>{r.model_served ?? r.model_requested ?? '—'}</td>
              <td>{r.provider ?? '—'}</td>
              <td>
                {r.status}
                {r.error_code ? ` ${r.error_code}` : ''}
              </td>
              <td>{r.ended ?? '—'}</td>
              <td class="n">{r.attempts}</td>
              <td class="n">{ms(r.latency_ms)}</td>
              <td class="n">
                {num(r.prompt_tokens)} / {num(r.completion_tokens)}
              </td>
              <td class="n">{usd(r.cost_usd)}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {rows.length === 0 && <p class="empty">No request matches.</p>}
      {nextBefore !== null && (
        <button type="button" onClick={older}>
          Older
        </button>
      )}
      {open && <Drawer trace={open} onClose={() => setOpen(null)} />}
    </section>
  );
}

function Drawer(props: { trace: string; onClose: () => void }) {
  const [d, setD] = useState<RequestDetail | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    setD(null);
    get<RequestDetail>(`/admin/requests/${encodeURIComponent(props.trace)}`).then(setD, (e: Error) =>
      setError(e.message),
    );
  }, [props.trace]);
  return (
    <aside class="drawer" data-testid="request-detail">
      <button type="button" class="close" onClick={props.onClose} aria-label="Close">
        ×
      </button>
      <h2>Request</h2>
      {error && <p class="error">{error}</p>}
      {d && (
        <>
          <dl class="facts">
            <dt>Trace id</dt>
            <dd data-testid="detail-trace">{d.trace_id}</dd>
            <dt>Time (UTC)</dt>
            <dd>{utc(d.time)}</dd>
            <dt>Workspace / key</dt>
            <dd>
              {d.workspace ?? '—'} / {d.key ? `${d.key.name ?? d.key.id} (${d.key.prefix}…)` : '—'}
            </dd>
            <dt>Endpoint</dt>
            <dd>
              {d.endpoint}
              {d.stream ? ' (stream)' : ''}
            </dd>
            <dt>Model</dt>
            <dd>
              {d.model_requested ?? '—'}
              {d.model_served && d.model_served !== d.model_requested ? ` → ${d.model_served}` : ''}
            </dd>
            <dt>Served by</dt>
            <dd>{d.deployment ?? '—'}</dd>
            <dt>Status</dt>
            <dd>
              {d.status}
              {d.error_code ? ` ${d.error_code}` : ''} · ended {d.ended ?? '—'}
            </dd>
            <dt>Latency / TTFB</dt>
            <dd>
              {ms(d.latency_ms)} / {ms(d.ttfb_ms)}
            </dd>
            <dt>Tokens</dt>
            <dd data-testid="detail-tokens">
              {num(d.prompt_tokens)} in, {num(d.completion_tokens)} out
              {d.cached_tokens ? `, ${num(d.cached_tokens)} cached` : ''}
              {d.reasoning_tokens ? `, ${num(d.reasoning_tokens)} reasoning` : ''}
            </dd>
            <dt>Cost</dt>
            <dd data-testid="detail-cost">{usd(d.cost_usd)}</dd>
            <dt>App</dt>
            <dd>
              {d.app_title ?? '—'}
              {d.app_origin ? ` · ${d.app_origin}` : ''}
            </dd>
            <dt>Session</dt>
            <dd>{d.session_id ?? '—'}</dd>
          </dl>
          <h3>Attempts</h3>
          <table class="grid" data-testid="detail-attempts">
            <thead>
              <tr>
                <th class="n">#</th>
                <th>Deployment</th>
                <th>Provider</th>
                <th>Outcome</th>
                <th class="n">Status</th>
                <th class="n">Time</th>
              </tr>
            </thead>
            <tbody>
              {d.attempt_list.map((a) => (
                <tr class={a.outcome === 'ok' ? '' : 'bad'}>
                  <td class="n">{a.n}</td>
                  <td>{a.deployment}</td>
                  <td>{a.provider}</td>
                  <td>{a.outcome}</td>
                  <td class="n">{a.status ?? '—'}</td>
                  <td class="n">{ms(a.ms)}</td>
                </tr>
              ))}
            </tbody>
          </table>
          {d.attempt_list.length === 0 && <p class="empty">No upstream attempt (refused before routing).</p>}
          <h3>Ledger</h3>
          <table class="grid">
            <tbody>
              {d.ledger.map((l) => (
                <tr>
                  <td>
                    {l.kind}
                    {l.estimated ? ' (estimated)' : ''}
                  </td>
                  <td class="n">{usd(l.amount_usd)}</td>
                  <td>{utc(l.time)}</td>
                </tr>
              ))}
            </tbody>
          </table>
          {d.ledger.length === 0 && <p class="empty">Nothing held or charged.</p>}
        </>
      )}
    </aside>
  );
}
