// WAL per request by commit shape: the compiled store's writer thread (ThreadWriter, as `serve` uses
// it) driven directly with K requests per commit — each request's hold and settlement (with its
// provisional log row) in one batch, its final log row riding with the next — so the bytes per
// request of a given batching are measured without a load generator, a network or a busy machine
// deciding the batching. The same counting as `wal` (lib/wal.mjs): a read transaction holds the WAL
// for the window; frames, commits and frames by b-tree are read back from it.
//
//   node bench/run.js wal-shape [--per 1,2,4] [--commits 300] [--rev REV]
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TREE, ensureBuilt } from './lib/proc.mjs';
import { fmt, fmtInt, log, machineInfo, saveResult, table } from './lib/stats.mjs';
import { holdWal } from './lib/wal.mjs';

const argv = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = argv.indexOf(name);
  return i >= 0 ? argv[i + 1] : dflt;
};
const PER = opt('--per', '1,2,4').split(',').map(Number);
const COMMITS = Number(opt('--commits', '300'));
/** Commits before the window: the b-trees past their first pages. */
const WARM_COMMITS = 50;

ensureBuilt();
const dist = (p) => import(join(TREE, 'dist', 'src', p));
const { openStore, ThreadWriter } = await dist('store/sqlite/store.js');
const { newTraceId } = await dist('server/trace-id.js');

const MODEL = 'openai/gpt-6-luna';
const ATTEMPT = {
  provider: 'local-sim',
  model: MODEL,
  deployment: 'local-sim/gpt-6-luna',
  outcome: 'ok',
  status: 200,
  ms: 1,
};
/** A request-log row like the gateway's for a one-attempt chat answer (final: with its latency). */
const logRow = (traceId, final) => ({
  trace_id: traceId,
  ts: Date.now(),
  workspace: 'acme',
  key_id: 'key_bench0001',
  endpoint: 'chat_completions',
  model_requested: MODEL,
  model_served: MODEL,
  provider: 'local-sim',
  deployment: 'local-sim/gpt-6-luna',
  attempts: 1,
  attempts_json: [ATTEMPT],
  stream: false,
  status: 200,
  error_code: null,
  latency_ms: final ? 3 : null,
  ttfb_ms: 1,
  prompt_tokens: 12,
  completion_tokens: 20,
  reasoning_tokens: null,
  cached_tokens: null,
  cost_nano: 1234n,
  app_title: null,
  app_origin: null,
  session_id: null,
  ended: 'completed',
});
const DETAILS = {
  model: MODEL,
  provider: 'local-sim',
  deployment: 'local-sim/gpt-6-luna',
  promptTokens: 12,
  completionTokens: 20,
};

async function shape(per) {
  const dir = mkdtempSync(join(tmpdir(), 'pi-bench-wal-shape-'));
  const file = join(dir, 'shape.db');
  const store = openStore(file);
  store.wallets.credit('acme', 10n ** 15n, 'bench');
  const writer = await ThreadWriter.start(file);
  let held = null;
  let ended = [];
  try {
    // The window begins right after a commit (its frames not yet copied by the checkpointer), at
    // the first one after the warm-up where that holds.
    for (let c = 0, counted = 0; counted < COMMITS; c++) {
      if (c >= WARM_COMMITS && held === null) held = holdWal(file);
      if (held !== null) counted++;
      for (const traceId of ended) writer.append(logRow(traceId, true));
      const ops = [];
      ended = [];
      for (let k = 0; k < per; k++) {
        const traceId = newTraceId();
        ended.push(traceId);
        ops.push({ kind: 'hold', workspace: 'acme', traceId, amount: 5000n });
        ops.push({
          kind: 'settle',
          workspace: 'acme',
          traceId,
          amount: 5000n,
          cost: 1234n,
          details: DETAILS,
          logRow: logRow(traceId, false),
        });
      }
      await writer.commit(ops);
      // Apart by more than any commit gap: each batch is this shape, never merged with the next.
      await new Promise((r) => setTimeout(r, 5));
    }
    const w = held.end();
    if (w === null) throw new Error('the WAL was restarted during the window');
    const n = COMMITS * per;
    return {
      per,
      pageSize: w.pageSize,
      commits: w.commits,
      walBytesPerRequest: (w.frames * (w.pageSize + 24)) / n,
      framesPerRequest: w.frames / n,
      framesPerCommit: w.frames / w.commits,
      trees: w.trees.map(([name, f]) => ({ name, framesPerCommit: f / w.commits })),
    };
  } finally {
    await writer.close();
    store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

log(`wal-shape: ${COMMITS} commits of ${PER.join(', ')} request(s) each`);
const results = [];
for (const per of PER) results.push(await shape(per));
const md = [
  '## WAL per request by requests per commit (writer thread driven directly)',
  '',
  table(
    ['requests/commit', 'page size', 'WAL bytes/request', 'frames/request', 'frames/commit', 'frames/commit by b-tree'],
    results.map((r) => [
      String(r.per),
      String(r.pageSize),
      fmtInt(r.walBytesPerRequest),
      fmt(r.framesPerRequest, 2),
      fmt(r.framesPerCommit, 2),
      r.trees.map((t) => `${t.name} ${fmt(t.framesPerCommit, 2)}`).join(', '),
    ]),
  ),
  '',
].join('\n');
process.stdout.write(`${md}\n`);
log(`wrote ${saveResult('wal-shape', { machine: machineInfo(), results })}`);
