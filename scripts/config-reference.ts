// Prints docs/config-reference.md (as codegen would write it) to stdout: `node scripts/config-reference.ts`.
import { renderConfigReference } from '../src/codegen/config-reference.ts';

process.stdout.write(renderConfigReference());
