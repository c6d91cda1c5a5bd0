// Label values → a number, kept outside prom-client: a request's update walks one small Map per
// label (label values are config ids and fixed words, whose string hashes V8 keeps, so nothing is
// built or hashed per call) and adds, where prom-client builds, validates and hashes a label key on
// every inc() (~350 ns each, a dozen per request). The /metrics scrape copies the tables into
// prom-client metrics (src/telemetry/metrics.ts), which format them.

/** One series: its labels (built once) and its value. */
export interface Series {
  readonly labels: Readonly<Record<string, string>>;
  value: number;
}

interface Level {
  readonly next: Map<string, Level>;
  series: Series | null;
}

/** Up to four label values, passed as arguments (no array per call). */
export class SeriesTable {
  private readonly root: Level = { next: new Map(), series: null };
  private readonly list: Series[] = [];

  readonly labelNames: readonly [string, ...string[]];
  constructor(labelNames: readonly [string, ...string[]]) {
    this.labelNames = labelNames;
    if (labelNames.length > 4) throw new RangeError('a SeriesTable takes at most four labels');
  }

  /** The series of these label values, in `labelNames` order (created at 0 on first use). */
  series(a: string, b?: string, c?: string, d?: string): Series {
    const n = this.labelNames.length;
    let level = step(this.root, a);
    if (n > 1) level = step(level, b ?? '');
    if (n > 2) level = step(level, c ?? '');
    if (n > 3) level = step(level, d ?? '');
    if (level.series) return level.series;
    const values = [a, b, c, d];
    const labels: Record<string, string> = {};
    this.labelNames.forEach((name, i) => {
      labels[name] = values[i] ?? '';
    });
    const s: Series = { labels, value: 0 };
    level.series = s;
    this.list.push(s);
    return s;
  }

  all(): readonly Series[] {
    return this.list;
  }
}

function step(level: Level, value: string): Level {
  let next = level.next.get(value);
  if (!next) level.next.set(value, (next = { next: new Map(), series: null }));
  return next;
}
