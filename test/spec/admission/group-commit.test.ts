// One request's charge never takes another's down with it: a provider reporting a usage that prices
// above what the ledger's columns hold, among 30 ordinary requests settled in the same group commit
// of a real `pi-gateway serve` (its writer thread), leaves every ordinary request settled with its
// log row, no hold open after a graceful stop, and `ledger verify` clean — the oversized report itself
// settled at the most that request could have cost, flagged `capped`. And where even that bound is
// beyond what the ledger holds (a model priced and sized so that it is), the store refuses that one
// settlement alone: the others of its commit stand, its hold is released, and `ledger verify` names
// the answered request left without a settlement.
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { decimalToNano } from '../../../src/money.ts';
import { openDatabase } from '../../../src/store/sqlite/db.ts';
import { openStore } from '../../../src/store/sqlite/store.ts';
import { cli, GATEWAY_CONFIG, ledgerRows, openHolds, patchedFixture, USER, waitFor } from '../../helpers/admission.ts';
import { type RawExchange, rawJson, rawUpstream } from '../../helpers/raw-upstream.ts';
import { type PreparedDb, prepareDb, type ServeProcess, startServe } from '../../helpers/serve-process.ts';
import { FIXTURES } from '../../helpers/stack.ts';

const ORDINARY = 30;
/** The largest safe integer: a count JSON carries exactly, whose price overflows a 64-bit column. */
const HUGE = Number.MAX_SAFE_INTEGER;

/** A chat completion answer with the given usage. */
function completion(completionTokens: number): Buffer {
  return rawJson(
    '200 OK',
    JSON.stringify({
      id: 'chatcmpl-raw',
      object: 'chat.completion',
      created: 1,
      model: 'upstream-model',
      choices: [{ index: 0, message: { role: 'assistant', content: 'hello' }, finish_reason: 'stop' }],
      usage: { prompt_tokens: 10, completion_tokens: completionTokens, total_tokens: 10 + completionTokens },
    }),
  );
}

function logRows(file: string): Map<string, { status: number; cost: bigint | null }> {
  const db = openDatabase(file, { readonly: true });
  try {
    const rows = db.prepare('SELECT trace_id, status, cost_nano FROM request_log').safeIntegers(true).all() as {
      trace_id: string;
      status: bigint;
      cost_nano: bigint | null;
    }[];
    return new Map(rows.map((r) => [r.trace_id, { status: Number(r.status), cost: r.cost_nano }]));
  } finally {
    db.close();
  }
}

interface Answered {
  status: number;
  trace: string;
}

/**
 * 30 ordinary chat requests and one whose provider reports `completion_tokens` 2^53 − 1, all held by
 * the provider until every one has arrived, then answered while another connection holds the write
 * lock: the writer thread waits for it on the first settlement, and every other settlement gathers
 * behind it into one group commit. Resolves once all are answered, the server stopped gracefully.
 */
