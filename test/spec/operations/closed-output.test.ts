// A gateway whose standard output and error lose their reader (a pipe's reader exits, a terminal
// closes) serves on: a log line it can no longer write is dropped. Before, the failed write was an
// uncaught error whose own log line failed the same way, and the process spun on that and answered
// nothing.
import t from 'tap';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { startSimulator } from '../../../src/simulator/server.ts';
import { USER, waitFor } from '../../helpers/admission.ts';
import { prepareDb, startServe } from '../../helpers/serve-process.ts';
import { FIXTURES } from '../../helpers/stack.ts';

t.test('serve: its output closed, it logs nothing more, answers, reloads and drains', async (t) => {
  const sim = await startSimulator({ record: false });
  t.teardown(() => sim.close());
  const db = prepareDb(t);
  const p = await startServe(t, { config: join(FIXTURES, 'gateway'), db, upstream: sim.url });
  p.child.stdout?.destroy();
  p.child.stderr?.destroy();
  // Lines to write: a reload's result, then a request's (the reload's outcome is in FILE.reload.json).
  p.child.kill('SIGHUP');
  const chat = async () => {
    const res = await fetch(`${p.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${db.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'acme/chat-small', messages: USER }),
      // A bound for a process that no longer answers, not a time rule.
      signal: AbortSignal.timeout(20_000),
    });
    await res.text();
    return res.status;
  };
  t.equal(await chat(), 200, 'answers after its output went away');
  t.equal(await chat(), 200, 'and again');
  const record = `${db.file}.reload.json`;
  t.ok(await waitFor(() => existsSync(record), 20_000), 'the reload left its record');
  t.match(JSON.parse(readFileSync(record, 'utf8')), { ok: true }, 'reloaded');
  t.equal(p.child.exitCode, null, 'still running');
  p.child.kill('SIGTERM');
  const exit = await p.exited;
  t.equal(exit.code, 0, 'SIGTERM drains and exits 0');
});
