// A page's state in the URL's hash (`#requests?trace=…&before=…&open=…`): what an operator sees can
// be reloaded, bookmarked and pasted to a colleague. Pages read it with `useHashParams` and change it
// with `navigate`; the browser's back button walks the pushed steps.
import { useEffect, useState } from 'preact/hooks';

export type Params = Record<string, string>;

/** The hash's parameters (after `#page?`). */
export function hashParams(): Params {
  const hash = location.hash;
  const at = hash.indexOf('?');
  const out: Params = {};
  if (at === -1) return out;
  for (const [k, v] of new URLSearchParams(hash.slice(at + 1))) if (v !== '') out[k] = v;
  return out;
}

/** `#page?k=v…` of the non-empty parameters. */
export function hashOf(page: string, params: Params): string {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== '') p.set(k, v);
  const s = p.toString();
  return `#${page}${s ? `?${s}` : ''}`;
}

const CHANGED = 'pi-hash-params';

/** Writes the page's parameters into the URL: `push` adds a step to the history (back undoes it),
 *  otherwise the current step is replaced (typing in a filter is not a step). */
export function navigate(page: string, params: Params, push: boolean): void {
  const hash = hashOf(page, params);
  if (hash === location.hash) return;
  if (push) history.pushState(null, '', hash);
  else history.replaceState(null, '', hash);
  dispatchEvent(new Event(CHANGED));
}

/** The hash's parameters, kept current across `navigate`, back/forward and a pasted URL. */
export function useHashParams(): Params {
  const [params, setParams] = useState<Params>(hashParams);
  useEffect(() => {
    const on = () => setParams(hashParams());
    for (const e of [CHANGED, 'popstate', 'hashchange']) addEventListener(e, on);
    return () => {
      for (const e of [CHANGED, 'popstate', 'hashchange']) removeEventListener(e, on);
    };
  }, []);
  return params;
}
