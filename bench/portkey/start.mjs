// Starts @portkey-ai/gateway 1.15.2 (its own Node entry, build/start-server.js: a Hono app on
// @hono/node-server) for the proxy benchmark, with two changes made from outside its code:
// - it listens on 127.0.0.1 and a free port: its entry calls server.listen(port) on every interface,
//   so net.Server.prototype.listen is wrapped before the entry is imported;
// - once listening it prints one JSON line {"ready":true,url,port} (after its own banner).
// `--headless` (its own flag) skips the web UI. Nothing else is configured: no cache, no Redis, no
// retries unless a request asks for them. Requests pick the upstream with headers:
//   x-portkey-provider: openai
//   x-portkey-custom-host: http://127.0.0.1:<sim port>/v1   (127.0.0.1 is a default trusted host)
//   Authorization: Bearer <any>
//
//   node bench/portkey/start.mjs --headless
import net from 'node:net';

const listen = net.Server.prototype.listen;
let wrapped = false;
net.Server.prototype.listen = function patchedListen(...args) {
  if (wrapped || !(typeof args[0] === 'number' || typeof args[0] === 'string')) return listen.apply(this, args);
  wrapped = true;
  const cb = args.find((a) => typeof a === 'function');
  this.once('listening', () => {
    const { port } = this.address();
    // After the entry's own 1 s start-up banner, so the line is not overwritten by console.clear().
    setTimeout(
      () => process.stdout.write('\n' + JSON.stringify({ ready: true, url: `http://127.0.0.1:${port}`, port }) + '\n'),
      1500,
    );
  });
  return listen.call(this, { port: 0, host: '127.0.0.1' }, cb);
};

process.on('SIGTERM', () => process.exit(0));
process.on('SIGINT', () => process.exit(0));

await import('./node_modules/@portkey-ai/gateway/build/start-server.js');
