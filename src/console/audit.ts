// GET /admin/audit: the audit trail, newest first — who (an operator's name, or "token"), when, what
// (action and target), from which address, how it ended, and the detail kept with it. Paged back
// with `before` (the last id seen); `since` keeps rows at or after a time; `limit` 1–500.
import type { OperatorView } from '../admin/operator-view.ts';
import { auditEntryView } from '../store/operator-types.ts';
import { badRequest, intField, parseTime } from './http.ts';

export async function auditPage(view: OperatorView, q: Map<string, string>): Promise<unknown> {
  const limit = intField(q, 'limit', 100, 500);
  const before = q.get('before');
  if (before !== undefined && !/^\d{1,15}$/.test(before))
    throw badRequest(`before must be an audit row id, got "${before}"`);
  const since = q.get('since');
  const rows = await view.store.audit.list({
    limit: limit + 1,
    ...(before === undefined ? {} : { beforeId: Number(before) }),
    ...(since === undefined ? {} : { since: parseTime('since', since) }),
  });
  const page = rows.slice(0, limit);
  return {
    entries: page.map(auditEntryView),
    next_before: rows.length > limit ? (page[page.length - 1]?.id ?? null) : null,
  };
}
