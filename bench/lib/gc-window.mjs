// The bytes that survive a gateway's scavenges inside a measured window, from V8's `--trace-gc-nvp`
// lines (one line per collection on the gateway's stdout, in the same stream and order as the
// `{"eld":…}` lines servers/gateway.mjs prints on SIGUSR2, so the lines between the window's two
// marks are exactly the collections of the window). Every isolate prints them — the serving thread,
// the writer thread, the checkpointer — each line tagged `[pid:isolate]`; the serving thread's is the
// one that allocated the most in the window (the writer's and the checkpointer's young generations
// are 4 MB and 1 MB, and they allocate a fraction of what the serving thread does). Per scavenge:
// `new_space_survived` (copied within the young generation) and `promoted` (moved to the old one).
// The count and pauses of the serving thread's collections come from the gateway itself (perf_hooks
// 'gc' entries, the `gc` of its eld report), not from here.
import { execFileSync } from 'node:child_process';

const field = (line, name) => {
  const m = new RegExp(`(?:^|\\s)${name}=([\\d.]+)`).exec(line);
  return m ? Number(m[1]) : 0;
};

/** Scavenge bytes per isolate, filled by addGcLine. */
export function emptyGc() {
  return new Map();
}

/** Adds one stdout line to `acc` when it is a `--trace-gc-nvp` scavenge line; false otherwise. */
export function addGcLine(acc, line) {
  if (!/\bgc=s\b/.test(line) || !line.includes(' pause=')) return false;
  const isolate = /^\[\d+:(0x[0-9a-f]+)\]/.exec(line)?.[1] ?? '?';
  const x = acc.get(isolate) ?? { scavenges: 0, allocatedBytes: 0, survivedBytes: 0, promotedBytes: 0 };
  x.scavenges++;
  x.allocatedBytes += field(line, 'allocated');
  x.survivedBytes += field(line, 'new_space_survived');
  x.promotedBytes += field(line, 'promoted');
  acc.set(isolate, x);
  return true;
}

/** The serving thread's scavenge bytes in the window: the isolate that allocated the most. */
export function servingThreadGc(acc) {
  let best = null;
  for (const x of acc.values()) if (best === null || x.allocatedBytes > best.allocatedBytes) best = x;
  return best ?? { scavenges: 0, allocatedBytes: 0, survivedBytes: 0, promotedBytes: 0 };
}

/** Pages of `file` resident in the page cache, as a fraction (util-linux `fincore`: mincore(2)). */
export function residentShare(file) {
  try {
    const out = execFileSync('fincore', ['--bytes', '--noheadings', '--raw', '--output', 'RES,SIZE', file], {
      encoding: 'utf8',
    }).trim();
    const [res, size] = out.split(/\s+/).map(Number);
    return size > 0 ? res / size : NaN;
  } catch {
    return NaN;
  }
}
