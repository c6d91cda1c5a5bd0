// One upstream attempt: send the request, read the provider's answer, and decide when to commit.
// Nothing reaches the client before the commit point — the first content event of a stream, or a
// whole valid JSON answer — so everything earlier (connect errors, resets, timeouts, 5xx, in-band
// errors, preamble-only streams) can still fail over invisibly. After the commit, bytes are relayed
// as they arrive, with backpressure both ways, and a broken stream ends with the protocol's own error
// event, never with its normal end marker.
import { gunzipSync, brotliDecompressSync, inflateSync } from 'node:zlib';
import type { HeaderList, Reply } from '../http/reply.ts';
import type { Usage } from '../billing/usage.ts';
import type { ProtocolModule, StreamTap, TapHints } from '../protocols/types.ts';
import { isBlankOrComment, SseSplitter } from '../stream/sse-splitter.ts';
import type { UpstreamCall, UpstreamClient, UpstreamControl } from '../upstream/client.ts';
import { forwardedHeaders, upstreamRequestId } from '../upstream/response-headers.ts';
import { findStringValue, readString } from '../stream/json-key.ts';

export interface AttemptLimits {
  firstByteTimeoutMs: number;
  streamIdleTimeoutMs: number;
  preambleMaxBytes: number;
  maxUpstreamBodyBytes: number;
}

export interface AttemptInput {
  client: UpstreamClient;
  call: UpstreamCall;
  protocol: ProtocolModule;
  /** The slug as a JSON string, spliced into `model` fields. */
  slugJson: Buffer;
  reply: Reply;
  limits: AttemptLimits;
  /** X-Pi-Provider and X-Pi-Model for this attempt. */
  identity: HeaderList;
  /** Estimate basis for a stream whose provider reports no usage. */
  tapHints?: TapHints;
  /**
   * Runs when the answer is complete and before its last bytes go out (the JSON body; a stream's
   * end marker and end), so that whatever it records (the wallet settlement) is committed before
   * the client holds a complete answer. A returned promise delays those bytes until it settles.
   */
  beforeComplete?: (outcome: CommittedOutcome) => void | Promise<void>;
}

export type CommittedOutcome = Extract<AttemptOutcome, { kind: 'committed' }>;

export type FailureReason = 'connect' | 'reset' | 'timeout' | 'malformed' | 'inband_error' | 'empty' | 'too_large' | 'client_aborted';

export type AttemptOutcome =
  | {
      kind: 'committed';
      status: number;
      stream: boolean;
      upstreamModel: string | null;
      usage: Usage | null;
      /** The answer reached its normal end (JSON answers always do). */
      completed: boolean;
      /** Set when a committed stream was cut: why. */
      broken: FailureReason | null;
      clientAborted: boolean;
      firstByteMs: number;
      contentEvents: number;
      contentBytes: number;
    }
  | {
      /** A non-2xx answer from the provider, not yet sent to the client. */
      kind: 'provider_error';
      status: number;
      headers: HeaderList;
      body: Buffer;
      firstByteMs: number;
    }
  | { kind: 'failed'; reason: FailureReason; detail: string; firstByteMs: number | null };

const MAX_ERROR_BODY = 1024 * 1024;

function isEventStream(contentType: string | undefined): boolean {
  return contentType !== undefined && contentType.toLowerCase().startsWith('text/event-stream');
}

function classifyError(err: Error): FailureReason {
  const code = (err as Error & { code?: string }).code ?? '';
  if (/CONNECT|ECONNREFUSED|ENOTFOUND|EHOSTUNREACH|ENETUNREACH|EAI_AGAIN/.test(code)) return 'connect';
  return 'reset';
}

function decodeBody(body: Buffer, encoding: string | undefined): Buffer | null {
  if (!encoding || encoding === 'identity') return body;
  try {
    if (encoding === 'gzip' || encoding === 'x-gzip') return gunzipSync(body);
    if (encoding === 'br') return brotliDecompressSync(body);
    if (encoding === 'deflate') return inflateSync(body);
  } catch {
    return null;
  }
  return null;
}

