// `pi-gateway secret rotate-master`: re-seals every upstream credential under a new master key. The
// old key comes from PI_MASTER_KEY as for every command; the new one from stdin (piped, or typed twice
// at a terminal), never argv. The operator makes the key (`openssl rand -base64 32`) and keeps it
// before anything changes, so no outcome can leave credentials sealed under a key nobody holds.
import { flag, type Parsed, UsageError } from './args.ts';
import { printJson } from './output.ts';
import { readHidden, readSecretInput } from './read-secret.ts';
import { CliError, openFromArgs } from './store-command.ts';

export const ROTATE_HELP = `rotate-master
      Reads a NEW master key on stdin (32 random bytes as base64 or hex; typed at a terminal it is
      asked twice, not echoed) and re-seals every secret from PI_MASTER_KEY to it in one
      transaction. Each secret is read back and opened with the new key before the commit; a secret
      that does not open under PI_MASTER_KEY (tampered, or sealed under another key) or fails that
      check changes nothing. Afterwards the old key opens nothing: restart the gateway with the new
      key as PI_MASTER_KEY (a server started with the old one refuses to start; one still running
      keeps serving the credentials it already opened until it restarts).
        NEW=$(openssl rand -base64 32)      # store it in your secret manager first
        printf %s "$NEW" | pi-gateway secret rotate-master`;

async function newKeyFromStdin(): Promise<string> {
  if (!process.stdin.isTTY) return readSecretInput('');
  const first = await readHidden('new master key: ');
  const again = await readHidden('new master key again: ');
  if (first !== again) throw new CliError('the two new keys differ; nothing was rotated');
  return first;
}

export async function rotateMaster(p: Parsed): Promise<number> {
  if (p.positionals.length > 0)
    throw new UsageError('rotate-master takes no arguments: give the new key on stdin, never on the command line');
  const json = flag(p, 'json');
  const newKey = (await newKeyFromStdin()).trim();
  if (newKey === '') throw new CliError('give the new master key on stdin (create one with `openssl rand -base64 32`)');
  const store = await openFromArgs(p, false);
  try {
    const r = await store.secrets.rotateMaster(newKey);
    if (json) {
      printJson({ resealed: r.resealed, from_key_id: r.fromKeyId, to_key_id: r.toKeyId, scrubbed: r.scrubbed });
    } else if (r.resealed.length === 0) {
      process.stdout.write('no sealed secrets: nothing to re-seal; use the new key as PI_MASTER_KEY from now on\n');
    } else {
      process.stdout.write(
        `re-sealed ${r.resealed.length} secret(s) from master key ${r.fromKeyId} to ${r.toKeyId}: ${r.resealed.join(', ')}\n` +
          'next: restart the gateway with PI_MASTER_KEY set to the new key. The old key opens nothing any more: a server\n' +
          'started with it refuses to start, and a server still running keeps the credentials it already opened until it\n' +
          'restarts. Every other command (secret set, serve, demo) needs the new key too.\n',
      );
    }
    if (!r.scrubbed) {
      process.stderr.write(
        store.kind === 'postgres'
          ? 'pi-gateway secret: the secrets table could not be rewritten (VACUUM FULL); the old ciphertexts stay in dead row versions until the next vacuum\n'
          : 'pi-gateway secret: another connection kept the write-ahead log from being checkpointed; the old ciphertexts stay in the -wal file until the next checkpoint\n',
      );
    }
    return 0;
  } finally {
    await store.close();
  }
}
