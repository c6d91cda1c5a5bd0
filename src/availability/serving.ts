// The one rule for "who can serve a model now" (docs/api.md: Selection rule 1), shared by the catalog's
// endpoints view and the router's candidate set: model, deployment and resource active, and the
// resource's upstream credential stored sealed. Health is deliberately not part of it.
import type { CompiledDeployment, CompiledModel } from '../config/compiled.ts';
import type { ConfigIndex } from '../config/index.ts';
import { isExpired } from './lifecycle.ts';

/** Which sealed credentials exist (names only; values are unsealed per attempt). */
export interface CredentialView {
  has(name: string): boolean;
}

/** Declared status plus the health tracker's verdict. */
export interface HealthView {
  isDown(deployment: CompiledDeployment, nowMs: number): boolean;
}

/**
 * A HealthView whose `isDown` may hand out a half-open probe (the health tracker): `passive` gives
 * the same verdicts without claiming one, so a caller can tell which `false` answers were claims.
 */
export interface ProbingHealthView extends HealthView {
  readonly passive: HealthView;
}

export function isProbingHealthView(h: HealthView): h is ProbingHealthView {
  const passive = (h as Partial<ProbingHealthView>).passive;
  return typeof passive === 'object' && passive !== null && typeof passive.isDown === 'function';
}

/** Declared status only (no runtime tracker). */
export const declaredHealth: HealthView = {
  isDown: (d) => d.status === 'down',
};

/** A model routing may use now: enabled and not past its expiration date. */
export function isModelActive(model: CompiledModel, nowMs: number): boolean {
  return model.enabled && !isExpired(model, nowMs);
}

/** Why a deployment cannot serve, or null when it can. Order matters: first failing reason wins. */
export function unservableReason(index: ConfigIndex, d: CompiledDeployment, creds: CredentialView): string | null {
  if (!d.active) return 'deployment inactive';
  const resource = index.resourceById.get(d.resource);
  if (!resource?.active) return 'resource inactive';
  if (!creds.has(resource.credential)) return 'no sealed upstream credential';
  return null;
}

/** Deployments of an active model that can serve now (sorted by deployment id). */
export function servingDeployments(
  index: ConfigIndex,
  model: CompiledModel,
  creds: CredentialView,
  nowMs: number,
): CompiledDeployment[] {
  if (!isModelActive(model, nowMs)) return [];
  return index.deploymentsOf(model.id).filter((d) => unservableReason(index, d, creds) === null);
}

/** Sort key for "best deployment first": not down beats down, then higher weight, then ascending id. */
export function compareBest(health: HealthView, nowMs: number) {
  return (a: CompiledDeployment, b: CompiledDeployment): number => {
    const da = health.isDown(a, nowMs) ? 1 : 0;
    const db = health.isDown(b, nowMs) ? 1 : 0;
    if (da !== db) return da - db;
    if (a.weight !== b.weight) return b.weight - a.weight;
    return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
  };
}
