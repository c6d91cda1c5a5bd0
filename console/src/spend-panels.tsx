// The Spend page's panels beyond the totals: warnings (wallets below their workspace's
// low_balance_usd, keys about to expire), series over time (billed requests with their errors,
// latency p50/p95, cost; per hour or day, for everything or per workspace, model or provider), and
// spend and last use per API key. Counts mean what `pi-gateway usage` means: "Requests" are billed
// requests; rejected and unbilled ones are shown apart.
import { useEffect, useState } from 'preact/hooks';
import { get, type KeySpend, qs, type Series, type Warnings } from './api.ts';
import { TimeColumns, TimeLines } from './charts-time.tsx';
import { ms, num, usd, utc } from './format.ts';

export type Range = { from: string; to: string; workspace: string };

/** Fetches `path` whenever it changes; the last error replaces the data (no stale figures under it). */
function useAdmin<T>(path: string): { data: T | null; error: string | null } {
  const [state, setState] = useState<{ data: T | null; error: string | null }>({ data: null, error: null });
  useEffect(() => {
    let live = true;
    get<T>(path).then(
      (data) => live && setState({ data, error: null }),
      (e: Error) => live && setState({ data: null, error: e.message }),
    );
    return () => {
      live = false;
    };
  }, [path]);
  return state;
}

