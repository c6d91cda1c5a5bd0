// Request rewriting, asserted on what the simulator received: routing fields consumed, every other
// field forwarded unchanged, the upstream model id in place of the slug, Chat Completions
// transformations 1–5 per platform quirk, Responses and Messages left as sent, the three forwarded
// client headers, and each platform adapter's URL and credential.
import t from 'tap';
import { startStack } from '../../helpers/stack.ts';
import { lastSim, parseSse, simBody, USER } from '../../helpers/inference.ts';

t.test('request rewriting', async (t) => {
  const s = await startStack(t);
  const key = s.key('open');
  s.credit('open', '100');
  const chat = async (body: Record<string, unknown>, headers: Record<string, string> = {}) => {
    const res = await s.post('/v1/chat/completions', { messages: USER, ...body }, { key, headers });
    const text = await res.text();
    t.equal(res.status, 200, `chat answered 200 (${text.slice(0, 200)})`);
    return { res, text, sent: simBody(s) };
  };

  t.test(
    'routing fields are consumed; everything else is forwarded unchanged; the slug becomes the upstream id',
    async (t) => {
      const passthrough = {
        tools: [
          {
            type: 'function',
            function: {
              name: 'f',
              description: 'd',
              parameters: { type: 'object', properties: { a: { type: 'string' } } },
            },
          },
        ],
        tool_choice: { type: 'function', function: { name: 'f' } },
        parallel_tool_calls: false,
        response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'object' } } },
        seed: 42,
        stop: ['\n\n'],
        temperature: 0.2,
        max_tokens: 50,
        user: 'u-1',
        metadata: { a: 'b' },
        future_field: { nested: [1, 'two', null, { three: 3.5 }] },
      };
      const { res, sent } = await chat({
        model: 'acme/chat-small',
        provider: { only: ['alpha'] },
        models: ['acme/chat-big'],
        route: 'fallback',
        ...passthrough,
      });
      t.equal(res.headers.get('x-pi-provider'), 'alpha');
      t.same(
        sent,
        { model: 'small-v1', messages: USER, ...passthrough },
        'exactly the client body minus routing fields, model replaced',
      );
      for (const k of ['provider', 'models', 'route', 'fallbacks', 'preset']) t.notOk(k in sent, `${k} not forwarded`);
    },
  );

  t.test("a body over 1 KB (written from the client's bytes) is rewritten the same way", async (t) => {
    const messages = [{ role: 'user', content: `${'long conversation é “quoted” \\ '.repeat(60)}end` }];
    const extra = {
      temperature: 0.2,
      metadata: { a: 'b' },
      future_field: { nested: [1, 'two', null, { three: 3.5 }] },
    };
    const { sent } = await chat({
      model: 'acme/chat-small',
      provider: { only: ['alpha'] },
      models: ['acme/chat-big'],
      messages,
      stream: true,
      stream_options: { include_usage: false },
      ...extra,
    });
    t.same(
      sent,
      { model: 'small-v1', messages, stream: true, stream_options: { include_usage: true }, ...extra },
      'routing fields gone, model replaced, usage forced, the rest as sent',
    );
  });

  t.test('`fallbacks` is consumed like `models`', async (t) => {
    const { sent } = await chat({
      model: 'acme/chat-small',
      provider: { only: ['alpha'] },
      fallbacks: ['acme/chat-big'],
    });
    t.same(sent, { model: 'small-v1', messages: USER });
  });

  t.test('aliases and canonical slugs resolve to the same deployment', async (t) => {
    for (const name of ['acme/small', 'acme/chat-small-2025-06-01']) {
      const { res, text, sent } = await chat({ model: name, provider: { only: ['alpha'] } });
      t.equal(sent['model'], 'small-v1', name);
      t.equal(res.headers.get('x-pi-model'), 'acme/chat-small', 'X-Pi-Model is the slug');
      t.equal((JSON.parse(text) as { model: string }).model, 'acme/chat-small', 'body model is the slug');
    }
  });

  t.test('1: a stream always asks for usage and the client gets a usage frame before [DONE]', async (t) => {
    for (const so of [undefined, { include_usage: false }, { include_usage: false, include_obfuscation: false }]) {
      const { text, sent } = await chat({
        model: 'acme/chat-small',
        provider: { only: ['alpha'] },
        stream: true,
        ...(so ? { stream_options: so } : {}),
      });
      t.same(
        sent['stream_options'],
        { ...so, include_usage: true },
        `stream_options ${JSON.stringify(so)} → include_usage true, other keys kept`,
      );
      const events = parseSse(text);
      t.equal(events.at(-1)?.data, '[DONE]');
      const usageFrame = JSON.parse(events.at(-2)?.data ?? '{}') as {
        usage?: { prompt_tokens: number };
        choices?: unknown[];
        model?: string;
      };
      t.type(usageFrame.usage?.prompt_tokens, 'number', 'the frame before [DONE] carries usage');
      t.same(usageFrame.choices, [], 'with empty choices');
      t.equal(usageFrame.model, 'acme/chat-small');
    }
  });

  t.test('1: a non-streamed request gets no stream_options (ignored when not streaming)', async (t) => {
    let { sent } = await chat({ model: 'acme/chat-small', provider: { only: ['alpha'] } });
    t.notOk('stream_options' in sent);
    ({ sent } = await chat({
      model: 'acme/chat-small',
      provider: { only: ['alpha'] },
      stream: false,
      stream_options: { include_usage: true },
    }));
    t.same(
      sent,
      { model: 'small-v1', messages: USER, stream: false },
      'dropped: OpenAI-style providers refuse stream_options without stream (spec reading)',
    );
  });

  t.test('2: thinking {type: disabled} becomes reasoning_effort none unless a level was sent', async (t) => {
    const base = { model: 'acme/reasoner', provider: { only: ['alpha'] } };
    let { sent } = await chat({ ...base, thinking: { type: 'disabled' } });
    t.equal(sent['reasoning_effort'], 'none');
    t.notOk('thinking' in sent, 'thinking itself is not forwarded');

    ({ sent } = await chat({ ...base, thinking: { type: 'disabled' }, reasoning_effort: 'low' }));
    t.equal(sent['reasoning_effort'], 'low', 'reasoning_effort sent alongside is kept');

    ({ sent } = await chat({ ...base, thinking: { type: 'disabled' }, reasoning: { effort: 'high' } }));
    t.same(sent['reasoning'], { effort: 'high' }, 'reasoning sent alongside is kept');
    t.notOk('reasoning_effort' in sent);

    ({ sent } = await chat({ ...base, thinking: { type: 'enabled', budget_tokens: 2000 } }));
    t.same(sent['thinking'], { type: 'enabled', budget_tokens: 2000 }, 'other thinking values pass through');
    t.notOk('reasoning_effort' in sent);
  });

  t.test('3: the platform default level is written only when no reasoning field was sent', async (t) => {
    const beta = { model: 'acme/reasoner', provider: { only: ['beta'] } };
    let { sent } = await chat(beta);
    t.equal(sent['reasoning_effort'], 'medium', 'beta writes its default level');
    ({ sent } = await chat({ ...beta, reasoning_effort: 'high' }));
    t.equal(sent['reasoning_effort'], 'high');
    ({ sent } = await chat({ ...beta, reasoning: { effort: 'low' } }));
    t.same(sent['reasoning'], { effort: 'low' });
    t.notOk('reasoning_effort' in sent);
    ({ sent } = await chat({ ...beta, thinking: { type: 'enabled', budget_tokens: 100 } }));
    t.notOk('reasoning_effort' in sent, 'thinking counts as a reasoning field');
    ({ sent } = await chat({ ...beta, thinking: { type: 'disabled' } }));
    t.equal(sent['reasoning_effort'], 'none', 'rule 2 wins over the default');
    ({ sent } = await chat({ model: 'acme/reasoner', provider: { only: ['alpha'] } }));
    t.notOk('reasoning_effort' in sent, 'alpha has no default level');
    ({ sent } = await chat({ model: 'acme/chat-small', provider: { only: ['beta'] } }));
    t.notOk('reasoning_effort' in sent, 'a model that does not reason gets no level (spec reading)');
  });

  t.test('4: sampling parameters the platform does not accept are removed without an error', async (t) => {
    const sampling = {
      temperature: 0.5,
      top_p: 0.9,
      seed: 7,
      stop: ['x'],
      top_k: 40,
      min_p: 0.1,
      frequency_penalty: 0.3,
      presence_penalty: 0.4,
      repetition_penalty: 1.1,
      logit_bias: { '50256': -100 },
      logprobs: true,
      top_logprobs: 2,
    };
    const other = {
      max_tokens: 30,
      response_format: { type: 'json_object' },
      tools: [{ type: 'function', function: { name: 'g' } }],
      future_field: 1,
    };
    let { sent } = await chat({ model: 'acme/chat-small', provider: { only: ['beta'] }, ...sampling, ...other });
    t.same(
      sent,
      { model: 'small-beta', messages: USER, temperature: 0.5, top_p: 0.9, seed: 7, stop: ['x'], ...other },
      'beta keeps temperature/top_p/seed/stop only',
    );
    ({ sent } = await chat({ model: 'acme/chat-small', provider: { only: ['alpha'] }, ...sampling, ...other }));
    t.same(sent, { model: 'small-v1', messages: USER, ...sampling, ...other }, 'alpha accepts every parameter');
  });

  t.test('5: budget-only platform: level → budget, output limit split so reasoning + reply == limit', async (t) => {
    const gamma = { model: 'acme/reasoner', provider: { only: ['gamma'] } };
    const cases: [Record<string, unknown>, Record<string, unknown>][] = [
      [
        { reasoning_effort: 'medium', max_tokens: 10000 },
        { reasoning: { max_tokens: 4096 }, max_tokens: 5904 },
      ],
      [
        { reasoning_effort: 'high', max_tokens: 1000 },
        { reasoning: { max_tokens: 744 }, max_tokens: 256 },
      ],
      [
        { reasoning_effort: 'low', max_tokens: 200 },
        { reasoning: { enabled: false }, max_tokens: 200 },
      ],
      [{ reasoning_effort: 'minimal' }, { reasoning: { max_tokens: 512 } }],
      [
        { reasoning_effort: 'none', max_tokens: 500 },
        { reasoning: { enabled: false }, max_tokens: 500 },
      ],
      [
        { reasoning: { effort: 'low', exclude: true }, max_completion_tokens: 5000 },
        { reasoning: { exclude: true, max_tokens: 1024 }, max_completion_tokens: 3976 },
      ],
      [
        { reasoning_effort: 'medium', max_completion_tokens: 3000, max_tokens: 9999 },
        { reasoning: { max_tokens: 2744 }, max_completion_tokens: 256, max_tokens: 9999 },
      ],
      [
        { thinking: { type: 'disabled' }, max_tokens: 300 },
        { reasoning: { enabled: false }, max_tokens: 300 },
      ],
      [
        { reasoning_effort: 'xhigh', max_tokens: 300 },
        { reasoning_effort: 'xhigh', max_tokens: 300 },
      ],
      [{ max_tokens: 300 }, { max_tokens: 300 }],
    ];
    for (const [req, expected] of cases) {
      const { sent } = await chat({ ...gamma, ...req });
      t.same(sent, { model: 'reasoner-gamma', messages: USER, ...expected }, JSON.stringify(req));
      const r = sent['reasoning'] as { max_tokens?: number } | undefined;
      const limit = (req['max_completion_tokens'] ?? req['max_tokens']) as number | undefined;
      const reply = (sent['max_completion_tokens'] ?? sent['max_tokens']) as number | undefined;
      if (limit !== undefined && r?.max_tokens !== undefined)
        t.ok(r.max_tokens + (reply ?? 0) <= limit, 'reasoning + reply never exceed the limit');
    }
    const { sent } = await chat({
      model: 'acme/reasoner',
      provider: { only: ['alpha'] },
      reasoning_effort: 'medium',
      max_tokens: 1000,
    });
    t.same(
      sent,
      { model: 'reasoner-v1', messages: USER, reasoning_effort: 'medium', max_tokens: 1000 },
      'a level-accepting platform gets the level unchanged',
    );
  });

  t.test('Responses: reasoning.effort forwarded, stream left as sent, routing fields consumed', async (t) => {
    const body = {
      model: 'acme/reasoner',
      input: 'hello',
      reasoning: { effort: 'low', summary: 'auto' },
      provider: { only: ['alpha'] },
      models: ['acme/chat-small'],
      route: 'fallback',
      temperature: 0.3,
      top_k: 5,
      text: { format: { type: 'text' } },
      future_field: [1],
    };
    let res = await s.post('/v1/responses', body, { key });
    t.equal(res.status, 200);
    const json = (await res.json()) as { model: string };
    t.equal(json.model, 'acme/reasoner');
    t.same(simBody(s), {
      model: 'reasoner-v1',
      input: 'hello',
      reasoning: { effort: 'low', summary: 'auto' },
      temperature: 0.3,
      top_k: 5,
      text: { format: { type: 'text' } },
      future_field: [1],
    });
    t.equal(lastSim(s).path, '/v1/responses');

    res = await s.post(
      '/v1/responses',
      { model: 'acme/chat-small', input: 'hi', stream: true, provider: { only: ['beta'] }, top_k: 3 },
      { key },
    );
    t.equal(res.status, 200);
    await res.text();
    t.same(
      simBody(s),
      { model: 'small-beta', input: 'hi', stream: true, top_k: 3 },
      'no stream_options, no default level, no sampling removal on Responses',
    );
  });

  t.test('Messages: provider and models removed, everything else forwarded', async (t) => {
    const body = {
      model: 'beta-labs/sonnet-ish',
      max_tokens: 64,
      system: [{ type: 'text', text: 'be brief', cache_control: { type: 'ephemeral' } }],
      messages: [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }],
      tools: [{ name: 't', input_schema: { type: 'object' } }],
      metadata: { user_id: 'u' },
      thinking: { type: 'enabled', budget_tokens: 1024 },
      temperature: 0.1,
      top_k: 5,
      future_field: true,
      provider: { only: ['delta'] },
      models: ['acme/chat-big'],
    };
    const res = await s.post('/v1/messages', body, {
      key,
      headers: { 'anthropic-version': '2023-06-01', 'anthropic-beta': 'prompt-caching-2024-07-31' },
    });
    t.equal(res.status, 200);
    await res.text();
    const { provider: _p, models: _m, ...rest } = body;
    t.same(simBody(s), { ...rest, model: 'sonnet-ish-20250101' });
  });

  t.test('forwarded client headers; client credentials never', async (t) => {
    const clientHeaders = {
      'x-pi-session-id': 'sess-1',
      'x-title': 'My App',
      'http-referer': 'https://app.example/page?q=1',
      'openai-organization': 'org-client',
      'x-api-key': 'sk-pi-should-not-leak',
      cookie: 'a=b',
      'x-custom': 'nope',
    };
    await chat({ model: 'acme/chat-small', provider: { only: ['alpha'] } }, clientHeaders);
    const h = lastSim(s).headers;
    t.equal(h['x-pi-session-id'], 'sess-1');
    t.equal(h['x-title'], 'My App');
    t.equal(h['http-referer'], 'https://app.example/page?q=1', 'forwarded verbatim');
    t.equal(h['authorization'], 'Bearer upstream-secret-alpha-1', 'the deployment credential, not the client key');
    for (const k of ['x-api-key', 'openai-organization', 'cookie', 'x-custom', 'api-key'])
      t.notOk(k in h, `${k} not forwarded`);
    t.notMatch(JSON.stringify(h), key, 'the client key appears in no upstream header');

    await chat({ model: 'acme/chat-small', provider: { only: ['alpha'] } }, { 'x-pi-session-id': 'x'.repeat(257) });
    t.notOk(
      'x-pi-session-id' in lastSim(s).headers,
      'a session id over 256 characters counts as absent and is not forwarded',
    );
  });

  t.test('platform credentials and URLs', async (t) => {
    // OpenAI-style bearer.
    await chat({ model: 'acme/chat-small', provider: { only: ['alpha'] } });
    t.equal(lastSim(s).path, '/v1/chat/completions');
    t.equal(lastSim(s).headers['authorization'], 'Bearer upstream-secret-alpha-1');

    // Azure: api-key, deployment in the path, api-version query.
    await chat({ model: 'acme/chat-small', provider: { only: ['zeta'] } });
    let r = lastSim(s);
    t.equal(r.path, '/openai/deployments/small-deployment/chat/completions');
    t.equal(r.query, 'api-version=2024-10-21');
    t.equal(r.headers['api-key'], 'upstream-secret-zeta-1');
    t.notOk('authorization' in r.headers);

    // Anthropic: x-api-key + anthropic-version (adapter option, or the client's).
    let res = await s.post(
      '/v1/messages',
      { model: 'beta-labs/sonnet-ish', max_tokens: 10, messages: USER, provider: { only: ['delta'] } },
      { key },
    );
    t.equal(res.status, 200);
    await res.text();
    r = lastSim(s);
    t.equal(r.path, '/v1/messages');
    t.equal(r.headers['x-api-key'], 'upstream-secret-delta-1');
    t.equal(r.headers['anthropic-version'], '2023-06-01');
    t.notOk('authorization' in r.headers);
    res = await s.post(
      '/v1/messages',
      { model: 'beta-labs/sonnet-ish', max_tokens: 10, messages: USER, provider: { only: ['delta'] } },
      { headers: { 'x-api-key': key, 'anthropic-version': '2024-01-01' } },
    );
    t.equal(res.status, 200, 'the gateway key is read from X-Api-Key');
    await res.text();
    t.equal(
      lastSim(s).headers['x-api-key'],
      'upstream-secret-delta-1',
      'the client x-api-key is replaced, never forwarded',
    );
    t.equal(lastSim(s).headers['anthropic-version'], '2024-01-01');

    // Vertex: bearer, rawPredict / streamRawPredict with the model in the URL, anthropic_version in the body, no model.
    for (const stream of [false, true]) {
      res = await s.post(
        '/v1/messages',
        { model: 'beta-labs/sonnet-ish', max_tokens: 10, messages: USER, stream, provider: { only: ['gcp'] } },
        { key },
      );
      t.equal(res.status, 200);
      const text = await res.text();
      r = lastSim(s);
      t.equal(
        decodeURIComponent(r.path),
        `/v1/projects/p/locations/us-east5/publishers/anthropic/models/sonnet-ish@20250101:${stream ? 'streamRawPredict' : 'rawPredict'}`,
      );
      t.equal(r.headers['authorization'], 'Bearer upstream-secret-gcp-1');
      const b = r.body as Record<string, unknown>;
      t.equal(b['anthropic_version'], 'vertex-2023-10-16');
      t.notOk('model' in b, 'no model in a Vertex body');
      t.same(
        { ...b, anthropic_version: undefined },
        { max_tokens: 10, messages: USER, stream, anthropic_version: undefined },
      );
      t.equal(res.headers.get('x-pi-model'), 'beta-labs/sonnet-ish');
      if (!stream) t.equal((JSON.parse(text) as { model: string }).model, 'beta-labs/sonnet-ish');
    }

    // Images: model replaced, routing fields consumed.
    res = await s.post(
      '/v1/images/generations',
      { model: 'acme/painter', prompt: 'a cat', n: 1, size: '1024x1024', provider: { only: ['zeta'] } },
      { key },
    );
    t.equal(res.status, 200);
    await res.text();
    r = lastSim(s);
    t.equal(r.path, '/openai/deployments/painter-deployment/images/generations');
    t.same(r.body, { model: 'painter-deployment', prompt: 'a cat', n: 1, size: '1024x1024' });
  });
});
