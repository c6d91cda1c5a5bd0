// Attribution headers: X-Title sanitising, HTTP-Referer/Referer origin, X-Pi-Session-Id length.
import t from 'tap';
import { headerText, originOf, sanitizeTitle } from '../../src/http/header-text.ts';

/** Test labels in plain ASCII: a raw U+2028 or bidi control would garble the TAP stream. */
function label(s: string | undefined): string {
  if (s === undefined) return 'undefined';
  const short = s.length > 40 ? `${s.slice(0, 40)}…(${s.length})` : s;
  return JSON.stringify(short).replace(/[^\x20-\x7e]/gu, (c) => `\\u{${(c.codePointAt(0) as number).toString(16)}}`);
}

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
