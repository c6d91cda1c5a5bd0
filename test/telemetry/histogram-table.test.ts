// The table-backed histogram exposes exactly what prom-client's own Histogram would for the same
// observations (text and JSON), including values on a bucket bound and above the last one.
import t from 'tap';
import { Histogram, Registry } from 'prom-client';
import { HistogramTable, TableHistogram } from '../../src/telemetry/histogram-table.ts';

const BOUNDS = [0.001, 0.01, 0.1, 1];
const OBSERVED: [string, number][] = [
  ['chat_completions', 0.0004],
  ['chat_completions', 0.001],
  ['chat_completions', 0.05],
  ['messages', 0.5],
  ['messages', 3],
  ['chat_completions', 0.1],
];

t.test('same exposition as prom-client for the same observations', async (t) => {
  const ours = new Registry();
  const theirs = new Registry();
  const table = new HistogramTable('endpoint', BOUNDS);
  new TableHistogram({ name: 'x_seconds', help: 'h', registers: [ours] }, table);
  const reference = new Histogram({
    name: 'x_seconds',
    help: 'h',
    labelNames: ['endpoint'],
    buckets: BOUNDS,
    registers: [theirs],
  });
  for (const [label, v] of OBSERVED) {
    table.observe(label, v);
    reference.observe({ endpoint: label }, v);
  }
  t.equal(await ours.metrics(), await theirs.metrics(), 'text exposition');
  // JSON: the same series and values (prom-client adds empty exemplar fields of its own).
  const essentials = (m: Awaited<ReturnType<Registry['getMetricsAsJSON']>>) =>
    m.map((x) => ({
      name: x.name,
      help: x.help,
      type: x.type,
      aggregator: x.aggregator,
      values: x.values.map((v) => ({
        value: v.value,
        labels: v.labels,
        metricName: (v as { metricName?: string }).metricName,
      })),
    }));
  t.same(essentials(await ours.getMetricsAsJSON()), essentials(await theirs.getMetricsAsJSON()), 'JSON');
});

t.test('no observation, no series', async (t) => {
  const r = new Registry();
  new TableHistogram({ name: 'y_seconds', help: 'h', registers: [r] }, new HistogramTable('provider', BOUNDS));
  t.equal(await r.metrics(), '# HELP y_seconds h\n# TYPE y_seconds histogram\n');
});
