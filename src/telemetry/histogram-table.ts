// Bucketed observations per label value, kept outside prom-client like SeriesTable: one Map lookup,
// a short bucket scan and three additions per observation, where prom-client's observe() allocates,
// validates and hashes the label set and looks its bucket up by a float-keyed property (~0.3–0.8 µs
// each, three per request). A prom-client Histogram subclass reports the table when scraped, in the
// shapes prom-client's own histogram produces (registry text: `getForPromString`; JSON: `get`).
import { Histogram } from 'prom-client';

/** What prom-client's Histogram.get() returns (its typings do not export the type by name). */
type HistogramJson = Awaited<ReturnType<Histogram<string>['get']>>;

interface Row {
  label: string;
  /** Non-cumulative counts per bound, then the count above the last bound. */
  counts: Float64Array;
  sum: number;
  count: number;
}

export class HistogramTable {
  private readonly rows = new Map<string, Row>();

  readonly labelName: string;
  readonly bounds: readonly number[];
  constructor(labelName: string, bounds: readonly number[]) {
    this.labelName = labelName;
    this.bounds = bounds;
  }

  observe(label: string, value: number): void {
    const row = this.row(label);
    const bounds = this.bounds;
    let i = 0;
    while (i < bounds.length && value > (bounds[i] as number)) i++;
    (row.counts[i] as number)++;
    row.sum += value;
    row.count++;
  }

  /** The row of `label`, made empty on first use (a series present from the start). */
  row(label: string): Row {
    let row = this.rows.get(label);
    if (!row)
      this.rows.set(label, (row = { label, counts: new Float64Array(this.bounds.length + 1), sum: 0, count: 0 }));
    return row;
  }

  all(): IterableIterator<Row> {
    return this.rows.values();
  }
}

/** One exported sample: `labels` are the sample's own (le), `sharedLabels` the series'. */
interface ExportedValue {
  labels: Record<string, string | number>;
  sharedLabels: Record<string, string>;
  value: number;
  metricName: string;
}

interface TableHistogramSpec {
  name: string;
  help: string;
  registers: ConstructorParameters<typeof Histogram<string>>[0]['registers'];
  /** Runs before each read of the table (the owner adds the rows a scrape should show). */
  beforeRead?: () => void;
}

/** A prom-client histogram whose samples come from a HistogramTable. */
export class TableHistogram extends Histogram<string> {
  private readonly spec: TableHistogramSpec;
  private readonly table: HistogramTable;
  constructor(spec: TableHistogramSpec, table: HistogramTable) {
    super({
      name: spec.name,
      help: spec.help,
      labelNames: [table.labelName],
      buckets: [...table.bounds],
      registers: spec.registers ?? [],
    });
    this.spec = spec;
    this.table = table;
  }

  /** What prom-client's registry formats as text (the same shape its own histogram returns). */
  async getForPromString(): Promise<{
    name: string;
    help: string;
    type: string;
    aggregator: string;
    values: ExportedValue[];
  }> {
    const { name, help } = this.spec;
    this.spec.beforeRead?.();
    const values: ExportedValue[] = [];
    for (const row of this.table.all()) {
      const shared = { [this.table.labelName]: row.label };
      let acc = 0;
      this.table.bounds.forEach((bound, i) => {
        acc += row.counts[i] as number;
        values.push({ labels: { le: bound }, sharedLabels: shared, value: acc, metricName: `${name}_bucket` });
      });
      values.push({ labels: { le: '+Inf' }, sharedLabels: shared, value: row.count, metricName: `${name}_bucket` });
      values.push({ labels: {}, sharedLabels: shared, value: row.sum, metricName: `${name}_sum` });
      values.push({ labels: {}, sharedLabels: shared, value: row.count, metricName: `${name}_count` });
    }
    return { name, help, type: 'histogram', aggregator: 'sum', values };
  }

  /** The JSON form (registry.getMetricsAsJSON): each sample's labels merged with its series'. */
  override async get(): Promise<HistogramJson> {
    const data = await this.getForPromString();
    const json = {
      name: data.name,
      help: data.help,
      type: data.type,
      aggregator: data.aggregator,
      values: data.values.map((v) => ({
        value: v.value,
        metricName: v.metricName,
        labels: { ...v.labels, ...v.sharedLabels },
      })),
    };
    // prom-client's typings declare `type` as an enum and a `collect` member; at run time its own
    // metrics return the type's name and no collect, as here.
    return json as unknown as HistogramJson;
  }
}
