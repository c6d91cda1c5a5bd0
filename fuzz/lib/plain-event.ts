// What a Chat Completions tap makes of one stream event on its one-pass path (src/stream/top-members.ts)
// and on its general path (json-key.ts, model-field.ts), side by side: the two must agree on every
// event the one-pass reader calls plain. Shared by the parsers target and the unit test.
import { slugModel } from '../../src/protocols/model-field.ts';
import { hasNonNullKey, isNullAt, readString, sseDataStart, withoutNullMember } from '../../src/stream/json-key.ts';
import { dataLooksWhole } from '../../src/stream/sse-splitter.ts';
import { editEvent, nullMemberCut, TopMembers } from '../../src/stream/top-members.ts';

export interface EventReading {
  error: boolean;
  /** Null when the one-pass path leaves the rewrite to the general path (no model, or repeated keys). */
  edit: { usage: boolean; reported: string | null; out: string } | null;
}

/** The one-pass path's reading of `ev`, or null when `ev` is not plain. */
export function plainReading(ev: Buffer, slug: Buffer, unaskedUsage: boolean): EventReading | null {
  const m = new TopMembers();
  if (!m.scan(ev)) return null;
  const error = m.errorNonNull;
  if (m.modelCount !== 1 || m.usageCount > 1) return { error, edit: null };
  const usage = m.usageCount === 1 && !isNullAt(ev, m.usageValueStart);
  const reported =
    ev[m.modelValueStart] === 0x22 ? readString(ev, { start: m.modelValueStart, end: m.modelValueEnd }) : null;
  const [cutStart, cutEnd] =
    unaskedUsage && m.usageCount === 1 && !usage ? nullMemberCut(ev, m.usageNameStart, m.usageValueStart) : [-1, -1];
  const out = editEvent(ev, m.modelValueStart, m.modelValueEnd, slug, cutStart, cutEnd);
  return { error, edit: { usage, reported, out: out.toString('latin1') } };
}

/** The general path's reading of `ev` (chat-completions.ts after the commit point). */
export function generalReading(ev: Buffer, slug: Buffer, unaskedUsage: boolean) {
  const error = hasNonNullKey(ev, 'error', 1);
  const usage = hasNonNullKey(ev, 'usage', 1);
  const { out, reported } = slugModel(ev, slug, sseDataStart(ev), 1);
  const shaped = unaskedUsage ? withoutNullMember(out, 'usage', 1) : out;
  return { error, usage, reported, out: shaped.toString('latin1') };
}

/** Where the two paths disagree on `ev` (null: they agree, or `ev` is not plain). */
export function plainDisagreement(ev: Buffer, slug: Buffer, unaskedUsage: boolean): string | null {
  const mine = plainReading(ev, slug, unaskedUsage);
  if (mine === null) return null;
  if (!dataLooksWhole(ev)) return 'calls plain an event the structural check refuses';
  const general = generalReading(ev, slug, unaskedUsage);
  if (mine.error !== general.error) return 'reads the error member otherwise';
  if (mine.edit === null) return null;
  if (mine.edit.usage !== general.usage) return 'reads the usage member otherwise';
  if (mine.edit.reported !== general.reported) return 'reads another model';
  if (mine.edit.out !== general.out) return 'rewrites the event otherwise';
  return null;
}
