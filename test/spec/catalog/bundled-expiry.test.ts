// The bundled catalog, judged on the day it was last reviewed against the vendors' pages: no enabled
// model expires within 30 days of that day, and every chat model is listed and answers then.
//
// The day is fixed here, never read from the calendar, so the suite cannot start failing because
// time passed. Whether a model is close to expiry *today* is the operator's question, answered by
// `pi-gateway check --warn-expiring DAYS` (test/cli/check-command.test.ts). When you review the
// catalog (config/models/: replace models the vendors retire, record the dates they publish, never
// invent one), move REVIEWED to that day, then `npm run codegen`.
import t from 'tap';
import { ManualClock } from '../../../src/clock.ts';
import { expiringWithin } from '../../../src/availability/lifecycle.ts';
import { startStack } from '../../helpers/stack.ts';
import { fixtureConfig } from '../../helpers/stack.ts';

/** The day config/models/ was last checked against the vendors' model, pricing and deprecation pages. */
const REVIEWED = '2026-11-27';
const REVIEWED_MS = Date.parse(`${REVIEWED}T00:00:00Z`);
/** Days a bundled model must stay routable after the review. */
const MARGIN_DAYS = 30;

t.test(`no bundled model expires within ${MARGIN_DAYS} days of the review (${REVIEWED})`, async (t) => {
  const soon = expiringWithin(fixtureConfig('bundled').models, REVIEWED_MS, MARGIN_DAYS);
  t.same(
    soon,
    [],
    'replace these models (config/models/), or move an expiration_date the vendor moved, then npm run codegen',
  );
});

t.test('the rule catches a model expiring within the margin, and only such a model', async (t) => {
  // mini/'s acme/old-1 expires on 2024-01-01.
  const models = fixtureConfig('mini').models;
  t.same(
    expiringWithin(models, Date.parse('2023-12-02T12:00:00Z'), MARGIN_DAYS).map((m) => m.id),
    ['acme/old-1'],
    '30 days before: within the margin',
  );
  t.same(expiringWithin(models, Date.parse('2023-12-01T12:00:00Z'), MARGIN_DAYS), [], '31 days before: not yet');
});

t.test('on the review day every bundled chat model is listed and answers', async (t) => {
  const s = await startStack(t, { config: 'bundled', clock: new ManualClock(`${REVIEWED}T12:00:00Z`) });
  const key = s.key('acme');
  s.credit('acme', '1000');
  const listed = ((await (await fetch(`${s.v1}/models`)).json()) as { data: { id: string }[] }).data.map((m) => m.id);
  const chat = s.config.models.filter(
    (m) =>
      m.enabled &&
      s.config.deployments.some((d) => d.model === m.id && d.active && d.endpoints.includes('chat_completions')),
  );
  t.ok(chat.length > 0);
  for (const m of chat) {
    t.ok(listed.includes(m.id), `${m.id}: listed`);
    const res = await s.post(
      '/v1/chat/completions',
      { model: m.id, messages: [{ role: 'user', content: 'hi' }], max_tokens: 8 },
      { key },
    );
    t.equal(res.status, 200, `${m.id}: answers (not 404 model_not_found)`);
    await res.text();
  }
});
