// The environment for a program that cannot run under a preloaded clock library. The suite is also
// run with the clock a year ahead through libfaketime (docs/ARCHITECTURE.md, "Tests"), and
// libfaketime stops redis-server at start and stalls Chromium: those two keep the real clock (Redis
// decides rate windows by its own clock, and the browser is only a client of the faked gateway).
export function realClockEnv(env: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  const out: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(env)) if (k !== 'LD_PRELOAD') out[k] = v;
  return out;
}
