// src/generated/config-types.ts: TypeScript types of every config file kind, from the JSON Schemas
// (json-schema-to-typescript; type names are the schemas' `title`s, descriptions become JSDoc).
import type { JsonSchema } from '../config/validate.ts';
import { GENERATED_BANNER } from './banner.ts';

const DEFS_FILE = 'defs.schema.json';

/**
 * The schemas reference each other by relative `$id` (`defs.schema.json#/$defs/Id`). Resolving those
 * would make the ref parser fetch https URLs, so they are bundled into one local schema first: every
 * `$defs` entry and every file schema becomes a local `#/$defs/<Name>`.
 */
export function bundleSchemas(schemas: Map<string, JsonSchema>): JsonSchema {
  const defs: Record<string, unknown> = {};
  const fileTitle = new Map<string, string>();
  for (const [file, s] of schemas) {
    if (file === DEFS_FILE) continue;
    if (typeof s['title'] !== 'string') throw new Error(`${file} has no title`);
    fileTitle.set(file, s['title']);
  }
  const add = (name: string, value: unknown, from: string) => {
    if (name in defs) throw new Error(`schema name "${name}" (from ${from}) is defined twice; titles must be unique`);
    defs[name] = value;
  };
  const rewrite = (node: unknown): unknown => {
    if (Array.isArray(node)) return node.map(rewrite);
    if (node === null || typeof node !== 'object') return node;
    const out: Record<string, unknown> = {};
    let obj = node as JsonSchema;
    const { $ref: ref, ...siblings } = obj;
    if (typeof ref === 'string' && Object.keys(siblings).length > 0) {
      // `{ $ref, description }` makes the generator declare a numbered near-copy (Pricing1, Id2, …)
      // per use. A scalar type (Id, DecimalUsd, …) is inlined instead, so the property keeps its own
      // description; an object type is referenced by name (its description stays on the type).
      const target = scalarTarget(ref);
      if (target) return rewrite({ ...omitTitle(target), ...siblings });
      obj = { $ref: ref };
    }
    for (const [k, v] of Object.entries(obj)) {
      if (k === '$ref' && typeof v === 'string') {
        const [file, frag] = v.split('#') as [string, string | undefined];
        if (frag) out[k] = `#${frag}`;
        else if (fileTitle.has(file)) out[k] = `#/$defs/${fileTitle.get(file) as string}`;
        else throw new Error(`cannot bundle $ref ${v}`);
      } else out[k] = rewrite(v);
    }
    return out;
  };
  const scalarDefs = new Map<string, JsonSchema>();
  for (const s of schemas.values()) {
    for (const [name, d] of Object.entries((s['$defs'] ?? {}) as Record<string, JsonSchema>)) {
      if (d['type'] === 'string' || d['enum'] !== undefined) scalarDefs.set(name, d);
    }
  }
  const scalarTarget = (ref: string) => scalarDefs.get(ref.split('/').pop() as string);
  for (const [file, s] of schemas) {
    const { $defs, $id: _id, $schema: _schema, ...rest } = s as JsonSchema & { $defs?: Record<string, unknown> };
    for (const [name, d] of Object.entries($defs ?? {})) {
      add(name, rewrite(d), file);
    }
    if (file !== DEFS_FILE) add(fileTitle.get(file) as string, rewrite(rest), file);
  }
  const properties: Record<string, unknown> = {};
  for (const [file, name] of fileTitle) properties[file.replace(/\.schema\.json$/, '')] = { $ref: `#/$defs/${name}` };
  return {
    title: 'ConfigFiles',
    description: 'Every config file kind, by schema name (an index of the types below, not a file itself).',
    type: 'object',
    additionalProperties: false,
    properties,
    $defs: defs,
  };
}

function omitTitle(s: JsonSchema): JsonSchema {
  const { title: _title, ...rest } = s;
  return rest;
}

/** The text of src/generated/config-types.ts. */
export async function emitTypes(schemas: Map<string, JsonSchema>): Promise<string> {
  // Imported lazily: only codegen needs it (a runtime dependency for `pi-gateway build`), and it is
  // heavy (prettier included), so `check` and `serve` never load it.
  const { compile } = await import('json-schema-to-typescript');
  const ts = await compile(bundleSchemas(schemas) as Parameters<typeof compile>[0], 'ConfigFiles', {
    bannerComment: GENERATED_BANNER,
    additionalProperties: false,
    declareExternallyReferenced: true,
    unreachableDefinitions: true,
    strictIndexSignatures: true,
    unknownAny: true,
    ignoreMinAndMaxItems: true,
    format: true,
    // Fixed style, so the output never depends on a prettier config found on the machine.
    style: {
      printWidth: 120,
      singleQuote: true,
      trailingComma: 'all',
      semi: true,
      tabWidth: 2,
      useTabs: false,
      endOfLine: 'lf',
    },
  });
  return ts.endsWith('\n') ? ts : ts + '\n';
}
