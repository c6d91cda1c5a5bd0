// A vendor's model file cut down to some of its models, comments kept: what `pi-gateway init` copies
// from the bundled catalog, so a starter config lists only the models it serves.
import { isMap, isScalar, isSeq, parseDocument } from 'yaml';

/**
 * The text of a `models/<vendor>.yaml` file keeping only the models whose ids are in `ids` (in the
 * file's order, each with the comments above it). Throws naming every id the file does not have.
 */
export function keepModels(text: string, ids: readonly string[]): string {
  const doc = parseDocument(text);
  const models = doc.get('models', true);
  if (!isSeq(models)) throw new Error('the file has no models list');
  const idOf = (item: unknown): string | null => {
    if (!isMap(item)) return null;
    const id = item.get('id', true);
    return isScalar(id) && typeof id.value === 'string' ? id.value : null;
  };
  const present = new Set(models.items.map(idOf));
  const absent = ids.filter((id) => !present.has(id));
  if (absent.length > 0) throw new Error(`the file has no model ${absent.join(', ')}`);
  // The parser keeps the comment above the first item on the list itself: it goes with that item.
  const first = models.items[0];
  if (isMap(first) && models.commentBefore) {
    first.commentBefore = models.commentBefore;
    models.commentBefore = null;
  }
  models.items = models.items.filter((item) => ids.includes(idOf(item) ?? ''));
  const kept = models.items[0];
  if (isMap(kept) && kept.commentBefore) {
    models.commentBefore = kept.commentBefore;
    kept.commentBefore = null;
  }
  // A blank line before an item that is now first would sit between `models:` and its list.
  if (isMap(kept)) kept.spaceBefore = false;
  return doc.toString({ lineWidth: 100, flowCollectionPadding: false });
}
