// A store or cache URL fit for logs and messages: its password replaced (no driver loaded here, so
// the embedded `serve` can use it without loading the PostgreSQL client).
/** The URL without its password, for logs and messages (a Redis URL too: `scheme` names it when
 *  the URL cannot be parsed). */
export function redactUrl(url: string, scheme = 'postgres'): string {
  try {
    const u = new URL(url);
    if (u.password !== '') u.password = '***';
    return u.toString();
  } catch {
    return `${scheme}://(unparseable URL)`;
  }
}

/** `scheme://user:password@` anywhere in a value, parseable as a URL or not. */
const USERINFO_PASSWORD = /([a-z][a-z0-9+.-]*:\/\/[^/?#@:\s]*:)[^\s]*@/gi;

/**
 * A value the operator gave where a file path or a URL may stand (`--db`, `--from`, `--to`), fit to
 * print: a path as it is, the password of any `scheme://user:password@…` in it replaced by `***` —
 * also in a value no URL parser accepts, which redactUrl could only drop whole.
 */
export function redactPasswords(value: string): string {
  return value.replace(USERINFO_PASSWORD, '$1***@');
}
