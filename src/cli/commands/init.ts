// `pi-gateway init DIR`: writes a starter config (./starter.ts) into a new or empty directory,
// checks it with the same pipeline as `check`, and prints the steps to a first answered request.
import { mkdirSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { formatIssue, loadConfig } from '../../config/load-config.ts';
import { projectPath } from '../../install/project-root.ts';
import { ADAPTERS } from '../../platforms/index.ts';
import { parse, str, UsageError } from '../args.ts';
import type { Command } from '../command.ts';
import { STARTER, starterFiles, WORKSPACE_ID } from '../starter.ts';
import { CliError, guarded, onePositional } from '../store-command.ts';

const HELP = `Usage: pi-gateway init DIR [--workspace ID]

Writes a starter config into DIR (created if missing; refused if it holds anything): one provider,
OpenAI (one resource whose API key is the sealed credential "${STARTER.credential}", the models
${STARTER.models.map((m) => m.id).join(' and ')}), and one workspace. The vocabularies, the
defaults of gateway.yaml and the models' facts and prices are copied from the bundled example
config. The result passes \`pi-gateway check\`; init prints the steps from there to a first
answered request (store the API key, create a gateway key, credit the wallet, serve).

The bundled example config (every platform, the demo's simulator) stays what \`pi-gateway demo\`
runs; copy pieces of it into DIR to add providers.

Options:
  --workspace ID   the workspace's id (default "default"; lowercase letters, digits, dashes)
  -h, --help       this text`;

/** Refuses a DIR that holds anything: init never overwrites or mixes with an operator's files. */
function requireEmptyDir(dir: string): void {
  let entries: string[];
  try {
    if (!statSync(dir).isDirectory()) throw new CliError(`${dir} exists and is not a directory`);
    entries = readdirSync(dir);
  } catch (err) {
    if (err instanceof Error && 'code' in err && err.code === 'ENOENT') return;
    throw err;
  }
  if (entries.length > 0)
    throw new CliError(
      `${dir} is not empty (${entries.length} entr${entries.length === 1 ? 'y' : 'ies'}); init writes into a new or empty directory only`,
    );
}

/** A value as one shell word (for the printed commands). */
function shellWord(s: string): string {
  return /^[A-Za-z0-9_./:@=+-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`;
}

function nextSteps(dir: string, workspace: string): string {
  const model = STARTER.models[0].id;
  return [
    `wrote a starter config to ${dir}: OpenAI (${STARTER.models.map((m) => m.id).join(', ')}) and the workspace "${workspace}"; it passes pi-gateway check.`,
    '',
    'Next steps (the database is ./pi-gateway.db unless --db FILE or PI_DB says otherwise):',
    '  (umask 077; openssl rand -base64 32 > master.key)   # the master key: it unseals stored API keys; keep it',
    `  export PI_CONFIG=${shellWord(dir)} PI_MASTER_KEY_FILE="$PWD/master.key"`,
    `  printf %s "$OPENAI_API_KEY" | pi-gateway secret set ${STARTER.credential}`,
    `  pi-gateway key create --workspace ${workspace}   # prints a gateway API key (sk-pi-…) once: keep it`,
    `  pi-gateway wallet credit --workspace ${workspace} --usd 10`,
    '  pi-gateway serve',
    '',
    'Then, from another shell, with KEY set to that gateway API key:',
    '  curl -s http://127.0.0.1:8080/v1/chat/completions -H "Authorization: Bearer $KEY" \\',
    `    -H 'Content-Type: application/json' -d '{"model":"${model}","messages":[{"role":"user","content":"Hello"}]}'`,
    '',
  ].join('\n');
}

export const command: Command = {
  summary: 'write a starter config (one provider, one workspace) into a new directory',
  help: HELP,
  run: (argv) =>
    guarded('init', () => {
      const p = parse(argv, { workspace: { type: 'string' } }, true);
      const dir = onePositional(p, 'directory DIR');
      const workspace = str(p, 'workspace', undefined, 'default') as string;
      if (!WORKSPACE_ID.test(workspace))
        throw new UsageError(
          `--workspace must be 1 to 64 lowercase letters, digits or dashes, starting with a letter or digit, got "${workspace}"`,
        );
      requireEmptyDir(dir);
      const files = starterFiles(projectPath('config'), workspace);
      for (const [rel, text] of files) {
        const file = join(dir, rel);
        mkdirSync(dirname(file), { recursive: true });
        writeFileSync(file, text);
      }
      // The same pipeline as `check` and `serve`: a starter that does not load is a bug, said at once.
      const r = loadConfig(dir, { adapters: ADAPTERS });
      if (!r.ok)
        throw new CliError(
          `the starter written to ${dir} does not pass check:\n${r.issues.map(formatIssue).join('\n')}`,
        );
      process.stdout.write(nextSteps(dir, workspace));
      return 0;
    }),
};
