// `pi-gateway secret set|list|rm|rotate-master`: sealed upstream credentials. Values and keys come
// from stdin, never argv (argv is visible in `ps` and shell history), and are never printed.
import { flag, parse, type Parsed } from '../args.ts';
import type { Command } from '../command.ts';
import { printJson, printTable } from '../output.ts';
import { readSecretInput } from '../read-secret.ts';
import { ROTATE_HELP, rotateMaster } from '../rotate-master.ts';
import {
  CliError,
  CONFIG_OPTION,
  configCredentials,
  DB_HELP,
  guarded,
  iso,
  JSON_HELP,
  onePositional,
  openFromArgs,
  STORE_OPTIONS,
  subcommand,
} from '../store-command.ts';

const HELP = `Usage:
  pi-gateway secret set NAME [--db FILE|URL] [--config DIR] [--json]   < value
  pi-gateway secret list [--db FILE|URL] [--json]
  pi-gateway secret rm NAME [--db FILE|URL] [--json]
  pi-gateway secret rotate-master [--db FILE|URL] [--json]   < new key

set   Reads the value from stdin (one trailing newline is dropped; typed at a terminal it is not
      echoed), seals it with AES-256-GCM under PI_MASTER_KEY and stores it as NAME, replacing any
      previous value. An empty value is refused. NAME is a resource's \`credential\` (see
      config/resources/*.yaml); a name no resource of --config uses is stored with a warning.
        printf %s "$OPENAI_API_KEY" | pi-gateway secret set openai-prod
list  Names and times only; values are never shown.
rm    Deletes NAME.
${ROTATE_HELP}

Options:
${DB_HELP}
  --config DIR     (set) config directory whose resources name the credentials (env PI_CONFIG;
                   default: the one the server of the database was started with, else config)
${JSON_HELP}

Environment:
  PI_MASTER_KEY    32 random bytes as base64 or hex; create one with \`openssl rand -base64 32\`.
                   Every secret in one database must be sealed with the same key.`;

export const command: Command = {
  summary: 'store, list or remove sealed upstream credentials; rotate the master key',
  help: HELP,
  run: (argv) =>
    guarded('secret', async () => {
      const [sub, rest] = subcommand(argv, ['set', 'list', 'rm', 'rotate-master']);
      // Positionals are parsed for every subcommand so a value pasted onto the command line is refused
      // by our own message, which never echoes it.
      const p = parse(rest, sub === 'set' ? { ...STORE_OPTIONS, ...CONFIG_OPTION } : STORE_OPTIONS, sub !== 'list');
      const json = flag(p, 'json');
      if (sub === 'rotate-master') return rotateMaster(p);

      if (sub === 'list') {
        const store = await openFromArgs(p, true);
        try {
          const rows = (await store.secrets.list()).map((s) => ({
            name: s.name,
            created_at: iso(s.createdAt),
            updated_at: iso(s.updatedAt),
          }));
          if (json) printJson(rows);
          else
            printTable(
              ['NAME', 'CREATED', 'UPDATED'],
              rows.map((r) => [r.name, r.created_at ?? '', r.updated_at ?? '']),
            );
          return 0;
        } finally {
          await store.close();
        }
      }

      const name = onePositional(p, 'secret NAME');
      if (sub === 'rm') {
        const store = await openFromArgs(p, false);
        try {
          if (!(await store.secrets.remove(name))) throw new CliError(`no secret named "${name}"`);
          if (json) printJson({ name, removed: true });
          else process.stdout.write(`secret ${name} removed\n`);
          return 0;
        } finally {
          await store.close();
        }
      }

      const value = await readSecretInput(`value for ${name}: `);
      if (value === '') throw new CliError('refusing an empty value (pipe the value on stdin)');
      const store = await openFromArgs(p, false);
      try {
        // Refuse before writing when the database already uses another key (or PI_MASTER_KEY is bad).
        await store.secrets.assertUsable();
        await store.secrets.set(name, value);
        const row = (await store.secrets.list()).find((s) => s.name === name);
        if (json) printJson({ name, created_at: iso(row?.createdAt ?? null), updated_at: iso(row?.updatedAt ?? null) });
        else process.stdout.write(`secret ${name} stored\n`);
        await warnIfUnnamed(p, name);
        return 0;
      } finally {
        await store.close();
      }
    }),
};

/** A stored name no resource uses is almost always a typo (the resource id instead of its credential). */
async function warnIfUnnamed(p: Parsed, name: string): Promise<void> {
  const config = await configCredentials(p, 'secret');
  if (!config || config.names.includes(name)) return;
  process.stderr.write(
    `warning: no resource in ${config.dir} names the credential "${name}", so it serves nothing. ` +
      `The credentials its resources use are: ${config.names.join(', ') || 'none'}. ` +
      `(Resource ids are not credential names: see \`credential:\` in config/resources/*.yaml.)\n`,
  );
}
