// Spend: cost and tokens by workspace, model, provider and UTC day over a range, as charts and
// tables, with the CSV export (day × workspace × model × provider) of the same range.
import { useEffect, useState } from 'preact/hooks';
import { get, type Meta, qs, type Spend, type SpendLine } from './api.ts';
import { BarChart, DayColumns } from './charts.tsx';
import { num, usd } from './format.ts';

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
            <th class="n">Requests</th>
            <th class="n">Tokens in</th>
            <th class="n">Tokens out</th>
            <th class="n">Cost</th>
          </tr>
        </thead>
        <tbody>
          {props.lines.map((l) => (
            <tr data-key={l.key}>
              <td>{l.key || '(none)'}</td>
              <td class="n">{num(l.requests)}</td>
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

export function SpendPage(props: { meta: Meta }) {
  const [range, setRange] = useState({ from: '', to: '', workspace: '' });
  const [spend, setSpend] = useState<Spend | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    get<Spend>(`/admin/spend${qs(range)}`).then(
      (s) => {
        setSpend(s);
        setError(null);
      },
      (e: Error) => setError(e.message),
    );
  }, [range]);
  const field = (name: 'from' | 'to') => (
    <label>
      {name === 'from' ? 'From (UTC)' : 'To (UTC, exclusive)'}
      <input
        name={name}
        value={range[name]}
        placeholder={name === 'from' ? '30 days back' : 'end of today'}
        onChange={(e) => setRange({ ...range, [name]: (e.target as HTMLInputElement).value.trim() })}
      />
    </label>
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
      {error && <p class="error">{error}</p>}
      {spend && (
        <>
          <p class="range">
            {spend.from.slice(0, 10)} to {spend.to.slice(0, 10)} (exclusive), UTC
          </p>
          <div class="cards" data-testid="spend-total">
            <div class="card">
              <span>Cost</span>
              <strong data-testid="total-cost">{usd(spend.total.cost_usd)}</strong>
            </div>
            <div class="card">
              <span>Requests</span>
              <strong data-testid="total-requests">{num(spend.total.requests)}</strong>
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
        </>
      )}
    </section>
  );
}
