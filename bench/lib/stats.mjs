// Small statistics and reporting helpers shared by the benchmarks.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { RESULTS_DIR, treeInfo } from './proc.mjs';
import os from 'node:os';

export function sorted(xs) {
  return Float64Array.from(xs).sort();
}

/** Percentile by nearest rank on a sorted array (p in 0..100). */
export function pct(sortedXs, p) {
  const n = sortedXs.length;
  if (n === 0) return NaN;
  const i = Math.min(n - 1, Math.max(0, Math.ceil((p / 100) * n) - 1));
  return sortedXs[i];
}

export function median(xs) {
  const s = sorted(xs.filter((x) => Number.isFinite(x)));
  if (s.length === 0) return NaN;
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

export function min(xs) {
  return Math.min(...xs);
}

export function max(xs) {
  return Math.max(...xs);
}

/** Rotates `list` by `k` (round-robin order that changes every round). */
export function rotate(list, k) {
  const n = list.length;
  return list.map((_, i) => list[(i + k) % n]);
}

export function fmt(x, digits = 1) {
  if (x === null || x === undefined || Number.isNaN(x)) return 'n/a';
  if (!Number.isFinite(x)) return String(x);
  return x.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
}

export function fmtInt(x) {
  if (x === null || x === undefined || Number.isNaN(x)) return 'n/a';
  return Math.round(x).toLocaleString('en-US');
}

/** A markdown table from a header row and rows of cells. */
export function table(header, rows) {
  const line = (cells) => `| ${cells.join(' | ')} |`;
  return [line(header), line(header.map(() => '---')), ...rows.map(line)].join('\n');
}

export function machineInfo() {
  return {
    tree: treeInfo(),
    date: new Date().toISOString(),
    node: process.version,
    cpus: os
      .cpus()
      .map((c) => c.model)
      .filter((v, i, a) => a.indexOf(v) === i),
    cores: os.cpus().length,
    loadavg: os.loadavg(),
    totalMemMb: Math.round(os.totalmem() / 2 ** 20),
  };
}

/** Writes bench/results/<name>-<timestamp>.json (gitignored) and returns its path. */
export function saveResult(name, data) {
  mkdirSync(RESULTS_DIR, { recursive: true });
  const stamp = new Date().toISOString().replace(/[:.]/g, '-');
  const file = join(RESULTS_DIR, `${name}-${stamp}.json`);
  writeFileSync(
    file,
    JSON.stringify({ tree: treeInfo(), ...data }, (_k, v) => (typeof v === 'bigint' ? v.toString() : v), 2) + '\n',
  );
  return file;
}

export function parseFlags(argv) {
  const flags = { quick: false, rounds: null, profile: false };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--quick') flags.quick = true;
    else if (a === '--profile') flags.profile = true;
    else if (a === '--rounds') flags.rounds = Number(argv[++i]);
    else if (a.startsWith('--rounds=')) flags.rounds = Number(a.slice(9));
  }
  return flags;
}

/** The number after `--name` in argv, else `dflt`. */
export function numberArg(argv, name, dflt) {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 ? Number(argv[i + 1]) : dflt;
}

export function log(msg) {
  process.stderr.write(`${new Date().toISOString().slice(11, 19)} ${msg}\n`);
}
