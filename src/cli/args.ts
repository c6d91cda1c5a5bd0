// Option parsing shared by every command: node's util.parseArgs plus environment fallbacks, with
// errors that name the option.
import { parseArgs, type ParseArgsConfig } from 'node:util';

export type OptionSpec = NonNullable<ParseArgsConfig['options']>;

export class UsageError extends Error {}

export interface Parsed {
  values: Record<string, string | boolean | string[] | undefined>;
  positionals: string[];
}

/** Parses argv strictly (unknown options are a UsageError). */
export function parse(argv: string[], options: OptionSpec, allowPositionals = true): Parsed {
  try {
    const out = parseArgs({ args: argv, options, allowPositionals, strict: true });
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

/** An integer option (or environment variable); UsageError when it is not an integer. */
export function int(p: Parsed, name: string, env?: string, dflt?: number): number | undefined {
  const raw = str(p, name, env);
  if (raw === undefined) return dflt;
  if (!/^-?[0-9]+$/.test(raw)) throw new UsageError(`--${name} must be an integer, got "${raw}"`);
  return Number(raw);
}

export function flag(p: Parsed, name: string): boolean {
  return p.values[name] === true;
}
