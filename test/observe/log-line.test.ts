// The operational log line (src/observe/log-line.ts): one JSON object a line with `time` (ISO 8601
// UTC), `level` and `event` first, the event's fields after; every event the sources log has its
// level in the one table (found with the TypeScript parser, like test/architecture.test.ts), and the
// table names no event nobody logs.
import t from 'tap';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { jsonLog } from '../../src/gateway.ts';
import { LOG_LEVELS, logLevel, logLine } from '../../src/observe/log-line.ts';
import { slowCommitLine } from '../../src/store/sqlite/slow-commit.ts';

const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
const SNAKE = /^[a-z][a-z0-9]*(_[a-z0-9]+)*$/;

t.test('a line: time, level and event first, then the fields; one line of JSON', async (t) => {
  const text = logLine(
    'drain_deadline',
    { ending: 2, deadline_ms: 30_000 },
    new Date(Date.UTC(2026, 10, 27, 12, 0, 0, 5)),
  );
  t.ok(text.endsWith('\n') && !text.slice(0, -1).includes('\n'), 'one line');
  const line = JSON.parse(text) as Record<string, unknown>;
  t.same(Object.keys(line), ['time', 'level', 'event', 'ending', 'deadline_ms']);
  t.same(line, {
    time: '2026-11-27T12:00:00.005Z',
    level: 'warn',
    event: 'drain_deadline',
    ending: 2,
    deadline_ms: 30_000,
  });
});

t.test('a field cannot replace time, level or event', async (t) => {
  const line = JSON.parse(
    logLine('listening', { time: 1, level: 'error', event: 'x', url: 'u' }, new Date(0)),
  ) as Record<string, unknown>;
  t.same(line, { time: '1970-01-01T00:00:00.000Z', level: 'info', event: 'listening', url: 'u' });
  t.same(Object.keys(line).slice(0, 3), ['time', 'level', 'event']);
});

t.test('levels: per event, a reload by its result, an unlisted event stands out as warn', async (t) => {
  t.equal(logLevel('listening'), 'info');
  t.equal(logLevel('credential_missing'), 'warn');
  t.equal(logLevel('ledger_write_failed'), 'error');
  t.equal(logLevel('config_reload', { ok: true }), 'info');
  t.equal(logLevel('config_reload', { ok: false }), 'warn');
  t.equal(logLevel('no_such_event'), 'warn');
  t.equal(logLevel('toString'), 'warn', 'not an Object.prototype member');
});

t.test('jsonLog writes the line on stderr; the writer thread’s slow-commit line has the same shape', async (t) => {
  const lines: string[] = [];
  const write = process.stderr.write.bind(process.stderr);
  process.stderr.write = ((chunk: string | Uint8Array) => {
    lines.push(typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8'));
    return true;
  }) as typeof process.stderr.write;
  try {
    jsonLog('stopping', { signal: 'SIGTERM' });
  } finally {
    process.stderr.write = write;
  }
  t.equal(lines.length, 1);
  const line = JSON.parse(lines[0] as string) as Record<string, unknown>;
  t.match(line, { time: ISO, level: 'info', event: 'stopping', signal: 'SIGTERM' });
  t.notOk('t' in line || 'ts' in line, 'no other time field');
  const slow = JSON.parse(slowCommitLine(12.34, 2, 1, new Date(0))) as Record<string, unknown>;
  t.same(slow, {
    time: '1970-01-01T00:00:00.000Z',
    level: 'warn',
    event: 'writer_slow_commit',
    ms: 12.3,
    ledger_ops: 2,
    log_rows: 1,
  });
});

/** Every string literal passed as the first argument of a call named like a logger (`log`, `jsonLog`,
 *  `this.log`, `ctx.log`, `onError`…), through conditionals (`kept ? 'a' : 'b'`). */
function loggedEvents(): Map<string, string[]> {
  const src = fileURLToPath(new URL('../../src', import.meta.url));
  const files: string[] = [];
  const walk = (dir: string): void => {
    for (const f of readdirSync(dir)) {
      const p = join(dir, f);
      if (statSync(p).isDirectory()) walk(p);
      else if (p.endsWith('.ts')) files.push(p);
    }
  };
  walk(src);
  const found = new Map<string, string[]>();
  for (const file of files) {
    // The simulator writes no operational log lines.
    if (file.includes(`${join('src', 'simulator')}`)) continue;
    const sf = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
    const literals = (e: ts.Expression, out: string[]): void => {
      if (ts.isStringLiteral(e)) out.push(e.text);
      else if (ts.isConditionalExpression(e)) {
        literals(e.whenTrue, out);
        literals(e.whenFalse, out);
      } else if (ts.isParenthesizedExpression(e)) literals(e.expression, out);
    };
    const visit = (n: ts.Node): void => {
      if (ts.isCallExpression(n) && n.arguments[0] !== undefined) {
        const c = n.expression;
        const name = ts.isIdentifier(c) ? c.text : ts.isPropertyAccessExpression(c) ? c.name.text : '';
        if (/^(log|jsonLog|logLine|onError)$/.test(name)) {
          const out: string[] = [];
          literals(n.arguments[0], out);
          for (const event of out) found.set(event, [...(found.get(event) ?? []), file.slice(src.length - 3)]);
        }
      }
      ts.forEachChild(n, visit);
    };
    visit(sf);
  }
  return found;
}

t.test('every event the sources log has a level, and the table lists no event nobody logs', async (t) => {
  const logged = loggedEvents();
  t.ok(logged.size >= 30, `the scan finds the gateway's events (${logged.size})`);
  for (const [event, where] of logged) {
    t.ok(Object.hasOwn(LOG_LEVELS, event), `${event} (${where.join(', ')}) has a level`);
    t.match(event, SNAKE, `${event} is snake_case`);
  }
  for (const event of Object.keys(LOG_LEVELS)) t.ok(logged.has(event), `${event} is logged somewhere`);
});
