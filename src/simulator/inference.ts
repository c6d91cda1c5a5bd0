// Answers one inference request: parse and record the body, check the credential and required
// fields, pick the behaviour, render the wire's reply and hand it to `deliver`.
import type { Behaviour } from './behaviour.ts';
import { BehaviourError, selectBehaviour } from './behaviour.ts';
import { type Plan, deliver } from './deliver.ts';
import type { Exchange } from './exchange.ts';
import { anthropicRequestId, openaiRequestId } from './ids.ts';
import { parseMultipart } from './multipart.ts';
import { estimatePromptTokens, planText } from './reply-text.ts';
import type { Endpoint, InferenceRoute } from './routes.ts';
import type { RequestCopy, SimState } from './state.ts';
import { issuedTokenValid } from './token-endpoints.ts';
import { resolveUsage } from './usage.ts';
import type { Body, ReplyContext, StreamEvents, Wire } from './wire.ts';
import { type ErrorDetails, authErrorBody, customErrorBody, errorBody } from './wire-errors.ts';
import { type Family, JSON_TYPE, SSE_TYPE, providerHeaders, withExtraHeaders } from './wire-headers.ts';
import { chatCompletions } from './wires/chat-completions.ts';
import { images } from './wires/images.ts';
import { messages } from './wires/messages.ts';
import { responses } from './wires/responses.ts';

const WIRES: Record<Endpoint, Wire> = {
  chat_completions: chatCompletions,
  responses,
  messages,
  images_generations: images,
  images_edits: images,
};

export function familyOf(route: InferenceRoute): Family {
  return WIRES[route.endpoint].family;
}

interface ParsedBody {
  /** What the wire reads (multipart: the text fields). */
  body: Body;
  /** What gets recorded: parsed JSON, the multipart summary, or null. */
  recorded: unknown;
  ok: boolean;
  files: number;
}

function parseBody(raw: Buffer, contentType: string): ParsedBody {
  if (contentType.startsWith('multipart/form-data')) {
    const form = parseMultipart(raw, contentType);
    if (!form) return { body: {}, recorded: null, ok: false, files: 0 };
    return { body: form.fields, recorded: form, ok: true, files: form.files.length };
  }
  try {
    const parsed: unknown = JSON.parse(raw.toString('utf8'));
    const isObject = typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed);
    return { body: isObject ? (parsed as Body) : {}, recorded: parsed, ok: isObject, files: 0 };
  } catch {
    return { body: {}, recorded: null, ok: false, files: 0 };
  }
}

export function authorized(headers: Record<string, string>, key: string): 'ok' | 'missing' | 'wrong' {
  const auth = headers['authorization'];
  const xKey = headers['x-api-key'];
  const azureKey = headers['api-key'];
  if (auth !== undefined && auth.replace(/^Bearer\s+/i, '') === key) return 'ok';
  if (xKey === key || azureKey === key) return 'ok';
  return auth || xKey || azureKey ? 'wrong' : 'missing';
}

const BAD_JSON: Record<Family, ErrorDetails> = {
  openai: {
    message:
      "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid JSON. If you have trouble figuring out how to fix this, please contact us through our help center at help.openai.com.)",
    type: 'invalid_request_error',
    param: null,
    code: null,
  },
  anthropic: { message: 'There was an error parsing the body of your request', type: 'invalid_request_error' },
};

/** The `sim` field: JSON in the body, or a JSON string in a multipart field. */
function bodySim(body: Body, multipart: boolean): unknown {
  const v = body['sim'];
  if (!multipart || typeof v !== 'string') return v;
  try {
    return JSON.parse(v) as unknown;
  } catch {
    throw new BehaviourError('sim form field is not valid JSON');
  }
}

/** Why the simulated provider refuses a request before any behaviour applies (its key, its body):
 *  the status and error body it answers, or null when it serves the request. */
function refusal(
  state: SimState,
  wire: (typeof WIRES)[keyof typeof WIRES],
  route: InferenceRoute,
  req: RequestCopy,
  parsed: ReturnType<typeof parseBody>,
  newRequestId: () => string,
): { status: number; body: string; requestId: string } | null {
  const family = wire.family;
  // A request id is drawn only for a refusal (a served request draws its own later).
  const refuse = (status: number, body: (requestId: string) => string) => {
    const requestId = newRequestId();
    return { status, body: body(requestId), requestId };
  };
  const issued = issuedTokenValid(state, req.headers['authorization']);
  if (issued === false) return refuse(401, (id) => authErrorBody(family, false, id));
  if (issued === null && state.apiKey !== undefined) {
    const auth = authorized(req.headers, state.apiKey);
    if (auth !== 'ok') return refuse(401, (id) => authErrorBody(family, auth === 'missing', id));
  }
  if (!parsed.ok) return refuse(400, (id) => errorBody(family, 400, '', id, BAD_JSON[family]));
  const invalid = wire.validate(parsed.body, route);
  if (invalid) return refuse(400, (id) => errorBody(family, 400, '', id, invalid));
  return null;
}

