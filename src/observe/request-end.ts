// How one request ended, as the request log, the access log, metrics and traces record it. One value
// per request, decided once where the request finishes (src/api/), from what its attempts reported.
//
//   completed      the answer reached its normal end (a whole JSON body, or a stream's end marker)
//   client_abort   the client went away (before or after the commit point)
//   upstream_cut   a committed stream broke on the provider's side (reset, malformed frame, its
//                  own error event, ended before its end marker)
//   idle_timeout   a committed stream went silent longer than the stall limit
//   write_stall    the client stopped reading a stream for longer than the write-stall limit
//   drained        the gateway was shutting down and the drain deadline passed
//   failed         nothing was committed: every attempt failed, or a provider's error was passed on
//   rejected       the gateway refused the request before any provider was called (auth, rate
//                  limit, balance, validation, no eligible provider)
export const REQUEST_ENDS = [
  'completed',
  'client_abort',
  'upstream_cut',
  'idle_timeout',
  'write_stall',
  'drained',
  'failed',
  'rejected',
] as const;

export type RequestEnd = (typeof REQUEST_ENDS)[number];

export function isRequestEnd(v: string): v is RequestEnd {
  return (REQUEST_ENDS as readonly string[]).includes(v);
}
