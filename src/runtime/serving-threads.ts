// The serving threads of `serve --workers N` as the coordinator runs them: spawns them on the port
// it checked, routes their state calls to the Coordinator, fans drain, reload and metrics scrapes
// out to all of them, and restarts a thread that ended unexpectedly (after its open holds were
// released: none of its requests can settle any more).
import type { Worker } from 'node:worker_threads';
import type { DrainReport } from '../api/lifecycle.ts';
import type { CompiledConfig } from '../config/compiled.ts';
import { siblingModule, spawnThread } from '../thread.ts';
import type { Coordinator } from '../workers/coordinator.ts';
import type { CoordinatorMessage, WorkerMessage, WorkerStart } from '../workers/protocol.ts';

export type ThreadState = 'starting' | 'ready' | 'draining' | 'exited';

export interface ThreadSample {
  worker: number;
  state: ThreadState;
  ready: boolean;
  restarts: number;
  threadId: number | null;
}

interface Thread {
  worker: number;
  thread: Worker | null;
  state: ThreadState;
  restarts: number;
  drained: DrainReport | null;
  waiters: Map<string, (m: WorkerMessage) => void>;
}

/** How long a scrape waits for a worker's metrics. */
const METRICS_WAIT_MS = 2_000;
/** How long a thread told to stop now may take to close its connections. */
const STOP_WAIT_MS = 2_000;
/** Pause before a thread that ended unexpectedly is started again. */
const RESTART_DELAY_MS = 250;

export class ServingThreads {
  private readonly threads: Thread[] = [];
  private draining = false;
  private nextScrape = 1;

  private readonly coordinator: Coordinator;
  private readonly startData: (worker: number) => WorkerStart;
  private readonly log: (event: string, fields?: Record<string, unknown>) => void;
  private readonly entry: URL;
  constructor(
    coordinator: Coordinator,
    /** The thread's start data; `config` and `breakers` as of now (a restart gets the current ones). */
    startData: (worker: number) => WorkerStart,
    log: (event: string, fields?: Record<string, unknown>) => void,
    /** The thread's module (tests start a stand-in). */
    entry: URL = siblingModule('serving-thread', import.meta.url),
  ) {
    this.coordinator = coordinator;
    this.startData = startData;
    this.log = log;
    this.entry = entry;
  }

  /** Starts `count` threads and resolves once every one listens; rejects (all stopped) when one cannot. */
  async start(count: number): Promise<void> {
    for (let w = 1; w <= count; w++)
      this.threads.push({ worker: w, thread: null, state: 'starting', restarts: 0, drained: null, waiters: new Map() });
    try {
      await Promise.all(this.threads.map((t) => this.spawn(t)));
    } catch (err) {
      this.draining = true;
      await this.stopNow();
      throw err;
    }
  }

  samples(): ThreadSample[] {
    return this.threads.map((t) => ({
      worker: t.worker,
      state: t.state,
      ready: t.state === 'ready',
      restarts: t.restarts,
      threadId: t.thread?.threadId ?? null,
    }));
  }

  /** Workers that may take a half-open probe now. */
  readyWorkers(): number[] {
    return this.threads.filter((t) => t.state === 'ready').map((t) => t.worker);
  }

  /** Every ready thread's metrics as JSON (null for one that did not answer in time). */
  collectMetrics(): Promise<{ worker: number; json: unknown[] | null }[]> {
    return Promise.all(
      this.threads
        .filter((t) => t.state === 'ready')
        .map(async (t) => {
          const id = this.nextScrape++;
          const m = await this.ask(t, { kind: 'metrics', id }, `metrics:${id}`, METRICS_WAIT_MS);
          return { worker: t.worker, json: m?.kind === 'metrics' ? m.json : null };
        }),
    );
  }

  /** Sends the new config to every serving thread; resolves with what only a restart applies. */
  async reload(config: CompiledConfig): Promise<string[]> {
    const answers = await Promise.all(
      this.threads
        .filter((t) => t.state === 'ready')
        .map((t) => this.ask(t, { kind: 'reload', config }, 'reload', null)),
    );
    for (const a of answers) if (a?.kind === 'reloaded') return a.restartNeeded;
    return [];
  }

