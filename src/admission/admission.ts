// Admission: who is calling, how fast, and whether their wallet covers the worst case — the steps
// the inference handler takes before any upstream call, and the settlement after it.
//
// `Admission` holds the rules (which header carries the key, which limit applies, the API's error
// for each refusal); the state behind them sits behind narrow interfaces that the composition root
// (src/gateway.ts) fills — the state seam:
//   KeyVerifier      key → record                  (StoreView: cached per process, SQLite on a miss)
//   RateLimiter      per-key request windows       (FixedWindowRateLimiter, in memory)
//   WalletAdmission  hold / settle / release       (WalletBook, in memory + the ledger written in batches)
//   PinStore         session pins (src/routing/session-pins.ts)
//   BreakerBoard     breaker state (src/routing/health.ts)
// Every call may answer now or later (`T | Promise<T>`): the in-process books answer at once, so the
// single-process gateway pays no promise per step and its refusals stay synchronous, while a book
// served by another thread (the --workers coordinator) or another machine (PostgreSQL, Redis)
// answers with a promise. Admission keeps that shape (a sync answer stays sync), and the inference
// handler awaits every step, so it works with either.
import type { CompiledWorkspace } from '../config/compiled.ts';
import { GatewayError } from '../errors.ts';
import { nanoToDecimal } from '../money.ts';
import type { ApiKeyRecord, LedgerDetails, RequestLogRow } from '../store/sqlite/store.ts';
import { type KeyCheck, authError, presentedKey } from './api-key.ts';
import type { RateDecision, RateLimiter } from './rate-limit.ts';

/** A verified key and the workspace it is bound to. */
export interface Admitted {
  key: ApiKeyRecord;
  workspace: CompiledWorkspace;
}

export type KeyVerification = { status: 'ok'; key: ApiKeyRecord } | { status: Exclude<KeyCheck, 'ok'> };

export interface KeyVerifier {
  /** The key's record, or why it is refused; expiry is judged against `now`. A cache hit may answer
   *  at once; a miss that has to ask a store answers with a promise. */
  verifyKey(presented: string, now: number): KeyVerification | Promise<KeyVerification>;
  /** The record of an issued key whatever its state (a revoked or expired key is still someone's),
   *  or null: lets a refused request be logged against its workspace. */
  keyRecord?(presented: string): ApiKeyRecord | null | Promise<ApiKeyRecord | null>;
}

/** Who is calling: admitted, or refused with the API's 401 — and, when the refused key is one we
 *  issued (revoked, expired), its record, so the request log names its key and workspace. */
export type Identified =
  | { ok: true; admitted: Admitted }
  | { ok: false; error: GatewayError; key: ApiKeyRecord | null };

export type HoldResult = { ok: true } | { ok: false; available: bigint };

export interface WalletAdmission {
  /**
   * Reserves `amount` nano-USD for one request when the workspace's balance − held covers it, in
   * one step that no other hold can interleave with (exactness: never read-then-write across an
   * await). A trace id holds once (the caller mints one per request).
   */
  hold(workspace: string, traceId: string, amount: bigint): HoldResult | Promise<HoldResult>;
  /**
   * Charges the final cost and closes the hold. Resolves once the charge is durable, to false when
   * the trace had no open hold (a no-op). Idempotent per trace id. `logRow` is the request's log row
   * as known at settlement: a store that can commits it in the same transaction as the charge, so a
   * crash never keeps a charge without its row (the request's final row replaces it later).
   */
  settle(traceId: string, cost: bigint, details: LedgerDetails, logRow?: RequestLogRow): Promise<boolean>;
  /** Closes a hold at zero cost; a trace with no open hold is a no-op. Callers need not wait for
   *  it (Admission.release reports a failure), but may: the drain does. */
  release(traceId: string): void | Promise<void>;
  /**
   * Optional: `hold`, decided only if `decision` (a rate-limit decision the same owner has not
   * answered yet) lets the request through — so the two cost one round trip instead of two, and a
   * refused request never holds money, not even for a moment. An owner that cannot tie the two waits
   * for the decision first. Resolves to null when the decision refused the request (nothing held).
   */
  holdIfAllowed?(
    workspace: string,
    traceId: string,
    amount: bigint,
    decision: Promise<RateDecision>,
  ): Promise<HoldResult | null>;
}

