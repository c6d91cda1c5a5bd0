// Schema validation of each config file (ajv, draft 2020-12, strict, allErrors), with ajv's errors
// rewritten as plain messages that name the key, each located at its line:col.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { projectPath } from '../install/project-root.ts';
import type { ConfigIssue, PathSegment } from './issues.ts';
import { type FileKind, issueAt, type SourceFile } from './load.ts';

/** Schema file of each config file kind. */
export const SCHEMA_FILES: Record<FileKind, string> = {
  vocabularies: 'vocabularies.schema.json',
  gateway: 'gateway.schema.json',
  workspaces: 'workspaces.schema.json',
  models: 'models.schema.json',
  platform: 'platform.schema.json',
  resources: 'resources.schema.json',
  deployments: 'deployments.schema.json',
};

export type JsonSchema = Record<string, unknown>;

/** The project's `schemas/` folder (a checkout, the npm package, or the single executable's files). */
export function schemasDir(): string {
  return projectPath('schemas');
}

/** Every `*.schema.json` of a schemas folder, by file name, in sorted order. */
export function readSchemas(dir: string = schemasDir()): Map<string, JsonSchema> {
  const out = new Map<string, JsonSchema>();
  for (const name of readdirSync(dir)
    .filter((n) => n.endsWith('.schema.json'))
    .sort()) {
    out.set(name, JSON.parse(readFileSync(join(dir, name), 'utf8')) as JsonSchema);
  }
  return out;
}

interface Compiled {
  schemas: Map<string, JsonSchema>;
  validators: Map<FileKind, ValidateFunction>;
}
let compiled: Compiled | undefined;

function compiledSchemas(): Compiled {
  if (compiled) return compiled;
  const schemas = readSchemas();
  // verbose: errors carry parentSchema, whose `title` picks the message (DecimalUsd, Pricing, …).
  // The code optimiser halves compile time's worth of work for validators that run a few dozen times
  // per process: not worth it (measured: ~780 ms → ~350 ms to compile the schemas).
  const ajv = new Ajv2020({
    allErrors: true,
    strict: true,
    allowUnionTypes: true,
    verbose: true,
    code: { optimize: false },
  });
  addFormatsModule.default(ajv);
  for (const s of schemas.values()) ajv.addSchema(s);
  const validators = new Map<FileKind, ValidateFunction>();
  for (const [kind, file] of Object.entries(SCHEMA_FILES) as [FileKind, string][]) {
    const id = schemas.get(file)?.['$id'];
    const v = typeof id === 'string' ? ajv.getSchema(id) : undefined;
    if (!v) throw new Error(`schema ${file} is missing or has no $id`);
    validators.set(kind, v);
  }
  compiled = { schemas, validators };
  return compiled;
}

/** The `default` at a JSON pointer of a schema file, e.g. (`deployments.schema.json`,
 *  `/$defs/Deployment/properties/weight`). */
export function schemaDefault(file: string, pointer: string): unknown {
  let node: unknown = compiledSchemas().schemas.get(file);
  for (const raw of pointer.split('/').slice(1)) {
    const key = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    node = node && typeof node === 'object' ? (node as Record<string, unknown>)[key] : undefined;
  }
  const d = node && typeof node === 'object' ? (node as Record<string, unknown>)['default'] : undefined;
  if (d === undefined) throw new Error(`no default at ${file}#${pointer}`);
  return d;
}

export interface FileValidation {
  issues: ConfigIssue[];
  /** Paths that have a schema problem at or below them: linking skips what these touch. */
  errorPaths: PathSegment[][];
}

/** Validates one parsed file against the schema of its kind. */
export function validateFile(f: SourceFile): FileValidation {
  if (!f.parsed) return { issues: [], errorPaths: [[]] };
  let data = f.data;
  if (data === null || data === undefined) {
    // An empty gateway.yaml means "all defaults"; any other empty file is a mistake.
    if (f.kind === 'gateway') data = f.data = {};
    else return { issues: [issueAt(f, [], 'file is empty')], errorPaths: [[]] };
  }
  const validate = compiledSchemas().validators.get(f.kind) as ValidateFunction;
  if (validate(data)) return { issues: [], errorPaths: [] };
  const out: FileValidation = { issues: [], errorPaths: [] };
  for (const e of explain(data, validate.errors ?? [])) {
    out.issues.push(issueAt(f, e.path, e.message, e.at));
    out.errorPaths.push(e.path);
  }
  return out;
}

