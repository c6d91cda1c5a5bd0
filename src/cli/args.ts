// Option parsing shared by every command: node's util.parseArgs plus environment fallbacks, with
// errors that name the option.
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { redactPasswords } from '../store/redact-url.ts';

export type OptionSpec = NonNullable<ParseArgsConfig['options']>;

/** A mistake in how the command was called (an unknown option, a bad value): exit 2, never 1. */
export class UsageError extends Error {}

export interface Parsed {
  values: Record<string, string | boolean | string[] | undefined>;
  positionals: string[];
}

/** A value that starts with a dash but is a number (`-5`, `-0.5`), not an option. */
const NEGATIVE_NUMBER = /^-[0-9.]/;

/**
 * `--rpm -5` as `--rpm=-5`: node's parseArgs takes a value that starts with a dash for an option and
 * refuses it as "ambiguous", which hides the real mistake (a negative number); joined, the option's
 * own check says what is wrong with the value.
 */
function joinNegativeValues(argv: string[], options: OptionSpec): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    const next = argv[i + 1];
    const name = arg.startsWith('--') && !arg.includes('=') ? arg.slice(2) : null;
    if (name !== null && options[name]?.type === 'string' && next !== undefined && NEGATIVE_NUMBER.test(next)) {
      out.push(`${arg}=${next}`);
      i++;
    } else out.push(arg);
  }
  return out;
}

/** Parses argv strictly (unknown options are a UsageError). */
export function parse(argv: string[], options: OptionSpec, allowPositionals = true): Parsed {
  try {
    const out = parseArgs({ args: joinNegativeValues(argv, options), options, allowPositionals, strict: true });
    return { values: out.values as Parsed['values'], positionals: out.positionals };
  } catch (err) {
    throw new UsageError(err instanceof Error ? err.message : String(err));
  }
}

/** A string option, else the environment variable, else the default. */
export function str(p: Parsed, name: string, env?: string, dflt?: string): string | undefined {
  const v = p.values[name];
  if (typeof v === 'string') return v;
  if (env && process.env[env] !== undefined && process.env[env] !== '') return process.env[env];
  return dflt;
}

/** The range an integer option may take (inclusive); default: JavaScript's exact integers. */
export interface IntRange {
  min: number;
  max: number;
}

const SAFE: IntRange = { min: -Number.MAX_SAFE_INTEGER, max: Number.MAX_SAFE_INTEGER };

/** An integer option (or environment variable); UsageError when it is not an integer in `range`. */
export function int(p: Parsed, name: string, env?: string, dflt?: number, range: IntRange = SAFE): number | undefined {
  const raw = str(p, name, env);
  if (raw === undefined) return dflt;
  const where = optionName(p, name, env);
  if (!/^-?[0-9]+$/.test(raw)) throw new UsageError(`${where} must be an integer, got "${raw}"`);
  const n = Number(raw);
  if (!Number.isSafeInteger(n) || n < range.min || n > range.max) {
    throw new UsageError(`${where} must be an integer from ${range.min} to ${range.max}, got ${raw}`);
  }
  return n;
}

/** How a message names a value: the option, or the environment variable it came from. */
function optionName(p: Parsed, name: string, env?: string): string {
  return p.values[name] === undefined && env ? env : `--${name}`;
}

/**
 * A URL option (or environment variable) whose scheme is one of `schemes` (`['http:', 'https:']`);
 * UsageError naming it otherwise. The refused value is echoed with any password masked.
 */
export function url(
  p: Parsed,
  name: string,
  env: string | undefined,
  schemes: readonly string[],
  example: string,
): string | undefined {
  const raw = str(p, name, env);
  if (raw === undefined) return undefined;
  let u: URL | null = null;
  try {
    u = new URL(raw);
  } catch {
    // refused below
  }
  if (u === null || !schemes.includes(u.protocol) || u.host === '') {
    const kinds = schemes.map((s) => s.slice(0, -1)).join(' or ');
    throw new UsageError(
      `${optionName(p, name, env)} must be a URL such as ${example} (${kinds}), got "${redactPasswords(raw)}"`,
    );
  }
  return raw;
}

/** Ports: 0 picks a free one. */
export const PORT_RANGE: IntRange = { min: 0, max: 65_535 };

export function flag(p: Parsed, name: string): boolean {
  return p.values[name] === true;
}
