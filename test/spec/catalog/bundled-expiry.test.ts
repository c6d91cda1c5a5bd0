// The bundled catalog ships no model that expires within 30 days of the build, so a demo user never
// meets a listed model that answers 404 (as google/gemini-2.5-flash did once its date passed).
//
// "The build" is the run of this suite: `npm test` is what CI runs for every build on a fresh clone,
// so the date is the UTC day the suite runs — or SOURCE_DATE_EPOCH (seconds since 1970, the
// reproducible-builds convention) when set, to judge a build made on another day. A model this test
// names must be replaced, or its `expiration_date` in config/models/ moved when the vendor moved it,
// then `npm run codegen`.
import t from 'tap';
import { ManualClock } from '../../../src/clock.ts';
import type { CompiledModel } from '../../../src/config/compiled.ts';
import { dayStartMs } from '../../../src/availability/lifecycle.ts';
import { startStack } from '../../helpers/stack.ts';
import { fixtureConfig } from '../../helpers/stack.ts';

const DAY_MS = 86_400_000;
/** Days a bundled model must stay routable after the build. */
const MARGIN_DAYS = 30;

/** The build's instant: SOURCE_DATE_EPOCH when set, else now. */
function buildTime(): number {
  const epoch = process.env['SOURCE_DATE_EPOCH'];
  if (epoch !== undefined && epoch !== '') {
    if (!/^[0-9]+$/.test(epoch)) throw new Error(`SOURCE_DATE_EPOCH must be whole seconds since 1970, got "${epoch}"`);
    return Number(epoch) * 1000;
  }
  return Date.now();
}

/** Enabled models whose expiration date falls before `buildMs + days` (routing refuses them from that date). */
function expiringSoon(models: readonly CompiledModel[], buildMs: number, days: number): { id: string; expires: string }[] {
  const horizon = buildMs + days * DAY_MS;
  return models.filter((m) => m.enabled && m.expirationDate !== null && dayStartMs(m.expirationDate) < horizon).map((m) => ({ id: m.id, expires: m.expirationDate as string }));
}

const build = buildTime();
const buildDay = new Date(build).toISOString().slice(0, 10);

t.test(`no bundled model expires within ${MARGIN_DAYS} days of the build (${buildDay})`, async (t) => {
  const soon = expiringSoon(fixtureConfig('bundled').models, build, MARGIN_DAYS);
  t.same(soon, [], `expiring before ${new Date(build + MARGIN_DAYS * DAY_MS).toISOString().slice(0, 10)}: replace these models or move their dates (config/models/), then npm run codegen`);
});

t.test('the rule catches a model that expires soon, and only such a model', async (t) => {
  const models = fixtureConfig('bundled').models;
  const dated = models.filter((m) => m.enabled && m.expirationDate !== null);
  t.ok(dated.length > 0, 'the bundled catalog has dated models to judge');
  const first = dated.map((m) => dayStartMs(m.expirationDate as string)).sort((a, b) => a - b)[0] as number;
  t.same(expiringSoon(models, first - MARGIN_DAYS * DAY_MS, MARGIN_DAYS), [], 'a build exactly 30 days before the first expiry passes');
  const late = expiringSoon(models, first - MARGIN_DAYS * DAY_MS + 1, MARGIN_DAYS);
  t.ok(late.length >= 1, 'one millisecond later it fails, naming the model');
  t.ok(late.every((m) => dayStartMs(m.expires) === first));
});

t.test('at the build date every bundled chat model is listed and answers', async (t) => {
  const s = await startStack(t, { config: 'bundled', clock: new ManualClock(new Date(build).toISOString()) });
  const key = s.key('acme');
  s.credit('acme', '1000');
  const listed = ((await (await fetch(`${s.v1}/models`)).json()) as { data: { id: string }[] }).data.map((m) => m.id);
  const chat = s.config.models.filter((m) => m.enabled && s.config.deployments.some((d) => d.model === m.id && d.active && d.endpoints.includes('chat_completions')));
  t.ok(chat.length > 0);
  for (const m of chat) {
    t.ok(listed.includes(m.id), `${m.id}: listed`);
    const res = await s.post('/v1/chat/completions', { model: m.id, messages: [{ role: 'user', content: 'hi' }], max_tokens: 8 }, { key });
    t.equal(res.status, 200, `${m.id}: answers (not 404 model_not_found)`);
    await res.text();
  }
});
