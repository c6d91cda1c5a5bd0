// Charts over time as inline SVG (no chart library): columns per bucket (one or two overlaid values:
// requests with their errors, cost) and lines (latency p50 and p95). Every bucket has a <title> with
// its exact figures; the tables beside them carry the numbers as text. Each chart is named by
// `label` (its aria-label) for screen readers.
import type { ComponentChildren } from 'preact';

const W = 640;
const H = 150;
const LEFT = 64;
const BOTTOM = 22;

/** Tick text under the axis: hours as "HH:00", days as "MM-DD". */
function tick(bucket: string, interval: 'hour' | 'day'): string {
  return interval === 'hour' ? `${bucket.slice(11, 13)}:00` : bucket.slice(5, 10);
}

function Frame(props: {
  label: string;
  testid: string;
  max: string;
  buckets: string[];
  interval: 'hour' | 'day';
  children: ComponentChildren;
}) {
  const n = props.buckets.length;
  const slot = (W - LEFT) / Math.max(1, n);
  const every = Math.ceil(n / 12);
  return (
    <svg
      class="chart"
      data-testid={props.testid}
      viewBox={`0 0 ${W} ${H + BOTTOM}`}
      width={W}
      height={H + BOTTOM}
      role="img"
      aria-label={props.label}
    >
      <line x1={LEFT} y1={H} x2={W} y2={H} class="chart-axis" />
      <text x={LEFT - 6} y={12} text-anchor="end" class="chart-label">
        {props.max}
      </text>
      {props.buckets.map((b, i) =>
        i % every === 0 ? (
          <text x={LEFT + i * slot} y={H + 15} class="chart-label">
            {tick(b, props.interval)}
          </text>
        ) : null,
      )}
      {props.children}
    </svg>
  );
}

/** Columns per bucket: `values` as bars, `overlay` (a part of them, e.g. errors) drawn over them. */
export function TimeColumns(props: {
  label: string;
  testid: string;
  buckets: string[];
  interval: 'hour' | 'day';
  values: number[];
  overlay?: number[];
  /** A bucket's tooltip. */
  title: (i: number) => string;
  /** The axis' top value as text. */
  format: (max: number) => string;
}) {
  const n = props.buckets.length;
  const max = Math.max(0, ...props.values, ...(props.overlay ?? []));
  const slot = (W - LEFT) / Math.max(1, n);
  const y = (v: number) => (max > 0 ? (v / max) * (H - 16) : 0);
  return (
    <Frame {...props} max={props.format(max)}>
      {props.buckets.map((b, i) => {
        const v = props.values[i] ?? 0;
        const o = props.overlay?.[i] ?? 0;
        const x = LEFT + i * slot + 1;
        const w = Math.max(1, slot - 2);
        return (
          <g key={b} data-bucket={b}>
            <title>{props.title(i)}</title>
            {v > 0 && <rect x={x} y={H - y(v)} width={w} height={y(v)} class="chart-bar" />}
            {o > 0 && <rect x={x} y={H - y(o)} width={w} height={y(o)} class="chart-bar-bad" />}
            {/* An empty bucket still has a hit area for its tooltip. */}
            <rect x={x} y={0} width={w} height={H} fill="transparent" />
          </g>
        );
      })}
    </Frame>
  );
}

/** Lines through the buckets (a null value breaks the line): latency p50 and p95. */
export function TimeLines(props: {
  label: string;
  testid: string;
  buckets: string[];
  interval: 'hour' | 'day';
  lines: { name: string; values: (number | null)[]; class: string }[];
  title: (i: number) => string;
  format: (max: number) => string;
}) {
  const n = props.buckets.length;
  const max = Math.max(0, ...props.lines.flatMap((l) => l.values.map((v) => v ?? 0)));
  const slot = (W - LEFT) / Math.max(1, n);
  const x = (i: number) => LEFT + i * slot + slot / 2;
  const y = (v: number) => H - (max > 0 ? (v / max) * (H - 16) : 0);
  return (
    <Frame {...props} max={props.format(max)}>
      {props.lines.map((l) => {
        // One path of segments, each run of non-null values a separate "M … L …" part.
        let d = '';
        let pen = false;
        l.values.forEach((v, i) => {
          if (v === null) {
            pen = false;
            return;
          }
          d += `${pen ? 'L' : 'M'}${x(i).toFixed(1)} ${y(v).toFixed(1)} `;
          pen = true;
        });
        return (
          <g key={l.name} data-line={l.name}>
            <path d={d.trim()} class={l.class} fill="none" />
            {l.values.map((v, i) =>
              v === null ? null : <circle cx={x(i)} cy={y(v)} r={2.5} class={l.class} data-bucket={props.buckets[i]} />,
            )}
          </g>
        );
      })}
      {props.buckets.map((b, i) => (
        <rect key={b} x={LEFT + i * slot} y={0} width={slot} height={H} fill="transparent">
          <title>{props.title(i)}</title>
        </rect>
      ))}
    </Frame>
  );
}
