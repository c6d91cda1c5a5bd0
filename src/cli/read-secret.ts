// Reading a secret value (an upstream credential, a new master key) from stdin: piped, or typed at a
// terminal without echo. Never from argv, which `ps` and shell history show.
import { CliError } from './store-command.ts';

/** Drops one trailing newline (`echo` adds one; a value may itself end in more). */
export function stripOneNewline(s: string): string {
  if (s.endsWith('\r\n')) return s.slice(0, -2);
  if (s.endsWith('\n')) return s.slice(0, -1);
  return s;
}

/** The whole of stdin when piped; one hidden line, after `prompt`, at a terminal. One trailing newline dropped. */
export async function readSecretInput(prompt: string): Promise<string> {
  return stripOneNewline(process.stdin.isTTY ? await readHidden(prompt) : await readAll());
}

async function readAll(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin)
    chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer));
  return Buffer.concat(chunks).toString('utf8');
}

/** One line from the terminal without echo (raw mode). Ctrl-C aborts; Enter or Ctrl-D ends. */
export function readHidden(prompt: string): Promise<string> {
  const input = process.stdin;
  process.stderr.write(prompt);
  input.setRawMode(true);
  input.resume();
  return new Promise((resolve, reject) => {
    let value = '';
    const done = (err: Error | null) => {
      input.setRawMode(false);
      input.pause();
      input.off('data', onData);
      process.stderr.write('\n');
      if (err) reject(err);
      else resolve(value);
    };
    const onData = (chunk: Buffer) => {
      for (const ch of chunk.toString('utf8')) {
        if (ch === '\u0003') return done(new CliError('cancelled'));
        if (ch === '\r' || ch === '\n' || ch === '\u0004') return done(null);
        if (ch === '\u007f' || ch === '\b') value = Array.from(value).slice(0, -1).join('');
        else value += ch;
      }
    };
    input.on('data', onData);
  });
}
