// The admission API the inference handler calls, over fakes of its three seams (key verifier, rate
// limiter, wallet): which header carries the key, the spec's 401/429/402 for each refusal, which
// limit applies, and that hold/settle/release reach the wallet unchanged.
import t from 'tap';
import {
  Admission,
  type HoldResult,
  type KeyVerification,
  type WalletAdmission,
} from '../../src/admission/admission.ts';
import { presentedKey } from '../../src/admission/api-key.ts';
import type { RateDecision } from '../../src/admission/rate-limit.ts';
import type { CompiledWorkspace } from '../../src/config/compiled.ts';
import { GatewayError } from '../../src/errors.ts';
import type { ApiKeyRecord, LedgerDetails } from '../../src/store/sqlite/store.ts';
import { routing } from '../routing/fixtures.ts';

const KEY = 'sk-pi-good';
const record = (over: Partial<ApiKeyRecord> = {}): ApiKeyRecord => ({
  id: 'key_1',
  prefix: 'sk-pi-good',
  workspace: 'acme',
  name: null,
  expiresAt: null,
  rpm: null,
  createdAt: 0,
  revokedAt: null,
  ...over,
});
const acme: CompiledWorkspace = {
  id: 'acme',
  name: 'Acme',
  rateLimitRpm: 60,
  lowBalanceNano: null,
  routing: routing(),
};

function setup(opts: { key?: ApiKeyRecord; verdict?: KeyVerification; rate?: RateDecision; hold?: HoldResult } = {}) {
  const calls: string[] = [];
  const wallets: WalletAdmission = {
    hold: (ws, trace, amount) => {
      calls.push(`hold ${ws} ${trace} ${amount}`);
      return opts.hold ?? { ok: true };
    },
    settle: (trace, cost, details: LedgerDetails) => {
      calls.push(`settle ${trace} ${cost} ${String(details.model)}`);
      return Promise.resolve(true);
    },
    release: (trace) => void calls.push(`release ${trace}`),
  };
  const admission = new Admission({
    keys: {
      verifyKey: (presented, now) => {
        calls.push(`verify ${presented} ${now}`);
        return (
          opts.verdict ?? (presented === KEY ? { status: 'ok', key: opts.key ?? record() } : { status: 'not_found' })
        );
      },
    },
    workspaceOf: (id) => (id === 'acme' ? acme : undefined),
    limiter: {
      take: (key, limit) => {
        calls.push(`take ${key} ${limit}`);
        return opts.rate ?? { ok: true, remaining: 1 };
      },
    },
    wallets,
  });
  return { admission, calls };
}

const refusal = (code: string, status: number) => ({ name: 'GatewayError', code, status });

t.test('presentedKey: Authorization (Bearer or bare), else X-Api-Key', async (t) => {
  t.equal(presentedKey({ authorization: `Bearer ${KEY}` }), KEY);
  t.equal(presentedKey({ authorization: `bearer   ${KEY} ` }), KEY);
  t.equal(presentedKey({ authorization: KEY }), KEY);
  t.equal(presentedKey({ 'x-api-key': KEY }), KEY);
  t.equal(presentedKey({ authorization: 'Bearer a', 'x-api-key': 'b' }), 'a', 'Authorization wins');
  t.equal(presentedKey({ authorization: '  ', 'x-api-key': 'b' }), 'b', 'an empty Authorization falls through');
  t.equal(
    presentedKey({ 'x-goog-api-key': KEY, cookie: `key=${KEY}` }),
    null,
    'other credential headers are never read',
  );
});

t.test('authenticate: the key and its workspace, or the spec 401', async (t) => {
  const { admission, calls } = setup();
  t.same(admission.authenticate({ authorization: `Bearer ${KEY}` }, 1234), { key: record(), workspace: acme });
  t.same(calls, [`verify ${KEY} 1234`], 'verified against the request time');
  t.throws(() => admission.authenticate({}, 0), refusal('invalid_api_key', 401), 'missing');
  t.throws(() => admission.authenticate({ authorization: 'Bearer sk-pi-other' }, 0), refusal('api_key_not_found', 401));
  for (const status of ['invalid', 'revoked', 'expired'] as const) {
    const code = status === 'invalid' ? 'invalid_api_key' : `api_key_${status}`;
    t.throws(
      () => setup({ verdict: { status } }).admission.authenticate({ 'x-api-key': KEY }, 0),
      refusal(code, 401),
      status,
    );
  }
  const orphan = setup({ key: record({ workspace: 'gone' }) }).admission;
  t.throws(() => orphan.authenticate({ 'x-api-key': KEY }, 0), {
    code: 'api_key_not_found',
    message: /workspace of this API key \("gone"\) no longer exists/,
  });
});

