// `pi-gateway operator add|list|remove`: the people who sign in to the console. A password is read
// from stdin (piped, or typed without echo at a terminal, twice) — never from argv — and stored as a
// scrypt hash (src/admin/passwords.ts). Roles: admin (reads and writes) and viewer (reads only).
// Adding and removing an account enters the audit trail, as the actor "cli".
import { userInfo } from 'node:os';
import { hashPassword, passwordProblem } from '../../admin/passwords.ts';
import { systemClock } from '../../clock.ts';
import { OPERATOR_NAME, type OperatorRole } from '../../store/sqlite/store.ts';
import type { AdminStore } from '../../store/admin-store-interface.ts';
import { flag, parse, str, UsageError } from '../args.ts';
import type { Command } from '../command.ts';
import { printJson, printTable } from '../output.ts';
import { readHidden, readSecretInput } from '../read-secret.ts';
import {
  CliError,
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
  pi-gateway operator add NAME --role admin|viewer [options]   (password on stdin, or prompted)
  pi-gateway operator list [options]
  pi-gateway operator remove NAME [options]

add     Creates the console account NAME (letters, digits, . _ @ -; up to 64 characters) with the
        role admin (reads and writes: credits, keys, reload) or viewer (reads only). The password
        (at least 12 characters) is read from stdin, e.g. \`printf %s "$PW" | pi-gateway operator add
        ana --role admin\`, or asked twice without echo at a terminal. Stored as a scrypt hash.
list    name, role, created. Never a password or its hash.
remove  Deletes the account; its open console sessions end at their next request.

The shared operator token (PI_ADMIN_TOKEN) stays a break-glass admin for scripts; the audit trail
(\`pi-gateway audit\`) records it as "token".

Options:
${DB_HELP}
${JSON_HELP}`;

const ROLES: readonly OperatorRole[] = ['admin', 'viewer'];

async function readPassword(): Promise<string> {
  if (!process.stdin.isTTY) return readSecretInput('');
  const first = await readHidden('Password: ');
  const again = await readHidden('Password again: ');
  if (first !== again) throw new CliError('the two passwords differ');
  return first;
}

const cliActor = (): string => {
  try {
    return `cli:${userInfo().username}`;
  } catch {
    return 'cli';
  }
};

async function audit(store: AdminStore, action: string, name: string, detail: unknown): Promise<void> {
  await store.audit.append({
    at: systemClock.now(),
    actor: cliActor(),
    action,
    target: name,
    client: null,
    outcome: 'ok',
    detail: detail === null ? null : JSON.stringify(detail),
  });
}

function operatorName(p: Parameters<typeof onePositional>[0]): string {
  const name = onePositional(p, 'operator NAME');
  if (!OPERATOR_NAME.test(name))
    throw new UsageError(
      `"${name}" is not an operator name: letters, digits, . _ @ - (up to 64, starting with a letter or digit)`,
    );
  return name;
}

export const command: Command = {
  summary: 'add, list or remove console operator accounts',
  help: HELP,
  run: (argv) =>
    guarded('operator', async () => {
      const [sub, rest] = subcommand(argv, ['add', 'list', 'remove']);
      if (sub === 'list') {
        const p = parse(rest, STORE_OPTIONS, false);
        const store = await openFromArgs(p, true);
        try {
          const rows = (await store.operators.list()).map((o) => ({
            name: o.name,
            role: o.role,
            created_at: iso(o.createdAt),
          }));
          if (flag(p, 'json')) printJson(rows);
          else
            printTable(
              ['NAME', 'ROLE', 'CREATED'],
              rows.map((r) => [r.name, r.role, r.created_at ?? '']),
            );
          return 0;
        } finally {
          await store.close();
        }
      }
      if (sub === 'add') {
        const p = parse(rest, { ...STORE_OPTIONS, role: { type: 'string' } }, true);
        const name = operatorName(p);
        const role = str(p, 'role');
        if (role === undefined || !ROLES.includes(role as OperatorRole))
          throw new UsageError('--role is required: admin (reads and writes) or viewer (reads only)');
        const password = await readPassword();
        const problem = passwordProblem(password);
        if (problem !== null) throw new CliError(problem);
        const hash = await hashPassword(password);
        const store = await openFromArgs(p, false);
        try {
          if (!(await store.operators.add(name, role as OperatorRole, hash)))
            throw new CliError(`an operator named "${name}" exists already (remove it first to replace it)`);
          await audit(store, 'operator.add', name, { role });
          if (flag(p, 'json')) printJson({ name, role, added: true });
          else process.stdout.write(`operator ${name} added with the ${role} role\n`);
          return 0;
        } finally {
          await store.close();
        }
      }
      const p = parse(rest, STORE_OPTIONS, true);
      const name = operatorName(p);
      const store = await openFromArgs(p, false);
      try {
        if (!(await store.operators.remove(name))) throw new CliError(`no operator named "${name}"`);
        await audit(store, 'operator.remove', name, null);
        if (flag(p, 'json')) printJson({ name, removed: true });
        else process.stdout.write(`operator ${name} removed\n`);
        return 0;
      } finally {
        await store.close();
      }
    }),
};
