// The wallet gauges of /metrics, read from the store when scraped, so Prometheus alerting can page
// before a workspace runs dry: what each workspace of the config can still spend
// (`pi_gateway_wallet_available_usd`: balance minus open holds), its `low_balance_usd` threshold
// (`pi_gateway_wallet_low_balance_threshold_usd`) and whether it is below it
// (`pi_gateway_wallet_below_threshold`, 0 or 1: the console's rule, src/billing/low-balance.ts).
// One store read per scrape serves all three. When the store does not answer, the three are absent
// from that scrape (alert on `absent(...)` to catch it) rather than failing the whole exposition.
import { Gauge, type Registry } from 'prom-client';
import { belowLowBalance } from '../billing/low-balance.ts';
import type { CompiledConfig } from '../config/compiled.ts';
import type { WalletView } from '../store/types.ts';

/** One workspace's wallet as a scrape reads it. */
export interface WalletSample {
  workspace: string;
  /** Balance minus open holds, nano-USD. */
  availableNano: bigint;
  /** The workspace's `low_balance_usd`, nano-USD; null: none. */
  thresholdNano: bigint | null;
}

/** Every workspace of the config, its wallet read from `show` (the store the console reads). */
export async function walletSamples(
  config: CompiledConfig,
  show: (workspace: string, now: number) => Promise<WalletView>,
  now: number,
): Promise<WalletSample[]> {
  return Promise.all(
    config.workspaces.map(async (w) => ({
      workspace: w.id,
      availableNano: (await show(w.id, now)).available,
      thresholdNano: w.lowBalanceNano,
    })),
  );
}

const usd = (nano: bigint): number => Number(nano) / 1e9;

export function registerWalletGauges(registry: Registry, read: () => Promise<WalletSample[]>): void {
  // The three gauges' collects start in the same pass of a scrape: they share one read.
  let pending: Promise<WalletSample[] | null> | null = null;
  const samples = (): Promise<WalletSample[] | null> =>
    (pending ??= read()
      .catch(() => null)
      .finally(() => {
        pending = null;
      }));
  const gauge = (name: string, help: string, value: (s: WalletSample) => number | null) =>
    new Gauge({
      name,
      help,
      labelNames: ['workspace'],
      registers: [registry],
      async collect() {
        const all = await samples();
        this.reset();
        for (const s of all ?? []) {
          const v = value(s);
          if (v !== null) this.set({ workspace: s.workspace }, v);
        }
      },
    });
  gauge(
    'pi_gateway_wallet_available_usd',
    'What each workspace wallet can still spend in USD (balance minus open holds), read from the store at scrape time.',
    (s) => usd(s.availableNano),
  );
  gauge(
    'pi_gateway_wallet_low_balance_threshold_usd',
    "The workspace's low_balance_usd from the config, for workspaces that set one.",
    (s) => (s.thresholdNano === null ? null : usd(s.thresholdNano)),
  );
  gauge(
    'pi_gateway_wallet_below_threshold',
    'For workspaces with a low_balance_usd: 1 while the wallet can spend less than it (compared exactly in nano-USD), else 0.',
    (s) => (s.thresholdNano === null ? null : belowLowBalance(s.availableNano, s.thresholdNano) ? 1 : 0),
  );
}
