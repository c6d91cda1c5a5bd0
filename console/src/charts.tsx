// Charts as inline SVG, drawn here (no chart library): a bar per group for the spend tables and a
// column per day. Every bar has a <title> with its exact figure; the tables beside them carry the
// same numbers as text. The chart itself is named by `label` (its aria-label) for screen readers.
import { usd } from './format.ts';

export interface Bar {
  label: string;
  /** Length, e.g. the cost as a number. */
  value: number;
  /** The exact figure shown at the bar's end and in its tooltip. */
  text: string;
}

export function BarChart(props: { bars: Bar[]; label: string; testid: string }) {
  const max = Math.max(0, ...props.bars.map((b) => b.value));
  const row = 24;
  const width = 520;
  const labelW = 170;
  const barW = width - labelW - 90;
  if (props.bars.length === 0) return <p class="empty">No spend in this range.</p>;
  return (
    <svg
      class="chart"
      data-testid={props.testid}
      viewBox={`0 0 ${width} ${props.bars.length * row + 4}`}
      width={width}
      height={props.bars.length * row + 4}
      role="img"
      aria-label={props.label}
    >
      {props.bars.map((b, i) => {
        const w = max > 0 ? Math.max(1, (b.value / max) * barW) : 1;
        return (
          <g key={b.label} transform={`translate(0 ${i * row + 2})`}>
            <title>{`${b.label}: ${b.text}`}</title>
            <text x={labelW - 8} y={15} text-anchor="end" class="chart-label">
              {b.label.length > 24 ? `${b.label.slice(0, 23)}…` : b.label || '(none)'}
            </text>
            <rect x={labelW} y={3} width={w} height={row - 8} rx={2} class="chart-bar" />
            <text x={labelW + w + 6} y={15} class="chart-value">
              {b.text}
            </text>
          </g>
        );
      })}
    </svg>
  );
}

export function DayColumns(props: {
  days: { key: string; cost_usd: string; requests: number }[];
  label: string;
  testid: string;
}) {
  const height = 160;
  const width = 640;
  const n = props.days.length;
  if (n === 0) return <p class="empty">No requests in this range.</p>;
  const max = Math.max(0, ...props.days.map((d) => Number(d.cost_usd)));
  const slot = Math.min(60, (width - 40) / n);
  return (
    <svg
      class="chart"
      data-testid={props.testid}
      viewBox={`0 0 ${width} ${height + 30}`}
      width={width}
      height={height + 30}
      role="img"
      aria-label={props.label}
    >
      <line x1={30} y1={height} x2={width} y2={height} class="chart-axis" />
      {props.days.map((d, i) => {
        const h = max > 0 ? Math.max(1, (Number(d.cost_usd) / max) * (height - 20)) : 1;
        const x = 34 + i * slot;
        return (
          <g key={d.key}>
            <title>{`${d.key}: ${usd(d.cost_usd)} over ${d.requests} requests`}</title>
            <rect x={x} y={height - h} width={Math.max(2, slot - 6)} height={h} rx={2} class="chart-bar" />
            {(n <= 10 || i % Math.ceil(n / 10) === 0) && (
              <text x={x} y={height + 16} class="chart-label">
                {d.key.slice(5)}
              </text>
            )}
          </g>
        );
      })}
    </svg>
  );
}
