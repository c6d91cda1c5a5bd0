// Admission: who is calling, how fast, and whether their wallet covers the worst case — the steps
// the inference handler takes before any upstream call, and the settlement after it.
//
// `Admission` holds the rules (which header carries the key, which limit applies, the spec's error
// for each refusal); the state behind them sits behind three narrow interfaces that the composition
// root (src/gateway.ts) fills:
//   KeyVerifier      key → record, cached per process  (today: StoreView over SQLite)
//   RateLimiter      per-key request windows           (today: FixedWindowRateLimiter, in memory)
//   WalletAdmission  hold / settle / release           (today: WalletBook, in memory + SQLite group commit)
// These are the seam a shared-state backend goes behind (PostgreSQL holds taken by one atomic
// statement, Redis rate-limit windows). Today every call answers synchronously except `settle`,
// which resolves once the charge is durable; a networked backend would make `hold` and `take`
// asynchronous too (the handler that calls them is already async).
import type { CompiledWorkspace } from '../config/compiled.ts';
import { GatewayError } from '../errors.ts';
import { nanoToDecimal } from '../money.ts';
import type { ApiKeyRecord, LedgerDetails } from '../store/store.ts';
import { type KeyCheck, authError, presentedKey } from './api-key.ts';
import type { RateLimiter } from './rate-limit.ts';

/** A verified key and the workspace it is bound to. */
export interface Admitted {
  key: ApiKeyRecord;
  workspace: CompiledWorkspace;
}

export type KeyVerification = { status: 'ok'; key: ApiKeyRecord } | { status: Exclude<KeyCheck, 'ok'> };

export interface KeyVerifier {
  /** The key's record, or why it is refused; expiry is judged against `now`. */
  verifyKey(presented: string, now: number): KeyVerification;
  /** The record of an issued key whatever its state (a revoked or expired key is still someone's),
   *  or null: lets a refused request be logged against its workspace. */
  keyRecord?(presented: string): ApiKeyRecord | null;
}

/** Who is calling: admitted, or refused with the spec's 401 — and, when the refused key is one we
 *  issued (revoked, expired), its record, so the request log names its key and workspace. */
export type Identified = { ok: true; admitted: Admitted } | { ok: false; error: GatewayError; key: ApiKeyRecord | null };

export type HoldResult = { ok: true } | { ok: false; available: bigint };

export interface WalletAdmission {
  /**
   * Reserves `amount` nano-USD for one request when the workspace's balance − held covers it.
   * A trace id holds once (the caller mints one per request).
   */
  hold(workspace: string, traceId: string, amount: bigint): HoldResult;
  /**
   * Charges the final cost and closes the hold. Resolves once the charge is durable, to false when
   * the trace had no open hold (a no-op).
   */
  settle(traceId: string, cost: bigint, details: LedgerDetails): Promise<boolean>;
  /** Closes a hold at zero cost; a trace with no open hold is a no-op. */
  release(traceId: string): void;
}

export interface AdmissionParts {
  keys: KeyVerifier;
  /** The workspace a key is bound to, from the current config (undefined once it was removed). */
  workspaceOf(id: string): CompiledWorkspace | undefined;
  limiter: RateLimiter;
  wallets: WalletAdmission;
}

export class Admission {
  constructor(private readonly parts: AdmissionParts) {}

  /** The caller's key and workspace, or the spec's 401 (spec: Authentication). */
  authenticate(headers: Record<string, string>, now: number): Admitted {
    const who = this.identify(headers, now);
    if (!who.ok) throw who.error;
    return who.admitted;
  }

  /** `authenticate` without throwing: a refusal also carries the refused key's record when known. */
  identify(headers: Record<string, string>, now: number): Identified {
    const presented = presentedKey(headers);
    if (presented === null) return { ok: false, error: authError('missing'), key: null };
    const check = this.parts.keys.verifyKey(presented, now);
    if (check.status === 'invalid') return { ok: false, error: authError('invalid', presented), key: null };
    if (check.status !== 'ok') {
      const known = check.status === 'not_found' ? null : (this.parts.keys.keyRecord?.(presented) ?? null);
      return { ok: false, error: authError(check.status), key: known };
    }
    const workspace = this.parts.workspaceOf(check.key.workspace);
    if (!workspace) {
      return { ok: false, error: new GatewayError('api_key_not_found', `the workspace of this API key ("${check.key.workspace}") no longer exists`), key: check.key };
    }
    return { ok: true, admitted: { key: check.key, workspace } };
  }

  /** Counts the request against its key's limit (the key's own, else the workspace's), or 429 with Retry-After. */
  rateLimit({ key, workspace }: Admitted): void {
    const limit = key.rpm ?? workspace.rateLimitRpm;
    const rate = this.parts.limiter.take(key.id, limit);
    if (!rate.ok) {
      throw new GatewayError('rate_limited', `rate limit of ${limit} requests per minute reached`, {
        headers: [['Retry-After', String(rate.retryAfterSeconds)]],
      });
    }
  }

  /** Holds `amountNano` on the workspace's wallet for this trace, or refuses with insufficient_balance. */
  hold(workspace: string, traceId: string, amountNano: bigint): void {
    const held = this.parts.wallets.hold(workspace, traceId, amountNano);
    if (!held.ok) {
      throw new GatewayError(
        'insufficient_balance',
        `insufficient balance: this request needs up to $${nanoToDecimal(amountNano)} held and the wallet has $${nanoToDecimal(held.available < 0n ? 0n : held.available)} available`,
      );
    }
  }

  /** See WalletAdmission.settle. */
  settle(traceId: string, costNano: bigint, details: LedgerDetails): Promise<boolean> {
    return this.parts.wallets.settle(traceId, costNano, details);
  }

  /** See WalletAdmission.release. */
  release(traceId: string): void {
    this.parts.wallets.release(traceId);
  }
}
