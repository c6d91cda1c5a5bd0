// Starting the processes of a benchmark and measuring one contender: the simulator on core 1 (with
// the load generator), every process under test on core 0. CPU time of the process under test is
// read from /proc around the measurement window only.
import {
  BENCH_DIR,
  CORES,
  TASKSET,
  TREE,
  affinity,
  cpuSplitUs,
  cpuUs,
  memKb,
  selfCpuUs,
  startNode,
  startupV8Flags,
} from './proc.mjs';
import { buildRequest, closedLoop, openLoop, streamLoop } from './load.mjs';
import { join } from 'node:path';

export const SUT_CORE = 0;
export const GEN_CORE = 1;

export function target(url) {
  const u = new URL(url);
  return { host: u.hostname, port: Number(u.port), hostHeader: `${u.hostname}:${u.port}`, url: u.origin };
}

export function startSimulator(name = 'simulator') {
  return startNode(name, { core: GEN_CORE, args: ['bench/servers/simulator.mjs'] });
}

/** A gateway under test on `core` (SUT_CORE), with its tree's start-up V8 flags (startupV8Flags) first. */
export async function startGateway(
  name,
  { upstream, seal = 'local-sim', store = 'wal', nodeArgs = [], env = {}, args = [], core = SUT_CORE },
) {
  return startNode(name, {
    core,
    nodeArgs: [...(await startupV8Flags(env.PI_BENCH_TREE ?? TREE)), ...nodeArgs],
    env,
    args: ['bench/servers/gateway.mjs', '--upstream', upstream, '--seal', seal, '--store', store, ...args],
  });
}

export function startPassthrough(upstream, name = 'passthrough') {
  return startNode(name, { core: SUT_CORE, args: ['bench/passthrough.mjs', '--upstream', upstream] });
}

export function startPortkey(name = 'portkey') {
  return startNode(name, {
    core: SUT_CORE,
    cwd: join(BENCH_DIR, 'portkey'),
    args: ['start.mjs', '--headless'],
    readyTimeoutMs: 60_000,
  });
}

export async function scriptSim(simUrl, model, behaviour) {
  const r = await fetch(`${simUrl}/_sim/script`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model, behaviour }),
  });
  if (!r.ok) throw new Error(`scripting the simulator failed: ${r.status} ${await r.text()}`);
}

/** A POST /v1/chat/completions request to `t` with contender-specific headers. */
export function chatRequest(t, headers, body) {
  return buildRequest({
    method: 'POST',
    host: t.hostHeader,
    path: '/v1/chat/completions',
    headers: { 'Content-Type': 'application/json', ...headers },
    body,
  });
}

/** CPU hooks around a measurement window: the process under test, the simulator, and this process. */
function cpuHooks(sutPid, simPid) {
  const s = {};
  return {
    s,
    hooks: {
      start() {
        s.t0 = performance.now();
        s.sut0 = sutPid ? cpuUs(sutPid) : 0;
        s.sys0 = sutPid ? cpuSplitUs(sutPid).sysUs : 0;
        s.sim0 = simPid ? cpuUs(simPid) : 0;
        s.gen0 = selfCpuUs();
      },
      end() {
        const wallUs = (performance.now() - s.t0) * 1000;
        s.sutUs = sutPid ? cpuUs(sutPid) - s.sut0 : NaN;
        s.sutSysShare = sutPid ? (cpuSplitUs(sutPid).sysUs - s.sys0) / s.sutUs : NaN;
        s.simUs = simPid ? cpuUs(simPid) - s.sim0 : NaN;
        s.genUs = selfCpuUs() - s.gen0;
        s.sutUtil = s.sutUs / wallUs;
        s.simUtil = s.simUs / wallUs;
        s.genUtil = s.genUs / wallUs;
      },
    },
  };
}

function cpuFields(s, per) {
  return {
    sutCpuUs: s.sutUs,
    sutUtil: s.sutUtil,
    sutSysShare: s.sutSysShare,
    simUtil: s.simUtil,
    genUtil: s.genUtil,
    core1Util: s.simUtil + s.genUtil,
    sutCpuUsPerUnit: per > 0 ? s.sutUs / per : NaN,
  };
}

/** Closed-loop throughput of one contender, with CPU µs per request of its process. */
export async function measureThroughput(c, { simPid, conns, warmupMs, durationMs }) {
  const { s, hooks } = cpuHooks(c.pid, c.pid === simPid ? null : simPid);
  const r = await closedLoop({ target: c.target, req: c.req, conns, warmupMs, durationMs, hooks });
  return { ...r, ...cpuFields(s, r.ok) };
}

/** Open loop at `rate`; `onStart` runs when the warm-up is over and the measured window begins. */
export async function measureLatency(c, { simPid, rate, conns, warmupMs, durationMs, onStart = null }) {
  const { s, hooks } = cpuHooks(c.pid, c.pid === simPid ? null : simPid);
  const start = hooks.start;
  if (onStart)
    hooks.start = async () => {
      await onStart();
      start();
    };
  const r = await openLoop({ target: c.target, req: c.req, rate, conns, warmupMs, durationMs, hooks });
  return { ...r, ...cpuFields(s, r.ok) };
}

export async function measureStreams(c, { simPid, streams, warmupMs, durationMs, expectEvents }) {
  const { s, hooks } = cpuHooks(c.pid, c.pid === simPid ? null : simPid);
  const r = await streamLoop({
    target: c.target,
    req: c.streamReq,
    streams,
    warmupMs,
    durationMs,
    hooks,
    expectEvents,
  });
  return { ...r, ...cpuFields(s, r.events) };
}

export function placement(procs) {
  const out = { taskset: TASKSET, cores: CORES, loadgen: affinity(process.pid) };
  for (const [k, p] of Object.entries(procs)) if (p) out[k] = affinity(p.pid);
  return out;
}

export function memOf(procs) {
  const out = {};
  for (const [k, p] of Object.entries(procs)) if (p) out[k] = memKb(p.pid);
  return out;
}
