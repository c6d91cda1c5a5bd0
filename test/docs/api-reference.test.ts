// docs/api.md held to the code: every error code of src/errors.ts has its row with its status and
// type, the endpoint table lists exactly the routes the public listener registers (and each answers
// a keyless request on a running gateway as the table says), the header and limit tables match the
// constants and config defaults they describe, and nothing in the page points outside the
// repository (a clone has only the repository).
import t from 'tap';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ERROR_CODES } from '../../src/errors.ts';
import { MAX_SESSION_ID_LENGTH } from '../../src/http/header-text.ts';
import { JSON_LIMITS } from '../../src/protocols/json-request.ts';
import { MAX_FALLBACK_MODELS } from '../../src/protocols/routing-fields.ts';
import { publicRoutes } from '../../src/server/app.ts';
import { EXPOSED_HEADERS, SECURITY_HEADERS } from '../../src/server/gateway-headers.ts';
import { ALLOWED_REQUEST_HEADERS } from '../../src/server/preflight.ts';
import { startStack } from '../helpers/stack.ts';

const REPO = fileURLToPath(new URL('../../', import.meta.url));
const DOC_FILE = join(REPO, 'docs', 'api.md');
const DOC = readFileSync(DOC_FILE, 'utf8');
const LINES = DOC.split('\n');

