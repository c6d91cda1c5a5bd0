// config/ checks platform files against the adapter catalog its caller passes in (platforms/'s
// ADAPTERS in production), never against one of its own: a stub catalog decides which adapters
// exist, which endpoints each calls and what it says about a platform's adapter_options.
import t from 'tap';
import type { AdapterCatalog, AdapterOptions } from '../../src/config/adapter-catalog.ts';
import { formatIssue, loadConfig } from '../../src/config/load-config.ts';
import { MINI } from './fixture-tree.ts';

function stub(seen: [string, AdapterOptions][]): AdapterCatalog {
  return new Map([
    [
      'openai',
      {
        id: 'openai',
        endpoints: ['chat_completions'],
        validateOptions: (o: AdapterOptions) => {
          seen.push(['openai', o]);
          return ['stub: openai takes no options here'];
        },
      },
    ],
    ['zulu', { id: 'zulu', endpoints: [], validateOptions: () => [] }],
  ]);
}

t.test('adapters, their endpoints and their option checks come from the catalog passed in', async (t) => {
  const seen: [string, AdapterOptions][] = [];
  const r = loadConfig(MINI, { adapters: stub(seen) });
  t.equal(r.ok, false);
  const lines = r.ok ? [] : r.issues.map((i) => formatIssue(i).split(MINI).join('config'));
  t.strictSame(lines, [
    'config/platforms/alpha.yaml:6:10 adapter: stub: openai takes no options here',
    'config/platforms/alpha.yaml:7:13 endpoints[0]: adapter "openai" cannot call endpoint "responses" (it supports: chat_completions)',
    'config/platforms/alpha.yaml:7:42 endpoints[2]: adapter "openai" cannot call endpoint "images_generations" (it supports: chat_completions)',
    'config/platforms/bravo.yaml:4:10 adapter: unknown adapter "anthropic" (known: openai, zulu)',
    'config/platforms/charlie.yaml:5:10 adapter: stub: openai takes no options here',
  ]);
  t.strictSame(
    seen,
    [
      ['openai', {}],
      ['openai', {}],
    ],
    'validateOptions gets the platform options ({} when the file has none), once per platform',
  );
});

t.test('with a catalog that knows every adapter the mini tree names, it loads', async (t) => {
  const seen: [string, AdapterOptions][] = [];
  const endpoints = ['chat_completions', 'responses', 'images_generations', 'messages'];
  const adapters: AdapterCatalog = new Map(
    ['openai', 'anthropic'].map((id) => [
      id,
      {
        id,
        endpoints,
        validateOptions: (o: AdapterOptions) => {
          seen.push([id, o]);
          return [];
        },
      },
    ]),
  );
  const r = loadConfig(MINI, { adapters });
  t.equal(r.ok, true);
  t.strictSame(
    seen,
    [
      ['openai', {}],
      ['anthropic', { version: '2023-06-01' }],
      ['openai', {}],
    ],
    "each platform's adapter_options, in file order",
  );
});
