// `pi-gateway key create|list|revoke`: gateway API keys. The key is printed once at creation; only
// its hash is stored, so a lost key is revoked and replaced, never recovered.
import { systemClock } from '../../clock.ts';
import { keyNameProblem, keyState, MAX_KEY_NAME_CHARS, pastExpiryProblem } from '../../store/sqlite/store.ts';
import { flag, int, parse, str, UsageError } from '../args.ts';
import type { Command } from '../command.ts';
import { printJson, printTable } from '../output.ts';
import {
  CliError,
  CONFIG_HELP,
  CONFIG_OPTION,
  DB_HELP,
  guarded,
  iso,
  JSON_HELP,
  onePositional,
  openFromArgs,
  parseIsoTime,
  required,
  requireWorkspace,
  STORE_OPTIONS,
  subcommand,
} from '../store-command.ts';

const HELP = `Usage:
  pi-gateway key create --workspace W [--name N] [--expires-at ISO] [--rpm N] [options]
  pi-gateway key list [--workspace W] [options]
  pi-gateway key revoke ID [options]

create  Issues a key for workspace W (checked against the config). The key (sk-pi-…) is printed
        once on stdout — store it then; only its hash is kept. --expires-at takes an ISO date or
        date-time in the future (a date alone is 00:00 UTC, a time without an offset is UTC);
        --rpm sets a per-key requests-per-minute limit (a whole number, at least 1); --name is a
        label of at most ${MAX_KEY_NAME_CHARS} characters.
list    id, prefix, name, workspace, state (active, revoked, expired), created, expires, rpm.
        Never the key or its hash.
revoke  Revokes key ID; a running gateway refuses it from its next request.

Options:
${DB_HELP}
${CONFIG_HELP}
${JSON_HELP}`;

export const command: Command = {
  summary: 'create, list or revoke gateway API keys',
  help: HELP,
  run: (argv) =>
    guarded('key', async () => {
      const [sub, rest] = subcommand(argv, ['create', 'list', 'revoke']);
      if (sub === 'create') {
        const p = parse(
          rest,
          {
            ...STORE_OPTIONS,
            ...CONFIG_OPTION,
            workspace: { type: 'string' },
            name: { type: 'string' },
            'expires-at': { type: 'string' },
            rpm: { type: 'string' },
          },
          false,
        );
        const workspace = required(p, 'workspace');
        const rawExpiry = str(p, 'expires-at');
        const expiresAt = rawExpiry === undefined ? undefined : parseIsoTime(rawExpiry, 'expires-at');
        const past = expiresAt === undefined ? null : pastExpiryProblem(expiresAt, systemClock.now());
        if (past !== null) throw new UsageError(`--expires-at ${rawExpiry} is in the past: ${past}`);
        const name = str(p, 'name');
        const nameProblem = name === undefined ? null : keyNameProblem(name);
        if (nameProblem !== null) throw new UsageError(`--name: ${nameProblem}`);
        const rpm = int(p, 'rpm', undefined, undefined, { min: 1, max: Number.MAX_SAFE_INTEGER });
        await requireWorkspace(p, workspace, 'key');
        const store = await openFromArgs(p, false);
        try {
          const k = await store.apiKeys.create({ workspace, name, expiresAt, rpm });
          if (flag(p, 'json')) {
            printJson({
              id: k.id,
              key: k.key,
              prefix: k.prefix,
              workspace: k.workspace,
              name: k.name,
              rpm: k.rpm,
              created_at: iso(k.createdAt),
              expires_at: iso(k.expiresAt),
            });
          } else {
            // The key alone on stdout, so `KEY=$(pi-gateway key create …)` captures just it.
            process.stdout.write(k.key + '\n');
            process.stderr.write(
              `created ${k.id} for workspace ${workspace}${k.expiresAt ? `, expires ${iso(k.expiresAt)}` : ''}. The key is shown only once.\n`,
            );
          }
          return 0;
        } finally {
          await store.close();
        }
      }

      if (sub === 'list') {
        const p = parse(rest, { ...STORE_OPTIONS, workspace: { type: 'string' } }, false);
        const store = await openFromArgs(p, true);
        try {
          const now = systemClock.now();
          const rows = (await store.apiKeys.list(str(p, 'workspace'))).map((k) => ({
            id: k.id,
            prefix: k.prefix,
            name: k.name,
            workspace: k.workspace,
            state: keyState(k, now),
            rpm: k.rpm,
            created_at: iso(k.createdAt),
            expires_at: iso(k.expiresAt),
            revoked_at: iso(k.revokedAt),
          }));
          if (flag(p, 'json')) printJson(rows);
          else
            printTable(
              ['ID', 'PREFIX', 'NAME', 'WORKSPACE', 'STATE', 'CREATED', 'EXPIRES', 'RPM'],
              rows.map((r) => [
                r.id,
                r.prefix,
                r.name ?? '',
                r.workspace,
                r.state,
                r.created_at ?? '',
                r.expires_at ?? '',
                r.rpm === null ? '' : String(r.rpm),
              ]),
            );
          return 0;
        } finally {
          await store.close();
        }
      }

      const p = parse(rest, STORE_OPTIONS, true);
      const id = onePositional(p, 'key ID');
      const store = await openFromArgs(p, false);
      try {
        const before = await store.apiKeys.get(id);
        if (!before) throw new CliError(`no key with id "${id}"`);
        const changed = await store.apiKeys.revoke(id);
        const after = await store.apiKeys.get(id);
        if (flag(p, 'json'))
          printJson({ id, revoked: true, already_revoked: !changed, revoked_at: iso(after?.revokedAt ?? null) });
        else
          process.stdout.write(
            changed ? `key ${id} revoked\n` : `key ${id} was already revoked at ${iso(before.revokedAt)}\n`,
          );
        return 0;
      } finally {
        await store.close();
      }
    }),
};
