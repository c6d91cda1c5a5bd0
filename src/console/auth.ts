// The operator's credential on the admin listener. Scripts send `Authorization: Bearer <PI_ADMIN_TOKEN>`;
// a browser posts the token once to /console/login and gets a session cookie (random, HttpOnly,
// SameSite=Strict, kept in this process's memory). Tokens are compared as SHA-256 digests with
// timingSafeEqual, so neither the token's length nor its bytes show in the time an answer takes.
// The cookie belongs to the admin listener only: the public API never reads cookies (its
// credentials are headers), and it listens on its own port.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingRequest } from '../http/request.ts';

export const SESSION_COOKIE = 'pi_admin_session';
/** A console session lasts this long from login. */
export const SESSION_TTL_MS = 12 * 3_600_000;
/** Sessions kept at once; logging in past it drops the oldest. */
const MAX_SESSIONS = 1000;

const digest = (s: string): Buffer => createHash('sha256').update(s, 'utf8').digest();

export class OperatorAuth {
  private readonly tokenDigest: Buffer;
  /** sha256(session id) hex → expiry (epoch ms). Insertion order is login order. */
  private readonly sessions = new Map<string, number>();

  private readonly now: () => number;
  constructor(token: string, now: () => number = Date.now) {
    this.now = now;
    if (token === '') throw new RangeError('the operator token must not be empty');
    this.tokenDigest = digest(token);
  }

  /** Constant-time comparison of a presented token with the operator token. */
  tokenMatches(presented: string): boolean {
    return timingSafeEqual(digest(presented), this.tokenDigest);
  }

  /** A request carrying the token as a bearer header, or a live session cookie. */
  authenticated(req: IncomingRequest): 'bearer' | 'session' | null {
    const auth = req.headers['authorization'];
    if (auth !== undefined) {
      const m = /^Bearer\s+(.+)$/i.exec(auth.trim());
      return m && this.tokenMatches(m[1] as string) ? 'bearer' : null;
    }
    const id = cookieValue(req.headers['cookie'], SESSION_COOKIE);
    if (id === null) return null;
    const key = digest(id).toString('hex');
    const until = this.sessions.get(key);
    if (until === undefined) return null;
    if (until <= this.now()) {
      this.sessions.delete(key);
      return null;
    }
    return 'session';
  }

  /** A new session for a correct token (its cookie value), or null. */
  login(presented: string): string | null {
    if (!this.tokenMatches(presented)) return null;
    const id = randomBytes(32).toString('base64url');
    this.sessions.set(digest(id).toString('hex'), this.now() + SESSION_TTL_MS);
    while (this.sessions.size > MAX_SESSIONS) this.sessions.delete(this.sessions.keys().next().value as string);
    return id;
  }

  /** Ends the session the request's cookie names, if any. */
  logout(req: IncomingRequest): void {
    const id = cookieValue(req.headers['cookie'], SESSION_COOKIE);
    if (id !== null) this.sessions.delete(digest(id).toString('hex'));
  }
}

/** `Set-Cookie` for a session: the whole listener (path /), never sent cross-site, not readable by scripts. */
export function sessionCookie(id: string, secure: boolean): string {
  return `${SESSION_COOKIE}=${id}; Path=/; HttpOnly; SameSite=Strict; Max-Age=${SESSION_TTL_MS / 1000}${secure ? '; Secure' : ''}`;
}

export function clearedCookie(): string {
  return `${SESSION_COOKIE}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0`;
}

function cookieValue(header: string | undefined, name: string): string | null {
  if (header === undefined) return null;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return null;
}
