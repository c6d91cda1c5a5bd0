// Every connection of the upstream Agent goes through a guard that stands between the socket and
// undici's HTTP/1 parser. It does three jobs:
//
// - Backpressure without pausing undici's parser. undici 7 asserts that its parser is not paused when
//   a connection ends (`assert(!this.paused)` in Parser.finish, called from the socket's 'end',
//   'error' and 'close' listeners): a provider that closes a close-delimited or `Connection: close`
//   answer while the parser is paused makes that assertion throw inside a socket listener — an
//   uncaught exception that ends the process (fixed upstream in undici 8.6, which needs Node 22).
//   So the gateway never pauses the parser: while the exchange on a connection holds (its client is
//   slow), the guard's `read` gives the parser nothing, the socket's buffer fills, Node stops reading
//   from the kernel and TCP pushes back on the provider, exactly as a paused parser would. The end of
//   the connection waits too: Node emits 'end' only once the buffer has been read empty, which happens
//   after the hold is released, with the parser running.
// - Interim heads: unsolicited `100 Continue` heads are removed before the parser sees them
//   (./interim-heads.ts).
// - A last line of defence per connection: an exception thrown by any listener of the socket (undici's
//   parser included) ends the exchange on it with that error and destroys the connection, instead of
//   escaping as an uncaught exception.
//
// Which exchange a connection carries comes from undici's documented `undici:client:sendHeaders`
// diagnostics message, published synchronously right after the exchange's onRequestStart, before
// any byte of the request is written.
import { subscribe } from 'node:diagnostics_channel';
import type { Socket } from 'node:net';
import { buildConnector } from 'undici';
import { InterimHeadFilter } from './interim-heads.ts';

/** What a guard needs from the exchange whose request its connection carries. */
export interface GuardedExchange {
  /** True while the exchange wants no more bytes (its client is not keeping up). */
  readonly held: boolean;
  /** The connection this exchange's request was written on. */
  attach(guard: ConnectionGuard): void;
  /** The connection failed under the exchange (a socket error, a listener that threw): the exchange
   *  ends with `err` whatever undici reports afterwards. */
  connectionFailed(err: Error): void;
}

const GUARDS = new WeakMap<Socket, ConnectionGuard>();

/** The exchange whose request undici is about to write (see announceRequest). */
let announced: GuardedExchange | null = null;

/** Called from an exchange's onRequestStart: the next request undici writes on one of our connections is this one's. */
export function announceRequest(exchange: GuardedExchange): void {
  announced = exchange;
}

subscribe('undici:client:sendHeaders', (message) => {
  const socket = (message as { socket?: Socket }).socket;
  const guard = socket === undefined ? undefined : GUARDS.get(socket);
  // Not one of our connections (Node's own fetch publishes on the same channel): not ours to bind.
  if (guard === undefined) return;
  // A request that is no exchange (a token endpoint's form post) binds nothing.
  guard.requestWritten(announced);
  announced = null;
});

export class ConnectionGuard {
  /** The exchange whose answer this connection is carrying, or null between answers. */
  private exchange: GuardedExchange | null = null;
  private readonly interim = new InterimHeadFilter();

  private readonly socket: Socket;
  constructor(socket: Socket) {
    this.socket = socket;
  }

  /** A request was written on this connection: its answer starts with the next bytes. */
  requestWritten(exchange: GuardedExchange | null): void {
    this.exchange = exchange;
    this.interim.start();
    exchange?.attach(this);
  }

  /** The exchange's answer is over: later bytes are no longer its. */
  release(exchange: GuardedExchange): void {
    if (this.exchange === exchange) this.exchange = null;
  }

  /** The exchange stopped holding: let the parser read what waited (in a microtask, so never from
   *  inside one of undici's own callbacks). */
  wake(): void {
    queueMicrotask(() => {
      if (!this.socket.destroyed && this.exchange !== null && !this.exchange.held) this.socket.emit('readable');
    });
  }

  /** What the parser reads: nothing while the exchange holds; otherwise the socket's bytes, interim
   *  `100` heads removed. */
  read(original: (size?: number) => Buffer | null, size: number | undefined): Buffer | null {
    if (this.exchange?.held) return null;
    const chunk = original.call(this.socket, size);
    return chunk === null ? null : this.interim.push(chunk);
  }

  failed(err: Error): void {
    const exchange = this.exchange;
    this.exchange = null;
    exchange?.connectionFailed(err);
  }

  /** A listener of the socket threw: the exchange ends with the error, the connection is dropped. */
  listenerThrew(thrown: unknown): void {
    const err = thrown instanceof Error ? thrown : new Error(String(thrown));
    this.failed(new Error(`the upstream connection failed inside the HTTP client: ${err.message}`, { cause: err }));
    this.socket.destroy(err);
  }
}

function guard(socket: Socket): void {
  const g = new ConnectionGuard(socket);
  GUARDS.set(socket, g);
  // Registered before undici's own listeners (it adds them once this connector calls back), so the
  // exchange learns of a broken connection before undici decides what the break means.
  socket.on('error', (err: Error) => g.failed(err));
  const read = socket.read as (size?: number) => Buffer | null;
  socket.read = (size?: number): Buffer | null => g.read(read, size);
  const emit = socket.emit;
  // One array per event (the rest parameter, handed on as it is): the socket emits for every read.
  socket.emit = function guardedEmit(this: Socket, ...eventAndArgs: unknown[]): boolean {
    try {
      return Reflect.apply(emit, this, eventAndArgs) as boolean;
    } catch (err) {
      g.listenerThrew(err);
      return true;
    }
  } as Socket['emit'];
}

/** undici's own connector, with every connection it makes guarded. */
export function guardedConnector(options: buildConnector.BuildOptions): buildConnector.connector {
  const connect = buildConnector(options);
  return (opts, callback) => {
    connect(opts, (err, socket) => {
      // A failed connect calls back with the error alone (no socket, not even null).
      if (!socket) callback(err ?? new Error('the connection failed'), null);
      else {
        guard(socket);
        callback(null, socket);
      }
    });
  };
}
