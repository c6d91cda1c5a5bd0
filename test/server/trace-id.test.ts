// Trace ids are UUIDv7: well-formed, unique, and ordered by time.
import t from 'tap';
import { newTraceId } from '../../src/server/trace-id.ts';

t.test('format, uniqueness and order', async (t) => {
  const ids = Array.from({ length: 5000 }, (_, i) => newTraceId(1_800_000_000_000 + i));
  for (const id of ids.slice(0, 50))
    t.match(id, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  t.equal(new Set(ids).size, ids.length, 'no duplicates');
  t.same([...ids].sort(), ids, 'later ids sort after earlier ones');
  t.equal(newTraceId(0x0123456789ab).slice(0, 13), '01234567-89ab', 'the timestamp leads');
});