interface Explained {
  path: PathSegment[];
  message: string;
  at: 'value' | 'key';
}

/** JSON pointer → segments, with array indices as numbers (checked against the data). */
function segments(data: unknown, pointer: string): PathSegment[] {
  const out: PathSegment[] = [];
  let node = data;
  for (const raw of pointer === '' ? [] : pointer.split('/').slice(1)) {
    const key = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    if (Array.isArray(node)) {
      out.push(Number(key));
      node = node[Number(key)];
    } else {
      out.push(key);
      node = node && typeof node === 'object' ? (node as Record<string, unknown>)[key] : undefined;
    }
  }
  return out;
}

const PRICE_TITLES = new Set(['Pricing', 'PriceBracket', 'PriceClasses']);
const DECIMAL_USD = 'must be a decimal USD string such as "0.0000025" (at most 12 decimals)';
/** Messages for values of a named shared type, whichever keyword (pattern, format, type) failed. */
const TYPE_MESSAGES: Record<string, string> = {
  DecimalUsd: DECIMAL_USD,
  WalletUsd: 'must be a decimal USD string such as "25" or "12.5" (at most 9 decimals, below 1,000,000,000)',
  Id: 'must be a lowercase id: letters, digits and dashes, starting with a letter or digit, at most 64 characters',
  VocabId:
    'must be a vocabulary id: lowercase letters, digits, underscores and dashes, starting with a letter or digit',
  Slug: 'must be a model slug "vendor/model" (lowercase; the model half may also use ".", "_" and ":")',
  IsoDate: 'must be a date YYYY-MM-DD',
  UtcTimestamp: 'must be a UTC timestamp ending in "Z", such as "2026-12-01T00:00:00Z"',
};

function title(e: ErrorObject): string | undefined {
  const t = (e.parentSchema as JsonSchema | undefined)?.['title'];
  return typeof t === 'string' ? t : undefined;
}

function typeName(t: string): string {
  switch (t) {
    case 'object':
      return 'a mapping';
    case 'array':
      return 'a list';
    case 'integer':
      return 'an integer';
    case 'null':
      return 'null';
    case 'boolean':
      return 'a boolean (true or false)';
    default:
      return `a ${t}`;
  }
}

