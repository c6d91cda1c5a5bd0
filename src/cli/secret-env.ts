// Secrets a service manager hands over as files rather than environment variables: the master key
// and the operator token are read from PI_MASTER_KEY_FILE / PI_ADMIN_TOKEN_FILE (Docker and
// Kubernetes secrets), or from systemd's credentials folder (LoadCredential=pi-master-key:… puts the
// file in $CREDENTIALS_DIRECTORY), and set as PI_MASTER_KEY / PI_ADMIN_TOKEN for the rest of the
// process (worker threads included). A value already in the environment wins. A file that cannot be
// read stops the command, naming the file, never its content.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** Environment variable → the credential's name in systemd's credentials folder. */
export const SECRET_VARIABLES: Readonly<Record<string, string>> = {
  PI_MASTER_KEY: 'pi-master-key',
  PI_ADMIN_TOKEN: 'pi-admin-token',
};

export class SecretFileError extends Error {}

/** Fills each unset secret variable from its file; returns where each value came from (for tests). */
export function loadSecretFiles(env: NodeJS.ProcessEnv = process.env): Record<string, string> {
  const from: Record<string, string> = {};
  for (const [variable, credential] of Object.entries(SECRET_VARIABLES)) {
    if (env[variable]) continue;
    const named = env[`${variable}_FILE`];
    const systemd = env['CREDENTIALS_DIRECTORY'] ? join(env['CREDENTIALS_DIRECTORY'], credential) : null;
    const file = named || (systemd !== null && existsSync(systemd) ? systemd : null);
    if (!file) continue;
    let value: string;
    try {
      value = readFileSync(file, 'utf8');
    } catch (err) {
      const why = err instanceof Error && 'code' in err ? String((err as NodeJS.ErrnoException).code) : 'unreadable';
      throw new SecretFileError(`cannot read ${variable} from ${file} (${why})`);
    }
    // One trailing newline, as `echo` and editors leave it, is not part of the secret.
    value = value.replace(/\r?\n$/, '');
    if (value === '') throw new SecretFileError(`${file} (${variable}) is empty`);
    env[variable] = value;
    from[variable] = file;
  }
  return from;
}
