// The router's candidate set for one model and endpoint under an effective policy, with the funnel
// that explains every exclusion (carried in `no_eligible_provider` metadata for operators).
import type { CompiledDeployment, CompiledModel } from '../config/compiled.ts';
import type { ConfigIndex } from '../config/index.ts';
import { isExpired } from '../availability/lifecycle.ts';
import type { EffectivePolicy } from './preferences.ts';
import { type CredentialView, unservableReason } from '../availability/serving.ts';

export interface FunnelStage {
  stage: string;
  /** Distinct providers (platform ids) left after this stage. */
  remaining: number;
  /** Providers whose last deployment this stage removed, by platform id. */
  removed: { provider: string; reason: string }[];
  /** Only on the `model` stage: the providers the model is registered with, sorted. */
  providers?: string[];
}

export interface CandidateResult {
  /** Eligible deployments, sorted by id. */
  deployments: CompiledDeployment[];
  funnel: FunnelStage[];
}

/** A stage's verdict on one deployment: null keeps it, a string is why it goes. */
type Rule = (d: CompiledDeployment) => string | null;

function providersOf(deps: readonly CompiledDeployment[]): Set<string> {
  return new Set(deps.map((d) => d.platform));
}

function sorted(ids: Iterable<string>): string[] {
  return [...ids].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}

/**
 * Applies one stage. A provider counts as removed here only when its last remaining deployment
 * goes here; its reason is the distinct reasons of its deployments removed at this stage, joined
 * with "; " in deployment-id order (usually one).
 */
function applyStage(
  stage: string,
  deps: CompiledDeployment[],
  rule: Rule,
): { kept: CompiledDeployment[]; stage: FunnelStage } {
  const kept: CompiledDeployment[] = [];
  const reasons = new Map<string, string[]>();
  for (const d of deps) {
    const why = rule(d);
    if (why === null) {
      kept.push(d);
      continue;
    }
    let list = reasons.get(d.platform);
    if (!list) reasons.set(d.platform, (list = []));
    if (!list.includes(why)) list.push(why);
  }
  const left = providersOf(kept);
  const removed = sorted(reasons.keys())
    .filter((p) => !left.has(p))
    .map((provider) => ({ provider, reason: (reasons.get(provider) as string[]).join('; ') }));
  return { kept, stage: { stage, remaining: left.size, removed } };
}

function modelInactiveReason(model: CompiledModel, nowMs: number): string | null {
  if (!model.enabled) return 'model disabled';
  if (isExpired(model, nowMs)) return 'model expired';
  return null;
}

/**
 * The workspace's own limits. Without `policy.origin` (a hand-built policy) the merged
 * `allow`/`ignore` sets are applied here with neutral wording.
 */
function workspaceRule(policy: EffectivePolicy): Rule {
  const o = policy.origin;
  if (!o) {
    return (d) => {
      if (policy.ignore.has(d.platform)) return 'in the ignore list';
      if (policy.allow !== null && !policy.allow.has(d.platform)) return 'not in the allowed providers';
      return null;
    };
  }
  return (d) => {
    if (o.workspaceIgnore.has(d.platform)) return 'in the workspace ignore list';
    if (o.workspaceAllow !== null && !o.workspaceAllow.has(d.platform)) return 'not in the workspace allowlist';
    if (o.workspaceOrderLimit !== null && !o.workspaceOrderLimit.has(d.platform)) {
      return 'not in the workspace order and the workspace sets allow_fallbacks false';
    }
    return null;
  };
}

/** The request's `only` / `ignore`, and `allow_fallbacks: false` with the effective order. */
function requestRule(policy: EffectivePolicy): Rule {
  const o = policy.origin;
  const ordered = new Set(policy.order);
  const orderLimited = !policy.allowFallbacks && ordered.size > 0;
  const orderName = o?.sortModeFrom === 'workspace' ? 'the workspace order' : 'provider.order';
  return (d) => {
    // ignore is checked first: it wins over only, so it is the reason an operator should read.
    if (o?.requestIgnore.has(d.platform)) return 'in provider.ignore';
    if (o?.requestOnly && !o.requestOnly.has(d.platform)) return 'not in provider.only';
    if (orderLimited && !ordered.has(d.platform)) return `not in ${orderName} and allow_fallbacks is false`;
    // The merged sets stay authoritative even if a caller narrowed them after the merge.
    if (o && policy.ignore.has(d.platform)) return 'in the ignore list';
    if (o && policy.allow !== null && !policy.allow.has(d.platform)) return 'not in the allowed providers';
    return null;
  };
}

interface StageArgs {
  index: ConfigIndex;
  model: CompiledModel;
  endpoint: string;
  policy: EffectivePolicy;
  creds: CredentialView;
  nowMs: number;
}

/** The funnel's stages after `model`, in order, each with its rule: one definition for both paths. */
function stageRules(args: StageArgs): [string, Rule][] {
  const { index, model, endpoint, policy, creds, nowMs } = args;
  return [
    ['endpoint', (d) => (d.endpoints.includes(endpoint) ? null : `not registered for the ${endpoint} endpoint`)],
    [
      'available',
      (d) =>
        modelInactiveReason(model, nowMs) ??
        unservableReason(index, d, creds) ??
        (index.platformById.has(d.platform) ? null : 'platform not configured'),
    ],
    ['workspace_policy', workspaceRule(policy)],
    ['request_providers', requestRule(policy)],
    [
      'data_policy',
      (d) => {
        const p = index.platformById.get(d.platform);
        if (!p) return 'platform not configured';
        if (policy.dataCollection === 'deny') {
          if (p.dataPolicy.promptTraining !== false) return 'may train on prompts';
          if (!p.retentionLimited) return 'retains data beyond a limited window';
        }
        if (policy.zdr && p.zdr !== true) return 'not zero-data-retention';
        return null;
      },
    ],
    [
      'quantization',
      (d) => {
        if (policy.quantizations === null) return null;
        const q = d.quantization ?? 'unknown';
        return policy.quantizations.has(q) ? null : `quantization ${q} not allowed`;
      },
    ],
  ];
}

/**
 * Eligible deployments of `model` on `endpoint` under `policy`, with the funnel. Stages, in order:
 * `model`, `endpoint`, `available` (the shared serving rule of availability/serving.ts plus model lifecycle),
 * `workspace_policy`, `request_providers`, `data_policy`, `quantization`. Every stage is always
 * present, so an operator reads the same shape whichever stage emptied the set.
 */
export function eligibleDeployments(args: StageArgs): CandidateResult {
  const funnel: FunnelStage[] = [];
  let deps = [...args.index.deploymentsOf(args.model.id)];
  const registered = sorted(providersOf(deps));
  funnel.push({ stage: 'model', remaining: registered.length, removed: [], providers: registered });
  for (const [name, rule] of stageRules(args)) {
    const r = applyStage(name, deps, rule);
    deps = r.kept;
    funnel.push(r.stage);
  }
  return { deployments: deps, funnel };
}

/**
 * The same eligible set without the funnel: the request path's version. A request that has
 * candidates never reads the funnel, so its bookkeeping (per-stage sets, reasons) is spent only on
 * the `no_eligible_provider` error (eligibleDeployments).
 */
export function eligibleOnly(args: StageArgs): CompiledDeployment[] {
  const rules = stageRules(args).map(([, rule]) => rule);
  return args.index.deploymentsOf(args.model.id).filter((d) => rules.every((rule) => rule(d) === null));
}
