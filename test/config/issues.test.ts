// Issue formatting, ordering and YAML position lookup.
import t from 'tap';
import { LineCounter, parseDocument } from 'yaml';
import { formatIssue, formatPath, sortIssues } from '../../src/config/issues.ts';
import { locate, type SourceFile } from '../../src/config/load.ts';

t.test('formatPath', async (t) => {
  const cases: [string, { given: (string | number)[]; want: string }][] = [
    ['root', { given: [], want: '' }],
    ['keys and indices', { given: ['models', 0, 'pricing', 'overrides', 1], want: 'models[0].pricing.overrides[1]' }],
    ['odd keys are quoted', { given: ['default_parameters', 'a b', 'x.y'], want: 'default_parameters["a b"]["x.y"]' }],
    ['leading index', { given: [2, 'id'], want: '[2].id' }],
  ];
  for (const [name, { given, want }] of cases) t.equal(formatPath(given), want, name);
});

t.test('formatIssue', async (t) => {
  t.equal(
    formatIssue({
      file: 'config/models/openai.yaml',
      line: 12,
      col: 7,
      path: 'models[0].pricing.overrides[1]',
      message: 'boom',
    }),
    'config/models/openai.yaml:12:7 models[0].pricing.overrides[1]: boom',
  );
  t.equal(
    formatIssue({ file: 'config/x.txt', line: 1, col: 1, path: '', message: 'unexpected file' }),
    'config/x.txt:1:1: unexpected file',
  );
});

t.test('sortIssues: by file, line, col; duplicates dropped', async (t) => {
  const i = (file: string, line: number, col: number, message = 'm') => ({ file, line, col, path: 'p', message });
  t.strictSame(sortIssues([i('b', 1, 1), i('a', 10, 2), i('a', 2, 9), i('a', 2, 3), i('a', 2, 3)]), [
    i('a', 2, 3),
    i('a', 2, 9),
    i('a', 10, 2),
    i('b', 1, 1),
  ]);
});

t.test('locate: values, keys, missing keys, aliases, empty values', async (t) => {
  const text = ['base: &b', '  x: 1', 'list:', '  - id: a', '    price: "0.1"', '  - *b', 'empty:', ''].join('\n');
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter });
  const f: SourceFile = {
    rel: 'x.yaml',
    file: 'c/x.yaml',
    kind: 'gateway',
    stem: 'x',
    doc,
    lineCounter,
    data: doc.toJS(),
    parsed: true,
  };
  t.strictSame(locate(f, ['list', 0, 'price']), { line: 5, col: 12 }, 'a value');
  t.strictSame(locate(f, ['list', 0, 'price'], 'key'), { line: 5, col: 5 }, 'its key');
  t.strictSame(locate(f, ['list', 0, 'nope']), { line: 4, col: 5 }, 'a missing key → its object');
  t.strictSame(locate(f, ['list', 1, 'x']), { line: 2, col: 6 }, 'through an alias');
  t.strictSame(locate(f, ['empty']), { line: 7, col: 1 }, 'an empty value → its key');
  t.strictSame(locate(f, []), { line: 1, col: 1 }, 'the document');
});
