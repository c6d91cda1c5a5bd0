// An upstream that can send any bytes: a plain TCP server that parses each HTTP/1.1 request it
// receives (head, then a Content-Length or chunked body) and hands the test the socket, so an answer
// can be split, truncated, interleaved with interim 1xx heads, close-delimited, oversized or cut by a
// reset — everything node:http refuses to write. What a misbehaving provider does is written here as
// bytes, never through an HTTP library.
import { createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';

export interface RawExchange {
  /** Order of arrival, from 0, over all connections. */
  index: number;
  method: string;
  path: string;
  /** Header names lower-cased; a repeated header keeps its last value. */
  headers: Record<string, string>;
  body: Buffer;
  socket: Socket;
  /** Writes raw bytes (strings as latin1, so every byte value is reachable). */
  write(bytes: string | Buffer): boolean;
  /** Writes the bytes, then half-closes the connection (FIN). */
  end(bytes?: string | Buffer): void;
  /** Drops the connection with a TCP reset. */
  reset(): void;
}

export interface RawUpstream {
  url: string;
  server: Server;
  exchanges: RawExchange[];
  /** Connections currently open. */
  sockets: Set<Socket>;
  close(): Promise<void>;
}

export interface TeardownLike {
  teardown(fn: () => unknown): void;
}

/** Starts the upstream on 127.0.0.1 port 0; `onRequest` writes the answer (or nothing). */
export async function rawUpstream(t: TeardownLike, onRequest: (ex: RawExchange) => void): Promise<RawUpstream> {
  const up: RawUpstream = {
    url: '',
    server: createServer(),
    exchanges: [],
    sockets: new Set(),
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of up.sockets) s.destroy();
        up.server.close(() => resolve());
      }),
  };
  up.server.on('connection', (socket) => {
    up.sockets.add(socket);
    socket.on('close', () => up.sockets.delete(socket));
    socket.on('error', () => undefined);
    let buf = Buffer.alloc(0);
    const parse = (): void => {
      const req = parseRequest(buf);
      if (req === null) return;
      buf = buf.subarray(req.consumed);
      const ex: RawExchange = {
        index: up.exchanges.length,
        method: req.method,
        path: req.path,
        headers: req.headers,
        body: req.body,
        socket,
        write: (b) => !socket.destroyed && socket.write(typeof b === 'string' ? Buffer.from(b, 'latin1') : b),
        end: (b) => {
          if (socket.destroyed) return;
          if (b !== undefined) socket.write(typeof b === 'string' ? Buffer.from(b, 'latin1') : b);
          socket.end();
        },
        reset: () => socket.resetAndDestroy(),
      };
      up.exchanges.push(ex);
      onRequest(ex);
      // A keep-alive connection may carry the next request once this one is answered.
      setImmediate(parse);
    };
    socket.on('data', (chunk: Buffer) => {
      buf = Buffer.concat([buf, chunk]);
      parse();
    });
  });
  await new Promise<void>((r) => up.server.listen(0, '127.0.0.1', r));
  up.url = `http://127.0.0.1:${(up.server.address() as AddressInfo).port}`;
  t.teardown(() => up.close());
  return up;
}

interface ParsedRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  body: Buffer;
  consumed: number;
}

/** One whole request at the start of `buf`, or null while more bytes are needed. */
function parseRequest(buf: Buffer): ParsedRequest | null {
  const headEnd = buf.indexOf('\r\n\r\n');
  if (headEnd === -1) return null;
  const lines = buf.subarray(0, headEnd).toString('latin1').split('\r\n');
  const [method = '', path = ''] = (lines[0] ?? '').split(' ');
  const headers: Record<string, string> = {};
  for (const line of lines.slice(1)) {
    const colon = line.indexOf(':');
    if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  let at = headEnd + 4;
  if (/chunked/i.test(headers['transfer-encoding'] ?? '')) {
    const parts: Buffer[] = [];
    for (;;) {
      const lineEnd = buf.indexOf('\r\n', at);
      if (lineEnd === -1) return null;
      const size = parseInt(buf.subarray(at, lineEnd).toString('latin1'), 16);
      if (!Number.isFinite(size)) return null;
      if (buf.length < lineEnd + 2 + size + 2) return null;
      if (size === 0) {
        // Trailers are not used by undici here; the terminating CRLF follows.
        return { method, path, headers, body: Buffer.concat(parts), consumed: lineEnd + 4 };
      }
      parts.push(buf.subarray(lineEnd + 2, lineEnd + 2 + size));
      at = lineEnd + 2 + size + 2;
    }
  }
  const length = Number(headers['content-length'] ?? 0);
  if (buf.length < at + length) return null;
  return { method, path, headers, body: Buffer.from(buf.subarray(at, at + length)), consumed: at + length };
}

/** An answer's head, written as given (`\r\n` separators added). */
export function rawHead(status: string, headers: [string, string][]): string {
  return `HTTP/1.1 ${status}\r\n${headers.map(([k, v]) => `${k}: ${v}\r\n`).join('')}\r\n`;
}

/** A whole JSON answer with its Content-Length. */
export function rawJson(status: string, body: string | Buffer, extra: [string, string][] = []): Buffer {
  const b = typeof body === 'string' ? Buffer.from(body) : body;
  return Buffer.concat([
    Buffer.from(
      rawHead(status, [['Content-Type', 'application/json'], ['Content-Length', String(b.length)], ...extra]),
      'latin1',
    ),
    b,
  ]);
}
