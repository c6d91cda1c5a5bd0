// How many cases a property test runs: the bounded count `npm test` affords, times PI_PROPERTY_SCALE
// when set (a long campaign: `PI_PROPERTY_SCALE=1000 npx tap test/protocols/form-parts.test.ts`).
export function runs(n: number): number {
  const scale = Number(process.env['PI_PROPERTY_SCALE']);
  return Number.isFinite(scale) && scale > 0 ? Math.max(1, Math.round(n * scale)) : n;
}
