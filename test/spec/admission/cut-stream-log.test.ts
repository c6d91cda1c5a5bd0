// The request log keeps how a cut stream ended, whatever order the writer commits in: a real
// `pi-gateway serve` (its writer thread) whose database's write lock another connection holds (a
// CLI command, a backup) while a provider cuts a stream mid-answer. The settlement of the cut stream
// then waits behind the request's hold, and the request's final row reaches the database first; the
// settlement's provisional row must not replace it, so `error_code` and `ended` stay as the request
// ended — round after round.
import t from 'tap';
import { openDatabase } from '../../../src/store/sqlite/db.ts';
import { GATEWAY_CONFIG, ledgerRows, USER, waitFor } from '../../helpers/admission.ts';
import { rawHead, rawUpstream } from '../../helpers/raw-upstream.ts';
import { prepareDb, startServe } from '../../helpers/serve-process.ts';

const ROUNDS = 5;

function chunk(data: string): string {
  const bytes = Buffer.byteLength(data);
  return `${bytes.toString(16)}\r\n${data}\r\n`;
}

const EVENT = (content: string) =>
  `data: ${JSON.stringify({ id: 'chatcmpl-raw', object: 'chat.completion.chunk', created: 1, model: 'upstream-model', choices: [{ index: 0, delta: { content }, finish_reason: null }] })}\n\n`;

function rowOf(
  file: string,
  trace: string,
): { n: number; error_code: string | null; ended: string | null; cost_nano: bigint | null } {
  const db = openDatabase(file, { readonly: true });
  try {
    const rows = db
      .prepare('SELECT error_code, ended, cost_nano FROM request_log WHERE trace_id = ?')
      .safeIntegers(true)
      .all(trace) as { error_code: string | null; ended: string | null; cost_nano: bigint | null }[];
    return {
      n: rows.length,
      error_code: rows[0]?.error_code ?? null,
      ended: rows[0]?.ended ?? null,
      cost_nano: rows[0]?.cost_nano ?? null,
    };
  } finally {
    db.close();
  }
}

t.test(
  `a stream cut while another connection holds the write lock keeps its error_code, ${ROUNDS} rounds of ${ROUNDS}`,
  async (t) => {
    // Three content events, then a TCP reset mid-answer.
    const up = await rawUpstream(t, (ex) => {
      ex.write(
        rawHead('200 OK', [
          ['Content-Type', 'text/event-stream'],
          ['Transfer-Encoding', 'chunked'],
        ]),
      );
      ex.write(chunk(EVENT('one ') + EVENT('two ') + EVENT('three ')));
      setTimeout(() => ex.reset(), 50);
    });
    const db = prepareDb(t);
    const server = await startServe(t, { config: GATEWAY_CONFIG, db, upstream: up.url });
    const kept: string[] = [];
    for (let round = 1; round <= ROUNDS; round++) {
      // The lock is taken first: the request's hold waits in the writer, and its settlement behind it.
      const locker = openDatabase(db.file);
      locker.exec('BEGIN IMMEDIATE');
      let trace = '';
      try {
        const res = await fetch(`${server.url}/v1/chat/completions`, {
          method: 'POST',
          headers: { authorization: `Bearer ${db.key}`, 'content-type': 'application/json' },
          body: JSON.stringify({
            model: 'acme/chat-small',
            messages: USER,
            max_tokens: 50,
            stream: true,
            provider: { only: ['alpha'] },
          }),
        });
        trace = res.headers.get('x-pi-trace-id') ?? '';
        const text = await res.text();
        t.equal(res.status, 200, `round ${round}: the stream was committed`);
        t.match(text, /one two|"content":"one /, `round ${round}: content reached the client before the cut`);
        // Long enough for the request's final row to be handed to the writer on its own.
        await new Promise((r) => setTimeout(r, 300));
      } finally {
        locker.exec('ROLLBACK');
        locker.close();
      }
      t.ok(
        await waitFor(() => ledgerRows(db.file).some((r) => r.kind === 'settle' && r.trace_id === trace), 10_000),
        `round ${round}: the cut stream was settled`,
      );
      await new Promise((r) => setTimeout(r, 100));
      const row = rowOf(db.file, trace);
      t.equal(row.n, 1, `round ${round}: one log row`);
      t.equal(row.ended, 'upstream_cut', `round ${round}: ended upstream_cut`);
      t.ok(row.cost_nano !== null && row.cost_nano > 0n, `round ${round}: with its charge`);
      if (row.error_code === 'stream_reset') kept.push(trace);
    }
    t.equal(kept.length, ROUNDS, `error_code stream_reset kept in ${kept.length} of ${ROUNDS} rounds`);
    server.child.kill('SIGTERM');
    t.equal((await server.exited).code, 0, 'a graceful stop');
  },
);