/** The lines under `heading` (exact line) up to the next heading of the same or a higher level. */
function section(heading: string): string[] {
  const at = LINES.indexOf(heading);
  if (at === -1) throw new Error(`docs/api.md has no "${heading}" heading`);
  const level = (/^#+/.exec(heading) as RegExpExecArray)[0].length;
  const out: string[] = [];
  for (const line of LINES.slice(at + 1)) {
    const m = /^(#+) /.exec(line);
    if (m && (m[1] as string).length <= level) break;
    out.push(line);
  }
  return out;
}

/** The cells of a table row, split on `|` outside backticks, trimmed. */
function cells(row: string): string[] {
  const out: string[] = [];
  let cell = '';
  let code = false;
  for (const ch of row.trim().replace(/^\||\|$/g, '')) {
    if (ch === '`') code = !code;
    if (ch === '|' && !code) {
      out.push(cell.trim());
      cell = '';
    } else cell += ch;
  }
  out.push(cell.trim());
  return out;
}

/** The body rows (header and separator dropped) of the first table in `lines`. */
function firstTable(lines: string[]): string[][] {
  const start = lines.findIndex((l) => l.startsWith('|'));
  if (start === -1) return [];
  const rows: string[][] = [];
  for (const line of lines.slice(start + 2)) {
    if (!line.startsWith('|')) break;
    rows.push(cells(line));
  }
  return rows;
}

/** Every table body row in `lines`. */
function allRows(lines: string[]): string[][] {
  return lines.filter((l) => l.startsWith('|') && !/^\|[-| :]+\|$/.test(l)).map(cells);
}

/** The first backticked text of a cell. */
function code(cell: string | undefined): string | null {
  const m = /`([^`]+)`/.exec(cell ?? '');
  return m ? (m[1] as string) : null;
}

/** A heading's anchor as GitHub renders it. */
function anchor(heading: string): string {
  return heading
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\p{M}\- _]/gu, '')
    .replace(/ /g, '-');
}

t.test('every error code of src/errors.ts is documented with its status and type, and no other', async (t) => {
  const rows = firstTable(section('### Error codes'));
  t.ok(rows.length > 0, 'the error code table has rows');
  const documented = new Map<string, { status: number; type: string | null }>();
  for (const row of rows) {
    const c = code(row[1]);
    if (c === null) {
      t.fail(`error code row without a code: ${row.join(' | ')}`);
      continue;
    }
    t.notOk(documented.has(c), `${c} is documented once`);
    documented.set(c, { status: Number(row[0]), type: code(row[2]) });
  }
  for (const [c, { status, type }] of Object.entries(ERROR_CODES)) {
    const doc = documented.get(c);
    t.ok(doc, `${c} has a row in "Error codes"`);
    t.equal(doc?.status, status, `${c}: documented with status ${status}`);
    t.equal(doc?.type, type, `${c}: documented with type ${type}`);
  }
  for (const c of documented.keys())
    t.ok(Object.hasOwn(ERROR_CODES, c), `documented code ${c} is one the gateway raises`);
});

t.test('the endpoint table lists exactly the public routes, and each answers as documented', async (t) => {
  const s = await startStack(t);
  const registered = publicRoutes(s.gw.ctx).map(
    (r) => `${r.method === 'any' ? 'any' : r.method.toUpperCase()} ${r.pattern.replace(/:(\w+)/g, '{$1}')}`,
  );
  const rows = firstTable(section('## Endpoints'));
  const documented = rows.map((r) => `${r[0]} ${code(r[1]) ?? '?'}`);
  t.same([...documented].sort(), [...registered].sort(), 'the endpoint table is the route table');

  // A listed model for the path parameters.
  const list = (await (await fetch(`${s.url}/v1/models`)).json()) as { data: { id: string }[] };
  const slug = list.data[0]?.id ?? '';
  const [vendor, name] = [slug.slice(0, slug.indexOf('/')), slug.slice(slug.indexOf('/') + 1)];
  t.ok(vendor !== '' && name !== '', `a listed model to call the catalog paths with (${slug})`);

  for (const row of rows) {
    const method = row[0] as string;
    const pattern = code(row[1]) ?? '';
    const expected = /`(\d{3})(?: ([a-z_]+))?`/.exec(row[4] ?? '');
    if (!expected) {
      t.fail(`${method} ${pattern}: the "Without a key" cell names no status`);
      continue;
    }
    const status = Number(expected[1]);
    const errorCode = expected[2] ?? null;
    for (const [m, path] of samples(method, pattern, vendor, name)) {
      const res = await fetch(`${s.url}${path}`, {
        method: m,
        ...(m === 'POST' ? { headers: { 'content-type': 'application/json' }, body: '{}' } : {}),
      });
      const text = await res.text();
      const label = `${m} ${path} (documented as ${method} ${pattern})`;
      t.equal(res.status, status, `${label}: ${status}`);
      t.match(res.headers.get('x-pi-trace-id') ?? '', /^[0-9a-f-]{36}$/, `${label}: X-Pi-Trace-Id`);
      if (errorCode !== null) {
        const body = JSON.parse(text) as { error?: { code?: string } };
        t.equal(body.error?.code, errorCode, `${label}: code ${errorCode}`);
      } else if (status === 200) {
        t.doesNotThrow(() => JSON.parse(text), `${label}: a JSON body`);
      }
    }
  }

  // Documented beside the table: HEAD is not served (the unserved-path answer, headers only).
  const head = await fetch(`${s.url}/v1/models`, { method: 'HEAD' });
  t.equal(head.status, 400, 'HEAD /v1/models: 400, as documented');
});

/** Concrete requests for one documented route: the path parameters filled in, wildcards sampled. */
function samples(method: string, pattern: string, vendor: string, name: string): [string, string][] {
  const fill = (p: string): string => p.replace('{vendor}', vendor).replace('{model}', name);
  if (method === 'any' && pattern === '/v1/messages')
    return [
      ['GET', '/v1/messages'],
      ['DELETE', '/v1/messages'],
    ];
  if (!pattern.includes('*')) return [[method, fill(pattern)]];
  if (method === 'GET' && pattern === '/v1/models/*')
    return [['GET', `/v1/models/${encodeURIComponent(`${vendor}/${name}`)}`]];
  if (method === 'OPTIONS' && pattern === '/*')
    return [
      ['OPTIONS', '/v1/chat/completions'],
      ['OPTIONS', '/v1/models'],
    ];
  if (method === 'any' && pattern === '/v1/messages/*')
    return [
      ['POST', '/v1/messages/batches'],
      ['GET', '/v1/messages/count_tokens'],
    ];
  if (method === 'any' && pattern === '/*') {
    return [
      ['POST', '/v1/embeddings'],
      ['GET', '/v1/responses/resp_123'],
      ['GET', '/v1/chat/completions'],
      ['DELETE', '/v1/models'],
    ];
  }
  throw new Error(`no sample request for the documented route ${method} ${pattern}: add one to this test`);
}

t.test('the header tables match the headers the gateway sends and allows', async (t) => {
  const security = new Map(firstTable(section('### Security headers')).map((r) => [code(r[0]), code(r[1])]));
  for (const [name, value] of SECURITY_HEADERS) t.equal(security.get(name), value, `security header ${name}: ${value}`);
  t.equal(security.size, SECURITY_HEADERS.length, 'no other security header is documented');
  const flat = DOC.replace(/\s+/g, ' ');
  t.ok(flat.includes(`Access-Control-Expose-Headers: ${EXPOSED_HEADERS}`), 'the exposed headers, as sent');
  t.ok(flat.includes(`\`${ALLOWED_REQUEST_HEADERS.join(', ')}\``), 'the preflight allow-list, as sent');
});

