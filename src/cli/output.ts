// Printing command results: a plain table for people, one JSON document with --json for scripts.

export function printJson(value: unknown): void {
  process.stdout.write(JSON.stringify(value, null, 2) + '\n');
}

/** Left-aligned columns; every cell is already a string. */
export function printTable(headers: string[], rows: string[][]): void {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (c ?? '').padEnd(widths[i] ?? 0))
      .join('  ')
      .trimEnd();
  process.stdout.write(line(headers) + '\n');
  for (const r of rows) process.stdout.write(line(r) + '\n');
}

export function fail(message: string): number {
  process.stderr.write(`pi-gateway: ${message}\n`);
  return 1;
}
