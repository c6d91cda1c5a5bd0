// Header-text rules: the bytes a forwarded header value may carry (the same as undici's own check),
// X-Title sanitising, HTTP-Referer/Referer origin, X-Pi-Session-Id length.
import { createRequire } from 'node:module';
import t from 'tap';
import { FORWARDED_CLIENT_HEADERS } from '../../src/proxy/upstream-call.ts';
import {
  FORWARDABLE_CLIENT_HEADERS,
  headerText,
  isFieldValue,
  originOf,
  sanitizeTitle,
  sessionIdFrom,
  unforwardableHeader,
} from '../../src/http/header-text.ts';

/** undici's own check of a header value (what it refuses to send with `invalid <name> header`). */
const { isValidHeaderValue } = createRequire(import.meta.url)('undici/lib/core/util.js') as {
  isValidHeaderValue: (v: string) => boolean;
};

/** Test labels in plain ASCII: a raw U+2028 or bidi control would garble the TAP stream. */
function label(s: string | undefined): string {
  if (s === undefined) return 'undefined';
  const short = s.length > 40 ? `${s.slice(0, 40)}…(${s.length})` : s;
  return JSON.stringify(short).replace(/[^\x20-\x7e]/gu, (c) => `\\u{${(c.codePointAt(0) as number).toString(16)}}`);
}

t.test('isFieldValue accepts exactly the bytes undici sends', async (t) => {
  const refused: number[] = [];
  for (let b = 0; b < 256; b++) {
    for (const value of [String.fromCharCode(b), `a${String.fromCharCode(b)}b`]) {
      t.equal(
        isFieldValue(value),
        isValidHeaderValue(value),
        `byte 0x${b.toString(16)} in ${JSON.stringify(value).length > 8 ? 'the middle' : 'a value of its own'}: same verdict as undici`,
      );
    }
    if (!isFieldValue(`a${String.fromCharCode(b)}b`)) refused.push(b);
  }
  t.same(
    refused,
    [...Array.from({ length: 32 }, (_, i) => i).filter((b) => b !== 9), 0x7f],
    'refused: C0 controls but HTAB, and DEL',
  );
  t.equal(isFieldValue('日本'), false, 'text that was never bytes (a character above 0xff) is no field value');
  t.equal(isValidHeaderValue('日本'), false, 'nor for undici');
  t.equal(isFieldValue(''), true, 'an empty value');
});

t.test('unforwardableHeader names the first header the gateway would forward but could not', async (t) => {
  t.equal(
    unforwardableHeader({ 'x-title': 'fine', 'user-agent': 'a\x7fb' }),
    null,
    'a header the gateway does not forward is not its concern',
  );
  t.equal(unforwardableHeader({ 'x-title': 'Caf\xe9 \xe6\x97\xa5\t!' }), null, 'obs-text bytes and HTAB are fine');
  t.equal(
    unforwardableHeader({ 'x-title': 'a\x7fb' }),
    'the X-Title header contains the control byte 0x7F, which an HTTP header value may not carry',
  );
  t.equal(
    unforwardableHeader({ 'http-referer': 'https://a.example/\x01' }),
    'the HTTP-Referer header contains the control byte 0x01, which an HTTP header value may not carry',
  );
  t.equal(
    unforwardableHeader({ 'x-pi-session-id': 's\x00' }),
    'the X-Pi-Session-Id header contains the control byte 0x00, which an HTTP header value may not carry',
  );
  t.equal(
    unforwardableHeader({ 'anthropic-beta': 'x\ny' }),
    'the Anthropic-Beta header contains the control byte 0x0A, which an HTTP header value may not carry',
  );
  t.equal(
    unforwardableHeader({ 'anthropic-version': '2023\x7f' }),
    'the Anthropic-Version header contains the control byte 0x7F, which an HTTP header value may not carry',
  );
  t.equal(
    unforwardableHeader({ 'content-type': 'multipart/form-data; boundary=\x7f' }),
    'the Content-Type header contains the control byte 0x7F, which an HTTP header value may not carry',
  );
  t.equal(
    unforwardableHeader({ 'x-title': '日' }),
    'the X-Title header contains the character U+65E5, which an HTTP header value may not carry',
  );
});

t.test('every client header the proxy forwards is covered by the rule', async (t) => {
  const covered = new Set(FORWARDABLE_CLIENT_HEADERS.map(([name]) => name));
  for (const h of FORWARDED_CLIENT_HEADERS) t.ok(covered.has(h), `${h} is checked before routing`);
});

