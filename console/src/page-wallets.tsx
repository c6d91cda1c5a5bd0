// Wallets & keys: every workspace's balance, holds in flight and spend today; one wallet's ledger,
// a page at a time (older and back), and a credit with the operator's note; the API keys — create
// (the key is shown once), revoke, set or clear an expiry with a date picker that offers no past day
// (the server refuses one too).
import { useEffect, useRef, useState } from 'preact/hooks';
import { get, type KeyRow, type LedgerRow, type Meta, newIdempotencyKey, post, qs, type Wallet } from './api.ts';
import { usd, utc } from './format.ts';

const LEDGER_PAGE = 25;
/** The server's bound on a key name (src/store/api-keys.ts); the field stops there. */
const MAX_KEY_NAME_CHARS = 128;

export function WalletsPage(props: { meta: Meta }) {
  const [wallets, setWallets] = useState<Wallet[]>([]);
  const [selected, setSelected] = useState<string | null>(null);
  const [tick, setTick] = useState(0);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    get<{ wallets: Wallet[] }>('/admin/wallets').then(
      (r) => {
        setWallets(r.wallets);
        setError(null);
      },
      (e: Error) => {
        setWallets([]);
        setError(e.message);
      },
    );
  }, [tick]);
  return (
    <section data-testid="page-wallets">
      <h1>Wallets</h1>
      {error && <p class="error">{error}</p>}
      <div class="scroll">
        <table class="grid" data-testid="wallets-table">
          <thead>
            <tr>
              <th>Workspace</th>
              <th class="n">Balance</th>
              <th class="n">Held (in flight)</th>
              <th class="n">Available</th>
              <th class="n">Spend today (UTC)</th>
              <th class="n">Open holds</th>
            </tr>
          </thead>
          <tbody>
            {wallets.map((w) => (
              <tr
                class={`click${w.workspace === selected ? ' selected' : ''}${w.low_balance ? ' low' : ''}`}
                data-workspace={w.workspace}
                onClick={() => setSelected(w.workspace)}
              >
                <td>
                  {w.workspace} <small>{w.name ?? ''}</small>
                  {w.low_balance && (
                    <span class="badge-low" data-testid="low-balance" title={`below ${usd(w.low_balance_usd)}`}>
                      low: below {usd(w.low_balance_usd)}
                    </span>
                  )}
                </td>
                <td class="n">{usd(w.balance_usd)}</td>
                <td class="n">{usd(w.held_usd)}</td>
                <td class="n">{usd(w.available_usd)}</td>
                <td class="n">{usd(w.spend_today_usd)}</td>
                <td class="n">{w.open_holds}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {/* Keyed by the workspace: another wallet's detail starts afresh (no amount typed, no message of
          a credit to the wallet before, no page of its ledger). */}
      {selected && (
        <WalletDetail key={selected} workspace={selected} tick={tick} onCredited={() => setTick(tick + 1)} />
      )}
      <Keys meta={props.meta} />
    </section>
  );
}

/**
 * One idempotency key per credit the operator means, per workspace, for as long as the page is open:
 * the same amount and note sent again after a failure (an answer lost on the way, a fetch cut off) —
 * also after looking at another wallet in between — reuse it, so the server credits at most once; a
 * success or a changed field starts a new one. A reload forgets it.
 */
const pendingCredits = new Map<string, { of: string; key: string }>();

function WalletDetail(props: { workspace: string; tick: number; onCredited: () => void }) {
  const [ledger, setLedger] = useState<LedgerRow[]>([]);
  const [nextBefore, setNextBefore] = useState<number | null>(null);
  // The cursors of the pages walked back through (empty: the newest page), so "Newer" retraces them.
  const [cursors, setCursors] = useState<number[]>([]);
  const [ledgerError, setLedgerError] = useState<string | null>(null);
  const [amount, setAmount] = useState('');
  const [note, setNote] = useState('');
  const [message, setMessage] = useState<{ ok: boolean; text: string } | null>(null);
  useEffect(() => setCursors([]), [props.workspace, props.tick]);
  const before = cursors[cursors.length - 1];
  useEffect(() => {
    // Only the page asked last is shown: an earlier, slower answer arrives to nothing.
    let current = true;
    get<{ ledger: LedgerRow[]; next_before: number | null }>(
      `/admin/wallets/${encodeURIComponent(props.workspace)}${qs({ limit: LEDGER_PAGE, before })}`,
    ).then(
      (r) => {
        if (!current) return;
        setLedger(r.ledger);
        setNextBefore(r.next_before);
        setLedgerError(null);
      },
      (e: Error) => {
        if (!current) return;
        setLedger([]);
        setNextBefore(null);
        setLedgerError(e.message);
      },
    );
    return () => {
      current = false;
    };
  }, [props.workspace, props.tick, before]);
  const [crediting, once] = useOneAtATime();
  const credit = (e: Event) => {
    e.preventDefault();
    const workspace = props.workspace;
    // The server compares notes without their outer spaces, and so does this.
    const of = JSON.stringify([amount.trim(), note.trim()]);
    const pending = pendingCredits.get(workspace);
    const key = pending?.of === of ? pending.key : newIdempotencyKey();
    pendingCredits.set(workspace, { of, key });
    once(() =>
      post<{ credited_usd: string; balance_usd: string; replayed: boolean }>(
        `/admin/wallets/${encodeURIComponent(props.workspace)}/credit`,
        { usd: amount, note },
        { 'idempotency-key': key },
      ).then(
        (r) => {
          pendingCredits.delete(workspace);
          setMessage({
            ok: true,
            text: r.replayed
              ? `Already credited ${usd(r.credited_usd)} (the earlier attempt went through); nothing added; balance ${usd(r.balance_usd)}.`
              : `Credited ${usd(r.credited_usd)}; balance ${usd(r.balance_usd)}.`,
          });
          setAmount('');
          setNote('');
          props.onCredited();
        },
        (err: Error) => setMessage({ ok: false, text: err.message }),
      ),
    );
  };
  return (
    <div class="panel" data-testid="wallet-detail">
      <h2>Wallet {props.workspace}</h2>
      <form class="inline" onSubmit={credit} data-testid="credit-form">
        <label>
          Credit (USD)
          <input
            name="usd"
            value={amount}
            required
            placeholder="25"
            onInput={(e) => setAmount((e.target as HTMLInputElement).value)}
          />
        </label>
        <label class="wide">
          Note (kept on the ledger row)
          <input
            name="note"
            value={note}
            required
            placeholder="invoice 42"
            onInput={(e) => setNote((e.target as HTMLInputElement).value)}
          />
        </label>
        <button type="submit" disabled={crediting}>
          Credit
        </button>
      </form>
      {message && (
        <p class={message.ok ? 'ok' : 'error'} data-testid="credit-message">
          {message.text}
        </p>
      )}
      <h3>{cursors.length === 0 ? 'Recent ledger rows' : `Ledger rows, page ${cursors.length + 1}`}</h3>
      {ledgerError && <p class="error">{ledgerError}</p>}
      <div class="scroll">
        <table class="grid" data-testid="ledger-table">
          <thead>
            <tr>
              <th>Time (UTC)</th>
              <th>Kind</th>
              <th class="n">Amount</th>
              <th>Model / provider</th>
              <th>Note</th>
              <th>Trace</th>
            </tr>
          </thead>
          <tbody>
            {ledger.map((l) => (
              <tr>
                <td>{utc(l.time)}</td>
                <td>
                  {l.kind}
                  {l.estimated ? ' (estimated)' : ''}
                </td>
                <td class="n">{usd(l.amount_usd)}</td>
                <td>{l.model ? `${l.model} / ${l.provider ?? '—'}` : ''}</td>
                <td title={l.note ?? ''}>{l.note ?? ''}</td>
                <td class="mono">{l.trace_id}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      <p class="pager">
        {cursors.length > 0 && (
          <button type="button" data-testid="ledger-newer" onClick={() => setCursors(cursors.slice(0, -1))}>
            ← Newer
          </button>
        )}
        {nextBefore !== null && (
          <button type="button" data-testid="ledger-older" onClick={() => setCursors([...cursors, nextBefore])}>
            Older →
          </button>
        )}
      </p>
    </div>
  );
}

function Keys(props: { meta: Meta }) {
  const [keys, setKeys] = useState<KeyRow[]>([]);
  const [tick, setTick] = useState(0);
  const [form, setForm] = useState({
    workspace: props.meta.workspaces[0]?.id ?? '',
    name: '',
    expires_at: '',
    rpm: '',
  });
  const [created, setCreated] = useState<KeyRow | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [editing, setEditing] = useState<string | null>(null);
  useEffect(() => {
    get<{ keys: KeyRow[] }>('/admin/keys').then(
      (r) => setKeys(r.keys),
      (e: Error) => {
        setKeys([]);
        setError(e.message);
      },
    );
  }, [tick]);
  const done = () => {
    setError(null);
    setEditing(null);
    setTick(tick + 1);
  };
  const fail = (err: Error) => setError(err.message);
  const [creating, once] = useOneAtATime();
  const create = (e: Event) => {
    e.preventDefault();
    const body = {
      workspace: form.workspace,
      name: form.name || null,
      expires_at: form.expires_at || null,
      ...rpmOf(form.rpm),
    };
    // The key shown before goes as the next is asked for: left beside this one's error, it would
    // read as the key just created.
    setCreated(null);
    once(() =>
      post<KeyRow>('/admin/keys', body).then((k) => {
        setCreated(k);
        done();
      }, fail),
    );
  };
  const setExpiry = (k: KeyRow, date: string | null) =>
    post(`/admin/keys/${k.id}/expiry`, { expires_at: date }).then(done, fail);
  const revoke = (k: KeyRow) => {
    if (!confirm(`Revoke ${k.name ?? k.id}? Requests with it are refused from now on.`)) return;
    post(`/admin/keys/${k.id}/revoke`, {}).then(done, fail);
  };
  const input = (name: 'name' | 'rpm', label: string, placeholder: string) => (
    <label>
      {label}
      <input
        name={name}
        value={form[name]}
        placeholder={placeholder}
        maxLength={name === 'name' ? MAX_KEY_NAME_CHARS : undefined}
        onInput={(e) => setForm({ ...form, [name]: (e.target as HTMLInputElement).value })}
      />
    </label>
  );
  return (
    <div class="panel" data-testid="keys">
      <h1>API keys</h1>
      <form class="inline" onSubmit={create} data-testid="key-form">
        <label>
          Workspace
          <select
            name="workspace"
            value={form.workspace}
            onChange={(e) => setForm({ ...form, workspace: (e.target as HTMLSelectElement).value })}
          >
            {props.meta.workspaces.map((w) => (
              <option value={w.id}>{w.id}</option>
            ))}
          </select>
        </label>
        {input('name', 'Name', 'backend')}
        <label>
          Expires (00:00 UTC; empty: never)
          <input
            type="date"
            name="expires_at"
            min={firstExpiryDay()}
            value={form.expires_at}
            onInput={(e) => setForm({ ...form, expires_at: (e.target as HTMLInputElement).value })}
          />
        </label>
        {input('rpm', 'Requests / min', 'workspace limit')}
        <button type="submit" disabled={creating}>
          Create key
        </button>
      </form>
      {created?.key && (
        <p class="secret" data-testid="created-key">
          New key for {created.workspace}, shown once — copy it now: <code>{created.key}</code>
        </p>
      )}
      {error && <p class="error">{error}</p>}
      <div class="scroll">
        <table class="grid" data-testid="keys-table">
          <thead>
            <tr>
              <th>Name</th>
              <th>Id</th>
              <th>Prefix</th>
              <th>Workspace</th>
              <th>State</th>
              <th>Expires (UTC)</th>
              <th class="n">rpm</th>
              <th>Created (UTC)</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {keys.map((k) => (
              <tr data-key={k.id} class={k.state === 'active' ? '' : 'muted'}>
                <td title={k.name ?? ''}>
                  <span class="clip">{k.name ?? '—'}</span>
                </td>
                <td class="mono">{k.id}</td>
                <td class="mono">{k.prefix}…</td>
                <td>{k.workspace}</td>
                <td data-testid="key-state">{k.state}</td>
                <td>{utc(k.expires_at)}</td>
                <td class="n">{k.rpm ?? '—'}</td>
                <td>{utc(k.created_at)}</td>
                <td class="actions">
                  {k.state !== 'revoked' && editing === k.id && (
                    <ExpiryForm
                      current={k.expires_at}
                      onSave={(date) => setExpiry(k, date)}
                      onCancel={() => setEditing(null)}
                    />
                  )}
                  {k.state !== 'revoked' && editing !== k.id && (
                    <>
                      <button type="button" data-testid="expiry-edit" onClick={() => setEditing(k.id)}>
                        Expiry…
                      </button>
                      <button type="button" class="danger" onClick={() => revoke(k)}>
                        Revoke
                      </button>
                    </>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </div>
  );
}

/** A form's post one at a time: a second submit while the first is out (a double click) is dropped,
 *  not sent again — it would credit the wallet twice or create a second key. The flag disables the
 *  form's button meanwhile. */
function useOneAtATime(): [boolean, (send: () => Promise<unknown>) => void] {
  const out = useRef(false);
  const [busy, setBusy] = useState(false);
  const once = (send: () => Promise<unknown>) => {
    if (out.current) return;
    out.current = true;
    setBusy(true);
    void send().finally(() => {
      out.current = false;
      setBusy(false);
    });
  };
  return [busy, once];
}

/** The rpm field as the server takes it: a number when the text is one, else the text itself, which
 *  the server refuses with its reason. JSON has no NaN: Number('60/min') would go as null, which the
 *  server takes as "no per-key limit" and creates a key without the limit the operator typed. */
function rpmOf(text: string): { rpm?: number | string } {
  const t = text.trim();
  if (t === '') return {};
  const n = Number(t);
  return { rpm: Number.isFinite(n) ? n : t };
}

/** The first day an expiry may fall on: tomorrow (UTC), since a date means 00:00 UTC that day and
 *  today's has passed. The server refuses any past time, whatever the page offers. */
function firstExpiryDay(): string {
  return new Date(Date.now() + 86_400_000).toISOString().slice(0, 10);
}

/** A key's expiry, edited in its row: a date (no past day offered), saved, cleared or left. */
function ExpiryForm(props: { current: string | null; onSave: (date: string | null) => void; onCancel: () => void }) {
  const shownDay = props.current?.slice(0, 10) ?? '';
  const [date, setDate] = useState(shownDay);
  return (
    <form
      class="inline expiry"
      data-testid="expiry-form"
      onSubmit={(e) => {
        e.preventDefault();
        // The day shown, saved unchanged, keeps the expiry's time: a key expiring at 15:00 UTC (set
        // through the API or the command line) is not moved to that day's 00:00.
        props.onSave(date === '' ? null : date === shownDay ? props.current : date);
      }}
    >
      <input
        type="date"
        name="expiry"
        aria-label="Expires on (00:00 UTC)"
        min={firstExpiryDay()}
        value={date}
        onInput={(e) => setDate((e.target as HTMLInputElement).value)}
      />
      <button type="submit">Save</button>
      {props.current !== null && (
        <button type="button" onClick={() => props.onSave(null)}>
          Clear
        </button>
      )}
      <button type="button" onClick={props.onCancel}>
        Cancel
      </button>
    </form>
  );
}
