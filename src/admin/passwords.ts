// Operator passwords: scrypt (memory-hard, node:crypto) with a random 16-byte salt, its parameters
// stored with the hash as `scrypt$N$r$p$salt$hash` (base64url), so stronger parameters later leave
// old hashes verifiable. Verification runs scrypt on the libuv pool (never on the event loop) and
// compares with timingSafeEqual; an unknown name is checked against a fixed hash, so the time an
// answer takes does not say whether the account exists.
import { randomBytes, scrypt, timingSafeEqual } from 'node:crypto';

/** 2^15 × 8 × 128 bytes = 32 MiB per hash: costly to guess on any hardware, ~50–100 ms here. */
const N = 2 ** 15;
const R = 8;
const P = 1;
const KEY_LEN = 32;
/** Operator passwords are typed by people: long enough to resist guessing, short enough to type. */
export const MIN_PASSWORD_LENGTH = 12;
export const MAX_PASSWORD_LENGTH = 1024;

function derive(password: string, salt: Buffer, n: number, r: number, p: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    scrypt(password, salt, KEY_LEN, { N: n, r, p, maxmem: 256 * n * r + 1024 * 1024 }, (err, key) =>
      err ? reject(err) : resolve(key),
    );
  });
}

/** Why a new password is refused, or null. */
export function passwordProblem(password: string): string | null {
  if (password.length < MIN_PASSWORD_LENGTH) return `the password must have at least ${MIN_PASSWORD_LENGTH} characters`;
  if (password.length > MAX_PASSWORD_LENGTH) return `the password must have at most ${MAX_PASSWORD_LENGTH} characters`;
  return null;
}

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const key = await derive(password, salt, N, R, P);
  return ['scrypt', N, R, P, salt.toString('base64url'), key.toString('base64url')].join('$');
}

/** A hash no password matches, checked when the name is unknown (same cost as a real one). */
const DECOY = `scrypt$${N}$${R}$${P}$${Buffer.alloc(16).toString('base64url')}$${Buffer.alloc(KEY_LEN).toString('base64url')}`;

/** Whether `password` matches `stored` (null: no such account; the same work is done). */
export async function verifyPassword(password: string, stored: string | null): Promise<boolean> {
  const parts = (stored ?? DECOY).split('$');
  const [kind, n, r, p, salt, key] = parts;
  if (parts.length !== 6 || kind !== 'scrypt' || salt === undefined || key === undefined) return false;
  const expected = Buffer.from(key, 'base64url');
  const [cost, block, par] = [Number(n), Number(r), Number(p)];
  // Parameters out of any sane range are a damaged row, not a reason to spend a gigabyte.
  const sane = cost >= 2 ** 10 && cost <= 2 ** 20 && block >= 1 && block <= 32 && par >= 1 && par <= 16;
  if (!sane || password.length > MAX_PASSWORD_LENGTH || expected.length !== KEY_LEN) return false;
  const got = await derive(password, Buffer.from(salt, 'base64url'), cost, block, par);
  return timingSafeEqual(got, expected) && stored !== null;
}
