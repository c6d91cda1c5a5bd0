/**
 * The listening port of `serve --workers N`, held from the moment it is chosen until the serving
 * threads listen on it. The threads bind with SO_REUSEPORT, so the port must be free of any other
 * listener when it is chosen, and nothing else may take it between that choice and their bind: with
 * `--port 0` a probe that picked a free port and closed it left a gap in which another socket on the
 * machine could take the same port, and the threads then failed to start (or shared it).
 */
import { createServer, type Server } from 'node:net';

export interface PortHold {
  /** The port held (for `--port 0`, the one the kernel picked). */
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
 * Holds `port` (0: a free port the kernel picks) with an SO_REUSEPORT listener the serving threads
 * can bind beside. A fixed port is first checked with an exclusive bind, so that a port another
 * SO_REUSEPORT listener already serves (say, a second gateway started on it) is refused rather than
 * shared. The kernel never picks for port 0 a port another SO_REUSEPORT socket holds.
 */
export async function holdPort(host: string, port: number): Promise<PortHold> {
  if (port !== 0) await close(await listen(host, port, false));
  const hold = await listen(host, port, true);
  const address = hold.address();
  const held = typeof address === 'object' && address ? address.port : port;
  let released: Promise<void> | null = null;
  return { port: held, release: () => (released ??= close(hold)) };
}
