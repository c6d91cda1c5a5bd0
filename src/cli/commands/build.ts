// `pi-gateway build`: validate the config and regenerate src/generated/ (the same code as `npm run codegen`).
import type { Command } from '../command.ts';
import { flag, parse, str } from '../args.ts';
import { runCodegen } from '../../codegen/run.ts';
import { isSingleExecutable } from '../../install/single-executable.ts';
import { configDirProblem } from '../config-dir.ts';

const HELP = `Usage: pi-gateway build [--config DIR] [--check]

Validates the config directory and regenerates, from it and schemas/:
  src/generated/config-types.ts   types of every config file kind
  src/generated/tables.ts         the compiled config the server loads
  src/generated/catalog.json      the GET /v1/models document
  src/generated/README.md, docs/config-reference.md
Only files whose content changed are written. With config issues, prints every one and writes nothing.

Options:
  --config DIR   Config directory (default: $PI_CONFIG, else ./config).
  --check        Write nothing; exit 1 listing each generated file that is missing or stale.
`;

export const command: Command = {
  summary: 'Validate the config and regenerate src/generated/ (codegen)',
  help: HELP,
  async run(argv) {
    if (isSingleExecutable()) {
      process.stderr.write(
        "pi-gateway build: code generation rewrites the project's own files (src/generated/, docs/) and is not part of the single executable: run it in a checkout of the project (npm ci, then npx pi-gateway build). To validate a config directory, use pi-gateway check.\n",
      );
      return 2;
    }
    const p = parse(argv, { config: { type: 'string' }, check: { type: 'boolean' } }, false);
    const configDir = str(p, 'config', 'PI_CONFIG', 'config') as string;
    const missing = configDirProblem(configDir);
    if (missing !== null) {
      process.stderr.write(`pi-gateway build: ${missing}\n`);
      return 1;
    }
    return runCodegen({ configDir, check: flag(p, 'check') });
  },
};
