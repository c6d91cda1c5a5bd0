// Requests: the request log, newest first, with filters, a trace id a customer pastes, a key by name
// or prefix, paging both ways, a live tail (polling `since`) and one request's detail in a drawer
// (attempts with deployment, status and timing; tokens; cost; its ledger rows; app title and
// origin). Filters, the page's cursor and the open request live in the URL (`#requests?…`), so a
// reload keeps them and a link shows a colleague the same thing. Rows are reachable by keyboard
// (Tab, Enter opens); Escape closes the drawer. The log holds no prompts, keys or credentials.
import { useEffect, useRef, useState } from 'preact/hooks';
import { CommittedInput } from './committed-input.tsx';
import { get, type Meta, qs, type RequestDetail, type RequestListRow } from './api.ts';
import { ms, num, usd, utc } from './format.ts';
import { navigate, type Params, useHashParams } from './url-state.ts';

const FILTERS = ['trace', 'key', 'workspace', 'model', 'provider', 'status', 'ended', 'from', 'to'] as const;
type Filter = (typeof FILTERS)[number];
const CURSORS = ['before', 'after'] as const;
const TAIL_MS = 2000;
const PAGE = 50;

interface Page {
  requests: RequestListRow[];
  next_before: number | null;
  prev_after: number | null;
}

/** The filters of the URL's parameters (the cursor and the open request left out). */
const filtersOf = (p: Params): Params =>
  Object.fromEntries(FILTERS.flatMap((f) => (p[f] === undefined ? [] : [[f, p[f]]])));

function Select(props: {
  label: string;
  name: Filter;
  value: string;
  options: string[];
  onChange: (name: Filter, v: string) => void;
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
  name: Filter;
  value: string;
  placeholder?: string;
  wide?: boolean;
  onChange: (name: Filter, v: string) => void;
}) {
  return (
    <CommittedInput
      label={props.label}
      class={props.wide ? 'wide' : ''}
      name={props.name}
      value={props.value}
      placeholder={props.placeholder}
      onCommit={(v) => props.onChange(props.name, v)}
    />
  );
}

/** A cell of client-chosen or long text: cut to the column with an ellipsis, the whole value on hover
 *  (and in the drawer). */
function Clip(props: { text: string | null | undefined }) {
  const t = props.text ?? '—';
  return (
    <td title={t}>
      <span class="clip">{t}</span>
    </td>
  );
}

/** Rows one live-tail fetch takes, and the most the page keeps. */
const TAIL_ROWS = 200;
const SHOWN_ROWS = 500;

/**
 * The page after a live-tail fetch: its rows on top. The table never hides a gap: when more rows
 * arrived than one fetch takes (the answer has an older-page cursor of its own) the new rows stand
 * alone, and when rows fall off the bottom the "Older" cursor moves to the last row shown, so the
 * rows between are one page away instead of skipped.
 */
function tailed(old: Page, r: Page): Page {
  const merged = r.next_before !== null ? r.requests : [...r.requests, ...old.requests];
  const requests = merged.slice(0, SHOWN_ROWS);
  const cut = r.next_before !== null || requests.length < merged.length;
  return { ...old, requests, next_before: cut ? (requests.at(-1)?.id ?? null) : old.next_before };
}

