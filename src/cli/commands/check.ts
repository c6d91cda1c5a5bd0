// `pi-gateway check`: validates a config dir (schemas + cross-file rules) and prints every issue.
import type { Command } from '../command.ts';
import { flag, parse, str } from '../args.ts';
import { printJson } from '../output.ts';
import { formatIssue, loadConfig } from '../../config/load-config.ts';
import { ADAPTERS } from '../../platforms/index.ts';

const HELP = `Usage: pi-gateway check [--config DIR] [--json]

Validates the config directory: every YAML file against its JSON Schema, then the cross-file rules
(references, ids, vocabulary, prices). Prints "ok: …" with counts, or every issue, one per line, as
  <file>:<line>:<col> <path>: <message>
and exits 1 when there is any.

Options:
  --config DIR   Config directory (default: $PI_CONFIG, else ./config).
  --json         Print one JSON document ({"ok": true, "counts": …} or {"ok": false, "issues": […]}).
`;

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

export const command: Command = {
  summary: 'Validate the config directory and list every problem',
  help: HELP,
  async run(argv) {
    const p = parse(argv, { config: { type: 'string' }, json: { type: 'boolean' } }, false);
    const dir = str(p, 'config', 'PI_CONFIG', 'config') as string;
    const r = loadConfig(dir, { adapters: ADAPTERS });
    if (!r.ok) {
      if (flag(p, 'json')) printJson({ ok: false, issues: r.issues });
      else {
        for (const i of r.issues) process.stdout.write(formatIssue(i) + '\n');
        process.stderr.write(`pi-gateway check: ${plural(r.issues.length, 'issue')} in ${dir}\n`);
      }
      return 1;
    }
    const c = r.config;
    const counts = {
      models: c.models.length,
      enabledModels: c.models.filter((m) => m.enabled).length,
      platforms: c.platforms.length,
      resources: c.resources.length,
      deployments: c.deployments.length,
      workspaces: c.workspaces.length,
    };
    if (flag(p, 'json')) printJson({ ok: true, counts, sourceHash: c.sourceHash });
    else {
      process.stdout.write(
        `ok: ${plural(counts.models, 'model')} (${counts.enabledModels} enabled), ${plural(counts.platforms, 'platform')}, ` +
          `${plural(counts.resources, 'resource')}, ${plural(counts.deployments, 'deployment')}, ${plural(counts.workspaces, 'workspace')}\n`,
      );
    }
    return 0;
  },
};
