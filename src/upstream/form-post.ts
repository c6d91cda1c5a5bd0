// The one non-streaming upstream call: a form POST to an OAuth token endpoint (Google's, Microsoft
// Entra's), answered whole. Bounded in time and size so that a token endpoint that hangs or floods
// cannot hold a request (or memory) beyond the limits; what the answer means is the adapter's call.
import type { Dispatcher } from 'undici';

export interface FormPostLimits {
  /** The whole exchange (connect, head, body), ms. */
  timeoutMs: number;
  /** Largest answer body kept; a longer answer is an error. */
  maxBodyBytes: number;
}

export const FORM_POST_LIMITS: FormPostLimits = { timeoutMs: 10_000, maxBodyBytes: 256 * 1024 };

export interface FormPostAnswer {
  status: number;
  body: Buffer;
}

export async function postForm(
  dispatcher: Dispatcher,
  url: string,
  form: Record<string, string>,
  limits: FormPostLimits = FORM_POST_LIMITS,
): Promise<FormPostAnswer> {
  const u = new URL(url);
  const signal = AbortSignal.timeout(limits.timeoutMs);
  const res = await dispatcher.request({
    origin: u.origin,
    path: u.pathname + u.search,
    method: 'POST',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      accept: 'application/json',
      'user-agent': 'pi-gateway/0.1',
    },
    body: new URLSearchParams(form).toString(),
    signal,
  });
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of res.body) {
    const b = chunk as Buffer;
    size += b.length;
    if (size > limits.maxBodyBytes) {
      res.body.destroy();
      throw new Error(`the token endpoint answered more than ${limits.maxBodyBytes} bytes`);
    }
    chunks.push(b);
  }
  return { status: res.statusCode, body: Buffer.concat(chunks) };
}