function orList(items: string[]): string {
  return items.length <= 1 ? (items[0] ?? '') : `${items.slice(0, -1).join(', ')} or ${items[items.length - 1]}`;
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

/** One ajv error → message (path and whether it points at a key). */
function message(e: ErrorObject, path: PathSegment[]): Explained {
  const p = e.params as Record<string, unknown>;
  const t = title(e);
  switch (e.keyword) {
    case 'additionalProperties': {
      const key = String(p['additionalProperty']);
      if (t && PRICE_TITLES.has(t)) {
        const allowed = Object.keys(((e.parentSchema as JsonSchema)['properties'] as JsonSchema | undefined) ?? {});
        return {
          path: [...path, key],
          at: 'key',
          message: `price key "${key}" is not allowed (allowed: ${allowed.join(', ')})`,
        };
      }
      return { path: [...path, key], at: 'key', message: `unknown key "${key}"` };
    }
    case 'required':
      return { path, at: 'value', message: `missing required key "${String(p['missingProperty'])}"` };
    case 'enum':
      return {
        path,
        at: 'value',
        message: `must be one of: ${(p['allowedValues'] as unknown[]).map(String).join(', ')}`,
      };
    case 'const': {
      const v = p['allowedValue'];
      const shown = Array.isArray(v) ? `the list ${v.map(String).join(', ')} (in this order)` : JSON.stringify(v);
      return { path, at: 'value', message: `must be exactly ${shown}` };
    }
    case 'type': {
      if (t && TYPE_MESSAGES[t]) {
        const hint = t === 'DecimalUsd' && typeof e.data === 'number' ? '; quote it so YAML keeps it a string' : '';
        return { path, at: 'value', message: TYPE_MESSAGES[t] + hint };
      }
      const types = Array.isArray(p['type']) ? (p['type'] as string[]) : String(p['type']).split(',');
      // "number" already admits integers; naming both reads oddly.
      const shown = types.includes('number') ? types.filter((x) => x !== 'integer') : types;
      return { path, at: 'value', message: `must be ${orList(shown.map(typeName))}` };
    }
    case 'pattern':
    case 'format':
      if (t && TYPE_MESSAGES[t]) return { path, at: 'value', message: TYPE_MESSAGES[t] };
      if (e.keyword === 'format') {
        const f = String(p['format']);
        return {
          path,
          at: 'value',
          message: f === 'uri' ? 'must be an absolute URI, such as "https://example.com/page"' : `must be a valid ${f}`,
        };
      }
      return { path, at: 'value', message: `must match the pattern ${String(p['pattern'])}` };
    case 'minimum':
    case 'maximum':
    case 'exclusiveMinimum':
    case 'exclusiveMaximum':
      return { path, at: 'value', message: `must be ${String(p['comparison'])} ${String(p['limit'])}` };
    case 'minItems':
      return { path, at: 'value', message: `must have at least ${plural(Number(p['limit']), 'item')}` };
    case 'maxItems':
      return { path, at: 'value', message: `must have at most ${plural(Number(p['limit']), 'item')}` };
    case 'minLength':
      return {
        path,
        at: 'value',
        message:
          Number(p['limit']) === 1
            ? 'must not be empty'
            : `must be at least ${plural(Number(p['limit']), 'character')}`,
      };
    case 'uniqueItems': {
      // Point at the later of the two equal items.
      const later = Math.max(Number(p['i']), Number(p['j']));
      const earlier = Math.min(Number(p['i']), Number(p['j']));
      const item = Array.isArray(e.data) ? (e.data as unknown[])[later] : undefined;
      return {
        path: [...path, later],
        at: 'value',
        message: `duplicate entry ${JSON.stringify(item)} (already at index ${earlier})`,
      };
    }
    default:
      return { path, at: 'value', message: e.message ?? e.keyword };
  }
}

const CHANNEL_PRICING_MESSAGE =
  'channel pricing is either "discount_percent" (with optional "ends_at") or "prices" (with optional "ends_at" and "above_list")';

function startsWith(path: PathSegment[], prefix: PathSegment[]): boolean {
  return prefix.length <= path.length && prefix.every((s, i) => path[i] === s);
}
function samePath(a: PathSegment[], b: PathSegment[]): boolean {
  return a.length === b.length && startsWith(a, b);
}

/** Turns ajv's error list into located messages (the ChannelPricing oneOf and propertyNames folded into one each). */
function explain(data: unknown, errors: ErrorObject[]): Explained[] {
  const withPath = errors.map((e) => ({ e, path: segments(data, e.instancePath) }));

  // oneOf on ChannelPricing: when the object clearly picks one branch (has exactly one of the two
  // keys), report that branch's errors only; otherwise one message instead of both branches' noise.
  const dropped = new Set<number>();
  const extra: Explained[] = [];
  withPath.forEach(({ e, path }) => {
    if (e.keyword !== 'oneOf' || title(e) !== 'ChannelPricing') return;
    const obj = e.data;
    const isObj = obj !== null && typeof obj === 'object' && !Array.isArray(obj);
    const hasD = isObj && 'discount_percent' in obj;
    const hasP = isObj && 'prices' in obj;
    const chosen = hasD !== hasP ? (hasD ? 'DiscountPricing' : 'ChannelPriceList') : null;
    withPath.forEach((o, k) => {
      if (!startsWith(o.path, path)) return;
      if (chosen === null) dropped.add(k);
      else if (o.e === e) dropped.add(k);
      else if (samePath(o.path, path) && title(o.e) !== chosen) dropped.add(k);
    });
    if (chosen === null)
      extra.push({ path, at: 'value', message: CHANNEL_PRICING_MESSAGE + (hasD && hasP ? ', not both' : '') });
  });

  const out: Explained[] = [];
  for (let k = 0; k < withPath.length; k++) {
    if (dropped.has(k)) continue;
    const { e, path } = withPath[k] as { e: ErrorObject; path: PathSegment[] };
    if (e.keyword === 'propertyNames') continue;
    // ajv reports a bad property name as the inner error (at the object) followed by a
    // `propertyNames` error naming the key: merge them into one message at the key.
    const next = withPath[k + 1];
    if (next && next.e.keyword === 'propertyNames' && samePath(next.path, path)) {
      const key = String((next.e.params as Record<string, unknown>)['propertyName']);
      out.push({
        path: [...path, key],
        at: 'key',
        message: `key "${key}" is not allowed: it ${message(e, path).message}`,
      });
      continue;
    }
    out.push(message(e, path));
  }
  return [...out, ...extra];
}