/** A wallet book as the composition root drives it: admission plus its life cycle. */
export interface WalletService extends WalletAdmission {
  /** Another process changed the store (a `wallet credit` from the CLI): refresh cached balances. */
  refresh(): void | Promise<void>;
  /** Writes what is pending, then stops (later calls change nothing). */
  close(): void | Promise<void>;
}

export interface AdmissionParts {
  keys: KeyVerifier;
  /** The workspace a key is bound to, from the current config (undefined once it was removed). */
  workspaceOf(id: string): CompiledWorkspace | undefined;
  limiter: RateLimiter;
  wallets: WalletAdmission;
  /** A release that failed (nobody waits for one): logged, never thrown. */
  onReleaseError?: (traceId: string, err: unknown) => void;
}

export class Admission {
  private readonly parts: AdmissionParts;
  constructor(parts: AdmissionParts) {
    this.parts = parts;
  }

  /** The caller's key and workspace, or the API's 401 (docs/api.md: Authentication). Synchronous when the
   *  key verifier answered at once. */
  authenticate(headers: Record<string, string>, now: number): Admitted | Promise<Admitted> {
    const who = this.identify(headers, now);
    return who instanceof Promise ? who.then(admittedOrThrow) : admittedOrThrow(who);
  }

  /**
   * `authenticate` without throwing: a refusal also carries the refused key's record when known.
   * `workspaceOf` (default: the parts') lets the caller read the workspace from the config snapshot
   * its request started on, whatever a reload swapped in while the key was being verified.
   */
  identify(
    headers: Record<string, string>,
    now: number,
    workspaceOf = this.parts.workspaceOf,
  ): Identified | Promise<Identified> {
    const presented = presentedKey(headers);
    if (presented === null) return { ok: false, error: authError('missing'), key: null };
    const check = this.parts.keys.verifyKey(presented, now);
    return check instanceof Promise
      ? check.then((c) => this.judge(presented, c, workspaceOf))
      : this.judge(presented, check, workspaceOf);
  }

  private judge(
    presented: string,
    check: KeyVerification,
    workspaceOf: (id: string) => CompiledWorkspace | undefined,
  ): Identified | Promise<Identified> {
    if (check.status === 'invalid') return { ok: false, error: authError('invalid', presented), key: null };
    if (check.status !== 'ok') {
      const error = authError(check.status);
      const known = check.status === 'not_found' ? null : (this.parts.keys.keyRecord?.(presented) ?? null);
      return known instanceof Promise
        ? known.then((key) => ({ ok: false, error, key }))
        : { ok: false, error, key: known };
    }
    const workspace = workspaceOf(check.key.workspace);
    if (!workspace) {
      return {
        ok: false,
        error: new GatewayError(
          'api_key_not_found',
          `the workspace of this API key ("${check.key.workspace}") no longer exists`,
        ),
        key: check.key,
      };
    }
    return { ok: true, admitted: { key: check.key, workspace } };
  }

  /**
   * Counts the request against its key's limit (the key's own, else the workspace's), or 429 with
   * Retry-After. Synchronous when the limiter answered at once; otherwise a `PendingRate` the caller
   * may hand to `hold` before waiting for it (see there) and must wait for (`settled()`) before
   * anything else is refused or answered.
   */
  rateLimit({ key, workspace }: Admitted): PendingRate | undefined {
    const limit = key.rpm ?? workspace.rateLimitRpm;
    const rate = this.parts.limiter.take(key.id, limit);
    if (rate instanceof Promise) return new PendingRate(rate, limit);
    rateOrThrow(rate, limit);
    return undefined;
  }

