// A Map kept as a bounded cache: when full, the entry set first goes. For caches a client can grow
// (the keys it presents, the requests it has in flight): a bound that never drops the whole cache.
export function setBounded<K, V>(map: Map<K, V>, key: K, value: V, max: number): void {
  if (!map.has(key) && map.size >= max) {
    const first = map.keys().next();
    if (!first.done) map.delete(first.value);
  }
  map.set(key, value);
}
