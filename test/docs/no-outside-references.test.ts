// A clone of the repository has everything a user needs: no tracked file points at something a clone
// does not have (a shared folder beside the checkout, a path on the machine it was written on, the
// API contract's old file name) or speaks in work-tracking terms a user cannot resolve (an issue or
// pull-request number, a work session, another project's issue by owner/repo and number, a finding
// label). Each hit is reported as file:line with the text and the rule it breaks; rewrite it
// in plain words — what the thing is, not when or under which ticket it was built.
import t from 'tap';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const REPO = fileURLToPath(new URL('../../', import.meta.url));

interface Rule {
  name: string;
  pattern: RegExp;
}

// Precise on purpose: "HTTP 404", "RFC 9110 §15.2", "3 issues", a `.issues` field, "this session id",
// the drain's "stop switch", `../shared-state/` and `OUT/work/` are ordinary text and must not trip.
const RULES: Rule[] = [
  { name: 'a path outside the repository (the shared folder beside it)', pattern: /\.\.\/shared\b(?!-)/ },
  { name: 'a path on the machine it was written on (its work folder)', pattern: /(?<![\w.~-])\/work\// },
  { name: 'the API contract by its outside file name (docs/api.md is the reference)', pattern: /\bSPEC\.md\b/ },
  { name: 'an issue number', pattern: /\bissues?[\s-]*#?\d+\b/i },
  { name: 'a pull-request or issue reference "(#N)"', pattern: /\(#\d+\)/ },
  { name: "another project's tracker reference (owner/repo#N, name#N)", pattern: /\b[\w.-]+#\d+\b/ },
  { name: 'a work stop ("stop N")', pattern: /\bstop \d+\b/i },
  {
    name: 'a work session or stop',
    pattern:
      /\bthis[ ]stop\b(?! switch)|\b(?:in|during|since|before|after|from|of|by|for) this (?:stop|session)\b(?! (?:id|pin))|\bthis (?:stop|session)['’]s\b/i,
  },
  { name: "the tracker's wording (an issue's targets)", pattern: /\b(?:the|this|that) issue['’]s\b/i },
  { name: 'a finding label ("F3")', pattern: /\bfindings? F\d+\b|\(F\d+\)/ },
];

/** The files git tracks, with their text; binary files (a NUL byte) and the lockfile are left out. */
function trackedTexts(): { file: string; text: string }[] {
  const files = execFileSync('git', ['ls-files', '-z'], { cwd: REPO, maxBuffer: 64 * 1024 * 1024 })
    .toString()
    .split('\0')
    .filter((f) => f !== '' && !f.endsWith('package-lock.json'));
  const out: { file: string; text: string }[] = [];
  for (const file of files) {
    const path = join(REPO, file);
    if (!existsSync(path)) continue; // deleted in the working tree, not yet committed
    const bytes = readFileSync(path);
    if (bytes.subarray(0, 8192).includes(0)) continue;
    out.push({ file, text: bytes.toString('utf8') });
  }
  return out;
}

/** Every `file:line: text (rule)` in `text` that breaks a rule. */
function hits(file: string, text: string): string[] {
  const found: string[] = [];
  text.split('\n').forEach((line, i) => {
    for (const rule of RULES) {
      const m = rule.pattern.exec(line);
      if (m) found.push(`${file}:${i + 1}: "${m[0]}" — ${rule.name}`);
    }
  });
  return found;
}

t.test('the rules catch what they are for, and leave ordinary text alone', async (t) => {
  // Built from parts, so that this file itself holds none of the phrases it looks for.
  const n = (s: string) => s.replace('N', '12');
  const bad = [
    n('Continuous benchmark (issue N)'),
    n('Issue N targets'),
    n('see issue #N'),
    n('fixed in (#N)'),
    n('measured at stop N'),
    ['What', 'this', 'stop', 'changed'].join(' '),
    ['measured', 'in', 'this', 'session'].join(' '),
    ['at', 'the', "issue's", 'full size'].join(' '),
    ['..', 'shared', 'SPEC' + '.md'].join('/'),
    ['', 'work', 'main', 'README.md'].join('/'),
    n('upstream undici#N'),
    n('Portkey-AI/gateway#N'),
    ['finding', 'F3'].join(' '),
  ];
  for (const s of bad) t.not(hits('x', s).length, 0, `caught: ${s}`);
  const fine = [
    'HTTP 404 and HTTP 503',
    'RFC 9110 §15.2',
    'the config has 3 issues; `r.issues.length` issue(s)',
    'A request with this session id was admitted',
    'the stop switch ends the rest; this stop switch too',
    "import { SharedPins } from '../shared-state/shared-limits.ts';",
    'NODE_V8_COVERAGE=OUT/work/coverage/<target>',
    'color: #123456; a #1 choice',
    'stop_reason, stopped 30 s later',
  ];
  for (const s of fine) t.same(hits('x', s), [], `left alone: ${s}`);
});

t.test('no tracked file points outside the repository or carries tracker wording', async (t) => {
  const texts = trackedTexts();
  t.ok(texts.length > 100, `git lists the tracked files (${texts.length})`);
  const found = texts.flatMap(({ file, text }) => hits(file, text));
  t.same(found, [], found.length === 0 ? 'none' : `rewrite these in plain words:\n${found.join('\n')}`);
});