t.test('rateLimit: the key limit, else the workspace limit; 429 with Retry-After', async (t) => {
  const own = setup();
  own.admission.rateLimit({ key: record({ rpm: 5 }), workspace: acme });
  own.admission.rateLimit({ key: record({ id: 'key_2' }), workspace: acme });
  t.same(own.calls, ['take key_1 5', 'take key_2 60']);
  const full = setup({ rate: { ok: false, retryAfterSeconds: 17 } }).admission;
  let err: unknown;
  try {
    full.rateLimit({ key: record({ rpm: 5 }), workspace: acme });
  } catch (e) {
    err = e;
  }
  t.ok(err instanceof GatewayError);
  t.match(err, {
    code: 'rate_limited',
    status: 429,
    message: 'rate limit of 5 requests per minute reached',
    headers: [['Retry-After', '17']],
  });
});

t.test('hold, settle, release reach the wallet; a refused hold is the spec 402', async (t) => {
  const { admission, calls } = setup();
  admission.hold('acme', 'tr-1', 2_000_000n);
  t.equal(await admission.settle('tr-1', 163n, { model: 'a/b' }), true);
  admission.release('tr-2');
  t.same(calls, ['hold acme tr-1 2000000', 'settle tr-1 163 a/b', 'release tr-2']);
  const broke = setup({ hold: { ok: false, available: 1_500_000n } }).admission;
  t.throws(() => broke.hold('acme', 'tr-3', 2_000_000n), {
    code: 'insufficient_balance',
    status: 402,
    message: 'insufficient balance: this request needs up to $0.002 held and the wallet has $0.0015 available',
  });
  const overdrawn = setup({ hold: { ok: false, available: -5n } }).admission;
  t.throws(
    () => overdrawn.hold('acme', 'tr-4', 1n),
    { message: /and the wallet has \$0 available/ },
    'an overdrawn wallet shows $0',
  );
});

t.test('a rate decision answered later: the hold waits for it, and a refused request holds nothing', async (t) => {
  const calls: string[] = [];
  let answer: (d: RateDecision) => void = () => undefined;
  const admission = new Admission({
    keys: { verifyKey: () => ({ status: 'ok', key: record() }) },
    workspaceOf: () => acme,
    limiter: { take: () => new Promise<RateDecision>((resolve) => (answer = resolve)) },
    // A wallet that cannot tie a hold to the decision (no holdIfAllowed), like PostgreSQL's.
    wallets: {
      hold: (_ws, trace) => {
        calls.push(`hold ${trace}`);
        return { ok: true };
      },
      settle: () => Promise.resolve(true),
      release: () => undefined,
    },
  });
  const admitted = { key: record(), workspace: acme };
  const pending = admission.rateLimit(admitted);
  if (!pending) throw new Error('an asynchronous limiter gives a pending decision');
  const held = admission.hold('acme', 'tr-ok', 100n, pending);
  await new Promise((r) => setImmediate(r));
  t.same(calls, [], 'nothing held before the decision');
  answer({ ok: true, remaining: 3 });
  await pending.settled();
  await held;
  t.same(calls, ['hold tr-ok']);

  const refused = admission.rateLimit(admitted);
  if (!refused) throw new Error('pending');
  const heldRefused = admission.hold('acme', 'tr-refused', 100n, refused);
  answer({ ok: false, retryAfterSeconds: 9 });
  await t.rejects(refused.settled(), refusal('rate_limited', 429));
  await heldRefused;
  t.same(calls, ['hold tr-ok'], 'the refused request held nothing');
});