export function RequestsPage(props: { meta: Meta }) {
  const params = useHashParams();
  const filters = filtersOf(params);
  const cursor: Params = Object.fromEntries(CURSORS.flatMap((c) => (params[c] ? [[c, params[c]]] : [])));
  const open = params['open'] ?? null;
  const [page, setPage] = useState<Page | null>(null);
  // The query the page shown answers. Until the answer to a new one (filters changed) comes, the
  // rows shown are the old query's, and so are their cursors: Older from there, with the new
  // filters, would skip every new-filter row newer than the old page's last one.
  const [answered, setAnswered] = useState<string | null>(null);
  const [live, setLive] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const newest = useRef<number | null>(null);
  const query = qs({ ...filters, ...cursor, limit: PAGE });

  const go = (next: Params, push: boolean) => navigate('requests', next, push);
  useEffect(() => {
    let current = true;
    get<Page>(`/admin/requests${query}`).then(
      (r) => {
        if (!current) return;
        setPage(r);
        setAnswered(query);
        newest.current = r.requests[0]?.id ?? 0;
        setError(null);
        // A pasted trace id that found its request opens it.
        const only = r.requests.length === 1 ? r.requests[0] : undefined;
        const p = filtersOf(params);
        if (p['trace'] && only && !open) go({ ...p, ...cursor, open: only.trace_id }, false);
      },
      (e: Error) => {
        if (!current) return;
        // No stale rows under the error: what is shown is what the filter asked for, or nothing.
        setPage(null);
        setError(e.message);
      },
    );
    return () => {
      current = false;
    };
  }, [query]);

  // Live tail (on the newest page only): rows newer than the newest shown go on top.
  const tailing = live && cursor['before'] === undefined && cursor['after'] === undefined;
  useEffect(() => {
    if (!tailing) return;
    // A fetch still out when the filters change (or the tail stops) answers for rows no longer shown.
    let current = true;
    const timer = setInterval(() => {
      get<Page>(`/admin/requests${qs({ ...filters, since: newest.current ?? 0, limit: TAIL_ROWS })}`).then(
        (r) => {
          if (!current || r.requests.length === 0) return;
          newest.current = r.requests[0]?.id ?? newest.current;
          setPage((old) => (old ? tailed(old, r) : old));
        },
        () => undefined,
      );
    }, TAIL_MS);
    return () => {
      current = false;
      clearInterval(timer);
    };
  }, [tailing, query]);

  // A filter change starts from the newest page again.
  const set = (name: Filter, v: string) => go({ ...filters, [name]: v }, false);
  const openRow = (trace: string) => go({ ...filters, ...cursor, open: trace }, true);
  const close = () => {
    go({ ...filters, ...cursor }, false);
    // Back to the row the drawer was opened from, so the keyboard goes on where it was.
    if (open) (document.querySelector(`tr[data-trace="${CSS.escape(open)}"]`) as HTMLElement | null)?.focus();
  };
  const m = props.meta;
  const rows = page?.requests ?? [];
  const pager = answered === query ? page : null;

  return (
    <section data-testid="page-requests">
      <h1>Requests</h1>
      <form class="filters" onSubmit={(e) => e.preventDefault()} data-testid="request-filters">
        <Text
          label="Trace id (X-Pi-Trace-Id)"
          name="trace"
          value={filters['trace'] ?? ''}
          placeholder="paste a trace id"
          wide
          onChange={set}
        />
        <Text
          label="Key (name, prefix or id)"
          name="key"
          value={filters['key'] ?? ''}
          placeholder="backend, sk-pi-AbC…, key_…"
          onChange={set}
        />
        <Select
          label="Workspace"
          name="workspace"
          value={filters['workspace'] ?? ''}
          options={m.workspaces.map((w) => w.id)}
          onChange={set}
        />
        <Select label="Model" name="model" value={filters['model'] ?? ''} options={m.models} onChange={set} />
        <Select
          label="Provider"
          name="provider"
          value={filters['provider'] ?? ''}
          options={m.providers}
          onChange={set}
        />
        <Select
          label="Status"
          name="status"
          value={filters['status'] ?? ''}
          options={['2xx', '4xx', '5xx', 'error', '200', '401', '402', '404', '429', '502', '503']}
          onChange={set}
        />
        <Select label="Ended" name="ended" value={filters['ended'] ?? ''} options={m.ended} onChange={set} />
        <Text label="From (UTC)" name="from" value={filters['from'] ?? ''} placeholder="2026-01-15" onChange={set} />
        <Text label="To (UTC)" name="to" value={filters['to'] ?? ''} placeholder="2026-01-16T00:00" onChange={set} />
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
      {error && (
        <p class="error" data-testid="requests-error">
          {error}
        </p>
      )}
      {page && (
        <div class="scroll">
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
                <th>Key</th>
              </tr>
            </thead>
            <tbody>
              {rows.map((r) => (
                <tr
                  key={r.id}
                  tabIndex={0}
                  aria-label={`request ${r.trace_id}`}
                  class={`click${r.status >= 400 ? ' bad' : ''}${r.trace_id === open ? ' selected' : ''}`}
                  data-trace={r.trace_id}
                  onClick={() => openRow(r.trace_id)}
                  onKeyDown={(e) => {
                    if (e.key !== 'Enter' && e.key !== ' ') return;
                    e.preventDefault();
                    openRow(r.trace_id);
                  }}
                >
                  <td>{utc(r.time)}</td>
                  <Clip text={r.workspace} />
                  <td>{r.endpoint}</td>
                  <Clip text={r.model_served ?? r.model_requested} />
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
                  <Clip text={r.key_name ?? (r.key_prefix ? `${r.key_prefix}…` : r.key_id)} />
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {page && rows.length === 0 && <p class="empty">No request matches.</p>}
      <p class="pager">
        {pager && pager.prev_after !== null && (
          <button
            type="button"
            data-testid="newer"
            onClick={() => go({ ...filters, after: String(pager.prev_after) }, true)}
          >
            ← Newer
          </button>
        )}
        {(cursor['before'] || cursor['after']) && (
          <button type="button" data-testid="newest" onClick={() => go(filters, true)}>
            Newest
          </button>
        )}
        {pager && pager.next_before !== null && (
          <button
            type="button"
            data-testid="older"
            onClick={() => go({ ...filters, before: String(pager.next_before) }, true)}
          >
            Older →
          </button>
        )}
      </p>
      {open && <Drawer trace={open} onClose={close} />}
    </section>
  );
}

function Drawer(props: { trace: string; onClose: () => void }) {
  const [d, setD] = useState<RequestDetail | null>(null);
  const [error, setError] = useState<string | null>(null);
  const closeButton = useRef<HTMLButtonElement>(null);
  useEffect(() => {
    setD(null);
    setError(null);
    // Another request opened before this one's answer came: that answer is not this drawer's.
    let current = true;
    get<RequestDetail>(`/admin/requests/${encodeURIComponent(props.trace)}`).then(
      (x) => current && setD(x),
      (e: Error) => current && setError(e.message),
    );
    return () => {
      current = false;
    };
  }, [props.trace]);
  const onClose = useRef(props.onClose);
  onClose.current = props.onClose;
  // Focus goes into the drawer as it opens; Escape closes it from anywhere on the page.
  useEffect(() => {
    closeButton.current?.focus();
    const onKey = (e: KeyboardEvent) => {
      if (e.key === 'Escape') onClose.current();
    };
    addEventListener('keydown', onKey);
    return () => removeEventListener('keydown', onKey);
  }, [props.trace]);
  return (
    <div class="drawer" data-testid="request-detail" role="dialog" aria-labelledby="request-detail-title">
      <button
        type="button"
        class="close"
        onClick={props.onClose}
        aria-label="Close (Escape)"
        ref={closeButton}
        data-testid="detail-close"
      >
        ×
      </button>
      <h2 id="request-detail-title">Request</h2>
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
            <dd data-testid="detail-model">
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
    </div>
  );
}
