// Reading Prometheus text in tests: one sample by name and exact label set, and every sample of a
// metric.

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

const LINE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

export function parseMetrics(text: string): Sample[] {
  const out: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = LINE.exec(line);
    if (!m) throw new Error(`not a Prometheus sample line: ${line}`);
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(LABEL))
      labels[l[1] as string] = (l[2] as string).replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
    out.push({ name: m[1] as string, labels, value: Number(m[3]) });
  }
  return out;
}

/** The value of the sample with exactly these labels, or undefined. */
export function sampleValue(samples: Sample[], name: string, labels: Record<string, string> = {}): number | undefined {
  const want = Object.entries(labels).sort();
  for (const s of samples) {
    if (s.name !== name) continue;
    const have = Object.entries(s.labels).sort();
    if (have.length === want.length && have.every(([k, v], i) => want[i]?.[0] === k && want[i]?.[1] === v))
      return s.value;
  }
  return undefined;
}

export function samplesOf(samples: Sample[], name: string): Sample[] {
  return samples.filter((s) => s.name === name);
}

export async function scrape(adminUrl: string): Promise<Sample[]> {
  const res = await fetch(`${adminUrl}/metrics`);
  if (res.status !== 200) throw new Error(`/metrics answered ${res.status}`);
  return parseMetrics(await res.text());
}
