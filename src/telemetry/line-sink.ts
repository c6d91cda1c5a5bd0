// Where access-log lines go: a sink that encodes lines into a buffer as they come and writes it out
// every `flushMs` (default 100 ms) or as soon as 64 KiB are waiting — one write syscall per hundreds
// of requests, and each line encoded once (joining a batch of strings first, then encoding the
// whole, cost twice as much). flush() writes what is waiting (shutdown); a process killed outright
// loses at most the last `flushMs` of lines (the request log, the record of money, is apart).

export interface LineSink {
  /** One line without its newline. */
  write(line: string): void;
  /** Writes whatever is buffered now. */
  flush(): void;
}

/** The writable a BufferedLines sink writes to (process.stdout, or a file). It may keep the bytes
 *  it is given: the sink never reuses a buffer it handed over. */
export interface TextOut {
  write(bytes: Uint8Array): unknown;
}

const CAPACITY = 64 * 1024;
const DEFAULT_FLUSH_MS = 100;
const NEWLINE = 0x0a;

export class BufferedLines implements LineSink {
  private buf = Buffer.allocUnsafe(CAPACITY);
  private used = 0;
  private timer: NodeJS.Timeout | null = null;

  private readonly out: TextOut;
  private readonly flushMs: number;
  constructor(out: TextOut, flushMs = DEFAULT_FLUSH_MS) {
    this.out = out;
    this.flushMs = flushMs;
  }

  write(line: string): void {
    // A UTF-16 code unit takes at most 3 bytes in UTF-8: make sure the whole line fits.
    const worst = line.length * 3 + 1;
    if (this.used + worst > CAPACITY) {
      this.flush();
      if (worst > CAPACITY) {
        this.out.write(Buffer.from(`${line}\n`));
        return;
      }
    }
    this.used += this.buf.write(line, this.used);
    this.buf[this.used++] = NEWLINE;
    if (this.timer === null) {
      this.timer = setTimeout(this.onTimer, this.flushMs);
      // Buffered lines never keep the process alive; shutdown flushes them.
      this.timer.unref();
    }
  }

  flush(): void {
    if (this.timer !== null) {
      clearTimeout(this.timer);
      this.timer = null;
    }
    if (this.used === 0) return;
    const bytes = this.buf.subarray(0, this.used);
    this.buf = Buffer.allocUnsafe(CAPACITY);
    this.used = 0;
    this.out.write(bytes);
  }

  private readonly onTimer = (): void => {
    this.timer = null;
    this.flush();
  };
}
