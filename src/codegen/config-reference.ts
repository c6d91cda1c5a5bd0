// docs/config-reference.md: a readable reference of every config file kind and field, generated from
// the JSON Schemas (their descriptions are the documentation). `node scripts/config-reference.ts`
// prints it to stdout.
import { type JsonSchema, readSchemas } from '../config/validate.ts';

/** The config files, in the order the reference presents them. */
const FILES: { schema: string; path: string; required: string }[] = [
  { schema: 'vocabularies.schema.json', path: 'vocabularies.yaml', required: 'yes' },
  { schema: 'gateway.schema.json', path: 'gateway.yaml', required: 'no (may be empty)' },
  { schema: 'workspaces.schema.json', path: 'workspaces.yaml', required: 'yes' },
  { schema: 'models.schema.json', path: 'models/<vendor>.yaml', required: 'one per vendor' },
  { schema: 'platform.schema.json', path: 'platforms/<platform>.yaml', required: 'one per platform' },
  { schema: 'resources.schema.json', path: 'resources/<platform>.yaml', required: 'one per platform with resources' },
  {
    schema: 'deployments.schema.json',
    path: 'deployments/<platform>.yaml',
    required: 'one per platform that serves models',
  },
];
const DEFS_FILE = 'defs.schema.json';

interface Row {
  key: string;
  type: string;
  required: boolean;
  dflt: string;
  description: string;
}

function obj(v: unknown): JsonSchema | undefined {
  return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as JsonSchema) : undefined;
}

function str(v: unknown): string | undefined {
  return typeof v === 'string' ? v : undefined;
}

function cell(s: string): string {
  return s.replace(/\|/g, '\\|').replace(/\n+/g, ' ');
}

function anchor(name: string): string {
  return `#${name.toLowerCase()}`;
}

class Reference {
  private readonly schemas: Map<string, JsonSchema>;
  /** Named types documented once under "Shared types": every def of defs.schema.json and every scalar def. */
  private readonly shared = new Map<string, JsonSchema>();

  constructor(schemas: Map<string, JsonSchema>) {
    this.schemas = schemas;
    for (const [file, s] of schemas) {
      for (const [name, d] of Object.entries(obj(s['$defs']) ?? {})) {
        const def = obj(d) as JsonSchema;
        if (file === DEFS_FILE || (!obj(def['properties']) && !def['oneOf'])) this.shared.set(name, def);
      }
    }
  }

  /** A `$ref` target: its name, schema, and whether it is documented under "Shared types". */
  private target(ref: string, file: string): { name: string; schema: JsonSchema; shared: boolean } {
    const [refFile, frag = ''] = ref.split('#');
    const name = frag.split('/').pop() as string;
    const holder = this.schemas.get(refFile === '' ? file : (refFile as string));
    const schema = obj(obj(holder?.['$defs'])?.[name]);
    if (!schema) throw new Error(`config reference: cannot resolve ${ref} from ${file}`);
    return { name, schema, shared: this.shared.has(name) };
  }

  private typeOf(s: JsonSchema, file: string): string {
    const ref = str(s['$ref']);
    if (ref) {
      const t = this.target(ref, file);
      return t.shared ? `[${t.name}](${anchor(t.name)})` : t.name;
    }
    if ('const' in s) return `exactly \`${JSON.stringify(s['const'])}\``;
    if (Array.isArray(s['enum'])) return (s['enum'] as unknown[]).map((v) => `\`${JSON.stringify(v)}\``).join(' or ');
    if (Array.isArray(s['oneOf']))
      return (s['oneOf'] as JsonSchema[]).map((b) => str(b['title']) ?? this.typeOf(b, file)).join(' or ');
    const types = Array.isArray(s['type']) ? (s['type'] as string[]) : str(s['type']) ? [s['type'] as string] : [];
    const one = (t: string): string => {
      if (t === 'array') {
        const items = obj(s['items']);
        return items ? `list of ${this.typeOf(items, file)}` : 'list';
      }
      if (t === 'object') {
        const add = obj(s['additionalProperties']);
        if (add && !obj(s['properties'])) {
          const names = obj(s['propertyNames']);
          return `map${names ? ` from ${this.typeOf(names, file)}` : ''} to ${this.typeOf(add, file)}`;
        }
        return str(s['title']) ? `object (${s['title'] as string})` : 'object';
      }
      if (t === 'string' && str(s['format'])) return `string (${s['format'] as string})`;
      return t;
    };
    return types.length > 0 ? types.map(one).join(' or ') : 'any';
  }

  private constraints(s: JsonSchema): string {
    const out: string[] = [];
    if (typeof s['minimum'] === 'number') out.push(`minimum ${s['minimum']}`);
    if (typeof s['exclusiveMinimum'] === 'number') out.push(`above ${s['exclusiveMinimum']}`);
    if (typeof s['maximum'] === 'number') out.push(`maximum ${s['maximum']}`);
    if (typeof s['minItems'] === 'number') out.push(`at least ${s['minItems']} item${s['minItems'] === 1 ? '' : 's'}`);
    if (typeof s['minLength'] === 'number')
      out.push(s['minLength'] === 1 ? 'non-empty' : `at least ${s['minLength']} characters`);
    if (s['uniqueItems'] === true) out.push('no duplicates');
    if (str(s['pattern'])) out.push(`pattern \`${s['pattern'] as string}\``);
    const items = obj(s['items']);
    if (items && str(items['pattern'])) out.push(`items match \`${items['pattern'] as string}\``);
    return out.length ? ` (${out.join('; ')})` : '';
  }

