// Unsolicited `100 Continue` heads are removed from the start of an answer, wherever the chunks
// split them; every other head and every byte after the final head pass through untouched.
import t from 'tap';
import { InterimHeadFilter, MAX_INTERIM_HEAD_BYTES } from '../../src/upstream/interim-heads.ts';

/** Feeds `input` in pieces cut at `cuts` and returns what the parser would get. */
function run(input: string, cuts: number[] = []): string {
  const f = new InterimHeadFilter();
  f.start();
  const bytes = Buffer.from(input, 'latin1');
  const out: Buffer[] = [];
  let at = 0;
  for (const cut of [...cuts, bytes.length]) {
    const r = f.push(bytes.subarray(at, cut));
    if (r) out.push(r);
    at = cut;
  }
  return Buffer.concat(out).toString('latin1');
}

const FINAL = 'HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\ndata: {"a":1}\n\n';

t.test('a 100 head is dropped, with CRLF or bare LF lines, repeated or mixed with other interim heads', async (t) => {
  t.equal(run(`HTTP/1.1 100 Continue\r\n\r\n${FINAL}`), FINAL);
  t.equal(run(`HTTP/1.1 100 Continue\n\n${FINAL}`), FINAL);
  t.equal(run(`HTTP/1.1 100\r\n\r\n${FINAL}`), FINAL, 'no reason phrase');
  t.equal(
    run(`HTTP/1.0 100 Continue\r\nX-A: b\r\n\r\nHTTP/1.1 100 Continue\r\n\r\n${FINAL}`),
    FINAL,
    'two, one with a header',
  );
  const early = 'HTTP/1.1 103 Early Hints\r\nLink: </a>; rel=preload\r\n\r\n';
  t.equal(run(`${early}HTTP/1.1 100 Continue\r\n\r\n${FINAL}`), early + FINAL, 'a 103 is left for the HTTP client');
});

t.test('the same bytes cut at every position give the same result', async (t) => {
  const input = `HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 102 Processing\r\n\r\n${FINAL}`;
  const want = `HTTP/1.1 102 Processing\r\n\r\n${FINAL}`;
  for (let cut = 1; cut < input.length; cut++) t.equal(run(input, [cut]), want, `cut at ${cut}`);
  for (let cut = 1; cut + 3 < input.length; cut += 3)
    t.equal(run(input, [cut, cut + 1, cut + 3]), want, `cut at ${cut}, ${cut + 1}, ${cut + 3}`);
});

t.test('everything from the final head on passes untouched, even bytes that look like a 100', async (t) => {
  const body = 'HTTP/1.1 200 OK\r\nContent-Length: 26\r\n\r\nHTTP/1.1 100 Continue\r\n\r\n';
  t.equal(run(body), body);
  t.equal(run(body, [5, 30]), body);
  t.equal(
    run('garbage\r\n\r\n'),
    'garbage\r\n\r\n',
    'bytes that are no head go to the HTTP client, which refuses them',
  );
  t.equal(run('HTTP/1.1 1000 Weird\r\n\r\n'), 'HTTP/1.1 1000 Weird\r\n\r\n', 'not a 100');
});

t.test('without a request written, nothing is filtered; a new request starts a new answer', async (t) => {
  const f = new InterimHeadFilter();
  const hundred = Buffer.from('HTTP/1.1 100 Continue\r\n\r\n');
  t.same(f.push(hundred), hundred);
  f.start();
  t.equal(f.push(hundred), null);
  t.equal(f.push(Buffer.from(FINAL))?.toString(), FINAL);
  t.same(f.push(hundred), hundred, 'the answer has begun');
  f.start();
  t.equal(f.push(hundred), null, 'the next request');
});

t.test('an interim head larger than the bound is no longer held back', async (t) => {
  const huge = `HTTP/1.1 100 Continue\r\nX-Big: ${'a'.repeat(MAX_INTERIM_HEAD_BYTES)}`;
  t.equal(run(huge), huge);
  const f = new InterimHeadFilter();
  f.start();
  t.equal(f.push(Buffer.from('HTTP/1.1 100 Continue\r\n')), null, 'held while it may still end');
});
