// What one attempt's outcome tells the health tracker about its deployment. Total over every outcome
// and failure reason: a new reason does not compile until it is given its signal here.
import type { Outcome } from '../routing/health.ts';
import type { AttemptOutcome, FailureReason } from './attempt.ts';

/** Where health signals go (the routing health tracker). */
export interface HealthRecorder {
  record(deploymentId: string, outcome: Outcome): void;
}

type FailureSignal = Extract<Outcome, { ok: false }>['reason'];

/** The health signal of an attempt, or null when the attempt says nothing about the deployment. */
export function healthSignal(outcome: AttemptOutcome): Outcome | null {
  switch (outcome.kind) {
    case 'committed': {
      const reason = outcome.broken === null ? null : cutStreamSignal(outcome.broken);
      return reason === null ? { ok: true, firstByteMs: outcome.firstByteMs } : { ok: false, reason };
    }
    case 'provider_error': {
      const reason = statusSignal(outcome.status);
      return reason === null ? null : { ok: false, reason };
    }
    case 'failed': {
      const reason = failureSignal(outcome.reason);
      return reason === null ? null : { ok: false, reason };
    }
    default:
      return unreachable(outcome);
  }
}

/** A provider error status: 5xx, 429 and a refused credential count; other 4xx are the client's fault. */
function statusSignal(status: number): FailureSignal | null {
  if (status >= 500) return 'status_5xx';
  if (status === 429) return 'status_429';
  if (status === 401 || status === 403) return 'auth';
  return null;
}

/** Why a committed stream was cut; null when that is no failure of the deployment (the client left
 *  or stopped reading, or the gateway ended it at its drain deadline). */
function cutStreamSignal(broken: FailureReason): FailureSignal | null {
  switch (broken) {
    case 'client_aborted':
    case 'write_stall':
    case 'drained':
    case 'not_sent':
      return null;
    case 'timeout':
    case 'malformed':
    case 'inband_error':
      return broken;
    case 'connect':
    case 'reset':
    case 'empty':
    case 'too_large':
      return 'reset';
    case 'credential':
      return 'auth';
    default:
      return unreachable(broken);
  }
}

/** Why an attempt got no usable answer before the commit point. A client abort, or the gateway's own
 *  drain, says nothing about the deployment. */
function failureSignal(reason: FailureReason): FailureSignal | null {
  switch (reason) {
    case 'client_aborted':
    case 'write_stall':
    case 'drained':
    case 'not_sent':
      return null;
    case 'connect':
    case 'timeout':
    case 'reset':
    case 'malformed':
    case 'inband_error':
      return reason;
    case 'empty':
    case 'too_large':
      return 'malformed';
    case 'credential':
      // Our credential could not be used: the same signal as a provider refusing it (401/403).
      return 'auth';
    default:
      return unreachable(reason);
  }
}

function unreachable(value: never): never {
  throw new Error(`unhandled attempt outcome: ${JSON.stringify(value)}`);
}
