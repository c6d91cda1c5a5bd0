// Where access-log lines go: a sink that batches the lines of one event-loop turn into one write (one
// syscall instead of one per request), and flushes what is left on close.

export interface LineSink {
  /** One line without its newline. */
  write(line: string): void;
  /** Writes whatever is buffered now. */
  flush(): void;
}

/** The writable a BufferedLines sink writes to (process.stdout, or a file's stream). */
export interface TextOut {
  write(text: string): unknown;
}

/** Above this many buffered bytes a turn's lines are written at once instead of at its end. */
const MAX_BUFFERED = 64 * 1024;

export class BufferedLines implements LineSink {
  private lines: string[] = [];
  private bytes = 0;
  private scheduled = false;

  constructor(private readonly out: TextOut) {}

  write(line: string): void {
    this.lines.push(line);
    this.bytes += line.length + 1;
    if (this.bytes >= MAX_BUFFERED) this.flush();
    else if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(this.onTurnEnd);
    }
  }

  flush(): void {
    if (this.lines.length === 0) return;
    const text = this.lines.join('\n') + '\n';
    this.lines = [];
    this.bytes = 0;
    this.out.write(text);
  }

  private readonly onTurnEnd = (): void => {
    this.scheduled = false;
    this.flush();
  };
}
