// API keys for operators: GET /admin/keys[?workspace=], POST /admin/keys (the key is in this answer
// once, never again), POST /admin/keys/:id/revoke and POST /admin/keys/:id/expiry {expires_at}.
// Only the store's records go out: id, non-secret prefix, workspace, name, limits and state.
import type { OperatorView } from '../admin/operator-view.ts';
import { type ApiKeyRecord, keyNameProblem, keyState, pastExpiryProblem } from '../store/sqlite/store.ts';
import { badRequest, ConsoleError, iso, notFound, parseTime, stringField } from './http.ts';

function keyJson(k: ApiKeyRecord, now: number): Record<string, unknown> {
  return {
    id: k.id,
    prefix: k.prefix,
    workspace: k.workspace,
    name: k.name,
    state: keyState(k, now),
    rpm: k.rpm,
    expires_at: iso(k.expiresAt),
    created_at: iso(k.createdAt),
    revoked_at: iso(k.revokedAt),
  };
}

export async function listKeys(view: OperatorView, q: Map<string, string>): Promise<unknown> {
  const now = view.now();
  // Newest first: the key just created is on top.
  return { keys: (await view.store.apiKeys.list(q.get('workspace'))).reverse().map((k) => keyJson(k, now)) };
}

/** The body's expiry: null (none), or a time in the future — a past one is 400 `expiry_in_past`,
 *  as the CLI refuses it (a key to stop now is revoked). */
function expiryOf(body: Record<string, unknown>, now: number): number | null {
  const v = stringField(body, 'expires_at');
  if (v === undefined) return null;
  const at = parseTime('expires_at', v);
  const past = pastExpiryProblem(at, now);
  if (past !== null) throw new ConsoleError(400, 'expiry_in_past', `expires_at: ${past}`);
  return at;
}

/** The body's key name, trimmed (empty: none); too long or with control characters: 400 `invalid_name`. */
function nameOf(body: Record<string, unknown>): string | undefined {
  const name = stringField(body, 'name')?.trim();
  if (name === undefined || name === '') return undefined;
  const problem = keyNameProblem(name);
  if (problem !== null) throw new ConsoleError(400, 'invalid_name', problem);
  return name;
}

export async function createKey(view: OperatorView, body: Record<string, unknown>): Promise<unknown> {
  const workspace = stringField(body, 'workspace');
  if (workspace === undefined || !view.index().workspaceById.has(workspace))
    throw badRequest(`workspace must be a workspace of the config, got ${JSON.stringify(workspace ?? null)}`);
  const name = nameOf(body);
  const rpm = body['rpm'];
  if (rpm !== undefined && rpm !== null && !(typeof rpm === 'number' && Number.isSafeInteger(rpm) && rpm > 0))
    throw badRequest('rpm must be a positive whole number');
  const expiresAt = expiryOf(body, view.now());
  const created = await view.store.apiKeys.create({
    workspace,
    name,
    rpm: typeof rpm === 'number' ? rpm : undefined,
    expiresAt: expiresAt ?? undefined,
  });
  return { ...keyJson(created, view.now()), key: created.key };
}

export async function revokeKey(view: OperatorView, id: string): Promise<unknown> {
  const before = await view.store.apiKeys.get(id);
  if (!before) throw notFound(`no key ${id}`);
  const revoked = await view.store.apiKeys.revoke(id);
  return { ...keyJson((await view.store.apiKeys.get(id)) as ApiKeyRecord, view.now()), changed: revoked };
}

export async function setKeyExpiry(view: OperatorView, id: string, body: Record<string, unknown>): Promise<unknown> {
  const key = await view.store.apiKeys.get(id);
  if (!key) throw notFound(`no key ${id}`);
  if (!('expires_at' in body))
    throw badRequest('expires_at is required: an ISO date or date-time, or null to clear it');
  if (key.revokedAt !== null) throw badRequest(`key ${id} is revoked; its expiry no longer matters`);
  await view.store.apiKeys.setExpiry(id, expiryOf(body, view.now()));
  return keyJson((await view.store.apiKeys.get(id)) as ApiKeyRecord, view.now());
}
