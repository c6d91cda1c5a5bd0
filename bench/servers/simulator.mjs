// Benchmark launcher for the compiled upstream simulator (dist/), recording off. Prints one JSON
// line {"ready":true,url,port}. Behaviours are scripted over HTTP (POST /_sim/script).
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = process.env.PI_BENCH_TREE || fileURLToPath(new URL('../..', import.meta.url));
const { startSimulator } = await import(join(ROOT, 'dist', 'src', 'simulator', 'server.js'));

const sim = await startSimulator({ host: '127.0.0.1', port: 0, record: false });
process.stdout.write(JSON.stringify({ ready: true, url: sim.url, port: sim.port }) + '\n');

const stop = async () => {
  await sim.close();
  process.exit(0);
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
