// A free TCP port on 127.0.0.1 for servers that need a concrete port (postgres, redis-server):
// bound with port 0, read, closed. Another process could take it in between; the servers here
// start within milliseconds, and a clash fails loudly at start.
import { createServer } from 'node:net';

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.unref();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const addr = s.address();
      const port = typeof addr === 'object' && addr !== null ? addr.port : 0;
      s.close(() => resolve(port));
    });
  });
}
