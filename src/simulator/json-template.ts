// Precompiled JSON templates: a sample shape is stringified once (compact or indented exactly as
// JSON.stringify would), then each response only fills the slots, so constant parts are never
// re-serialized per request.

const MARK = '__pi_sim_slot_';

/** A placeholder for a per-request value inside a template shape. */
export function slot(name: string): string {
  return `${MARK}${name}__`;
}

/** An already-serialized JSON fragment, inserted verbatim (use for compact values reused across events). */
export class RawJson {
  readonly json: string;
  constructor(json: string) {
    this.json = json;
  }
}

export interface JsonTemplate {
  /** The JSON text with every slot filled from `values` (a missing slot renders `null`). */
  render(values: Readonly<Record<string, unknown>>): string;
}

/** Compiles `shape` (plain JSON data containing `slot()` strings) with the given indentation. */
export function compileTemplate(shape: unknown, indent: 0 | 2 | 4 = 0): JsonTemplate {
  const text = indent > 0 ? JSON.stringify(shape, null, indent) : JSON.stringify(shape);
  const statics: string[] = [];
  const names: string[] = [];
  const lineIndents: string[] = [];
  const re = new RegExp(`"${MARK}([A-Za-z0-9_]+)__"`, 'g');
  let last = 0;
  for (let m = re.exec(text); m !== null; m = re.exec(text)) {
    statics.push(text.slice(last, m.index));
    names.push(m[1] as string);
    const lineStart = text.lastIndexOf('\n', m.index) + 1;
    lineIndents.push(/^ */.exec(text.slice(lineStart, m.index))?.[0] ?? '');
    last = m.index + m[0].length;
  }
  statics.push(text.slice(last));
  const count = names.length;
  return {
    render(values) {
      let out = statics[0] as string;
      for (let i = 0; i < count; i++) {
        out += formatValue(values[names[i] as string], indent, lineIndents[i] as string) + (statics[i + 1] as string);
      }
      return out;
    },
  };
}

/** One slot value as JSON text; nested structures are indented to sit at the slot's depth. */
export function formatValue(v: unknown, indent: number, lineIndent: string): string {
  switch (typeof v) {
    case 'string':
      return JSON.stringify(v);
    case 'number':
      return Number.isFinite(v) ? String(v) : 'null';
    case 'boolean':
      return v ? 'true' : 'false';
    case 'undefined':
      return 'null';
    default:
      if (v === null) return 'null';
      if (v instanceof RawJson) return v.json;
      if (indent === 0) return JSON.stringify(v);
      return JSON.stringify(v, null, indent).replaceAll('\n', '\n' + lineIndent);
  }
}

/**
 * A number as Python's json module prints a float (`1.0`, `0.7`, `1e+16`): OpenAI echoes sampling
 * params so. Python's repr turns to the exponent form at 1e16, where `${n}.0` would not be JSON
 * (`1e+29.0`). A request's number too large for a double (`1e400`) parses to Infinity, which JSON
 * cannot carry: it is echoed as null, the simulator's answer staying JSON whatever was asked.
 */
export function pyFloat(n: number): RawJson {
  if (!Number.isFinite(n)) return new RawJson('null');
  if (Math.abs(n) >= 1e16) return new RawJson(n.toExponential());
  return new RawJson(Number.isInteger(n) ? `${n}.0` : String(n));
}
