// src/generated/tables.ts: the compiled config printed as a typed TypeScript literal (bigint prices
// as `123n`), deterministic so a config change shows up as a reviewable diff.
import type { CompiledConfig } from '../config/compiled.ts';
import { GENERATED_BANNER } from './banner.ts';

const IDENT = /^[A-Za-z_$][A-Za-z0-9_$]*$/;
/** Arrays of scalars that fit on one line stay on one line; everything else is one entry per line. */
const INLINE_WIDTH = 100;

function key(k: string): string {
  return IDENT.test(k) ? k : JSON.stringify(k);
}

function scalar(v: unknown): string | undefined {
  if (v === null) return 'null';
  switch (typeof v) {
    case 'string':
      return JSON.stringify(v);
    case 'boolean':
      return String(v);
    case 'bigint':
      return `${v}n`;
    case 'number':
      if (!Number.isFinite(v)) throw new Error(`cannot print ${v} in tables.ts`);
      return Object.is(v, -0) ? '0' : String(v);
    default:
      return undefined;
  }
}

/** A JS value (plain objects, arrays, scalars, bigint) as TypeScript source, in the value's key order. */
export function printTs(v: unknown, indent = ''): string {
  const s = scalar(v);
  if (s !== undefined) return s;
  const inner = indent + '  ';
  if (Array.isArray(v)) {
    if (v.length === 0) return '[]';
    const flat = v.map(scalar);
    if (flat.every((x) => x !== undefined)) {
      const line = `[${flat.join(', ')}]`;
      if (line.length + indent.length <= INLINE_WIDTH) return line;
    }
    return `[\n${v.map((x) => `${inner}${printTs(x, inner)},\n`).join('')}${indent}]`;
  }
  if (v !== null && typeof v === 'object') {
    const entries = Object.entries(v).filter(([, x]) => x !== undefined);
    if (entries.length === 0) return '{}';
    return `{\n${entries.map(([k, x]) => `${inner}${key(k)}: ${printTs(x, inner)},\n`).join('')}${indent}}`;
  }
  throw new Error(`cannot print a ${typeof v} in tables.ts`);
}

/** The text of src/generated/tables.ts. */
export function emitTables(config: CompiledConfig): string {
  return [
    GENERATED_BANNER,
    '// The compiled config (src/config/compiled.ts types) of the YAML under config/; `sourceHash` identifies that YAML.',
    "import type { CompiledConfig } from '../config/compiled.ts';",
    '',
    `export const tables: CompiledConfig = ${printTs(config)};`,
    '',
  ].join('\n');
}
