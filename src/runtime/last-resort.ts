// The last line of defence of a serving process (`serve`, `demo`): an exception nothing caught, or a
// promise rejection nothing handled, is logged as one `uncaught_error` JSON line and counted, and the
// process keeps serving. Every request path already ends its own failures (an attempt, a request);
// reaching this handler means a bug, and one bug in one request must not take every other request in
// flight down with it. The line names the error (class, code, a message with quoted text removed —
// a parser's message may quote the bytes it refused, which can be a request's or an answer's — and
// where it was thrown), never a value it carried.

export type LastResortLog = (event: string, fields: Record<string, unknown>) => void;

/** Longest message logged, after quoted text is removed. */
const MAX_MESSAGE = 300;
/** Stack frames logged (locations only). */
const MAX_FRAMES = 6;

/** What the log line says about a thrown value: never the value itself, nor text it quotes. */
export function describeThrown(thrown: unknown): Record<string, unknown> {
  if (!(thrown instanceof Error)) return { error: `a thrown ${thrown === null ? 'null' : typeof thrown}` };
  const code =
    'code' in thrown && (typeof thrown.code === 'string' || typeof thrown.code === 'number') ? thrown.code : null;
  return { error: thrown.name, code, message: withoutQuotes(thrown.message), stack: frames(thrown.stack) };
}

function withoutQuotes(message: string): string {
  const scrubbed = message
    .replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`/g, '…')
    .replace(/\s+/g, ' ')
    .trim();
  return scrubbed.length > MAX_MESSAGE ? `${scrubbed.slice(0, MAX_MESSAGE)}…` : scrubbed;
}

function frames(stack: string | undefined): string[] {
  if (stack === undefined) return [];
  const out: string[] = [];
  for (const line of stack.split('\n')) {
    const m = /^\s+at (.*)$/.exec(line);
    if (m && m[1] !== undefined) out.push(m[1]);
    if (out.length === MAX_FRAMES) break;
  }
  return out;
}

export interface LastResort {
  /** Errors caught so far. */
  readonly count: number;
  /** Removes the handlers (the process is stopping). */
  uninstall(): void;
}

/** Installs the process-wide handlers until `uninstall`. */
export function installLastResort(log: LastResortLog): LastResort {
  let count = 0;
  const caught = (kind: 'uncaught_exception' | 'unhandled_rejection') => (thrown: unknown) => {
    count++;
    try {
      log('uncaught_error', { kind, count, ...describeThrown(thrown) });
    } catch {
      // Nothing is left to report a failing log write to; the process keeps serving.
    }
  };
  const onException = caught('uncaught_exception');
  const onRejection = caught('unhandled_rejection');
  process.on('uncaughtException', onException);
  process.on('unhandledRejection', onRejection);
  return {
    get count() {
      return count;
    },
    uninstall() {
      process.off('uncaughtException', onException);
      process.off('unhandledRejection', onRejection);
    },
  };
}

/**
 * Keeps a serving process alive, and idle, when whatever reads its standard output or error goes
 * away (a pipe's reader exits, a terminal closes). A write to such a stream fails with an error
 * event; with no listener that is an uncaught exception, whose log line is another failing write:
 * the process spun on that loop and answered nothing. With this, lines to a stream that is gone are
 * dropped and the gateway serves on (its request log is in the database, not in those streams).
 * Call it first thing in a serving command.
 */
export function surviveClosedOutput(): void {
  for (const stream of [process.stdout, process.stderr]) {
    if (stream.listenerCount('error') > 0) continue;
    stream.on('error', () => {
      // Nothing to report it to: this is the stream reports go to.
    });
  }
}
