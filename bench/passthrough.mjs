// The ceiling for any Node proxy: a bare uWebSockets.js server that forwards every request (method,
// path, headers minus hop-by-hop, whole body) to one upstream origin through an undici Agent and
// streams the answer back as it arrives — no parsing, no routing, no auth, no accounting. Backpressure
// both ways: when the client socket is full (uWS write/tryEnd says so) the upstream read is paused
// through undici's dispatch controller and resumed from onWritable. Same libraries and the same
// undici dispatch API as the gateway's upstream client, so the difference is the gateway's logic.
//
//   node bench/passthrough.mjs --upstream http://127.0.0.1:PORT [--port 0]
// Prints one JSON line {"ready":true,url,port}.
import { STATUS_CODES } from 'node:http';
import { parseArgs } from 'node:util';
import uWS from 'uWebSockets.js';
import { Agent } from 'undici';

const { values } = parseArgs({ options: { upstream: { type: 'string' }, port: { type: 'string', default: '0' } } });
if (!values.upstream) {
  process.stderr.write('passthrough: --upstream URL is required\n');
  process.exit(2);
}
const origin = new URL(values.upstream).origin;
const agent = new Agent({
  keepAliveTimeout: 30_000,
  keepAliveMaxTimeout: 600_000,
  headersTimeout: 0,
  bodyTimeout: 0,
  pipelining: 1,
});

const HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'transfer-encoding',
  'te',
  'trailer',
  'upgrade',
  'host',
  'content-length',
]);
const statusLines = new Map();
const statusLine = (s) => {
  let l = statusLines.get(s);
  if (!l) statusLines.set(s, (l = `${s} ${STATUS_CODES[s] ?? 'Unknown'}`));
  return l;
};

function forward(res, method, path, headers, body) {
  let aborted = false;
  let ctrl = null;
  let total = -1; // Content-Length of the answer, or -1 for chunked
  let ended = false;
  let headWritten = false;
  // Backpressure in sized mode: the part tryEnd could not take, and the write offset it starts at.
  let pending = null;
  let pendingAt = 0;
  res.onAborted(() => {
    aborted = true;
    ctrl?.abort(new Error('client aborted'));
  });

  const handler = {
    onRequestStart(c) {
      ctrl = c;
      if (aborted) c.abort(new Error('client aborted'));
    },
    onResponseStart(_c, status, h) {
      if (aborted) return;
      const cl = h['content-length'];
      total = cl !== undefined ? Number(cl) : -1;
      headWritten = true;
      res.cork(() => {
        res.writeStatus(statusLine(status));
        for (const k in h) {
          if (HOP.has(k) || k === 'date') continue;
          const v = h[k];
          if (Array.isArray(v)) for (const x of v) res.writeHeader(k, x);
          else if (v !== undefined) res.writeHeader(k, v);
        }
      });
    },
    onResponseData(c, chunk) {
      if (aborted || ended) return;
      res.cork(() => {
        if (total >= 0) {
          if (pending) {
            pending = Buffer.concat([pending, chunk]);
            return;
          }
          const at = res.getWriteOffset();
          const [ok, done] = res.tryEnd(chunk, total);
          if (done) {
            ended = true;
            return;
          }
          if (!ok) {
            pending = chunk;
            pendingAt = at;
            c.pause();
            res.onWritable((offset) => {
              if (aborted || !pending) return true;
              const [ok2, done2] = res.tryEnd(pending.subarray(offset - pendingAt), total);
              if (done2) ended = true;
              if (ok2 || done2) {
                pending = null;
                c.resume();
              }
              return ok2;
            });
          }
          return;
        }
        if (!res.write(chunk)) {
          c.pause();
          res.onWritable(() => {
            c.resume();
            return true;
          });
        }
      });
    },
    onResponseEnd() {
      if (aborted || ended) return;
      ended = true;
      res.cork(() => {
        if (total > 0) return; // tryEnd already ended it (or will, from onWritable)
        res.end();
      });
    },
    onResponseError(_c, err) {
      if (aborted || ended) return;
      ended = true;
      if (headWritten) {
        res.close();
        return;
      }
      res.cork(() => {
        res.writeStatus('502 Bad Gateway').end(JSON.stringify({ error: { message: String(err?.message) } }));
      });
    },
  };
  agent.dispatch({ origin, path, method, headers, body }, handler);
}

const app = uWS.App();
app.any('/*', (res, req) => {
  const method = req.getCaseSensitiveMethod().toUpperCase();
  const q = req.getQuery();
  const path = q ? `${req.getUrl()}?${q}` : req.getUrl();
  const headers = {};
  req.forEach((k, v) => {
    if (!HOP.has(k)) headers[k] = v;
  });
  if (method === 'GET' || method === 'HEAD' || method === 'OPTIONS') {
    forward(res, method, path, headers, null);
    return;
  }
  const chunks = [];
  let size = 0;
  let aborted = false;
  res.onAborted(() => {
    aborted = true;
  });
  res.onData((ab, isLast) => {
    if (aborted) return;
    if (ab.byteLength > 0) {
      chunks.push(Buffer.from(ab.slice(0)));
      size += ab.byteLength;
    }
    if (isLast) forward(res, method, path, headers, chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, size));
  });
});

app.listen('127.0.0.1', Number(values.port), (socket) => {
  if (!socket) {
    process.stderr.write('passthrough: cannot listen\n');
    process.exit(1);
  }
  const port = uWS.us_socket_local_port(socket);
  process.stdout.write(JSON.stringify({ ready: true, url: `http://127.0.0.1:${port}`, port }) + '\n');
  const stop = async () => {
    uWS.us_listen_socket_close(socket);
    await agent.destroy();
    process.exit(0);
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
});
