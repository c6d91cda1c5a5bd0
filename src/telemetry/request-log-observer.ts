// The request-log writer as a request observer: each finished inference request's row goes to the
// store's request log (batched there; `pi-gateway logs` reads it). It has nothing to do before the end.
import { IGNORED_ATTEMPT, type RequestObserver, type RequestWatch } from '../observe/observer.ts';
import type { RequestLog } from '../store/sqlite/store.ts';

export function requestLogObserver(log: Pick<RequestLog, 'append'>): RequestObserver {
  // One watch for every request: it keeps no per-request state. `log.append` is looked up at each
  // call, so a benchmark that stubs the store's append still takes this path.
  const watch: RequestWatch = {
    read: () => undefined,
    attempt: () => IGNORED_ATTEMPT,
    end: (s) => log.append(s.row),
  };
  return { begin: () => watch };
}