async function oversizedAmongOrdinary(
  t: Test,
  config: string,
  db: PreparedDb,
): Promise<{ huge: Answered; ordinary: Answered[]; server: ServeProcess }> {
  const arrived: RawExchange[] = [];
  const up = await rawUpstream(t, (ex) => void arrived.push(ex));
  const server = await startServe(t, { config, db, upstream: up.url });
  const ask = async (content: string): Promise<Answered> => {
    const res = await fetch(`${server.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${db.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'acme/chat-small',
        messages: [...USER, { role: 'user', content }],
        max_tokens: 50,
        provider: { only: ['alpha'] },
      }),
    });
    await res.text();
    return { status: res.status, trace: res.headers.get('x-pi-trace-id') ?? '' };
  };
  const answers = Promise.all([ask('oversized'), ...Array.from({ length: ORDINARY }, (_, i) => ask(`ordinary ${i}`))]);
  t.ok(
    await waitFor(() => arrived.length === ORDINARY + 1 && openHolds(db.file).size === ORDINARY + 1, 15_000),
    'every request is held and waits for its provider',
  );
  const isHuge = (ex: RawExchange) => ex.body.toString().includes('oversized');
  const locker = openDatabase(db.file);
  locker.exec('BEGIN IMMEDIATE');
  const [first, ...rest] = arrived.filter((ex) => !isHuge(ex));
  first?.end(completion(20));
  await new Promise((r) => setTimeout(r, 200));
  for (const ex of [...rest, ...arrived.filter(isHuge)]) ex.end(completion(isHuge(ex) ? HUGE : 20));
  await new Promise((r) => setTimeout(r, 500));
  locker.exec('ROLLBACK');
  locker.close();
  const [huge, ...ordinary] = await answers;
  t.same(
    ordinary.map((r) => r.status),
    Array(ORDINARY).fill(200),
    'every ordinary request answered 200',
  );
  t.equal(huge?.status, 200, 'the oversized report is answered too (the provider produced the answer)');
  server.child.kill('SIGTERM');
  t.equal((await server.exited).code, 0, 'a graceful stop');
  return { huge: huge as Answered, ordinary, server };
}

t.test(
  'an oversized usage report among 30 concurrent requests: the 30 are settled and logged, the ledger verifies',
  async (t) => {
    const db = prepareDb(t);
    const { huge, ordinary, server } = await oversizedAmongOrdinary(t, GATEWAY_CONFIG, db);
    const ledger = ledgerRows(db.file);
    const settled = new Map(ledger.filter((r) => r.kind === 'settle').map((r) => [r.trace_id, r]));
    t.same(
      ordinary.filter((r) => !settled.has(r.trace)).map((r) => r.trace),
      [],
      `all ${ORDINARY} ordinary requests settled`,
    );
    // 10 prompt tokens × 1000 + 20 completion tokens × 2000 nano-USD (acme/chat-small on alpha).
    t.same(
      ordinary.filter((r) => settled.get(r.trace)?.amount_nano !== 50_000n).map((r) => r.trace),
      [],
      'each at its exact cost',
    );
    const capped = settled.get(huge.trace);
    t.ok(capped, 'the oversized report settled');
    const details = JSON.parse(capped?.details ?? '{}') as Record<string, unknown>;
    t.equal(details['capped'], true, 'flagged capped');
    t.equal(details['completionTokens'], HUGE, 'with the reported figure');
    // Its bound: 32,000 tokens of context × 1000 + max_tokens 50 × 2000 nano-USD.
    t.equal(capped?.amount_nano, 32_000n * 1000n + 50n * 2000n, 'charged the most the request could have cost');
    t.match(
      server.events.find((e) => e.event === 'usage_capped'),
      {
        trace_id: huge.trace,
        provider: 'alpha',
        cap: 'bound',
        completion_tokens: HUGE,
        charged_usd: '0.0321',
        bound_usd: '0.0321',
      },
      'one usage_capped log line',
    );
    t.same([...openHolds(db.file).keys()], [], 'no hold left open after the graceful stop');
    const logs = logRows(db.file);
    t.same(
      [huge, ...ordinary]
        .filter((r) => {
          const logged = logs.get(r.trace);
          return logged === undefined || logged.cost !== settled.get(r.trace)?.amount_nano;
        })
        .map((r) => r.trace),
      [],
      'every request has its log row, with the charge',
    );
    const verify = await cli(['ledger', 'verify', '--db', db.file]);
    t.equal(verify.code, 0, `ledger verify: ${verify.stdout}${verify.stderr}`);
  },
);

t.test(
  'a settlement even its bound cannot fit the ledger is refused alone: the other 30 of its group commit stand',
  async (t) => {
    // $5 a prompt token and a 2-billion-token window: a bound of 10^19 nano-USD, past SQLite's INTEGER.
    const name = patchedFixture(t, 'gateway', {
      'models/acme.yaml': [
        ['context_length: 32000', 'context_length: 2000000000'],
        ['prompt: "0.000001"', 'prompt: "5"'],
      ],
    });
    const db = prepareDb(t);
    const store = openStore(db.file, { masterKey: db.masterKey });
    store.wallets.credit('open', decimalToNano('1000000'), 'holds of $1,000 a request');
    store.close();
    const { huge, ordinary, server } = await oversizedAmongOrdinary(t, join(FIXTURES, name), db);
    const ledger = ledgerRows(db.file);
    const settled = new Map(ledger.filter((r) => r.kind === 'settle').map((r) => [r.trace_id, r]));
    // 10 prompt tokens × 5,000,000,000 + 20 completion tokens × 2000 nano-USD.
    t.same(
      ordinary
        .filter((r) => settled.get(r.trace)?.amount_nano !== 10n * 5_000_000_000n + 20n * 2000n)
        .map((r) => r.trace),
      [],
      `all ${ORDINARY} ordinary requests settled, each at its exact cost`,
    );
    t.notOk(settled.has(huge.trace), 'the refused settlement wrote nothing');
    const closes = ledger.filter((r) => r.trace_id === huge.trace).map((r) => r.kind);
    t.same(closes, ['hold', 'release'], 'its hold was released');
    t.ok(
      server.events.some((e) => e.event === 'ledger_write_failed' && String(e['error']).includes(huge.trace)),
      'the refusal was logged, naming the trace',
    );
    t.same([...openHolds(db.file).keys()], [], 'no hold left open after the graceful stop');
    const logs = logRows(db.file);
    t.same(
      ordinary.filter((r) => logs.get(r.trace)?.cost !== settled.get(r.trace)?.amount_nano).map((r) => r.trace),
      [],
      'every ordinary request has its log row, with its charge',
    );
    t.match(
      logs.get(huge.trace),
      { status: 200, cost: null },
      'the refused one is logged, without a charge it never got',
    );
    const verify = await cli(['ledger', 'verify', '--db', db.file]);
    t.equal(verify.code, 1, 'ledger verify fails');
    t.equal(
      verify.stdout,
      `request ${huge.trace} answered 200 but its hold was released, not settled\n`,
      `naming the answered request left unsettled: ${verify.stdout}`,
    );
  },
);
