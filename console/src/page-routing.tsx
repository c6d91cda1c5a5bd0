// Routing: for a workspace, a model (and fallbacks) and `provider` preferences, the deployments the
// router would try, in order, with each one's effective price, and the funnel of why the other
// providers were filtered — computed by the gateway's router (POST /admin/route-preview), no
// upstream called. A weighted tier is listed by share (the same on every click), with the shares.
import { useRef, useState } from 'preact/hooks';
import { type Meta, post, type Preview } from './api.ts';
import { pct, usd } from './format.ts';

export function RoutingPage(props: { meta: Meta }) {
  const m = props.meta;
  const [form, setForm] = useState({
    workspace: m.workspaces[0]?.id ?? '',
    model: m.models[0] ?? '',
    endpoint: 'chat_completions',
    fallbacks: '',
    provider: '',
  });
  const [preview, setPreview] = useState<Preview | null>(null);
  const [error, setError] = useState<string | null>(null);
  // The number of the last preview asked: only its answer is shown (an earlier, slower one would put
  // the route of the form before under the form as it is now).
  const asked = useRef(0);
  const submit = (e: Event) => {
    e.preventDefault();
    const n = ++asked.current;
    let provider: unknown = null;
    if (form.provider.trim() !== '') {
      try {
        provider = JSON.parse(form.provider);
      } catch {
        setError('provider must be a JSON object, e.g. {"order": ["alpha"], "sort": "price"}');
        return;
      }
    }
    const fallbacks = form.fallbacks.split(/[\s,]+/).filter(Boolean);
    post<Preview>('/admin/route-preview', {
      workspace: form.workspace,
      model: form.model,
      endpoint: form.endpoint,
      fallbacks,
      provider,
    }).then(
      (p) => {
        if (n !== asked.current) return;
        setPreview(p);
        setError(null);
      },
      (err: Error) => {
        if (n !== asked.current) return;
        setPreview(null);
        setError(err.message);
      },
    );
  };
  const set = (name: keyof typeof form) => (e: Event) =>
    setForm({ ...form, [name]: (e.target as HTMLInputElement).value });
  return (
    <section data-testid="page-routing">
      <h1>Route preview</h1>
      <form class="inline" onSubmit={submit} data-testid="route-form">
        <label>
          Workspace
          <select name="workspace" value={form.workspace} onChange={set('workspace')}>
            {m.workspaces.map((w) => (
              <option value={w.id}>{w.id}</option>
            ))}
          </select>
        </label>
        <label>
          Model
          <input name="model" list="models" value={form.model} onInput={set('model')} />
          <datalist id="models">
            {m.models.map((x) => (
              <option value={x} />
            ))}
          </datalist>
        </label>
        <label>
          Endpoint
          <select name="endpoint" value={form.endpoint} onChange={set('endpoint')}>
            {m.endpoints.map((x) => (
              <option value={x}>{x}</option>
            ))}
          </select>
        </label>
        <label>
          Fallback models
          <input name="fallbacks" value={form.fallbacks} placeholder="slug, slug" onInput={set('fallbacks')} />
        </label>
        <label class="wide">
          provider preferences (JSON)
          <input
            name="provider"
            value={form.provider}
            placeholder='{"order": ["alpha"], "allow_fallbacks": false}'
            onInput={set('provider')}
          />
        </label>
        <button type="submit">Preview</button>
      </form>
      {error && (
        <p class="error" data-testid="route-error">
          {error}
        </p>
      )}
      {preview && (
        <div data-testid="route-result">
          <p>
            {preview.eligible ? 'Attempt order' : 'No provider can serve this request'} · ordering within a tier:{' '}
            {preview.ordering === 'price'
              ? 'cheapest first'
              : 'drawn at random in proportion to weight; listed by share of the first place, largest first'}{' '}
            · at most {preview.max_attempts} attempts
          </p>
          {preview.models.map((mp) => (
            <div class="panel">
              <h2>{mp.model}</h2>
              <div class="scroll">
                <table class="grid" data-testid="route-table">
                  <thead>
                    <tr>
                      <th class="n">Attempt</th>
                      <th>Deployment</th>
                      <th>Provider</th>
                      <th>Upstream model</th>
                      <th class="n">Tier</th>
                      <th class="n">Weight (share)</th>
                      <th>Health</th>
                      <th class="n">Input / M tok</th>
                      <th class="n">Output / M tok</th>
                      <th class="n">Discount</th>
                    </tr>
                  </thead>
                  <tbody>
                    {mp.deployments.map((d) => (
                      <tr data-deployment={d.deployment} class={d.down ? 'bad' : ''}>
                        <td class="n">{d.attempt ?? '—'}</td>
                        <td>{d.deployment}</td>
                        <td>{d.provider}</td>
                        <td class="mono">{d.upstream_model}</td>
                        <td class="n">{d.tier}</td>
                        <td class="n">
                          {d.weight}
                          {d.share_of_tier === null ? '' : ` (${pct(d.share_of_tier)})`}
                        </td>
                        <td>{d.down ? `down (${d.breaker})` : d.breaker}</td>
                        <td class="n">{usd(d.price.prompt_usd_per_mtok)}</td>
                        <td class="n">{usd(d.price.completion_usd_per_mtok)}</td>
                        <td class="n">{d.price.discount_percent === null ? '—' : `${d.price.discount_percent}%`}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
              <h3>Funnel</h3>
              <ol class="funnel" data-testid="funnel">
                {mp.funnel.map((s) => (
                  <li>
                    <strong>{s.stage}</strong>: {s.remaining} provider{s.remaining === 1 ? '' : 's'} left
                    {s.removed.length > 0 && (
                      <ul>
                        {s.removed.map((r) => (
                          <li>
                            {r.provider}: {r.reason}
                          </li>
                        ))}
                      </ul>
                    )}
                  </li>
                ))}
              </ol>
            </div>
          ))}
        </div>
      )}
    </section>
  );
}
