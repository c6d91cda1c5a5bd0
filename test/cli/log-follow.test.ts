// `logs --follow`'s loop over a scripted log: every row printed once, in order, as it stood one poll
// after it appeared — so a charged request's final row, which replaces the row its charge wrote under
// the same id, is what gets printed.
import t from 'tap';
import { followLog } from '../../src/cli/log-follow.ts';
import type { RequestLogEntry } from '../../src/store/types.ts';

function entry(id: number, latency: number | null, ended: RequestLogEntry['ended']): RequestLogEntry {
  return {
    id,
    trace_id: `t${id}`,
    ts: 1_767_225_600_000 + id,
    workspace: 'ws',
    key_id: null,
    endpoint: 'chat_completions',
    model_requested: 'v/m',
    model_served: 'm',
    provider: 'p',
    deployment: 'd',
    attempts: 1,
    attempts_json: [],
    stream: true,
    status: 200,
    error_code: null,
    latency_ms: latency,
    ttfb_ms: 3,
    prompt_tokens: 1,
    completion_tokens: 1,
    reasoning_tokens: null,
    cached_tokens: null,
    cost_nano: 7n,
    app_title: null,
    app_origin: null,
    session_id: null,
    ended,
  };
}

/**
 * A log the test writes between polls: `steps[i]` runs during the i-th wait (then the poll queries),
 * and the loop stops during the wait of poll `stopAt` (the last step's, by default) — or, with
 * `stopInQueryOf`, during the first query of that poll. `printedAt[i]`: how many rows were printed
 * when the i-th wait began.
 */
function scripted(
  steps: ((log: Map<number, RequestLogEntry>) => void)[],
  stopAt = steps.length,
  stopInQueryOf: number | null = null,
) {
  const log = new Map<number, RequestLogEntry>();
  const printed: RequestLogEntry[] = [];
  const printedAt: number[] = [];
  let polls = 0;
  let stop = false;
  const parts = {
    query: async (afterId: number, limit: number) => {
      if (polls === stopInQueryOf) stop = true;
      return [...log.values()]
        .filter((r) => r.id > afterId)
        .sort((a, b) => a.id - b.id)
        .slice(0, limit)
        .map((r) => ({ ...r }));
    },
    print: (rows: RequestLogEntry[]) => printed.push(...rows),
    wait: async () => {
      printedAt.push(printed.length);
      steps[polls]?.(log);
      polls++;
      if (stopInQueryOf === null && polls >= stopAt) stop = true;
    },
    stopped: () => stop,
  };
  return { log, printed, printedAt, parts };
}

t.test("a charged request's row is printed as its final row replaced it", async (t) => {
  const s = scripted([
    // Its charge commits the first version (known at the charge: no total latency yet).
    (log) => log.set(1, entry(1, null, 'completed')),
    // Its last byte went out: the final row replaces it under the same id.
    (log) => log.set(1, entry(1, 840, 'client_abort')),
    () => {},
  ]);
  await followLog(s.parts, 0);
  t.same(
    s.printed.map((r) => [r.id, r.latency_ms, r.ended]),
    [[1, 840, 'client_abort']],
    'printed once, as the final row',
  );
});

t.test('rows arriving at every poll are each printed once, in order, one poll after they appeared', async (t) => {
  const steps = Array.from({ length: 6 }, (_, i) => (log: Map<number, RequestLogEntry>) => {
    for (let k = 1; k <= 3; k++) log.set(i * 3 + k, entry(i * 3 + k, null, 'completed'));
    // Last poll's rows get their final version now.
    for (let k = 1; k <= 3 && i > 0; k++) log.set((i - 1) * 3 + k, entry((i - 1) * 3 + k, 10 * i, 'completed'));
  });
  const s = scripted(steps, 6);
  await followLog(s.parts, 0);
  // The last step's rows were seen by the poll the stop came with: printed then, as they stood.
  t.same(
    s.printed.map((r) => r.id),
    Array.from({ length: 18 }, (_, i) => i + 1),
    'every row once, in id order',
  );
  t.ok(
    s.printed.slice(0, 15).every((r) => r.latency_ms !== null),
    "every row but the last poll's printed in its final version",
  );
});

t.test('more rows than one query takes: paged, each printed once', async (t) => {
  const s = scripted([
    (log) => {
      for (let id = 1; id <= 2500; id++) log.set(id, entry(id, 1, 'completed'));
    },
    () => {},
    () => {},
  ]);
  await followLog(s.parts, 0);
  t.equal(s.printed.length, 2500);
  t.ok(
    s.printed.every((r, i) => r.id === i + 1),
    'in order, none twice',
  );
});

t.test('a backlog larger than a query takes: every poll prints all that the one before saw', async (t) => {
  // 1,500 rows a poll, 10 polls: each poll reads every page, so nothing waits more than one poll.
  const steps = Array.from({ length: 10 }, (_, i) => (log: Map<number, RequestLogEntry>) => {
    for (let k = 1; k <= 1500; k++) log.set(i * 1500 + k, entry(i * 1500 + k, 1, 'completed'));
  });
  const s = scripted([...steps, () => {}, () => {}]);
  await followLog(s.parts, 0);
  // When wait i+2 begins, poll i+1 has printed every row written up to step i.
  for (let i = 0; i < 10; i++) {
    t.equal(s.printedAt[i + 2], (i + 1) * 1500, `after poll ${i + 2}: the rows of step ${i + 1} printed`);
  }
  t.equal(s.printed.length, 15_000);
  t.ok(
    s.printed.every((r, i) => r.id === i + 1),
    'in order, none twice',
  );
});

t.test('the rows already printed before following are not printed again', async (t) => {
  const s = scripted([() => {}, () => {}]);
  s.log.set(1, entry(1, 5, 'completed'));
  s.log.set(2, entry(2, 5, 'completed'));
  s.log.set(3, entry(3, null, 'completed'));
  await followLog(s.parts, 2);
  t.same(
    s.printed.map((r) => r.id),
    [3],
  );
});

for (const [when, stopAt, stopInQueryOf] of [
  ['during a wait', 2, null],
  ['during a query', Number.POSITIVE_INFINITY, 2],
] as const) {
  t.test(`a stop ${when} prints what was seen and not yet printed, as it stands`, async (t) => {
    const s = scripted(
      [
        (log) => log.set(1, entry(1, null, 'completed')),
        (log) => {
          log.set(1, entry(1, 12, 'completed'));
          log.set(2, entry(2, null, 'completed'));
        },
      ],
      stopAt,
      stopInQueryOf,
    );
    await followLog(s.parts, 0);
    t.same(
      s.printed.map((r) => [r.id, r.latency_ms]),
      [
        [1, 12],
        [2, null],
      ],
    );
  });
}
