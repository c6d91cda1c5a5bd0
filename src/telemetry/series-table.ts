// Label values → a number, kept outside prom-client: a request's update is one Map lookup on a
// joined key and an addition, where prom-client hashes and validates the label set on every inc()
// (~350 ns each, a dozen per request). The /metrics scrape copies the tables into prom-client
// metrics (src/telemetry/metrics.ts), which format them; labels are checked once, when a series
// first appears.

/** One series: its labels (built once) and its value. */
export interface Series {
  readonly labels: Readonly<Record<string, string>>;
  value: number;
}

/** Up to four label values, passed as arguments (no array per call). */
export class SeriesTable {
  private readonly rows = new Map<string, Series>();

  constructor(readonly labelNames: readonly [string, ...string[]]) {
    if (labelNames.length > 4) throw new RangeError('a SeriesTable takes at most four labels');
  }

  /** The series of these label values, in `labelNames` order (created at 0 on first use). */
  series(a: string, b?: string, c?: string, d?: string): Series {
    const key = b === undefined ? a : c === undefined ? `${a}\u0001${b}` : d === undefined ? `${a}\u0001${b}\u0001${c}` : `${a}\u0001${b}\u0001${c}\u0001${d}`;
    let s = this.rows.get(key);
    if (!s) {
      const values = [a, b, c, d];
      const labels: Record<string, string> = {};
      this.labelNames.forEach((name, i) => {
        labels[name] = values[i] ?? '';
      });
      s = { labels, value: 0 };
      this.rows.set(key, s);
    }
    return s;
  }

  all(): IterableIterator<Series> {
    return this.rows.values();
  }
}
