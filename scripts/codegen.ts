// Entry of `npm run codegen` (write src/generated/ and docs/config-reference.md) and
// `npm run build:check` (`--check`: regenerate in memory, exit 1 listing stale files). `--config DIR`
// picks the config dir (default config/, env PI_CONFIG). The codegen library is src/codegen/, shared
// with `pi-gateway build`.
import { parseCodegenArgs, runCodegen } from '../src/codegen/run.ts';

try {
  process.exitCode = await runCodegen(parseCodegenArgs(process.argv.slice(2)));
} catch (err) {
  process.stderr.write(`codegen: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exitCode = 1;
}
