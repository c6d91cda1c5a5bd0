// The last N requests the simulator received (a capped list; `record: false` keeps nothing), for
// tests to assert what the gateway sent upstream.

export interface RecordedRequest {
  /** Uppercase method. */
  method: string;
  /** URL path as sent, without the query string. */
  path: string;
  query: string;
  /** Lowercase header names; repeated headers joined with ", ". */
  headers: Record<string, string>;
  /** Parsed JSON; for multipart `{fields, files: [{name, filename, size, contentType}]}`; null when unparseable. */
  body: unknown;
  rawBody: Buffer;
  /** Arrival time, milliseconds since the epoch. */
  at: number;
}

export class Recorder {
  /** Oldest first. The same array for the simulator's lifetime (cleared in place). */
  readonly requests: RecordedRequest[] = [];
  readonly enabled: boolean;
  private readonly max: number;

  constructor(enabled: boolean, max: number) {
    this.enabled = enabled && max > 0;
    this.max = max;
  }

  add(r: RecordedRequest): void {
    if (!this.enabled) return;
    const list = this.requests;
    list.push(r);
    // shift() is O(1) on V8 fast arrays (left-trimming); splice would copy the whole list.
    while (list.length > this.max) list.shift();
  }

  clear(): number {
    const n = this.requests.length;
    this.requests.length = 0;
    return n;
  }

  /** The JSON `GET /_sim/requests` returns: every recorded request without `rawBody`. */
  toJson(): string {
    return JSON.stringify(this.requests.map(({ rawBody: _raw, ...rest }) => rest));
  }
}