  /** Drains every thread (each stops accepting, finishes or ends its requests) and waits for them to end. */
  async drain(deadlineMs: number | null): Promise<DrainReport> {
    this.draining = true;
    const started = Date.now();
    await Promise.all(
      this.threads.map(async (t) => {
        if (!t.thread || t.state === 'exited') return;
        const ended = new Promise<void>((resolve) => t.thread?.once('exit', () => resolve()));
        t.state = 'draining';
        t.thread.postMessage({ kind: 'drain', deadlineMs } satisfies CoordinatorMessage);
        await ended;
      }),
    );
    const reports = this.threads.map((t) => t.drained).filter((r): r is DrainReport => r !== null);
    return {
      inFlightAtStart: reports.reduce((n, r) => n + r.inFlightAtStart, 0),
      endedAtDeadline: reports.reduce((n, r) => n + r.endedAtDeadline, 0),
      unfinished: reports.reduce((n, r) => n + r.unfinished, 0),
      ms: Date.now() - started,
    };
  }

  /**
   * Stops every thread at once (a second signal): each closes its connections and ends (a thread
   * must close uWS itself: one ended from outside with a listening app aborts the process); one that
   * has not ended within STOP_WAIT_MS is terminated. Holds still open are released at the next start.
   */
  async stopNow(): Promise<void> {
    this.draining = true;
    await Promise.all(
      this.threads.map(async (t) => {
        const thread = t.thread;
        if (!thread || t.state === 'exited') return;
        const ended = new Promise<boolean>((resolve) => {
          thread.once('exit', () => resolve(true));
          setTimeout(() => resolve(false), STOP_WAIT_MS).unref();
        });
        thread.postMessage({ kind: 'stop-now' } satisfies CoordinatorMessage);
        if (!(await ended)) await thread.terminate();
      }),
    );
  }

  private spawn(t: Thread): Promise<void> {
    const thread = spawnThread(this.entry, { workerData: this.startData(t.worker) });
    t.thread = thread;
    t.state = 'starting';
    this.coordinator.attach(t.worker, thread);
    return new Promise<void>((resolve, reject) => {
      let started = false;
      thread.on('message', (m: WorkerMessage) => {
        if (m.kind === 'calls') return this.coordinator.handle(t.worker, m.calls);
        if (m.kind === 'listening') {
          started = true;
          t.state = this.draining ? 'draining' : 'ready';
          return resolve();
        }
        if (m.kind === 'start-failed') return reject(new Error(`serving thread ${t.worker}: ${m.error}`));
        if (m.kind === 'drained') t.drained = m.report;
        const key = m.kind === 'metrics' ? `metrics:${m.id}` : m.kind === 'reloaded' ? 'reload' : null;
        if (key !== null) t.waiters.get(key)?.(m);
      });
      thread.on('error', (err) => {
        this.log('worker_failed', { worker: t.worker, error: err.message });
        if (!started) reject(err);
      });
      thread.on('exit', (code) => this.exited(t, thread, code, started));
    });
  }

  private exited(t: Thread, thread: Worker, code: number, started: boolean): void {
    if (t.thread !== thread) return;
    t.state = 'exited';
    for (const w of t.waiters.values()) w({ kind: 'start-failed', error: 'exited' });
    t.waiters.clear();
    const released = this.coordinator.detach(t.worker);
    if (this.draining || !started) return;
    // Unexpected: its requests died with it; their holds are released, and it is started again.
    t.restarts++;
    this.log('worker_exited', { worker: t.worker, code, holds_released: released, restart: t.restarts });
    const again = () => {
      if (this.draining) return;
      this.spawn(t).catch((err: unknown) => {
        this.log('worker_restart_failed', {
          worker: t.worker,
          error: err instanceof Error ? err.message : String(err),
        });
        setTimeout(again, 4 * RESTART_DELAY_MS).unref();
      });
    };
    setTimeout(again, RESTART_DELAY_MS).unref();
  }

  /** Posts `m` and waits for the answer filed under `key` (null after `waitMs`, or when the thread ends). */
  private ask(t: Thread, m: CoordinatorMessage, key: string, waitMs: number | null): Promise<WorkerMessage | null> {
    const thread = t.thread;
    if (!thread) return Promise.resolve(null);
    return new Promise((resolve) => {
      const timer = waitMs === null ? null : setTimeout(() => done(null), waitMs);
      const done = (answer: WorkerMessage | null) => {
        if (timer) clearTimeout(timer);
        t.waiters.delete(key);
        resolve(answer);
      };
      t.waiters.set(key, done);
      thread.postMessage(m);
    });
  }
}
