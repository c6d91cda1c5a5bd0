// The public catalog (no key is read): GET /v1/models, /v1/models/{vendor}/{model} and its
// /endpoints view. Model objects are serialised once per config (at start and after each reload);
// the list is cached until the next instant a model's listing changes; the endpoints view depends on
// credentials, health and time, so it is built per request (a handful of deployments per model).
//
// The single-model body is the catalog model object itself, byte for byte its list entry (the API
// leaves the shape open): OpenAI's `GET /v1/models/{model}` answers the model object at the top
// level, and openai-node's `models.retrieve(id)` returns that body as the model. The same SDK sends
// the slug as one percent-encoded segment (`/v1/models/openai%2Fgpt-6-luna`), which is answered too.
import type { CompiledModel } from '../config/compiled.ts';
import type { ConfigIndex } from '../config/index.ts';
import { GatewayError } from '../errors.ts';
import { toCatalogModel } from '../catalog/catalog-model.ts';
import { endpointsView } from '../catalog/endpoints-view.ts';
import { isListed, nextListingChange } from '../availability/lifecycle.ts';
import type { IncomingRequest } from '../http/request.ts';
import type { GatewayContext } from './context.ts';
import type { HeaderList, Reply } from '../http/reply.ts';

const JSON_HEADERS: HeaderList = [['Content-Type', 'application/json']];
const MODELS_PREFIX = '/v1/models/';

function notFound(slug: string): GatewayError {
  return new GatewayError(
    'model_not_found',
    `model "${slug}" was not found in the catalog: ids are vendor-qualified slugs such as "vendor/model"; list them with GET /v1/models`,
  );
}

/** Path parameters are matched exactly after percent-decoding; an undecodable one matches nothing. */
function decodeParam(p: string): string | null {
  try {
    return decodeURIComponent(p);
  } catch {
    return null;
  }
}

/** The catalog of one config: its models serialised once, and the cached list body. */
class CatalogCache {
  readonly models: readonly CompiledModel[];
  readonly objects = new Map<string, string>();
  private listBody: Buffer | null = null;
  private listValidUntil = -Infinity;
  private listValidFrom = Infinity;

  readonly index: ConfigIndex;
  constructor(index: ConfigIndex) {
    this.index = index;
    this.models = index.config.models;
    for (const m of this.models) if (m.enabled) this.objects.set(m.id, JSON.stringify(toCatalogModel(m)));
  }

  list(now: number): Buffer {
    if (this.listBody === null || now >= this.listValidUntil || now < this.listValidFrom) {
      const parts: string[] = [];
      for (const m of this.models) if (isListed(m, now)) parts.push(this.objects.get(m.id) as string);
      this.listBody = Buffer.from(`{"data":[${parts.join(',')}]}`);
      this.listValidFrom = now;
      this.listValidUntil = nextListingChange(this.models, now);
    }
    return this.listBody;
  }
}

export function catalogHandlers(ctx: GatewayContext) {
  let cache = new CatalogCache(ctx.index);
  /** The cache of the current config, rebuilt the first time it is read after a reload. */
  const current = (): CatalogCache => {
    const index = ctx.index;
    if (cache.index !== index) cache = new CatalogCache(index);
    return cache;
  };

  const listedModel = (c: CatalogCache, req: IncomingRequest): CompiledModel => {
    const vendor = decodeParam(req.params[0] ?? '');
    const name = decodeParam(req.params[1] ?? '');
    const slug = `${vendor ?? req.params[0]}/${name ?? req.params[1]}`;
    const model = vendor !== null && name !== null ? c.index.modelById.get(`${vendor}/${name}`) : undefined;
    if (!model || !isListed(model, ctx.clock.now())) throw notFound(slug);
    return model;
  };

  return {
    list(_req: IncomingRequest, reply: Reply): void {
      reply.send(200, JSON_HEADERS, current().list(ctx.clock.now()));
    },

    model(req: IncomingRequest, reply: Reply): void {
      const c = current();
      const model = listedModel(c, req);
      reply.send(200, JSON_HEADERS, c.objects.get(model.id) as string);
    },

    /**
     * A GET under /v1/models/ that is not `{vendor}/{model}[/endpoints]`: the slug sent as one
     * percent-encoded segment (`openai%2Fgpt-6-luna`, what openai-node's `models.retrieve` sends) is the
     * single-model endpoint; nothing else can match a slug.
     */
    unknown(req: IncomingRequest, reply: Reply): void {
      const rest = req.path.slice(MODELS_PREFIX.length);
      const slug = rest.includes('/') ? null : decodeParam(rest);
      const halves = slug?.split('/') ?? [];
      if (slug && halves.length === 2 && halves.every((h) => h !== '')) {
        const c = current();
        const model = c.index.modelById.get(slug);
        if (model && isListed(model, ctx.clock.now())) {
          reply.send(200, JSON_HEADERS, c.objects.get(model.id) as string);
          return;
        }
        throw notFound(slug);
      }
      // The path as sent: nothing here decodes to a `vendor/model` slug.
      throw notFound(rest);
    },

    endpoints(req: IncomingRequest, reply: Reply): void | Promise<void> {
      const c = current();
      const model = listedModel(c, req);
      const synced = ctx.view.sync();
      if (synced instanceof Promise) {
        return synced.then(() =>
          reply.sendJson(200, { data: endpointsView(c.index, model, ctx.view, ctx.health.passive, ctx.clock.now()) }),
        );
      }
      const data = endpointsView(c.index, model, ctx.view, ctx.health.passive, ctx.clock.now());
      reply.sendJson(200, { data });
    },
  };
}
