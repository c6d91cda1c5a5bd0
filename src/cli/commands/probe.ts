// `pi-gateway probe`: a container health check that needs no curl in the image — asks the admin
// listener's readiness (or liveness) and exits 0 on 200.
import type { Command } from '../command.ts';
import { flag, int, parse, PORT_RANGE, str, url, UsageError } from '../args.ts';

const HELP = `Usage: pi-gateway probe [--live] [--port N] [--host HOST] [--url URL] [--timeout-ms N]

Asks the admin listener (serve --admin-port) GET /health/ready (with --live: /health/live) and exits
0 when it answers 200, 1 otherwise (not ready, draining, or no answer within the timeout), printing
the answer's reasons. Meant for a container's HEALTHCHECK, where the image has no curl:
  HEALTHCHECK CMD ["pi-gateway", "probe"]

Options:
  --port N          admin port (env PI_ADMIN_PORT)
  --host HOST       admin address (default 127.0.0.1)
  --url URL         the whole URL instead of host and port
  --live            liveness instead of readiness
  --timeout-ms N    how long to wait for the answer (default 2000)`;

export const command: Command = {
  summary: 'exit 0 when the admin listener says ready (container health checks)',
  help: HELP,
  async run(argv) {
    let target: string;
    let timeoutMs: number;
    try {
      const p = parse(
        argv,
        {
          port: { type: 'string' },
          host: { type: 'string' },
          url: { type: 'string' },
          live: { type: 'boolean' },
          'timeout-ms': { type: 'string' },
        },
        false,
      );
      timeoutMs = int(p, 'timeout-ms', undefined, 2000, { min: 1, max: 600_000 }) as number;
      const given = url(p, 'url', undefined, ['http:', 'https:'], 'http://127.0.0.1:9090/health/ready');
      if (given) target = given;
      else {
        const port = int(p, 'port', 'PI_ADMIN_PORT', undefined, PORT_RANGE);
        if (port === undefined || port === 0)
          throw new UsageError('the admin port is needed: --port N or PI_ADMIN_PORT');
        target = `http://${str(p, 'host', undefined, '127.0.0.1')}:${port}/health/${flag(p, 'live') ? 'live' : 'ready'}`;
      }
    } catch (err) {
      if (!(err instanceof UsageError)) throw err;
      process.stderr.write(`pi-gateway probe: ${err.message}\n`);
      return 2;
    }
    try {
      const res = await fetch(target, { signal: AbortSignal.timeout(timeoutMs) });
      const text = await res.text();
      if (res.status === 200) return 0;
      process.stderr.write(`pi-gateway probe: ${target} answered ${res.status}: ${text.slice(0, 500)}\n`);
      return 1;
    } catch (err) {
      process.stderr.write(
        `pi-gateway probe: no answer from ${target}: ${err instanceof Error ? err.message : String(err)}\n`,
      );
      return 1;
    }
  },
};
