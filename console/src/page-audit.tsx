// Audit: the append-only trail of every admin write and every sign-in (ok or failed) — who (an
// operator's name, or "token" for the shared operator token), when, what and to what, from which
// address, how it ended — newest first, paged back 50 at a time.
import { useEffect, useState } from 'preact/hooks';
import { get, qs } from './api.ts';
import { utc } from './format.ts';

export interface AuditEntry {
  id: number;
  time: string;
  actor: string;
  action: string;
  target: string | null;
  client: string | null;
  outcome: string;
  detail: Record<string, unknown> | null;
}

interface AuditAnswer {
  entries: AuditEntry[];
  next_before: number | null;
}

const PAGE = 50;

export function AuditPage() {
  /** The `before` cursor of each page shown so far (undefined: the newest). */
  const [cursors, setCursors] = useState<(number | undefined)[]>([undefined]);
  const [page, setPage] = useState<AuditAnswer | null>(null);
  const [error, setError] = useState<string | null>(null);
  const before = cursors[cursors.length - 1];
  useEffect(() => {
    setError(null);
    // Only the page asked last is shown: an earlier, slower answer arrives to nothing.
    let current = true;
    get<AuditAnswer>(`/admin/audit${qs({ limit: PAGE, before })}`).then(
      (a) => current && setPage(a),
      (e: Error) => {
        if (!current) return;
        setPage(null);
        setError(e.message);
      },
    );
    return () => {
      current = false;
    };
  }, [before]);
  return (
    <section data-testid="page-audit">
      <h1>Audit</h1>
      {error && <p class="error">{error}</p>}
      {page && (
        <>
          <table class="grid" data-testid="audit-table">
            <thead>
              <tr>
                <th>Time (UTC)</th>
                <th>Who</th>
                <th>Action</th>
                <th>Target</th>
                <th>From</th>
                <th>Outcome</th>
                <th>Detail</th>
              </tr>
            </thead>
            <tbody>
              {page.entries.map((e) => (
                <tr key={e.id}>
                  <td>{utc(e.time)}</td>
                  <td>{e.actor}</td>
                  <td class="mono">{e.action}</td>
                  <td class="mono">{e.target ?? '—'}</td>
                  <td class="mono">{e.client ?? '—'}</td>
                  <td class={e.outcome === 'ok' ? 'ok' : 'error'}>{e.outcome}</td>
                  <td class="mono">{e.detail === null ? '' : JSON.stringify(e.detail)}</td>
                </tr>
              ))}
            </tbody>
          </table>
          {page.entries.length === 0 && <p class="boot">Nothing recorded yet.</p>}
        </>
      )}
      {/* Under an error too: a page that failed to load is left with Newer, not only with a reload. */}
      <div class="pager">
        <button
          type="button"
          data-testid="audit-newer"
          disabled={cursors.length === 1}
          onClick={() => setCursors(cursors.slice(0, -1))}
        >
          Newer
        </button>
        <button
          type="button"
          data-testid="audit-older"
          disabled={!page || page.next_before === null}
          onClick={() => page && page.next_before !== null && setCursors([...cursors, page.next_before])}
        >
          Older
        </button>
      </div>
    </section>
  );
}