  /**
   * Holds `amountNano` on the workspace's wallet for this trace, or refuses with
   * insufficient_balance. Synchronous when the wallet answered at once. With `after` (a rate
   * decision not known yet) the hold is taken only if that decision lets the request through: in
   * the same round trip when the wallet's owner also decides rate limits (`holdIfAllowed`), else
   * once the decision came. A refused decision leaves nothing held; the caller learns of it from
   * `after.settled()` (429), which it awaits before this. `advise`, given the amount the wallet had
   * available, ends the refusal's message with what the request could do to fit.
   */
  hold(
    workspace: string,
    traceId: string,
    amountNano: bigint,
    after?: PendingRate,
    advise?: Advise,
  ): void | Promise<void> {
    const wallets = this.parts.wallets;
    if (after !== undefined) {
      const gated = wallets.holdIfAllowed
        ? wallets.holdIfAllowed(workspace, traceId, amountNano, after.decision)
        : after.decision.then((d) => (d.ok ? wallets.hold(workspace, traceId, amountNano) : null));
      return gated.then((h) => (h === null ? undefined : heldOrThrow(h, amountNano, advise)));
    }
    const held = wallets.hold(workspace, traceId, amountNano);
    return held instanceof Promise
      ? held.then((h) => heldOrThrow(h, amountNano, advise))
      : heldOrThrow(held, amountNano, advise);
  }

  /** See WalletAdmission.settle. */
  settle(traceId: string, costNano: bigint, details: LedgerDetails, logRow?: RequestLogRow): Promise<boolean> {
    return logRow === undefined
      ? this.parts.wallets.settle(traceId, costNano, details)
      : this.parts.wallets.settle(traceId, costNano, details, logRow);
  }

  /** See WalletAdmission.release. Callers may drop the promise: a failure is reported to
   *  `onReleaseError` (the hold is then released at the next start, or by its lease). */
  release(traceId: string): Promise<void> {
    try {
      const r = this.parts.wallets.release(traceId);
      return r instanceof Promise ? r.catch((err: unknown) => this.releaseFailed(traceId, err)) : Promise.resolve();
    } catch (err) {
      this.releaseFailed(traceId, err);
      return Promise.resolve();
    }
  }

  private releaseFailed(traceId: string, err: unknown): void {
    this.parts.onReleaseError?.(traceId, err);
  }
}

/** A rate-limit decision still on its way (a limiter in another thread or process). */
export class PendingRate {
  readonly decision: Promise<RateDecision>;
  private readonly limit: number;
  constructor(decision: Promise<RateDecision>, limit: number) {
    this.decision = decision;
    this.limit = limit;
    // Awaited by `settled()`; a request that fails first (a shutdown) must not leave it unobserved.
    decision.catch(() => undefined);
  }

  /** Resolves when the request may go on; rejects with the API's 429 (or the limiter's failure). */
  settled(): Promise<void> {
    return this.decision.then((r) => rateOrThrow(r, this.limit));
  }
}

function admittedOrThrow(who: Identified): Admitted {
  if (!who.ok) throw who.error;
  return who.admitted;
}

function rateOrThrow(rate: RateDecision, limit: number): void {
  if (!rate.ok) {
    throw new GatewayError('rate_limited', `rate limit of ${limit} requests per minute reached`, {
      headers: [['Retry-After', String(rate.retryAfterSeconds)]],
    });
  }
}

/** What a refused request could do to fit the amount the wallet has available (a message tail). */
export type Advise = (availableNano: bigint) => string;

function heldOrThrow(held: HoldResult, amountNano: bigint, advise?: Advise): void {
  if (!held.ok) {
    const available = held.available < 0n ? 0n : held.available;
    throw new GatewayError(
      'insufficient_balance',
      `insufficient balance: this request needs up to $${nanoToDecimal(amountNano)} held and the wallet has $${nanoToDecimal(available)} available${advise?.(available) ?? ''}`,
    );
  }
}
