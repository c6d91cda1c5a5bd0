// The catalog's ceiling: a bare uWebSockets.js handler that answers GET /v1/models with a fixed
// payload (the bytes the gateway serves, captured by bench/catalog.mjs and passed as a file).
// Content-Type only: none of the gateway's trace, CORS and security headers.
//
//   node bench/static-catalog.mjs --payload FILE [--port 0]
// Prints one JSON line {"ready":true,url,port,bytes}.
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import uWS from 'uWebSockets.js';

const { values } = parseArgs({ options: { payload: { type: 'string' }, port: { type: 'string', default: '0' } } });
if (!values.payload) {
  process.stderr.write('static-catalog: --payload FILE is required\n');
  process.exit(2);
}
const payload = readFileSync(values.payload);

const app = uWS.App();
app.get('/v1/models', (res) => {
  // Inside the route callback the response is already corked.
  res.writeHeader('Content-Type', 'application/json');
  res.end(payload);
});
app.any('/*', (res) => {
  res.writeStatus('404 Not Found').end();
});
app.listen('127.0.0.1', Number(values.port), (socket) => {
  if (!socket) {
    process.stderr.write('static-catalog: cannot listen\n');
    process.exit(1);
  }
  const port = uWS.us_socket_local_port(socket);
  process.stdout.write(
    JSON.stringify({ ready: true, url: `http://127.0.0.1:${port}`, port, bytes: payload.length }) + '\n',
  );
  const stop = () => {
    uWS.us_listen_socket_close(socket);
    process.exit(0);
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
});
