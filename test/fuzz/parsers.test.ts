// Bounded `parsers` fuzz: the JSON depth scan, SSE splitter, key scanner/rewriter, Bedrock decoder and
// multipart reader on seeded inputs at seeded split points, coverage-guided; each parser's adversarial
// shapes timed at a fixed size and 4 ×.
import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FindingBook } from '../../fuzz/lib/findings.ts';
import { runParsers } from '../../fuzz/targets/parsers.ts';
import { SEED } from '../helpers/fuzz-bounded.ts';

t.test('parsers: 500 seeded inputs break no oracle', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'pi-fuzz-parsers-'));
  const book = new FindingBook(dir, 1);
  const r = await runParsers({
    seed: SEED,
    budget: { deadline: null, cases: 500 },
    findings: book,
    guided: true,
    scale: 'fixed',
    log: (l) => t.comment(l),
  });
  t.equal(r.cases, 500);
  const hits = book
    .signatures()
    .map(
      (s) =>
        `${s.oracle} ×${s.count}: ${s.signature} — ${s.example.slice(0, 200)}${s.saved[0] ? ` (input: ${s.saved[0]})` : ''}`,
    );
  t.same(hits, [], `seed ${SEED}: no oracle failed`);
  if (hits.length === 0) rmSync(dir, { recursive: true, force: true });
});