export function handleInference(
  state: SimState,
  ex: Exchange,
  route: InferenceRoute,
  req: RequestCopy,
  raw: Buffer,
): void {
  const wire = WIRES[route.endpoint];
  const family = wire.family;
  const contentType = req.headers['content-type'] ?? '';
  const multipart = contentType.startsWith('multipart/form-data');
  const parsed = parseBody(raw, contentType);
  state.recorder.add({
    method: req.method,
    path: req.path,
    query: req.query,
    headers: req.headers,
    body: parsed.recorded,
    rawBody: raw,
    at: req.at,
  });

  const newRequestId = () => (family === 'openai' ? openaiRequestId() : anthropicRequestId());
  const fail = (status: number, body: string, requestId: string | null = newRequestId()) => {
    const headers = providerHeaders(
      family,
      JSON_TYPE,
      requestId,
      performance.now() - req.startedAt,
      state.organizationId,
    );
    ex.sendWhole(status, headers, body);
  };

  const refused = refusal(state, wire, route, req, parsed, newRequestId);
  if (refused !== null || !parsed.ok) {
    if (refused !== null) fail(refused.status, refused.body, refused.requestId);
    return;
  }

  const body = parsed.body;
  const model = route.urlModel ?? (typeof body['model'] === 'string' ? body['model'] : '');
  let b: Behaviour;
  try {
    b = selectBehaviour(state.scripts.take(model), bodySim(body, multipart), req.headers['x-sim'], model).behaviour;
  } catch (err) {
    if (!(err instanceof BehaviourError)) throw err;
    const requestId = newRequestId();
    fail(
      400,
      errorBody(family, 400, model, requestId, { message: `simulator: ${err.message}`, type: 'invalid_request_error' }),
      requestId,
    );
    return;
  }

  const requestId = b.requestId !== undefined ? b.requestId : newRequestId();
  const processingMs = performance.now() - req.startedAt + (b.ttfbMs ?? 0);
  if (b.status !== undefined && (b.status < 200 || b.status >= 300)) {
    const text =
      b.errorBody !== undefined ? customErrorBody(b.errorBody) : errorBody(family, b.status, model, requestId);
    const headers = withExtraHeaders(
      providerHeaders(family, JSON_TYPE, requestId, processingMs, state.organizationId),
      b.headers,
    );
    deliver(ex, { kind: 'json', status: b.status, headers, body: text }, b);
    return;
  }

  const text = planText(
    b,
    b.echo ? (multipart ? JSON.stringify(parsed.recorded) : raw.toString('utf8')) : undefined,
    wire.maxTokens(body),
  );
  const ctx: ReplyContext = {
    model,
    reportModel: b.reportModel !== undefined ? b.reportModel : model,
    requestId,
    created: Math.floor(state.clock.now() / 1000),
    text,
    usage: resolveUsage(b, () => estimatePromptTokens(body), text.tokens),
    body,
    route,
    behaviour: b,
    files: parsed.files,
  };
  const status = b.status ?? 200;
  let plan: Plan;
  if (wire.isStream(body, route)) {
    let events: StreamEvents;
    if (b.inbandError) events = { preamble: wire.inbandError(ctx), content: [], tail: [] };
    else {
      events = wire.events(ctx);
      if (b.preambleOnly) events = { preamble: events.preamble, content: [], tail: [] };
    }
    const headers = withExtraHeaders(
      providerHeaders(family, SSE_TYPE, requestId, processingMs, state.organizationId),
      b.headers,
    );
    plan = { kind: 'stream', status, headers, events, malformed: wire.malformed(ctx) };
  } else {
    const headers = withExtraHeaders(
      providerHeaders(family, JSON_TYPE, requestId, processingMs, state.organizationId),
      b.headers,
    );
    plan = { kind: 'json', status, headers, body: wire.json(ctx) };
  }
  deliver(ex, plan, b);
}
