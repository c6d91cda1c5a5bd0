// Who may do what on the admin listener, in one place: the bearer token (break-glass admin, actor
// "token") or a console session; a session's writes carry the page's secret; a viewer reads only.
// Every wrong credential counts against the client and everyone (./sign-in-limits.ts), is logged
// (the client's address and how it signed in, never what it presented) and enters the audit trail,
// as does every sign-in, sign-out and admin write (`record`).
import type { OperatorView } from '../admin/operator-view.ts';
import { verifyPassword } from '../admin/passwords.ts';
import type { IncomingRequest } from '../http/request.ts';
import type { NewAuditEntry } from '../store/operator-types.ts';
import { type Actor, OperatorAuth, TOKEN_ACTOR } from './auth.ts';
import { ConsoleError } from './http.ts';
import { DEFAULT_SIGN_IN_LIMITS, type SignInLimits, SignInLimiter } from './sign-in-limits.ts';

export type ConsoleLog = (event: string, fields: Record<string, unknown>) => void;

export interface GateDeps {
  token: string;
  view(): OperatorView | null;
  /** The session cookie's name (it carries the listener's port). */
  cookieName(): string;
  log: ConsoleLog;
  limits?: SignInLimits;
}

/** What a route does: read; a POST that changes nothing (the route preview); a write. */
export type Access = 'read' | 'read-post' | 'write';

/** What an audit entry says beyond its time and client. */
export type AuditFact = Omit<NewAuditEntry, 'at' | 'client'>;

const unauthorized = (): ConsoleError =>
  new ConsoleError(
    401,
    'unauthorized',
    'send the operator token as Authorization: Bearer <PI_ADMIN_TOKEN>, or sign in at /console',
  );

export class ConsoleGate {
  readonly auth: OperatorAuth;
  private readonly limiter: SignInLimiter;
  private readonly deps: GateDeps;

  constructor(deps: GateDeps) {
    this.deps = deps;
    const now = (): number => this.now();
    this.auth = new OperatorAuth(deps.token, { now, cookieName: deps.cookieName });
    this.limiter = new SignInLimiter(now, deps.limits ?? DEFAULT_SIGN_IN_LIMITS);
  }

  /** The gateway's clock once it is attached (tests inject theirs), the system's before. */
  now(): number {
    return this.deps.view()?.now() ?? Date.now();
  }

  /** The actor a request acts as, or the refusal: 401, 429 (too many failures), 403 (no secret). */
  async authorize(req: IncomingRequest, access: Access): Promise<Actor> {
    const bearer = this.auth.bearer(req);
    let actor: Actor;
    if (bearer !== null) {
      this.refuseIfLimited(req, 'bearer');
      if (!this.auth.tokenMatches(bearer)) {
        await this.failed(req, 'bearer', TOKEN_ACTOR.name, null);
        throw unauthorized();
      }
      this.limiter.succeeded(req.remoteAddress);
      actor = TOKEN_ACTOR;
    } else {
      const s = this.auth.session(req);
      if (s === null) throw unauthorized();
      if (access !== 'read' && !this.auth.secretMatches(s, req))
        throw new ConsoleError(
          403,
          'session_secret_required',
          'a console write must carry the X-Pi-Console-Secret the page received at sign-in',
        );
      actor = await this.current(s.actor, req);
    }
    return actor;
  }

  /** 403 when the actor's role may not do this (a viewer reads only). */
  permit(actor: Actor, access: Access): void {
    if (access === 'write' && actor.role !== 'admin')
      throw new ConsoleError(403, 'role_forbidden', `${actor.name} has the ${actor.role} role, which reads only`);
  }

  /** An operator's session follows the account: removed or changed, it ends or changes at once. */
  private async current(actor: Actor, req: IncomingRequest): Promise<Actor> {
    if (actor === TOKEN_ACTOR) return actor;
    const view = this.deps.view();
    const account = view === null ? null : await view.store.operators.get(actor.name);
    if (account === null) {
      this.auth.logout(req);
      throw unauthorized();
    }
    return { name: account.name, role: account.role };
  }

  /** 429 while the client (or everyone) is locked out after too many failures. */
  refuseIfLimited(req: IncomingRequest, via: 'bearer' | 'form'): void {
    const wait = this.limiter.waitMs(req.remoteAddress);
    if (wait <= 0) return;
    const retryAfterS = Math.ceil(wait / 1000);
    this.deps.log('admin_sign_in_limited', { client: req.remoteAddress, via, retry_after_s: retryAfterS });
    throw new ConsoleError(
      429,
      'too_many_attempts',
      `too many failed sign-ins; try again in ${retryAfterS} s`,
      retryAfterS,
    );
  }

  /** Checks a sign-in form's credentials: an account's name and password, or (no name) the token. */
  async signIn(req: IncomingRequest, name: string, secret: string): Promise<Actor | null> {
    this.refuseIfLimited(req, 'form');
    let actor: Actor | null = null;
    let known = true;
    if (name === '') {
      if (this.auth.tokenMatches(secret)) actor = TOKEN_ACTOR;
    } else {
      const view = this.deps.view();
      const account = view === null ? null : await view.store.operators.get(name);
      known = account !== null;
      // scrypt runs for an unknown name too (against a decoy), so the time taken says nothing.
      const matches = await verifyPassword(secret, account?.passwordHash ?? null);
      if (matches && account !== null) actor = { name: account.name, role: account.role };
    }
    if (actor === null) {
      await this.failed(
        req,
        'form',
        name === '' ? TOKEN_ACTOR.name : known ? name : '(unknown)',
        name === '' ? null : known,
      );
      return null;
    }
    this.limiter.succeeded(req.remoteAddress);
    await this.record(req, { actor: actor.name, action: 'sign_in', target: null, outcome: 'ok', detail: null });
    return actor;
  }

  private async failed(
    req: IncomingRequest,
    via: 'bearer' | 'form',
    actor: string,
    known: boolean | null,
  ): Promise<void> {
    const locked = this.limiter.failed(req.remoteAddress);
    this.deps.log('admin_sign_in_failed', {
      client: req.remoteAddress,
      via,
      ...(known === null ? {} : known ? { operator: actor } : { operator_known: false }),
      ...(locked ? { locked: true } : {}),
    });
    await this.record(req, {
      actor,
      action: 'sign_in',
      target: null,
      outcome: 'failed',
      detail: JSON.stringify({ via, ...(locked ? { locked: true } : {}) }),
    });
  }

  /** Appends to the audit trail; a trail that cannot be written is logged, never a failed answer. */
  async record(req: IncomingRequest, fact: AuditFact): Promise<void> {
    const view = this.deps.view();
    if (view === null) return;
    try {
      await view.store.audit.append({ ...fact, at: view.now(), client: req.remoteAddress });
    } catch (err) {
      this.deps.log('audit_write_failed', {
        action: fact.action,
        error: err instanceof Error ? err.message : String(err),
      });
    }
  }
}
