// A gateway's garbage collections inside a measured window, from V8's `--trace-gc-nvp` lines (one
// line per collection on the gateway's stdout, in the same stream and order as the `{"eld":…}` lines
// servers/gateway.mjs prints on SIGUSR2, so the lines between the window's two marks are exactly the
// collections of the window). Scavenges are `gc=s`; everything else (`gc=mc`, `gc=mmc`, …) is
// counted as a full collection. Bytes: `new_space_survived` (what a scavenge copied within the young
// generation) and `promoted` (what it moved to the old generation) — the surviving bytes.
import { execFileSync } from 'node:child_process';

const field = (line, name) => {
  const m = new RegExp(`(?:^|\\s)${name}=([\\d.]+)`).exec(line);
  return m ? Number(m[1]) : 0;
};

export function emptyGc() {
  return { scavenges: 0, scavengeMs: 0, survivedBytes: 0, promotedBytes: 0, full: 0, fullMs: 0 };
}

/** Adds one stdout line to `acc` when it is a `--trace-gc-nvp` line; false otherwise. */
export function addGcLine(acc, line) {
  const kind = /\bgc=(\w+)/.exec(line)?.[1];
  if (!kind || !line.includes(' pause=')) return false;
  const pause = field(line, 'pause');
  if (kind === 's') {
    acc.scavenges++;
    acc.scavengeMs += pause;
    acc.survivedBytes += field(line, 'new_space_survived');
    acc.promotedBytes += field(line, 'promoted');
  } else {
    acc.full++;
    acc.fullMs += pause;
  }
  return true;
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
