// `pi-gateway wallet credit|show`: top up a workspace wallet and read its balance.
import { systemClock } from '../../clock.ts';
import { decimalToNano, MAX_WALLET_NANO, nanoToDecimal } from '../../money.ts';
import { idempotencyKeyProblem } from '../../store/credit-id.ts';
import { containsWholeKey } from '../../store/key-format.ts';
import { flag, parse, str, UsageError } from '../args.ts';
import type { Command } from '../command.ts';
import { printJson, printTable } from '../output.ts';
import {
  CONFIG_HELP,
  CONFIG_OPTION,
  DB_HELP,
  guarded,
  JSON_HELP,
  onePositional,
  openFromArgs,
  required,
  requireWorkspace,
  STORE_OPTIONS,
  subcommand,
} from '../store-command.ts';

const HELP = `Usage:
  pi-gateway wallet credit --workspace W --usd AMOUNT [--note TEXT] [--idempotency-key K] [options]
  pi-gateway wallet show W [options]

credit  Adds AMOUNT US dollars (a decimal with at most 9 places, e.g. 25 or 0.5) to the workspace
        wallet, as one ledger row, exactly. Prints the new balance. A wallet holds at most
        9223372036.854775807 USD; a credit that would go past it is refused and changes nothing.
        --idempotency-key K (1-255 visible ASCII characters, e.g. an invoice id) makes the credit
        happen once: run again with the same key, workspace, amount and note, it adds nothing and
        says so (a retry after an answer was lost is safe); the same key with another amount or
        note is refused (exit 1).
show    Prints balance (credits − settled spend), held (open request holds), available
        (balance − held), spend today (UTC) and the number of open holds.

Options:
${DB_HELP}
${CONFIG_HELP}
${JSON_HELP}`;

export const command: Command = {
  summary: 'credit a workspace wallet or show its balance',
  help: HELP,
  run: (argv) =>
    guarded('wallet', async () => {
      const [sub, rest] = subcommand(argv, ['credit', 'show']);
      if (sub === 'credit') {
        const p = parse(
          rest,
          {
            ...STORE_OPTIONS,
            ...CONFIG_OPTION,
            workspace: { type: 'string' },
            usd: { type: 'string' },
            note: { type: 'string' },
            'idempotency-key': { type: 'string' },
          },
          false,
        );
        const workspace = required(p, 'workspace');
        const raw = required(p, 'usd');
        let nano: bigint;
        try {
          nano = decimalToNano(raw);
        } catch {
          throw new UsageError(`--usd must be a positive decimal amount with at most 9 decimals, got "${raw}"`);
        }
        if (nano <= 0n) throw new UsageError(`--usd must be positive, got "${raw}"`);
        if (nano > MAX_WALLET_NANO) {
          throw new UsageError(
            `--usd ${raw} is more than a wallet can hold: at most ${nanoToDecimal(MAX_WALLET_NANO)} USD (SQLite's 64-bit integer in nano-USD)`,
          );
        }
        const note = str(p, 'note') ?? '';
        // The ledger keeps the note for good, and every console viewer reads it.
        if (containsWholeKey(note))
          throw new UsageError('--note holds a whole API key, a secret: name a key by its prefix, its name or its id');
        const key = str(p, 'idempotency-key');
        const keyProblem = key === undefined ? null : idempotencyKeyProblem(key);
        if (keyProblem !== null) throw new UsageError(`--idempotency-key: ${keyProblem}`);
        await requireWorkspace(p, workspace, 'wallet');
        const store = await openFromArgs(p, false);
        try {
          const r = await store.wallets.credit(workspace, nano, note, key);
          if (flag(p, 'json'))
            printJson({
              workspace,
              trace_id: r.traceId,
              credited_usd: nanoToDecimal(nano),
              balance_usd: nanoToDecimal(r.balance),
              replayed: r.replayed,
            });
          else if (r.replayed)
            process.stdout.write(
              `already credited: this idempotency key credited ${nanoToDecimal(nano)} USD to ${workspace} before (${r.traceId}); nothing added; balance ${nanoToDecimal(r.balance)} USD\n`,
            );
          else
            process.stdout.write(
              `credited ${nanoToDecimal(nano)} USD to ${workspace}; balance ${nanoToDecimal(r.balance)} USD (${r.traceId})\n`,
            );
          return 0;
        } finally {
          await store.close();
        }
      }
      const p = parse(rest, { ...STORE_OPTIONS, ...CONFIG_OPTION }, true);
      const workspace = onePositional(p, 'workspace id');
      await requireWorkspace(p, workspace, 'wallet');
      const store = await openFromArgs(p, true);
      try {
        const v = await store.wallets.show(workspace, systemClock.now());
        const out = {
          workspace,
          balance_usd: nanoToDecimal(v.balance),
          held_usd: nanoToDecimal(v.held),
          available_usd: nanoToDecimal(v.available),
          spend_today_usd: nanoToDecimal(v.spendToday),
          open_holds: v.openHolds,
        };
        if (flag(p, 'json')) printJson(out);
        else
          printTable(
            ['WORKSPACE', 'BALANCE USD', 'HELD USD', 'AVAILABLE USD', 'SPEND TODAY USD', 'OPEN HOLDS'],
            [[workspace, out.balance_usd, out.held_usd, out.available_usd, out.spend_today_usd, String(v.openHolds)]],
          );
        return 0;
      } finally {
        await store.close();
      }
    }),
};
