// How many bytes of request bodies one server (one serving thread) holds while they arrive. Every
// body is bounded on its own (`limits.max_body_bytes`), but not their sum: a JSON body is read whole
// before the key is checked, so connections that each send most of a body and then trickle the rest
// would pin that memory without a key, a few hundred of them a gigabyte. (A streamed body — an image
// edit's upload — is not counted: its handler checks the key before reading it, and until then the
// server holds at most the stream's high-water mark of it, the socket paused.)
// Past the budget a body that is still arriving is refused (`503`, Retry-After: 1) and its bytes
// let go; a body alone in transit always proceeds (its own cap bounds it), so a budget below the
// largest body never starves it. A body counts from its first byte until it is whole, refused or
// abandoned: a complete body belongs to its request, whose key is then checked at once.
import { GatewayError } from '../errors.ts';

/** The answer to a body the budget refused (as when the ledger writer is behind: retry shortly). */
export function budgetSpent(): GatewayError {
  return new GatewayError(
    'provider_unavailable',
    'the gateway is receiving more request bodies at once than it holds; retry shortly',
    { headers: [['Retry-After', '1']] },
  );
}

export class BodyBudget {
  private inTransit = 0;
  private readonly limit: () => number;

  /** `limit` is read at each chunk: a config reload changes it for bodies already arriving too. */
  constructor(limit: () => number) {
    this.limit = limit;
  }

  /**
   * Counts `bytes` more for a body that holds `held` already; false when that would pass the budget
   * while other bodies hold part of it (nothing is counted then).
   */
  take(bytes: number, held: number): boolean {
    const next = this.inTransit + bytes;
    if (next > this.limit() && this.inTransit > held) return false;
    this.inTransit = next;
    return true;
  }

  /** A body is whole, refused or abandoned: what it held is free again. */
  give(bytes: number): void {
    this.inTransit -= bytes;
  }

  /** Bytes of bodies arriving now (metrics, tests). */
  get bytes(): number {
    return this.inTransit;
  }
}
