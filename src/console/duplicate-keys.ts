// The first field a JSON text gives twice in one object, at any depth. JSON.parse keeps the last
// one silently; on an admin write (a credit's amount, a key's workspace) which one counts must not
// depend on the parser that reads it, so the console refuses such a body.

/** JSON's own whitespace (RFC 8259): space, tab, line feed, carriage return. */
const isJsonSpace = (c: string | undefined): boolean => c === ' ' || c === '\t' || c === '\n' || c === '\r';

/**
 * For a text JSON.parse accepted: the first field name an object repeats (escapes decoded, so
 * `"note"` and `"no\u0074e"` are the same field), or null. Iterative: a body nested tens of
 * thousands deep costs no stack.
 */
export function firstDuplicateKey(text: string): string | null {
  // One entry per open container: the field names seen so far in an object, null in an array.
  const open: (Set<string> | null)[] = [];
  let i = 0;
  while (i < text.length) {
    const c = text[i];
    if (c === '"') {
      let end = i + 1;
      while (text[end] !== '"') end += text[end] === '\\' ? 2 : 1;
      let next = end + 1;
      while (isJsonSpace(text[next])) next++;
      const fields = open[open.length - 1];
      // In valid JSON a string followed by a colon is a field name.
      if (fields && text[next] === ':') {
        const name = JSON.parse(text.slice(i, end + 1)) as string;
        if (fields.has(name)) return name;
        fields.add(name);
      }
      i = end + 1;
      continue;
    }
    if (c === '{') open.push(new Set());
    else if (c === '[') open.push(null);
    else if (c === '}' || c === ']') open.pop();
    i++;
  }
  return null;
}
