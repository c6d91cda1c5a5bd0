// The operator's credentials on the admin listener. Scripts send `Authorization: Bearer <PI_ADMIN_TOKEN>`
// (the break-glass admin, recorded as the actor "token"); a browser signs in once at /console/login
// (the token, or an operator account's name and password) and gets a session: a random id in an
// HttpOnly SameSite=Strict cookie, plus a second random value, the session's secret, that the page
// keeps to itself and sends as `X-Pi-Console-Secret` on every write. Cookies ignore ports, so every
// other server on the same host name (a dev server, a notebook, the gateway's public port) receives
// the cookie; the secret never travels on its own, so a replayed cookie reads at most and writes
// nothing. The page fetches the secret once, right after signing in (`handOver`); it is never given
// out again, so holding the cookie is never enough to obtain it (the page keeps it for its tab and
// shares it only with the console's other tabs of the same origin, console/src/session.ts). A
// session ends 12 hours after sign-in, or after 30 minutes without a request.
// Sessions live in this process's memory; ids and secrets are kept as SHA-256 digests and compared
// with timingSafeEqual, as is the token, so neither lengths nor bytes show in the time an answer takes.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingRequest } from '../http/request.ts';

/** A session lasts at most this long from sign-in. */
export const SESSION_TTL_MS = 12 * 3_600_000;
/** A session without a request for this long is over. */
export const SESSION_IDLE_MS = 30 * 60_000;
/** Sessions kept at once; signing in past it drops the oldest. */
const MAX_SESSIONS = 1000;

/** The header a session's writes carry: the secret the page received at sign-in. */
export const SECRET_HEADER = 'x-pi-console-secret';

export type Role = 'admin' | 'viewer';

/** Who acts: an operator account, or the shared token ("token", an admin). */
export interface Actor {
  name: string;
  role: Role;
}

export const TOKEN_ACTOR: Actor = { name: 'token', role: 'admin' };

export interface Session {
  readonly actor: Actor;
  readonly expiresAt: number;
  lastSeen: number;
  readonly secretDigest: Buffer;
  /** The secret itself until the page fetched it; null from then on. */
  secret: string | null;
  /** A public name of the session (not a credential): the page tells its kept secret's session by it. */
  readonly tag: string;
}

const digest = (s: string): Buffer => createHash('sha256').update(s, 'utf8').digest();
const key = (id: string): string => digest(id).toString('hex');

export class OperatorAuth {
  private readonly tokenDigest: Buffer;
  /** sha256(session id) hex → session. Insertion order is sign-in order. */
  private readonly sessions = new Map<string, Session>();
  private readonly now: () => number;
  /** The cookie's name, known once the listener has its port. */
  readonly cookieName: () => string;

  constructor(token: string, opts: { now: () => number; cookieName: () => string }) {
    if (token === '') throw new RangeError('the operator token must not be empty');
    this.tokenDigest = digest(token);
    this.now = opts.now;
    this.cookieName = opts.cookieName;
  }

  /** Constant-time comparison of a presented token with the operator token. */
  tokenMatches(presented: string): boolean {
    return timingSafeEqual(digest(presented), this.tokenDigest);
  }

  /** The bearer token a request presents (null: no Authorization header; '' for a malformed one). */
  bearer(req: IncomingRequest): string | null {
    const auth = req.headers['authorization'];
    if (auth === undefined) return null;
    return /^Bearer\s+(.+)$/i.exec(auth.trim())?.[1] ?? '';
  }

  /** The live session the request's cookie names (its last use set to now), or null. */
  session(req: IncomingRequest): Session | null {
    const id = cookieValue(req.headers['cookie'], this.cookieName());
    if (id === null) return null;
    const k = key(id);
    const s = this.sessions.get(k);
    if (s === undefined) return null;
    const now = this.now();
    if (s.expiresAt <= now || s.lastSeen + SESSION_IDLE_MS <= now) {
      this.sessions.delete(k);
      return null;
    }
    s.lastSeen = now;
    return s;
  }

  /** Whether a request carries its session's secret. */
  secretMatches(s: Session, req: IncomingRequest): boolean {
    const presented = req.headers[SECRET_HEADER];
    return presented !== undefined && timingSafeEqual(digest(presented), s.secretDigest);
  }

  /** A new session for an actor whose credentials were checked: its cookie value. */
  open(actor: Actor): string {
    const id = randomBytes(32).toString('base64url');
    const secret = randomBytes(32).toString('base64url');
    const now = this.now();
    this.sessions.set(key(id), {
      actor,
      expiresAt: now + SESSION_TTL_MS,
      lastSeen: now,
      secretDigest: digest(secret),
      secret,
      tag: randomBytes(9).toString('base64url'),
    });
    while (this.sessions.size > MAX_SESSIONS) this.sessions.delete(this.sessions.keys().next().value as string);
    return id;
  }

  /** The session's secret, the first time only (null after that, or without a session). */
  handOver(req: IncomingRequest): { secret: string; session: Session } | null {
    const s = this.session(req);
    if (s === null || s.secret === null) return null;
    const secret = s.secret;
    s.secret = null;
    return { secret, session: s };
  }

  /** Ends the session the request's cookie names, if any. */
  logout(req: IncomingRequest): void {
    const id = cookieValue(req.headers['cookie'], this.cookieName());
    if (id !== null) this.sessions.delete(key(id));
  }

  /** `Set-Cookie` for a session: the whole listener (path /), never sent cross-site, not readable by scripts. */
  sessionCookie(id: string, secure: boolean): string {
    return `${this.cookieName()}=${id}; Path=/; HttpOnly; SameSite=Strict; Max-Age=${SESSION_TTL_MS / 1000}${secure ? '; Secure' : ''}`;
  }

  clearedCookie(): string {
    return `${this.cookieName()}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0`;
  }
}

/** The session cookie's name on the listener at `port`: cookies ignore ports, names do not. */
export const cookieNameFor = (port: number): string => `pi_console_${port}`;

function cookieValue(header: string | undefined, name: string): string | null {
  if (header === undefined) return null;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return null;
}