export function runAttempt(input: AttemptInput): Promise<AttemptOutcome> {
  const { reply, protocol, limits } = input;
  return new Promise<AttemptOutcome>((resolve) => {
    const t0 = performance.now();
    let done = false;
    let phase: 'head' | 'json' | 'error' | 'stream' = 'head';
    let status = 0;
    let upHeaders: Record<string, string> = {};
    let firstByteMs: number | null = null;
    let chunks: Buffer[] = [];
    let size = 0;
    let splitter: SseSplitter | null = null;
    let tap: StreamTap | null = null;
    let held: Buffer[] = [];
    let heldBytes = 0;
    let committed = false;
    let paused = false;
    let clientAborted = false;
    /** The normal end was seen and is being delivered: later upstream bytes or errors change nothing. */
    let completing = false;
    let ctrl: UpstreamControl | null = null;

    const firstByteTimer = setTimeout(() => {
      if (done || committed) return;
      fail('timeout', `provider did not start answering within ${limits.firstByteTimeoutMs} ms`);
    }, limits.firstByteTimeoutMs);
    let idleTimer: NodeJS.Timeout | null = null;

    const clearTimers = () => {
      clearTimeout(firstByteTimer);
      if (idleTimer) clearTimeout(idleTimer);
    };

    const armIdle = () => {
      if (idleTimer) idleTimer.refresh();
      else idleTimer = setTimeout(onIdle, limits.streamIdleTimeoutMs);
    };
    const onIdle = () => {
      if (done || paused) return;
      if (!committed) {
        fail('timeout', `provider went silent for ${limits.streamIdleTimeoutMs} ms before ${phase === 'error' ? 'finishing its error answer' : 'answering'}`);
        return;
      }
      breakStream('timeout', `the provider stream stalled for ${limits.streamIdleTimeoutMs} ms`);
    };

    const finish = (outcome: AttemptOutcome) => {
      if (done) return;
      done = true;
      clearTimers();
      resolve(outcome);
    };

    const fail = (reason: FailureReason, detail: string) => {
      ctrl?.abort(new Error(detail));
      finish({ kind: 'failed', reason, detail, firstByteMs });
    };

    const committedOutcome = (broken: FailureReason | null): CommittedOutcome => ({
      kind: 'committed',
      status,
      stream: phase === 'stream',
      upstreamModel: tap?.upstreamModel ?? null,
      usage: tap?.usage() ?? null,
      completed: tap?.completed ?? true,
      broken,
      clientAborted,
      firstByteMs: firstByteMs ?? performance.now() - t0,
      contentEvents: tap?.contentEvents ?? 0,
      contentBytes: tap?.contentBytes ?? 0,
    });

    /** Ends a committed stream that cannot finish properly: the protocol's error event, then the end. */
    const breakStream = (reason: FailureReason, message: string) => {
      ctrl?.abort(new Error(message));
      if (!reply.done) {
        reply.cork(() => {
          reply.write(protocol.streamErrorEvent(`${message}; the answer is incomplete`, 'upstream_stream_error'));
          reply.end();
        });
      }
      finish(committedOutcome(reason));
    };

    /** Runs the beforeComplete hook, then `deliver` (which sends the last bytes and finishes). */
    const complete = (outcome: CommittedOutcome, deliver: () => void) => {
      let r: void | Promise<void> = undefined;
      try {
        r = input.beforeComplete?.(outcome);
      } catch {
        // The hook owns its failures (it logs them); the answer is still delivered.
      }
      if (r && typeof r.then === 'function') r.then(deliver, deliver);
      else deliver();
    };

    /** The stream reached its normal end: settle first, then the end marker (if any) and the end. */
    const completeStream = (finalBytes: Buffer | null) => {
      completing = true;
      clearTimers();
      const outcome = committedOutcome(null);
      complete(outcome, () => {
        if (!reply.done) {
          reply.cork(() => {
            if (finalBytes) reply.write(finalBytes);
            reply.end();
          });
        }
        finish(outcome);
      });
    };

    const providerHeaders = (upstreamModel: string | null, keepEncoding: boolean): HeaderList => {
      const h: HeaderList = [...input.identity];
      if (upstreamModel) h.push(['X-Pi-Upstream-Model', upstreamModel]);
      const rid = upstreamRequestId(upHeaders);
      if (rid) h.push(['X-Pi-Upstream-Request-Id', rid]);
      h.push(...forwardedHeaders(upHeaders, { keepEncoding }));
      return h;
    };

    const write = (buf: Buffer) => {
      if (reply.done) return;
      if (!reply.write(buf) && !paused) {
        // The client is slower than the provider: stop reading upstream until it drains.
        paused = true;
        ctrl?.pause();
        // Silence while we hold the upstream is ours, not a stall. Drop the timer rather than only
        // clearing it: a cleared Node timer cannot be re-armed by refresh(), so armIdle() would
        // otherwise leave the stream without any stall detection after the first pause.
        if (idleTimer) clearTimeout(idleTimer);
        idleTimer = null;
        reply.onWritable(() => {
          paused = false;
          if (done) return;
          armIdle();
          ctrl?.resume();
        });
      }
    };

    const commitStream = (first: Buffer) => {
      committed = true;
      clearTimeout(firstByteTimer);
      firstByteMs = performance.now() - t0;
      armIdle();
      const head = providerHeaders(tap?.upstreamModel ?? null, false);
      const parts = held.length > 0 ? Buffer.concat([...held, first]) : first;
      held = [];
      reply.cork(() => {
        reply.startStream(status, head);
        write(parts);
      });
    };

    const onEvents = (events: Buffer[]) => {
      const out: Buffer[] = [];
      for (const ev of events) {
        if (done) return;
        if (isBlankOrComment(ev)) {
          // Comments are keep-alives: relayed once committed, not held as preamble.
          if (committed) out.push(ev);
          continue;
        }
        const t = (tap as StreamTap).onEvent(ev);
        if (!committed) {
          if (t.kind === 'preamble') {
            held.push(t.out);
            heldBytes += t.out.length;
            // A provider that only talks preamble past the bound gets committed rather than buffered.
            if (heldBytes > limits.preambleMaxBytes) commitStream(Buffer.alloc(0));
            continue;
          }
          if (t.kind === 'error') {
            fail('inband_error', 'the provider stream opened with an error event');
            return;
          }
          if (t.kind === 'malformed') {
            fail('malformed', 'the provider sent a malformed event before any content');
            return;
          }
          if (t.kind === 'terminal') {
            fail('empty', 'the provider stream ended before any content');
            return;
          }
          commitStream(t.out);
          continue;
        }
        if (t.kind === 'malformed') {
          if (out.length > 0) write(Buffer.concat(out));
          breakStream('malformed', 'the provider sent a malformed event');
          return;
        }
        if (t.kind === 'terminal') {
          if (out.length > 0) write(out.length === 1 ? (out[0] as Buffer) : Buffer.concat(out));
          completeStream(t.out);
          return;
        }
        if (t.kind === 'error') {
          // The provider's own error event after content: pass it on, then end without a normal end.
          out.push(t.out);
          if (out.length > 0) write(Buffer.concat(out));
          ctrl?.abort(new Error('provider error event'));
          if (!reply.done) reply.end();
          finish(committedOutcome('inband_error'));
          return;
        }
        out.push(t.out);
      }
      if (out.length === 1) write(out[0] as Buffer);
      else if (out.length > 1) write(Buffer.concat(out));
    };

    reply.onAborted(() => {
      if (done) return;
      clientAborted = true;
      ctrl?.abort(new Error('client went away'));
      if (committed) finish(committedOutcome('client_aborted'));
      else finish({ kind: 'failed', reason: 'client_aborted', detail: 'client went away', firstByteMs });
    });

    ctrl = input.client.call(input.call, {
      onHead(s, headers) {
        if (done) return;
        status = s;
        upHeaders = headers;
        if (s >= 200 && s < 300) {
          if (isEventStream(headers['content-type'])) {
            if (headers['content-encoding'] && headers['content-encoding'] !== 'identity') {
              fail('malformed', `compressed event streams (${headers['content-encoding']}) are not supported`);
              return;
            }
            phase = 'stream';
            splitter = new SseSplitter();
            tap = protocol.tap(input.slugJson, input.tapHints);
          } else {
            phase = 'json';
          }
        } else {
          phase = 'error';
          clearTimeout(firstByteTimer);
          firstByteMs = performance.now() - t0;
          // An error body that stops midway must not hold the request forever.
          armIdle();
        }
      },
      onData(chunk) {
        if (done || completing) return;
        if (phase === 'stream') {
          if (committed) armIdle();
          onEvents((splitter as SseSplitter).push(chunk));
          if (!committed && !done && (splitter as SseSplitter).pendingBytes > limits.maxUpstreamBodyBytes) {
            fail('too_large', 'a provider event exceeded the size limit');
          }
          return;
        }
        if (phase === 'json') {
          if (firstByteMs === null) {
            clearTimeout(firstByteTimer);
            firstByteMs = performance.now() - t0;
          }
          armIdle();
        } else if (phase === 'error') armIdle();
        size += chunk.length;
        const cap = phase === 'error' ? MAX_ERROR_BODY : limits.maxUpstreamBodyBytes;
        if (size > cap) {
          if (phase === 'error') return; // keep the head of an oversized error body
          fail('too_large', `the provider answer exceeded ${cap} bytes`);
          return;
        }
        chunks.push(chunk);
      },
      onEnd() {
        if (done || completing) return;
        if (phase === 'error') {
          const body = Buffer.concat(chunks);
          const span = findStringValue(body, 'model', 1);
          finish({
            kind: 'provider_error',
            status,
            headers: providerHeaders(span ? readString(body, span) : null, true),
            body,
            firstByteMs: firstByteMs ?? performance.now() - t0,
          });
          return;
        }
        if (phase === 'json') {
          const raw = decodeBody(Buffer.concat(chunks), upHeaders['content-encoding']);
          const answer = raw === null ? null : protocol.readJson(raw, input.slugJson);
          if (answer === null) {
            fail('malformed', 'the provider answer was not a usable JSON body');
            return;
          }
          committed = true;
          completing = true;
          clearTimers();
          if (firstByteMs === null) firstByteMs = performance.now() - t0;
          const outcome: CommittedOutcome = {
            kind: 'committed',
            status,
            stream: false,
            upstreamModel: answer.upstreamModel,
            usage: answer.usage,
            completed: true,
            broken: null,
            clientAborted: reply.aborted,
            firstByteMs,
            contentEvents: 0,
            contentBytes: answer.body.length,
          };
          complete(outcome, () => {
            reply.send(status, providerHeaders(answer.upstreamModel, false), answer.body);
            finish(outcome);
          });
          return;
        }
        if (phase === 'stream') {
          const rest = (splitter as SseSplitter).flush();
          if (rest && !isBlankOrComment(rest)) {
            // An unterminated last event: treat it as a broken frame rather than guess.
            if (committed) breakStream('malformed', 'the provider stream ended inside an event');
            else fail('malformed', 'the provider stream ended inside an event');
            return;
          }
          if (!committed) {
            fail('empty', 'the provider stream ended before any content');
            return;
          }
          if (!(tap as StreamTap).completed) {
            breakStream('reset', 'the provider stream ended before its end marker');
            return;
          }
          completeStream(null);
          return;
        }
        fail('malformed', 'the provider closed without an answer');
      },
      onError(err) {
        if (done || completing) return;
        if (committed && phase === 'stream') {
          breakStream('reset', 'the provider connection broke');
          return;
        }
        finish({ kind: 'failed', reason: classifyError(err), detail: err.message, firstByteMs });
      },
    });
  });
}
