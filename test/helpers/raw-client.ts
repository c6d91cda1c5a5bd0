// A raw-socket HTTP client for what fetch and node:http never send: header bytes written as given
// (C0, DEL, bytes >= 0x80 at the ends of a value), malformed framing, bodies sent after the answer
// arrived, several requests on one connection. Reads the answers back as bytes and splits them into
// responses; waits are bounded so a server that leaves a connection hanging fails the test.
import net from 'node:net';

export interface RawResponse {
  status: number;
  /** Header lines as sent (names lower-cased), in order. */
  headers: [string, string][];
  header(name: string): string | undefined;
  body: string;
}

export interface RawConnection {
  /** Writes bytes (a string is written as Latin-1: one byte per character); resolves once flushed. */
  write(bytes: string | Buffer): Promise<void>;
  /** Everything received so far, one character per byte. */
  text(): string;
  /** Resolves with the received text once `re` matches it, or rejects when the socket closes first or `ms` pass. */
  until(re: RegExp, ms?: number): Promise<string>;
  /** Resolves when the server (or `destroy`) has closed the connection; rejects after `ms`. */
  closedWithin(ms: number): Promise<void>;
  readonly closed: boolean;
  destroy(): void;
}

/** What a failed wait reports: the start and the end of what arrived. */
function shown(received: string): string {
  return received.length <= 600
    ? JSON.stringify(received)
    : `${JSON.stringify(received.slice(0, 300))} … ${JSON.stringify(received.slice(-300))}`;
}

/** Opens a connection to 127.0.0.1:`port`. */
export async function rawConnect(port: number): Promise<RawConnection> {
  const sock = net.connect(port, '127.0.0.1');
  sock.on('error', () => undefined);
  let received = '';
  let closed = false;
  const waiters = new Set<() => void>();
  const wake = (): void => {
    for (const w of [...waiters]) w();
  };
  sock.on('data', (d: Buffer) => {
    received += d.toString('latin1');
    wake();
  });
  sock.on('close', () => {
    closed = true;
    wake();
  });
  await new Promise<void>((resolve, reject) => {
    sock.once('connect', () => resolve());
    sock.once('error', reject);
  });
  const wait = (done: () => boolean, failed: () => string | null, ms: number): Promise<void> =>
    new Promise((resolve, reject) => {
      const check = (): void => {
        if (done()) finish(null);
        else {
          const why = failed();
          if (why !== null) finish(new Error(why));
        }
      };
      const timer = setTimeout(
        () => finish(new Error(`nothing after ${ms} ms; received so far: ${shown(received)}`)),
        ms,
      );
      const finish = (err: Error | null): void => {
        clearTimeout(timer);
        waiters.delete(check);
        if (err) reject(err);
        else resolve();
      };
      waiters.add(check);
      check();
    });
  return {
    write: (bytes) =>
      new Promise<void>((resolve) => {
        if (sock.destroyed) return resolve();
        sock.write(typeof bytes === 'string' ? Buffer.from(bytes, 'latin1') : bytes, () => resolve());
      }),
    text: () => received,
    async until(re, ms = 10_000) {
      await wait(
        () => re.test(received),
        () => (closed ? `closed before ${re} matched; received: ${shown(received)}` : null),
        ms,
      );
      return received;
    },
    closedWithin: (ms) =>
      wait(
        () => closed,
        () => null,
        ms,
      ),
    get closed() {
      return closed;
    },
    destroy: () => sock.destroy(),
  };
}

/** Sends `bytes` on a new connection and resolves with everything received once the server closes it
 *  (rejects if it is still open after `ms`). */
export async function rawExchange(port: number, bytes: string | Buffer, ms = 10_000): Promise<string> {
  const c = await rawConnect(port);
  await c.write(bytes);
  try {
    await c.closedWithin(ms);
  } finally {
    c.destroy();
  }
  return c.text();
}

/** Splits received bytes into responses (Content-Length or chunked framing; the last one may run to the end). */
export function parseResponses(text: string): RawResponse[] {
  const out: RawResponse[] = [];
  let rest = text;
  while (rest.startsWith('HTTP/1.')) {
    const headEnd = rest.indexOf('\r\n\r\n');
    if (headEnd < 0) break;
    const lines = rest.slice(0, headEnd).split('\r\n');
    const status = Number((lines[0] ?? '').split(' ')[1]);
    const headers = lines.slice(1).map((l): [string, string] => {
      const i = l.indexOf(':');
      return [l.slice(0, i).trim().toLowerCase(), l.slice(i + 1).trim()];
    });
    const header = (name: string): string | undefined => headers.find(([k]) => k === name.toLowerCase())?.[1];
    let body = '';
    let after = rest.slice(headEnd + 4);
    const length = header('content-length');
    if (length !== undefined) {
      body = after.slice(0, Number(length));
      after = after.slice(Number(length));
    } else if (/chunked/i.test(header('transfer-encoding') ?? '')) {
      for (;;) {
        const eol = after.indexOf('\r\n');
        if (eol < 0) break;
        const size = parseInt(after.slice(0, eol), 16);
        after = after.slice(eol + 2);
        if (!(size > 0)) {
          after = after.slice(2);
          break;
        }
        body += after.slice(0, size);
        after = after.slice(size + 2);
      }
    } else {
      body = after;
      after = '';
    }
    out.push({ status, headers, header, body });
    rest = after;
  }
  return out;
}