  /** Rows for the properties of an object schema, recursing into inline and file-local objects. */
  private rows(s: JsonSchema, prefix: string, file: string, out: Row[], note = ''): void {
    const required = new Set(Array.isArray(s['required']) ? (s['required'] as string[]) : []);
    for (const [name, raw] of Object.entries(obj(s['properties']) ?? {})) {
      const p = obj(raw) as JsonSchema;
      const key = prefix === '' ? name : `${prefix}.${name}`;
      const ref = str(p['$ref']);
      const resolved = ref ? this.target(ref, file) : null;
      const description =
        str(p['description']) ?? (resolved && !resolved.shared ? str(resolved.schema['description']) : undefined) ?? '';
      out.push({
        key,
        type: this.typeOf(p, file),
        required: required.has(name),
        dflt: 'default' in p ? `\`${JSON.stringify(p['default'])}\`` : '',
        description: (note + description + this.constraints(p)).trim(),
      });
      this.expand(resolved && !resolved.shared ? resolved.schema : p, key, file, out);
    }
  }

  /** Nested fields of a property: inline objects, lists of objects, oneOf branches. */
  private expand(s: JsonSchema, key: string, file: string, out: Row[]): void {
    if (obj(s['properties'])) this.rows(s, key, file, out);
    const items = obj(s['items']);
    if (items) {
      const ref = str(items['$ref']);
      const t = ref ? this.target(ref, file) : null;
      const inner = t ? (t.shared ? null : t.schema) : items;
      if (inner) this.expand(inner, `${key}[]`, file, out);
    }
    if (Array.isArray(s['oneOf'])) {
      for (const b of s['oneOf'] as JsonSchema[])
        this.rows(b, key, file, out, str(b['title']) ? `(${b['title'] as string}) ` : '');
    }
  }

  private table(rows: Row[]): string[] {
    if (rows.length === 0) return ['_No keys._', ''];
    return [
      '| Key | Type | Required | Default | Description |',
      '|---|---|---|---|---|',
      ...rows.map(
        (r) =>
          `| \`${cell(r.key)}\` | ${cell(r.type)} | ${r.required ? 'yes' : 'no'} | ${cell(r.dflt)} | ${cell(r.description)} |`,
      ),
      '',
    ];
  }

  render(): string {
    const lines: string[] = [
      '<!-- Generated by scripts/codegen.ts from schemas/ — do not edit. -->',
      '# Config reference',
      '',
      'The gateway reads one config directory (default `config/`, or `--config DIR` / `PI_CONFIG`). Each file is',
      'YAML validated by a JSON Schema in `schemas/`, then checked across files (`pi-gateway check`), and compiled',
      'into `src/generated/` by `npm run codegen` (`pi-gateway build`). Prices are decimal strings in quotes, never',
      'numbers. Any other file in the directory is an error, except `*.md`, which is ignored.',
      '',
      '| File | Schema | Required | Type |',
      '|---|---|---|---|',
    ];
    for (const f of FILES) {
      const s = this.schemas.get(f.schema) as JsonSchema;
      lines.push(
        `| \`${f.path}\` | \`schemas/${f.schema}\` | ${f.required} | [${str(s['title'])}](${anchor(str(s['title']) as string)}) |`,
      );
    }
    lines.push('');
    for (const f of FILES) {
      const s = this.schemas.get(f.schema);
      if (!s) throw new Error(`config reference: schemas/${f.schema} is missing`);
      const title = str(s['title']) as string;
      lines.push(`## ${title}`, '', `File: \`${f.path}\`. ${str(s['description']) ?? ''}`.trimEnd(), '');
      const rows: Row[] = [];
      this.rows(s, '', f.schema, rows);
      lines.push(...this.table(rows));
    }
    lines.push('## Shared types', '', 'Types referenced from several places above.', '');
    for (const [name, s] of [...this.shared].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
      lines.push(`### ${name}`, '');
      const file = [...this.schemas].find(([, x]) => obj(obj(x['$defs'])?.[name]) === s)?.[0] as string;
      const desc = str(s['description']);
      if (desc) lines.push(desc, '');
      if (obj(s['properties'])) {
        const rows: Row[] = [];
        this.rows(s, '', file, rows);
        lines.push(...this.table(rows));
      } else {
        lines.push(`Type: ${this.typeOf(s, file)}${this.constraints(s)}.`, '');
      }
    }
    return lines.join('\n').replace(/\n+$/, '\n');
  }
}

/** The text of docs/config-reference.md. */
export function renderConfigReference(schemas: Map<string, JsonSchema> = readSchemas()): string {
  return new Reference(schemas).render();
}
