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