t.test('the limits table matches the config defaults and the fixed limits', async (t) => {
  const rows = firstTable(section('## Limits'));
  const schema = JSON.parse(readFileSync(join(REPO, 'schemas', 'gateway.schema.json'), 'utf8')) as {
    properties: Record<string, { properties: Record<string, { default: number }> }>;
  };
  for (const group of ['limits', 'health', 'sessions']) {
    for (const [key, def] of Object.entries(schema.properties[group]?.properties ?? {})) {
      const setting = `${group}.${key}`;
      const row = rows.find((r) => (r[2] ?? '').includes(`\`${setting}\``));
      t.ok(row, `${setting} has a row`);
      t.ok(row?.[1]?.includes(`\`${def.default}\``), `${setting}: its default ${def.default} is the documented value`);
    }
  }
  const fmt = (n: number): string => n.toLocaleString('en-US');
  const shape = rows.find((r) => (r[0] ?? '').startsWith('JSON nesting'));
  t.equal(
    shape?.[1],
    `${JSON_LIMITS.depth} levels / ${fmt(JSON_LIMITS.members)} / ${fmt(JSON_LIMITS.elements)} / ${fmt(JSON_LIMITS.values)} / ${fmt(JSON_LIMITS.nameBytes)} bytes`,
    'the JSON shape limits',
  );
  t.equal(
    rows.find((r) => (r[0] ?? '').startsWith('fallback models'))?.[1],
    String(MAX_FALLBACK_MODELS),
    'the fallback model limit',
  );
  t.match(
    rows.find((r) => (r[0] ?? '').startsWith('`X-Pi-Session-Id`'))?.[1] ?? '',
    new RegExp(`^${MAX_SESSION_ID_LENGTH} characters`),
    'the session id limit',
  );
});

t.test('every error-event code a broken stream can carry is documented', async (t) => {
  const relay = readFileSync(join(REPO, 'src', 'proxy', 'attempt-relay.ts'), 'utf8');
  const codes = new Set<string>();
  for (const m of relay.matchAll(/breakStream\([^;]*?,\s*'([a-z_]+)',?\s*\);/g)) codes.add(m[1] as string);
  for (const m of relay.matchAll(
    /breakStream\(\s*reason: FailureReason,\s*message: string,\s*code = '([a-z_]+)',?\s*\)/g,
  ))
    codes.add(m[1] as string);
  t.ok(codes.size >= 3, `codes found in the relay: ${[...codes].join(', ')}`);
  const documented = new Set(allRows(section('### When a stream breaks')).map((r) => code(r[0])));
  for (const c of codes) t.ok(documented.has(c), `stream error code ${c} has a row`);
});

t.test('nothing in docs/api.md points outside the repository', async (t) => {
  t.notMatch(DOC, /\.\.\/shared|SPEC\.md/, 'no reference to a contract file outside the repository');
  t.notMatch(DOC, /\bthe spec\b/i, 'no "the spec": the page is the reference');
  t.notMatch(DOC, /\bissue\s*#?\d+|(^|\s)#\d+\b/im, 'no tracker numbers');
  const allowed = /^(localhost|127\.0\.0\.1|(?:[a-z0-9-]+\.)*example\.(?:com|org|net))(:\d+)?$/;
  for (const m of DOC.matchAll(/\bhttps?:\/\/([^\s/)`'"<>]+)/g)) {
    t.match(m[1], allowed, `only placeholder hosts in URLs: ${m[0]}`);
  }
  const anchors = new Set(LINES.filter((l) => /^#+ /.test(l)).map((l) => anchor(l.replace(/^#+ /, ''))));
  for (const m of DOC.matchAll(/\]\(([^)\s]+)\)/g)) {
    const target = m[1] as string;
    if (target.startsWith('#')) {
      t.ok(anchors.has(target.slice(1)), `link ${target} names a heading of the page`);
      continue;
    }
    t.notMatch(target, /^[a-z]+:/i, `link ${target} is relative`);
    const file = resolve(dirname(DOC_FILE), target.replace(/#.*$/, ''));
    t.notOk(relative(REPO, file).startsWith('..'), `link ${target} stays inside the repository`);
    t.ok(existsSync(file), `link ${target} names a file of the repository`);
  }
});
