// A connection to Redis (node-redis) — one per gateway process, and on a `--workers` fleet node one
// more per serving thread (its rate decisions) — for the state every node shares: rate-limit windows
// and session pins. Commands never queue while Redis is away (offline queue off) and each has a
// short timeout, so a request never waits on a dead Redis: the caller falls back at once (see
// ./shared-limits.ts for what it falls back to and why). The client reconnects by itself in the background;
// `up` says whether the last command got through.
import { createHash } from 'node:crypto';
import { createClient, TimeoutError } from 'redis';

/** A command that takes longer than this counts as Redis being unreachable. */
export const REDIS_COMMAND_TIMEOUT_MS = 250;
/** Reconnect attempts back off up to this. */
const MAX_RECONNECT_DELAY_MS = 1_000;

export class RedisUnavailableError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message);
    this.name = 'RedisUnavailableError';
    if (options) this.cause = options.cause;
  }
}

type Reply = string | number | null | Reply[];

export interface RedisConnectionOptions {
  /** Transitions only: unreachable → reachable and back (never once per request). */
  onStatus?: (up: boolean, detail: string) => void;
  commandTimeoutMs?: number;
}

export class RedisConnection {
  private readonly client: ReturnType<typeof createClient>;
  private readonly timeoutMs: number;
  private connected: Promise<unknown> | null = null;
  private lastUp: boolean | null = null;
  /** The last command timed out on an open connection: Redis holds it but does not answer. */
  private stalled = false;
  /** While stalled, the one command that tries Redis again is on its way. */
  private probing = false;
  private readonly shas = new Map<string, string>();
  private closed = false;

  readonly url: string;
  private readonly opts: RedisConnectionOptions;
  constructor(url: string, opts: RedisConnectionOptions = {}) {
    this.url = url;
    this.opts = opts;
    this.timeoutMs = opts.commandTimeoutMs ?? REDIS_COMMAND_TIMEOUT_MS;
    this.client = createClient({
      url,
      disableOfflineQueue: true,
      socket: {
        connectTimeout: 1_000,
        reconnectStrategy: (retries: number) => Math.min(50 * (retries + 1), MAX_RECONNECT_DELAY_MS),
      },
    });
    // Without a listener an 'error' event would crash the process; the status transition is logged.
    this.client.on('error', (err: unknown) => this.mark(false, err instanceof Error ? err.message : String(err)));
    this.client.on('ready', () => {
      this.stalled = false;
      this.mark(true, 'connected');
    });
  }

  /** Starts connecting (and keeps reconnecting); resolves once connected or after `waitMs`. */
  async start(waitMs = 2_000): Promise<boolean> {
    this.connected ??= this.client.connect().catch(() => undefined);
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([this.connected, new Promise((r) => (timer = setTimeout(r, waitMs)))]);
    clearTimeout(timer);
    return this.client.isReady;
  }

  get up(): boolean {
    return this.client.isReady && this.lastUp !== false;
  }

  /** Runs a Lua script (EVALSHA, loading it on NOSCRIPT). Throws RedisUnavailableError when Redis does not answer. */
  async script(source: string, keys: readonly string[], args: readonly string[]): Promise<Reply> {
    const sha = this.sha(source);
    try {
      return await this.send(['EVALSHA', sha, String(keys.length), ...keys, ...args]);
    } catch (err) {
      if (!(err instanceof Error) || !/NOSCRIPT/.test(err.message)) throw err;
      return this.send(['EVAL', source, String(keys.length), ...keys, ...args]);
    }
  }

  async command(args: readonly string[]): Promise<Reply> {
    return this.send(args);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    try {
      // Replies still awaited are of commands already timed out (a drain closes after its last
      // request): waiting for them would wait for ever on a Redis that stopped answering.
      this.client.destroy();
    } catch {
      // Already gone.
    }
  }

  private async send(args: readonly string[]): Promise<Reply> {
    if (!this.client.isReady) {
      this.mark(false, 'not connected');
      throw new RedisUnavailableError('Redis is not connected');
    }
    // A Redis that holds the connection open without answering gets one command at a time: the
    // others fall back at once instead of each waiting its timeout and piling up in the client's
    // queue (at a thousand requests a second, a minute's stall would queue sixty thousand).
    const probe = this.stalled;
    if (probe) {
      if (this.probing) throw new RedisUnavailableError('Redis did not answer in time; one command at a time tries it');
      this.probing = true;
    }
    try {
      const r = await this.answerWithin([...args]);
      this.stalled = false;
      this.mark(true, 'command answered');
      return r as unknown as Reply;
    } catch (err) {
      // A script error (a bug, a wrong type) is an answer; anything else is Redis being away.
      if (err instanceof Error && /ERR|WRONGTYPE|NOSCRIPT/.test(err.message) && !/timeout/i.test(err.message)) {
        this.stalled = false;
        throw err;
      }
      // No reply in time (ours), or not even written in time (the client's: a socket that does not
      // drain): Redis holds the connection without taking or answering commands.
      const late = err instanceof CommandTimeout || err instanceof TimeoutError;
      if (late) this.stalled = true;
      const detail = late ? `no answer within ${this.timeoutMs} ms` : err instanceof Error ? err.message : String(err);
      this.mark(false, detail);
      throw new RedisUnavailableError(`Redis is unreachable: ${detail}`, { cause: err });
    } finally {
      if (probe) this.probing = false;
    }
  }

  /**
   * The command's reply, or a timeout error after `timeoutMs`. Timed here, not by node-redis: its
   * `timeout` stops counting once the command is written, so a Redis that keeps the connection open
   * but does not answer (stalled, or a path that drops packets) would hold the caller for ever.
   */
  private answerWithin(args: string[]): Promise<unknown> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new CommandTimeout(this.timeoutMs)), this.timeoutMs);
    });
    const reply = this.client.sendCommand(args, { timeout: this.timeoutMs });
    // A reply (or failure) that comes after the timeout is nobody's: it must not be unhandled.
    reply.catch(() => undefined);
    return Promise.race([reply, late]).finally(() => clearTimeout(timer));
  }

  private sha(source: string): string {
    let s = this.shas.get(source);
    if (!s) this.shas.set(source, (s = createHash('sha1').update(source).digest('hex')));
    return s;
  }

  private mark(up: boolean, detail: string): void {
    if (this.lastUp === up || this.closed) return;
    const first = this.lastUp === null;
    this.lastUp = up;
    if (!(first && up)) this.opts.onStatus?.(up, detail);
  }
}

/** No reply within the command timeout, on a connection still open. */
class CommandTimeout extends Error {
  constructor(ms: number) {
    super(`command timeout after ${ms} ms`);
  }
}
