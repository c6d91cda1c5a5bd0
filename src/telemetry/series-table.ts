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

export class SeriesTable {
  private readonly rows = new Map<string, Series>();

  constructor(readonly labelNames: readonly string[]) {}

  /** The series of these label values, in `labelNames` order (created at 0 on first use). */
  series(...values: string[]): Series {
    const key = values.length === 1 ? (values[0] as string) : values.join('\u0001');
    let s = this.rows.get(key);
    if (!s) {
      const labels: Record<string, string> = {};
      this.labelNames.forEach((name, i) => {
        labels[name] = values[i] ?? '';
      });
      s = { labels, value: 0 };
      this.rows.set(key, s);
    }
    return s;
  }

  add(n: number, ...values: string[]): void {
    this.series(...values).value += n;
  }

  all(): IterableIterator<Series> {
    return this.rows.values();
  }
}
