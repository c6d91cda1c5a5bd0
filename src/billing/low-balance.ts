// The low-balance warning rule, one place for the console and the metrics: a workspace's wallet is
// low while what it can still spend (balance minus open holds) is below the workspace's
// `low_balance_usd`; a workspace without one never is. Exact nano-USD, never floats.

export function belowLowBalance(availableNano: bigint, thresholdNano: bigint | null): boolean {
  return thresholdNano !== null && availableNano < thresholdNano;
}
