// `pi-gateway simulator`: runs the built-in upstream simulator until SIGINT/SIGTERM.
import type { Command } from '../command.ts';
import { flag, int, parse, PORT_RANGE, str } from '../args.ts';

const HELP = `Usage: pi-gateway simulator [--host 127.0.0.1] [--port 4010] [--api-key KEY] [--no-record] [--max-recorded N]

Runs an HTTP server that behaves like the upstream providers: OpenAI Chat Completions, Responses and
Images, Anthropic Messages (also the Azure /openai/deployments/{name}/… and Vertex
…/models/{model}:rawPredict|streamRawPredict forms), JSON and SSE, with scripted latency and faults.
Any path prefix is accepted, so one simulator can stand in for every platform's base URL.

Scripting (see docs/simulator.md): POST /_sim/script {"model", "behaviour", "times"?}, a "sim" object
in the request body, or an "x-sim" JSON header. Recorded requests: GET /_sim/requests (DELETE clears).

Options:
  --host HOST        Interface to listen on (default 127.0.0.1).
  --port N           Port (default $PI_SIM_PORT, else 4010; 0 picks a free port). A port another
                     process listens on is refused (exit 1).
  --api-key KEY      Require this key (Bearer, x-api-key or api-key) (default $PI_SIM_API_KEY; none).
  --no-record        Do not keep received requests.
  --max-recorded N   How many requests to keep (0 to 1000000, default 1000).
`;

export const command: Command = {
  summary: 'Run the upstream simulator (fake OpenAI/Anthropic APIs for tests and benchmarks)',
  help: HELP,
  async run(argv) {
    const p = parse(
      argv,
      {
        host: { type: 'string' },
        port: { type: 'string' },
        'api-key': { type: 'string' },
        'no-record': { type: 'boolean' },
        'max-recorded': { type: 'string' },
      },
      false,
    );
    const host = str(p, 'host', undefined, '127.0.0.1') as string;
    const port = int(p, 'port', 'PI_SIM_PORT', 4010, PORT_RANGE) as number;
    const apiKey = str(p, 'api-key', 'PI_SIM_API_KEY');
    const maxRecorded = int(p, 'max-recorded', undefined, 1000, { min: 0, max: 1_000_000 }) as number;
    // Loaded here so `pi-gateway --help` never loads the native uWS module.
    const { startSimulator } = await import('../../simulator/server.ts');
    let sim: Awaited<ReturnType<typeof startSimulator>>;
    try {
      sim = await startSimulator({ host, port, apiKey, record: !flag(p, 'no-record'), maxRecorded });
    } catch (err) {
      // A busy port is refused (exclusive listen), as serve refuses one.
      process.stderr.write(
        `pi-gateway simulator: ${err instanceof Error ? err.message.replace(/^simulator: /, '') : String(err)}\n`,
      );
      return 1;
    }
    process.stdout.write(`simulator listening on ${sim.url}\n`);
    await new Promise<void>((resolve) => {
      const stop = () => {
        process.off('SIGINT', stop);
        process.off('SIGTERM', stop);
        resolve();
      };
      process.on('SIGINT', stop);
      process.on('SIGTERM', stop);
    });
    await sim.close();
    return 0;
  },
};