export function WarningsPanel() {
  const { data, error } = useAdmin<Warnings>('/admin/warnings');
  if (error) return <p class="error">{error}</p>;
  if (!data) return null;
  const none = data.low_balance.length === 0 && data.keys_expiring.length === 0;
  return (
    <div class={`panel${none ? '' : ' warn'}`} data-testid="warnings">
      <h2>Warnings</h2>
      {none && (
        <p class="empty">No wallet below its threshold; no key expires within {data.expiry_window_days} days.</p>
      )}
      {data.low_balance.length > 0 && (
        <table class="grid" data-testid="low-balance">
          <thead>
            <tr>
              <th>Low balance</th>
              <th class="n">Available</th>
              <th class="n">Threshold</th>
            </tr>
          </thead>
          <tbody>
            {data.low_balance.map((w) => (
              <tr class="low" data-workspace={w.workspace}>
                <td>
                  {w.workspace} <small>{w.name}</small>
                </td>
                <td class="n">{usd(w.available_usd)}</td>
                <td class="n">{usd(w.low_balance_usd)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {data.keys_expiring.length > 0 && (
        <table class="grid" data-testid="keys-expiring">
          <thead>
            <tr>
              <th>Key expiring within {data.expiry_window_days} days</th>
              <th>Workspace</th>
              <th>Expires (UTC)</th>
              <th class="n">In</th>
            </tr>
          </thead>
          <tbody>
            {data.keys_expiring.map((k) => (
              <tr data-key={k.id}>
                <td>
                  {k.name ?? '(unnamed)'} <code>{k.prefix}…</code>
                </td>
                <td>{k.workspace}</td>
                <td>{utc(k.expires_at)}</td>
                <td class="n">
                  {k.expires_in_hours < 48 ? `${k.expires_in_hours} h` : `${Math.floor(k.expires_in_hours / 24)} days`}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </div>
  );
}

const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);

export function SeriesPanel(props: { range: Range }) {
  const [interval, setEvery] = useState<'' | 'hour' | 'day'>('');
  const [by, setBy] = useState<Series['by']>('total');
  // The group whose series the charts show (a row of the table clicked); null: everything.
  const [focus, setFocus] = useState<string | null>(null);
  const total = useAdmin<Series>(`/admin/spend/series${qs({ ...props.range, interval })}`);
  const grouped = useAdmin<Series>(`/admin/spend/series${qs({ ...props.range, interval, by })}`);
  const focused = by === 'total' || focus === null ? undefined : grouped.data?.series.find((g) => g.key === focus);
  const t = focused ? grouped.data : total.data;
  const s = focused ?? total.data?.series[0];
  return (
    <div class="panel" data-testid="series">
      <h2>Over time</h2>
      <form class="filters" onSubmit={(e) => e.preventDefault()}>
        <label>
          Every
          <select
            name="interval"
            value={interval}
            onChange={(e) => setEvery((e.target as HTMLSelectElement).value as '' | 'hour' | 'day')}
          >
            <option value="">auto</option>
            <option value="hour">hour</option>
            <option value="day">day (UTC)</option>
          </select>
        </label>
        <label>
          Per
          <select
            name="by"
            value={by}
            onChange={(e) => {
              setBy((e.target as HTMLSelectElement).value as Series['by']);
              setFocus(null);
            }}
          >
            <option value="total">everything</option>
            <option value="workspace">workspace</option>
            <option value="model">model</option>
            <option value="provider">provider</option>
          </select>
        </label>
      </form>
      {total.error && <p class="error">{total.error}</p>}
      {t && s && (
        <>
          <p class="range" data-testid="series-focus">
            {focused ? (
              <>
                Charts for {by} <strong>{focused.key || '(none)'}</strong>{' '}
                <button type="button" onClick={() => setFocus(null)}>
                  show everything
                </button>
              </>
            ) : (
              `Charts for everything${by === 'total' ? '' : `; click a ${by} below for its own`}`
            )}
          </p>
          <SeriesCharts data={t} series={s} />
        </>
      )}
      {by !== 'total' && grouped.error && (
        <p class="error" data-testid="series-table-error">
          {grouped.error}
        </p>
      )}
      {by !== 'total' && grouped.data && <SeriesTable data={grouped.data} by={by} focus={focus} onFocus={setFocus} />}
    </div>
  );
}

type OneSeries = Series['series'][number];

/** Billed requests with their errors, latency p50/p95 and cost of one series. */
function SeriesCharts(props: { data: Series; series: OneSeries }) {
  const d = props.data;
  const x = props.series;
  return (
    <>
      <h3>
        Billed requests, <span class="legend-bad">errors</span>
      </h3>
      <TimeColumns
        testid="requests-chart"
        label="Billed requests and errors over time"
        buckets={d.buckets}
        interval={d.interval}
        values={x.requests}
        overlay={x.errors}
        format={(m) => num(m)}
        title={(i) =>
          `${utc(d.buckets[i])}: ${num(x.requests[i])} billed, ${num(x.errors[i])} errors, ${num(x.rejected[i])} rejected, ${num(x.unbilled[i])} unbilled`
        }
      />
      <h3>
        Latency <span class="legend-p50">p50</span> and <span class="legend-p95">p95</span> (nearest rank)
      </h3>
      <TimeLines
        testid="latency-chart"
        label="Latency p50 and p95 over time"
        buckets={d.buckets}
        interval={d.interval}
        lines={[
          { name: 'p50', values: x.p50_ms, class: 'chart-line' },
          { name: 'p95', values: x.p95_ms, class: 'chart-line-2' },
        ]}
        format={(m) => ms(m)}
        title={(i) => `${utc(d.buckets[i])}: p50 ${ms(x.p50_ms[i])}, p95 ${ms(x.p95_ms[i])}`}
      />
      <h3>Cost</h3>
      <TimeColumns
        testid="cost-chart"
        label="Cost over time"
        buckets={d.buckets}
        interval={d.interval}
        values={x.cost_usd.map(Number)}
        // The axis' top is the largest bucket's cost, written as the server's exact decimal string
        // (through floats it read "$1.23e+3" for $1,234.56, or rounded a cost to three digits).
        format={(m) => usd(x.cost_usd.find((c) => Number(c) === m) ?? '0')}
        title={(i) => `${utc(d.buckets[i])}: ${usd(x.cost_usd[i])}`}
      />
    </>
  );
}

/** One row per group over the range; clicking one charts its own series. */
function SeriesTable(props: { data: Series; by: string; focus: string | null; onFocus(key: string): void }) {
  return (
    <table class="grid" data-testid="series-table">
      <thead>
        <tr>
          <th>{props.by}</th>
          <th class="n">Requests</th>
          <th class="n">Rejected</th>
          <th class="n">Unbilled</th>
          <th class="n">Errors</th>
          <th class="n">Worst p95</th>
          <th class="n">Cost</th>
        </tr>
      </thead>
      <tbody>
        {props.data.series.map((g) => (
          <tr
            data-key={g.key}
            class={`click${g.key === props.focus ? ' selected' : ''}`}
            onClick={() => props.onFocus(g.key)}
          >
            <td class="clip" title={g.key}>
              {g.key || '(none)'}
            </td>
            <td class="n">{num(sum(g.requests))}</td>
            <td class="n">{num(sum(g.rejected))}</td>
            <td class="n">{num(sum(g.unbilled))}</td>
            <td class="n">{num(sum(g.errors))}</td>
            <td class="n">
              {ms(g.p95_ms.reduce<number | null>((a, v) => (v === null ? a : a === null ? v : Math.max(a, v)), null))}
            </td>
            <td class="n">{usd(g.total_cost_usd)}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

export function KeysPanel(props: { range: Range }) {
  const { data, error } = useAdmin<{ keys: KeySpend[] }>(`/admin/spend/keys${qs(props.range)}`);
  return (
    <div class="panel">
      <h2>By API key</h2>
      {error && <p class="error">{error}</p>}
      {data && (
        <table class="grid" data-testid="by-key">
          <thead>
            <tr>
              <th>Key</th>
              <th>Workspace</th>
              <th>State</th>
              <th class="n">Requests</th>
              <th class="n">Rejected</th>
              <th class="n">Unbilled</th>
              <th class="n">Tokens in</th>
              <th class="n">Tokens out</th>
              <th class="n">Cost</th>
              <th>Last used (UTC)</th>
            </tr>
          </thead>
          <tbody>
            {data.keys.map((k) => (
              <tr data-key={k.id} class={k.state === 'active' || k.state === null ? '' : 'muted'}>
                <td class="clip" title={k.name ?? k.id}>
                  {k.name ?? '(unnamed)'} <code>{k.prefix ? `${k.prefix}…` : k.id}</code>
                </td>
                <td>{k.workspace ?? '—'}</td>
                <td>{k.state ?? '—'}</td>
                <td class="n">{num(k.requests)}</td>
                <td class="n">{num(k.rejected)}</td>
                <td class="n">{num(k.unbilled)}</td>
                <td class="n">{num(k.prompt_tokens)}</td>
                <td class="n">{num(k.completion_tokens)}</td>
                <td class="n">{usd(k.cost_usd)}</td>
                <td>{k.last_used_at ? utc(k.last_used_at) : 'never'}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </div>
  );
}
