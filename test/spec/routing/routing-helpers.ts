// Shared helpers for the routing HTTP tests: a stack on the routing-http fixture with a constant
// random source (so the weighted order is simply weight-descending, ties by id), and readers for
// what the simulator received and what the request log recorded.
import type { Test } from 'tap';
import type { ManualClock } from '../../../src/clock.ts';
import type { GatewaySettings } from '../../../src/config/compiled.ts';
import type { Store } from '../../../src/store/sqlite/store.ts';
import type { RequestLogEntry } from '../../../src/store/types.ts';
import { startStack, type Stack } from '../../helpers/stack.ts';

export const USER = [{ role: 'user', content: 'hi' }];
export const CHAT = '/v1/chat/completions';

/**
 * The attempt order of `acme/multi` with a constant random and no preferences: weight descending,
 * mu/multi before mu/multi-a (equal weight, ascending id), the declared-down kappa/multi-down last.
 */
export const MULTI_ORDER = [
  'multi-aws',
  'multi-gcp',
  'multi-gemini',
  'multi-kappa',
  'multi-lambda',
  'multi-mu',
  'multi-mu-a',
  'multi-nu',
  'multi-kappa-down',
] as const;

export interface RoutingStackOptions {
  clock?: ManualClock;
  random?: () => number;
  limits?: Partial<GatewaySettings['limits']>;
  seal?: (credential: string) => boolean;
  /** A store to use instead of a fresh in-memory one (the caller closes it). */
  store?: Store;
}

export interface RoutingStack {
  s: Stack;
  /** An API key of the `open` workspace, credited with 100 USD. */
  key: string;
  /** POST to chat completions with the `open` key unless another is given. */
  chat(body: Record<string, unknown>, opts?: { key?: string; headers?: Record<string, string> }): Promise<Response>;
  /** A key of another workspace, credited with 100 USD. */
  keyFor(workspace: string): string;
}

/** Every u equal: the Efraimidis–Spirakis key ln(u)/w is then larger for larger w, so no coin decides. */
export const constantRandom = (): number => 0.5;

export async function routingStack(t: Test, opts: RoutingStackOptions = {}): Promise<RoutingStack> {
  const s = await startStack(t, { config: 'routing-http', random: opts.random ?? constantRandom, ...pick(opts) });
  const keyFor = (ws: string): string => {
    s.credit(ws, '100');
    return s.key(ws);
  };
  const key = keyFor('open');
  return {
    s,
    key,
    keyFor,
    chat: (body, o = {}) =>
      s.post(
        CHAT,
        { model: 'acme/multi', messages: USER, ...body },
        { key: o.key ?? key, ...(o.headers ? { headers: o.headers } : {}) },
      ),
  };
}

function pick(opts: RoutingStackOptions): Omit<RoutingStackOptions, 'random'> {
  const out: Omit<RoutingStackOptions, 'random'> = {};
  if (opts.clock) out.clock = opts.clock;
  if (opts.limits) out.limits = opts.limits;
  if (opts.seal) out.seal = opts.seal;
  if (opts.store) out.store = opts.store;
  return out;
}

/** Upstream model ids the simulator received, oldest first (its `model` body field). */
export function upstreams(s: Stack): string[] {
  return s.sim.requests.map((r) => String((r.body as Record<string, unknown> | null)?.['model'] ?? '?'));
}

/** The newest request-log row (flushes the queue first). */
export function lastLog(s: Stack): RequestLogEntry {
  s.store.requestLog.flush();
  const row = s.store.requestLog.query({ limit: 1 })[0];
  if (!row) throw new Error('the request log is empty');
  return row;
}

export interface ErrorObject {
  message: string;
  type: string;
  code: string;
  metadata?: unknown;
}

/** Reads a gateway error answer and checks the parts every gateway error has. */
export async function gatewayError(t: Test, res: Response, status: number, code: string): Promise<ErrorObject> {
  t.equal(res.status, status, `status ${status}`);
  t.ok(res.headers.get('x-pi-trace-id'), 'trace id');
  for (const h of ['x-pi-provider', 'x-pi-model', 'x-pi-upstream-model', 'x-pi-upstream-request-id']) {
    t.equal(res.headers.get(h), null, `no ${h} on a gateway error`);
  }
  const body = (await res.json()) as { error: ErrorObject };
  t.equal(body.error.code, code, `code ${code}`);
  return body.error;
}

/** Nothing was sent upstream and nothing is left held on the workspace's wallet. */
export function nothingCalledNothingHeld(t: Test, s: Stack, workspace = 'open'): void {
  t.equal(s.sim.requests.length, 0, 'no provider was called');
  const w = s.store.wallets.show(workspace, s.clock.now());
  t.equal(w.held, 0n, 'nothing held');
  t.equal(w.openHolds, 0, 'no open hold');
}