t.test('sessionIdFrom: a control byte makes the session id absent', async (t) => {
  t.equal(sessionIdFrom('abc\tdef'), 'abc\tdef', 'HTAB is a legal header byte');
  t.equal(sessionIdFrom('abc\x7f'), null);
  t.equal(sessionIdFrom('\x01abc'), null);
  t.equal(sessionIdFrom('日本語'), '日本語');
});

t.test('sanitizeTitle', async (t) => {
  const table: [string | undefined, string | null][] = [
    [undefined, null],
    ['', null],
    ['   ', null],
    ['  My App  ', 'My App'],
    ['A\u0000B\tC\nD\rE\u007fF\u0085G', 'ABCDEFG'],
    ['zero\u200Bwidth\u200C\u200D\u2060\uFEFF', 'zerowidth'],
    ['\u202Eevil\u202C \u2066iso\u2069 \u200Emark\u200F \u061C', 'evil iso mark'],
    ['line\u2028para\u2029end', 'lineparaend'],
    ['soft\u00ADhyphen', 'softhyphen'],
    ['\u115Ffiller\u3164\uFFA0', 'filler'],
    ['tag\u{E0041}\u{E007F}s', 'tags'],
    ['\u200B\u200B', null],
    ['café ✓ 日本語', 'café ✓ 日本語'],
    ['e\u0301', 'e\u0301'],
    ['❤\uFE0F', '❤\uFE0F'],
    ['a'.repeat(128), 'a'.repeat(128)],
    ['a'.repeat(129), 'a'.repeat(128)],
    ['😀'.repeat(128), '😀'.repeat(128)],
    ['😀'.repeat(200), '😀'.repeat(128)],
    ['a'.repeat(127) + '😀😀', 'a'.repeat(127) + '😀'],
    ['\u200B'.repeat(50) + 'x'.repeat(128) + 'y', 'x'.repeat(128)],
    ['a'.repeat(127) + ' b', 'a'.repeat(127)],
  ];
  for (const [input, want] of table) t.equal(sanitizeTitle(input), want, label(input));
  const cut = sanitizeTitle('x' + '😀'.repeat(200)) as string;
  t.notMatch(cut, /[\uD800-\uDBFF](?![\uDC00-\uDFFF])/, 'no lone high surrogate');
  t.equal(Array.from(cut).length, 128);
});

t.test('originOf', async (t) => {
  const table: [string | undefined, string | undefined, string | null][] = [
    ['https://app.example.com/path?q=1#x', undefined, 'https://app.example.com'],
    ['http://app.example.com/', undefined, 'http://app.example.com'],
    ['https://example.com:443/', undefined, 'https://example.com'],
    ['http://example.com:80/', undefined, 'http://example.com'],
    ['https://example.com:8443/a', undefined, 'https://example.com:8443'],
    ['http://localhost:3000', undefined, 'http://localhost:3000'],
    ['http://[::1]:8080/', undefined, 'http://[::1]:8080'],
    ['HTTPS://User:Pw@EXAMPLE.COM/', undefined, 'https://example.com'],
    ['https://例え.jp/', undefined, 'https://xn--r8jz45g.jp'],
    ['  https://padded.example/  ', undefined, 'https://padded.example'],
    ['ftp://example.com/file', undefined, null],
    ['javascript:alert(1)', undefined, null],
    ['data:text/html,hi', undefined, null],
    ['file:///etc/passwd', undefined, null],
    ['chrome-extension://abc/', undefined, null],
    ['example.com', undefined, null],
    ['/relative/path', undefined, null],
    ['not a url', undefined, null],
    ['https://' + 'a'.repeat(5000) + '.com/', undefined, null],
    // precedence
    ['https://primary.example/', 'https://fallback.example/', 'https://primary.example'],
    [undefined, 'https://fallback.example/p', 'https://fallback.example'],
    ['', 'https://fallback.example/p', 'https://fallback.example'],
    ['   ', 'http://fallback.example:81/', 'http://fallback.example:81'],
    ['ftp://bad.example/', 'https://fallback.example/', null],
    ['garbage', 'https://fallback.example/', null],
    [undefined, 'javascript:void(0)', null],
    [undefined, undefined, null],
  ];
  for (const [h, r, want] of table) t.equal(originOf(h, r), want, `${label(h)} / ${label(r)}`);
});

t.test('headerText decodes raw header bytes', async (t) => {
  const raw = (text: string, enc: BufferEncoding = 'utf8') => Buffer.from(text, enc).toString('latin1');
  t.equal(headerText(undefined), undefined);
  t.equal(headerText('plain ascii'), 'plain ascii');
  t.equal(headerText(raw('Café ✓ 😀')), 'Café ✓ 😀', 'UTF-8 bytes decode to text');
  t.equal(headerText(raw('Café', 'latin1')), 'Café', 'bytes that are not UTF-8 read as Latin-1');
});
