// Spend: cost and tokens by workspace, model, provider, API key and UTC day over a range, as charts
// and tables, with series over time and the CSV export (day × workspace × model × provider) of the
// same range, under the warnings (low balances, keys about to expire). "Requests" are billed
// requests, as `pi-gateway usage` counts them; rejected and unbilled requests are columns apart.
// The range is in the URL, like the Requests page's filters.
import { useEffect, useMemo, useState } from 'preact/hooks';
import { get, type Meta, qs, type Spend, type SpendLine } from './api.ts';
import { BarChart, DayColumns } from './charts.tsx';
import { CommittedInput } from './committed-input.tsx';
import { num, usd, utc } from './format.ts';
import { KeysPanel, SeriesPanel, WarningsPanel } from './spend-panels.tsx';
import { navigate, useHashParams } from './url-state.ts';

const REQUESTS_TITLE = 'Billed requests (a settlement, $0 included): what pi-gateway usage counts';
const REJECTED_TITLE = 'Refused by the gateway before any upstream attempt (key, rate limit, wallet, unknown model)';
const UNBILLED_TITLE = 'Neither billed nor rejected: every attempt failed, the client left first, token counting';

function SpendTable(props: { title: string; lines: SpendLine[]; testid: string }) {
  return (
    <div class="panel">
      <h2>{props.title}</h2>
      <BarChart
        testid={`${props.testid}-chart`}
        label={`Cost ${props.title.toLowerCase()}`}
        bars={props.lines.map((l) => ({ label: l.key, value: Number(l.cost_usd), text: usd(l.cost_usd) }))}
      />
      <table class="grid" data-testid={props.testid}>
        <thead>
          <tr>
            <th>{props.title.replace(/^By /, '')}</th>
            <th class="n" title={REQUESTS_TITLE}>
              Requests
            </th>
            <th class="n" title={REJECTED_TITLE}>
              Rejected
            </th>
            <th class="n" title={UNBILLED_TITLE}>
              Unbilled
            </th>
            <th class="n">Tokens in</th>
            <th class="n">Tokens out</th>
            <th class="n">Cost</th>
          </tr>
        </thead>
        <tbody>
          {props.lines.map((l) => (
            <tr data-key={l.key}>
              <td class="clip" title={l.key}>
                {l.key || '(none)'}
              </td>
              <td class="n">{num(l.requests)}</td>
              <td class="n">{num(l.rejected)}</td>
              <td class="n">{num(l.unbilled)}</td>
              <td class="n">{num(l.prompt_tokens)}</td>
              <td class="n">{num(l.completion_tokens)}</td>
              <td class="n">{usd(l.cost_usd)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** A bound of the range: its day when it is 00:00 UTC, else its time too (a range to 2026-01-16T12:00
 *  holds that morning, which "to 2026-01-16 (exclusive)" would say it does not). */
const bound = (iso: string): string => (/T00:00:00(\.0+)?Z$/.test(iso) ? iso.slice(0, 10) : utc(iso));

export function SpendPage(props: { meta: Meta }) {
  // The range lives in the URL (`#spend?from=…&to=…&workspace=…`): a reload, a bookmark or a link
  // pasted to a colleague shows the same figures.
  const params = useHashParams();
  const { from = '', to = '', workspace = '' } = params;
  const range = useMemo(() => ({ from, to, workspace }), [from, to, workspace]);
  const setRange = (r: typeof range) => navigate('spend', r, false);
  const [spend, setSpend] = useState<Spend | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    // Only the answer for the range asked last is shown: an earlier, slower one arrives to nothing.
    let current = true;
    get<Spend>(`/admin/spend${qs(range)}`).then(
      (s) => {
        if (!current) return;
        setSpend(s);
        setError(null);
      },
      (e: Error) => current && setError(e.message),
    );
    return () => {
      current = false;
    };
  }, [range]);
  const field = (name: 'from' | 'to') => (
    <CommittedInput
      label={name === 'from' ? 'From (UTC)' : 'To (UTC, exclusive)'}
      name={name}
      value={range[name]}
      placeholder={name === 'from' ? '30 days back' : 'end of today'}
      onCommit={(v) => setRange({ ...range, [name]: v })}
    />
  );
  return (
    <section data-testid="page-spend">
      <h1>Spend</h1>
      <form class="filters" onSubmit={(e) => e.preventDefault()}>
        {field('from')}
        {field('to')}
        <label>
          Workspace
          <select
            value={range.workspace}
            onChange={(e) => setRange({ ...range, workspace: (e.target as HTMLSelectElement).value })}
          >
            <option value="">all</option>
            {props.meta.workspaces.map((w) => (
              <option value={w.id}>{w.id}</option>
            ))}
          </select>
        </label>
        <a class="button" data-testid="csv" href={`/admin/spend.csv${qs(range)}`} download="spend.csv">
          Download CSV
        </a>
      </form>
      <WarningsPanel />
      {error && <p class="error">{error}</p>}
      {spend && !error && (
        <>
          <p class="range" data-testid="spend-range">
            {bound(spend.from)} to {bound(spend.to)} (exclusive), UTC
          </p>
          <div class="cards" data-testid="spend-total">
            <div class="card">
              <span>Cost</span>
              <strong data-testid="total-cost">{usd(spend.total.cost_usd)}</strong>
            </div>
            <div class="card" title={REQUESTS_TITLE}>
              <span>Requests (billed)</span>
              <strong data-testid="total-requests">{num(spend.total.requests)}</strong>
            </div>
            <div class="card" title={REJECTED_TITLE}>
              <span>Rejected</span>
              <strong data-testid="total-rejected">{num(spend.total.rejected)}</strong>
            </div>
            <div class="card" title={UNBILLED_TITLE}>
              <span>Unbilled</span>
              <strong data-testid="total-unbilled">{num(spend.total.unbilled)}</strong>
            </div>
            <div class="card">
              <span>Tokens in</span>
              <strong>{num(spend.total.prompt_tokens)}</strong>
            </div>
            <div class="card">
              <span>Tokens out</span>
              <strong>{num(spend.total.completion_tokens)}</strong>
            </div>
          </div>
          <div class="panel">
            <h2>By day</h2>
            <DayColumns testid="day-chart" label="Cost by day" days={spend.by_day} />
          </div>
          <div class="columns">
            <SpendTable title="By workspace" lines={spend.by_workspace} testid="by-workspace" />
            <SpendTable title="By model" lines={spend.by_model} testid="by-model" />
            <SpendTable title="By provider" lines={spend.by_provider} testid="by-provider" />
            <SpendTable title="By day" lines={spend.by_day} testid="by-day" />
          </div>
          <SeriesPanel range={range} />
          <KeysPanel range={range} />
        </>
      )}
    </section>
  );
}
