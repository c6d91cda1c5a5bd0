// Which simulated API a path is, by suffix (any prefix is accepted, so one simulator stands in for
// every platform's base URL), plus the model/stream the Azure and Vertex path forms carry in the URL.

export type Endpoint = 'chat_completions' | 'responses' | 'messages' | 'images_generations' | 'images_edits';

export interface InferenceRoute {
  kind: 'inference';
  endpoint: Endpoint;
  /** `azure`: /openai/deployments/{name}/…; `vertex`: …/models/{model}:rawPredict|streamRawPredict;
   *  `bedrock`: /model/{modelId}/invoke|invoke-with-response-stream. */
  form: 'plain' | 'azure' | 'vertex' | 'bedrock';
  /** Upstream model id taken from the URL (Azure deployment name, Vertex model), if any. */
  urlModel?: string;
  /** Vertex and Bedrock: streaming comes from the verb, not the body. */
  urlStream?: boolean;
}

/** Token counting: Anthropic's `/v1/messages/count_tokens`, Vertex's
 *  `…/publishers/anthropic/models/count-tokens:rawPredict`, Bedrock's `/model/{modelId}/count-tokens`. */
export interface CountRoute {
  kind: 'count';
  form: 'plain' | 'vertex' | 'bedrock';
  /** Bedrock: the model id from the URL. */
  urlModel?: string;
}

export interface ControlRoute {
  kind: 'control';
  /** What follows `/_sim/`, e.g. `requests` or `script`. */
  name: string;
}

export type Route = InferenceRoute | CountRoute | ControlRoute;

const SUFFIXES: ReadonlyArray<readonly [string, Endpoint]> = [
  ['/chat/completions', 'chat_completions'],
  ['/responses', 'responses'],
  ['/messages', 'messages'],
  ['/images/generations', 'images_generations'],
  ['/images/edits', 'images_edits'],
];

const AZURE = /\/openai\/deployments\/([^/]+)\/(?:chat\/completions|responses|images\/generations|images\/edits)$/;
const VERTEX = /\/models\/([^/:]+):(rawPredict|streamRawPredict)$/;
const BEDROCK = /\/model\/([^/]+)\/(invoke|invoke-with-response-stream)$/;
const BEDROCK_COUNT = /\/model\/([^/]+)\/count-tokens$/;

function decode(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

/** The route for a URL path (no query), or null for an unknown path. */
export function classify(path: string): Route | null {
  if (path.startsWith('/_sim/')) return { kind: 'control', name: path.slice(6) };
  if (path.endsWith('/messages/count_tokens')) return { kind: 'count', form: 'plain' };
  if (path.endsWith('/models/count-tokens:rawPredict')) return { kind: 'count', form: 'vertex' };
  const bedrockCount = BEDROCK_COUNT.exec(path);
  if (bedrockCount) return { kind: 'count', form: 'bedrock', urlModel: decode(bedrockCount[1] as string) };
  for (const [suffix, endpoint] of SUFFIXES) {
    if (!path.endsWith(suffix)) continue;
    const azure = AZURE.exec(path);
    if (azure) return { kind: 'inference', endpoint, form: 'azure', urlModel: decode(azure[1] as string) };
    return { kind: 'inference', endpoint, form: 'plain' };
  }
  const bedrock = BEDROCK.exec(path);
  if (bedrock)
    return {
      kind: 'inference',
      endpoint: 'messages',
      form: 'bedrock',
      urlModel: decode(bedrock[1] as string),
      urlStream: bedrock[2] !== 'invoke',
    };
  if (path.endsWith(':rawPredict') || path.endsWith(':streamRawPredict')) {
    const vertex = VERTEX.exec(path);
    const stream = path.endsWith(':streamRawPredict');
    if (vertex)
      return {
        kind: 'inference',
        endpoint: 'messages',
        form: 'vertex',
        urlModel: decode(vertex[1] as string),
        urlStream: stream,
      };
    return { kind: 'inference', endpoint: 'messages', form: 'vertex', urlStream: stream };
  }
  return null;
}
