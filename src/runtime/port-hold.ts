/**
 * The listening port of `serve --workers N`, chosen before the serving threads bind it with
 * SO_REUSEPORT. It must be free of any other listener when chosen; with `--port 0` it is also held
 * from that moment until the threads listen: a probe that picked a free port and closed it left a
 * gap in which another socket on the machine could take the same port, and the threads then failed
 * to start (or shared it).
 */
import { createServer, type Server } from 'node:net';

export interface PortHold {
  /** The port (for `--port 0`, the one the kernel picked). */
  port: number;
  /** Closes the hold; call once the serving threads listen (or failed to). */
  release(): Promise<void>;
}

const errorText = (err: unknown): string => (err instanceof Error ? err.message : String(err));

function listen(host: string, port: number, reusePort: boolean): Promise<Server> {
  return new Promise((resolve, reject) => {
    // A connection the kernel hands to the hold instead of a serving thread is closed at once;
    // the port is announced only after the hold is released, so none is expected.
    const server = createServer((socket) => socket.destroy());
    server.once('error', (err) =>
      reject(
        new Error(
          `cannot listen on ${host}:${port}: ${errorText(err)} (the port is in use, or the address is not available)`,
        ),
      ),
    );
    server.listen({ host, port, exclusive: true, reusePort }, () => resolve(server));
  });
}

const close = (server: Server): Promise<void> => new Promise((resolve) => server.close(() => resolve()));

/**
 * With port 0, holds a free port the kernel picks with an SO_REUSEPORT listener the serving threads
 * bind beside (the kernel never picks for port 0 a port another SO_REUSEPORT socket holds). Nobody
 * can connect to it before the address is reported, which is after the release, so no client meets
 * the hold. A fixed port is checked with an exclusive bind and not held: clients may already be
 * connecting to it, and a hold would take a share of those connections and reset them. The check
 * refuses a port another SO_REUSEPORT listener already serves (say, a second gateway started on
 * it) rather than sharing it; between the check and the threads' bind a few milliseconds remain in
 * which another listener could take a fixed port, and the threads' start then fails.
 */
export async function holdPort(host: string, port: number): Promise<PortHold> {
  if (port !== 0) {
    await close(await listen(host, port, false));
    return { port, release: () => Promise.resolve() };
  }
  const hold = await listen(host, 0, true);
  const address = hold.address();
  const held = typeof address === 'object' && address ? address.port : port;
  let released: Promise<void> | null = null;
  return { port: held, release: () => (released ??= close(hold)) };
}
