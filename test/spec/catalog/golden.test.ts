// Golden catalog: the full GET /v1/models body and the acme/chat-small endpoints view for the
// gateway fixture at the pinned clock (2026-01-15T12:00:00Z). Any change to a catalog byte shows up
// as a snapshot diff to review. Regenerate with `npx tap --snapshot test/spec/catalog/golden.test.ts`.
import t from 'tap';
import { startStack } from '../../helpers/stack.ts';

async function pretty(url: string): Promise<string> {
  const res = await fetch(url);
  if (res.status !== 200) throw new Error(`${url}: ${res.status}`);
  // Pretty-printed so a snapshot diff points at the field that changed.
  return JSON.stringify(await res.json(), null, 2);
}

t.test('golden GET /v1/models and one endpoints view', async (t) => {
  const s = await startStack(t);
  t.matchSnapshot(await pretty(`${s.url}/v1/models`), 'GET /v1/models');
  t.matchSnapshot(
    await pretty(`${s.url}/v1/models/acme/chat-small/endpoints`),
    'GET /v1/models/acme/chat-small/endpoints',
  );
});
