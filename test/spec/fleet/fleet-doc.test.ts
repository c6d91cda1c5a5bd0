// docs/fleet.md works as written. Its "Setting up a fleet", "Reloading the fleet" and "Draining a
// node" `sh` blocks are read from the page and run by bash, on a private PostgreSQL and a private
// Redis that are configured with the page's own configuration blocks (postgresql.conf's TLS lines,
// the pg_hba.conf line, redis.conf): TLS to both, password authentication, the two PostgreSQL roles
// and the Redis ACL user the page creates. Two nodes are started with the page's command, a request
// goes through each, every node is reloaded with the page's loop, and one is drained.
//
// What is substituted, and only this (each literal must occur in the page, so an edit cannot turn a
// substitution into a no-op): the hosts (db.internal:5432 and cache.internal:6380 → the private
// servers, 10.0.0.11 and 10.0.0.12 → 127.0.0.2 and 127.0.0.3, the nodes' network 10.0.0.0/24 →
// 127.0.0.0/8), the ports 8080 and 9090 (free ones), /etc/ (a temporary directory), `sudo -u postgres
// psql` (psql as the private server's superuser), in the node's command its bind address 0.0.0.0
// (the node's loopback address), and `systemctl stop pi-gateway` (`kill -TERM` on the node's pid:
// the signal systemd sends). What deploy.md's steps would have put on a node is put in place first
// (the config directory, the master key and the operator token), with the certificates an operator's
// CA would have issued (generated here) and `pi-gateway` on PATH (this checkout's bin/pi-gateway.js).
// Every upstream is pointed at the simulator (PI_UPSTREAM_OVERRIDE), OPENAI_API_KEY is a placeholder.
import t, { type Test } from 'tap';
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { chmodSync, cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { connect } from 'node:tls';
import pg from 'pg';
import { sourceHashOf } from '../../../src/config/config-files.ts';
import { decimalToNano } from '../../../src/money.ts';
import { startSimulator } from '../../../src/simulator/server.ts';
import { openPgStore } from '../../../src/store/postgres/store.ts';
import { REPO } from '../../helpers/admission.ts';
import { freePort } from '../../helpers/free-port.ts';
import { startPrivatePg } from '../../helpers/pg.ts';
import { fixtureConfig } from '../../helpers/stack.ts';
import { realClockEnv } from '../../helpers/real-clock-env.ts';

const DOC = readFileSync(join(REPO, 'docs', 'fleet.md'), 'utf8');
const UNIT = readFileSync(join(REPO, 'deploy', 'systemd', 'pi-gateway.service'), 'utf8');

t.setTimeout(300_000);

/** The first fenced block after `marker` (its info string must be `lang`; '' for none). */
function block(marker: string, lang: string): string {
  const at = DOC.indexOf(marker);
  if (at === -1) throw new Error(`docs/fleet.md has no "${marker}"`);
  const m = /```([a-z]*)\n([\s\S]*?)```/.exec(DOC.slice(at + marker.length));
  if (!m) throw new Error(`no block after "${marker}"`);
  if (m[1] !== lang) throw new Error(`the block after "${marker}" is \`\`\`${m[1]}, not \`\`\`${lang}`);
  return m[2] as string;
}

/** The page's `sh` blocks this test runs, by the heading or sentence they follow. */
const SH = {
  roles: '### 1. PostgreSQL: two roles, one database',
  acl: '### 2. Redis: one user, TLS only',
  env: '### 3. What every node needs',
  migrate: '### 4. Migrate',
  seal: '### 5. Credentials, keys and credit',
  start: 'By hand, the same node is:',
  ready: 'Each node is ready when both answer:',
  reload: '## Reloading the fleet',
  drain: '## Draining a node',
} as const;

/** Every literal the test substitutes; each must occur in the page. */
const LITERALS = [
  'db.internal:5432',
  'cache.internal:6380',
  '10.0.0.11',
  '10.0.0.12',
  '10.0.0.0/24',
  '8080',
  '9090',
  '6380',
  '/etc/',
  'sudo -u postgres psql',
  '0.0.0.0',
  'systemctl stop pi-gateway',
];

/** Replaces each `from` by `to` (a pair whose literal the text lacks changes nothing). */
function substitute(text: string, pairs: [string, string][]): string {
  let out = text;
  for (const [from, to] of pairs) {
    if (!LITERALS.includes(from)) throw new Error(`"${from}" is not a listed substitution`);
    out = out.replaceAll(from, to);
  }
  return out;
}

/** `key = 'value'` lines of a postgresql.conf block. */
function confSettings(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of text.split('\n')) {
    const m = /^\s*([a-z_]+)\s*=\s*'?([^'#]*?)'?\s*(#.*)?$/.exec(line);
    if (m) out[m[1] as string] = m[2] as string;
  }
  return out;
}

/** A CA and a server certificate for `names` (DNS names and IPs) under `dir`, by openssl. */
function issue(dir: string, ca: string, server: string, names: string): void {
  mkdirSync(dir, { recursive: true });
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      ...ec,
      '-keyout',
      join(dir, `${ca}.key`),
      '-out',
      join(dir, `${ca}.crt`),
      '-days',
      '2',
      '-subj',
      `/CN=${ca}`,
    ],
    { stdio: 'ignore' },
  );
  execFileSync(
    'openssl',
    ['req', ...ec, '-keyout', join(dir, `${server}.key`), '-out', join(dir, `${server}.csr`), '-subj', `/CN=${server}`],
    { stdio: 'ignore' },
  );
  writeFileSync(join(dir, 'san.ext'), `subjectAltName=${names}\n`);
  execFileSync(
    'openssl',
    [
      'x509',
      '-req',
      '-in',
      join(dir, `${server}.csr`),
      '-CA',
      join(dir, `${ca}.crt`),
      '-CAkey',
      join(dir, `${ca}.key`),
      '-CAcreateserial',
      '-out',
      join(dir, `${server}.crt`),
      '-days',
      '2',
      '-extfile',
      join(dir, 'san.ext'),
    ],
    { stdio: 'ignore' },
  );
}

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function bash(script: string, cwd: string, env: NodeJS.ProcessEnv, timeoutMs = 120_000): Promise<Run> {
  const child = spawn('bash', ['-c', `set -eo pipefail\n${script}`], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  return new Promise((resolve) =>
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    }),
  );
}

/** A private redis-server on the page's redis.conf (TLS only), answering once a TLS PING gets a reply. */
async function startRedis(t: Test, conf: string, port: number, ca: string): Promise<void> {
  const child = spawn('redis-server', [conf], { env: realClockEnv(), stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const exited = new Promise((r) => child.once('exit', r));
  t.teardown(async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      await exited;
    }
  });
  const answers = () =>
    new Promise<boolean>((resolve) => {
      const s = connect({ host: '127.0.0.1', port, ca: readFileSync(ca) }, () => s.write('PING\r\n'));
      s.setTimeout(500, () => {
        s.destroy();
        resolve(false);
      });
      s.once('data', () => {
        s.destroy();
        resolve(true);
      });
      s.once('error', () => resolve(false));
    });
  const until = Date.now() + 10_000;
  while (!(await answers())) {
    if (child.exitCode !== null) throw new Error(`redis-server exited at start: ${err}`);
    if (Date.now() > until) throw new Error(`redis-server did not answer over TLS within 10 s: ${err}`);
    await sleep(50);
  }
}

interface Node {
  shell: ChildProcess;
  pid: number;
  api: string;
  admin: string;
  log(): string;
  exited: Promise<number | null>;
}

/** Runs the page's node command for one node, in the background, until its `listening` line. */
async function startNode(t: Test, script: string, cwd: string, env: NodeJS.ProcessEnv): Promise<Node> {
  const shell = spawn('bash', ['-c', `set -eo pipefail\n${script}`], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  shell.stdout.on('data', (d: Buffer) => (log += d.toString()));
  shell.stderr.on('data', (d: Buffer) => (log += d.toString()));
  // 'close', not 'exit': by then every line the node wrote is in `log` (read right after).
  const exited = new Promise<number | null>((r) => shell.once('close', (code) => r(code)));
  let pid = 0;
  t.teardown(async () => {
    if (shell.exitCode !== null || shell.signalCode !== null) return;
    if (pid) process.kill(pid, 'SIGKILL');
    shell.kill('SIGKILL');
    await exited;
  });
  const until = Date.now() + 60_000;
  for (;;) {
    const line = log.split('\n').find((l) => l.includes('"event":"listening"'));
    if (line) {
      const e = JSON.parse(line) as { pid: number; url: string; admin: string };
      pid = e.pid;
      return { shell, pid, api: e.url, admin: e.admin, log: () => log, exited };
    }
    if (shell.exitCode !== null || Date.now() > until) throw new Error(`the node did not start:\n${log}`);
    await sleep(50);
  }
}

function chat(
  api: string,
  key: string,
  model: string,
  extra: Record<string, unknown> = {},
  headers: Record<string, string> = {},
): Promise<Response> {
  return fetch(`${api}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ model, messages: [{ role: 'user', content: 'Hello' }], ...extra }),
  });
}

/** The bundled config's chat models on the credential the page seals (openai-prod), most likely first. */
function openAiChatModels(): string[] {
  const config = fixtureConfig('bundled');
  const resources = new Map(config.resources.map((r) => [r.id, r]));
  return [
    ...new Set(
      config.deployments
        .filter(
          (d) =>
            d.active &&
            d.status === 'up' &&
            d.endpoints.includes('chat_completions') &&
            resources.get(d.resource)?.credential === 'openai-prod' &&
            resources.get(d.resource)?.active,
        )
        .map((d) => d.model),
    ),
  ];
}

t.test(
  'docs/fleet.md, as written: roles, TLS, migrate, two nodes, a request through each, reload, drain',
  async (t) => {
    const root = mkdtempSync(join(tmpdir(), 'pi-fleet-doc-'));
    t.teardown(() => rmSync(root, { recursive: true, force: true }));
    // As root, postgres runs as an unprivileged account (test/helpers/pg.ts): it must reach its certificate.
    chmodSync(root, 0o711);
    const etc = join(root, 'etc');

    // What an operator's CA issued, and deploy.md's files on a node.
    issue(join(etc, 'postgresql', 'tls'), 'db-ca', 'db.internal', 'DNS:db.internal,IP:127.0.0.1');
    issue(join(etc, 'redis', 'tls'), 'ca', 'cache.internal', 'DNS:cache.internal,IP:127.0.0.1');
    mkdirSync(join(etc, 'pi-gateway', 'credentials'), { recursive: true });
    cpSync(join(etc, 'postgresql', 'tls', 'db-ca.crt'), join(etc, 'pi-gateway', 'db-ca.crt'));
    cpSync(join(etc, 'redis', 'tls', 'ca.crt'), join(etc, 'pi-gateway', 'cache-ca.crt'));
    cpSync(join(REPO, 'config'), join(etc, 'pi-gateway', 'config'), { recursive: true });
    writeFileSync(
      join(etc, 'pi-gateway', 'credentials', 'master-key'),
      execFileSync('openssl', ['rand', '-base64', '32']),
    );
    const token = execFileSync('openssl', ['rand', '-hex', '32']).toString().trim();
    writeFileSync(join(etc, 'pi-gateway', 'credentials', 'admin-token'), `${token}\n`);
    mkdirSync(join(root, 'bin'));
    writeFileSync(
      join(root, 'bin', 'pi-gateway'),
      `#!/bin/sh\nexec '${process.execPath}' '${join(REPO, 'bin', 'pi-gateway.js')}' "$@"\n`,
    );
    chmodSync(join(root, 'bin', 'pi-gateway'), 0o755);

    // PostgreSQL with the page's postgresql.conf lines and pg_hba.conf line (and the superuser's own way
    // in, which stands for `sudo -u postgres psql`).
    const etcPath: [string, string] = ['/etc/', `${etc}/`];
    const settings = confSettings(substitute(block('In `postgresql.conf`', 'ini'), [etcPath]));
    t.match(settings, { ssl: 'on' }, 'the page turns TLS on');
    const hba = substitute(block('and in `pg_hba.conf`', ''), [['10.0.0.0/24', '127.0.0.0/8']]);
    const sim = await startSimulator({ record: false });
    t.teardown(() => sim.close());
    const db = await startPrivatePg({
      settings,
      hba: `local all pigw trust\nhost all pigw 127.0.0.1/32 trust\n${hba}`,
      ownFiles: [settings['ssl_key_file'] as string],
    });
    t.teardown(() => db.destroy());
    const redisPort = await freePort();
    const [apiPort, adminPort] = [await freePort(), await freePort()];
    const hosts: [string, string][] = [
      ['db.internal:5432', `127.0.0.1:${db.port}`],
      ['cache.internal:6380', `127.0.0.1:${redisPort}`],
      ['10.0.0.11', '127.0.0.2'],
      ['10.0.0.12', '127.0.0.3'],
    ];
    const sh = (name: keyof typeof SH, pairs: [string, string][]) => substitute(block(SH[name], 'sh'), pairs);

    const env: NodeJS.ProcessEnv = {
      PATH: `${join(root, 'bin')}:${process.env['PATH'] ?? '/usr/bin:/bin'}`,
      HOME: root,
      LANG: 'C.UTF-8',
    };
    // A clock tool the suite runs under (libfaketime's preload and settings) reaches the page's
    // commands too, so every process of the drill reads the same clock.
    for (const [k, v] of Object.entries(process.env)) if (k === 'LD_PRELOAD' || k.startsWith('FAKETIME')) env[k] = v;
    Object.assign(env, {
      OPENAI_API_KEY: 'sk-placeholder-for-the-simulator',
      PI_UPSTREAM_OVERRIDE: sim.url,
      // A loaded test machine can take longer than Redis's 250-ms default; a node would then decide on
      // its own limiter, which this test counts as a failure.
      PI_REDIS_TIMEOUT_MS: '3000',
    });

    // One operator's shell: roles and grants, the Redis user, the node's file, migrate, credentials.
    const setup = [
      sh('roles', [['sudo -u postgres psql', `psql -h 127.0.0.1 -p ${db.port} -U pigw -d postgres`]]),
      sh('acl', [etcPath]),
      sh('env', [...hosts, etcPath]),
      sh('migrate', [...hosts, etcPath]),
      sh('seal', []),
      `printf '%s\\n' "$KEY" "$DB_NODE_PASSWORD" "$DB_OWNER_PASSWORD" "$REDIS_PASSWORD" > '${root}/captured'`,
    ].join('\n');
    const a = await bash(setup, root, env);
    if (a.code !== 0) t.comment(`${a.stdout}\n${a.stderr}`.slice(-4000));
    t.equal(a.code, 0, 'the setup blocks ran to the end');
    const [key, nodePassword, ownerPassword, redisPassword] = readFileSync(join(root, 'captured'), 'utf8').split(
      '\n',
    ) as [string, string, string, string];
    t.match(key, /^sk-pi-/, 'key create printed a key');
    t.match(
      a.stdout,
      /migrated postgres:\/\/pi_gateway_owner@127\.0\.0\.1:\d+\/pi_gateway\?sslmode=verify-full&sslrootcert=\S+ to schema version \d+/,
      'migrated as the owner, over TLS',
    );
    t.match(a.stdout, /credited 100 USD to acme/, 'wallet credit');
    t.match(a.stdout, /^ok: /m, 'ledger verify says ok');

    // Redis on the page's redis.conf and the ACL file its block wrote.
    const redisConf = join(etc, 'redis', 'redis.conf');
    const conf = substitute(block('In `/etc/redis/redis.conf`', ''), [etcPath, ['6380', String(redisPort)]]);
    writeFileSync(redisConf, `${conf}bind 127.0.0.1\ndir ${root}\nsave ""\nappendonly no\n`);
    await startRedis(t, redisConf, redisPort, join(etc, 'redis', 'tls', 'ca.crt'));

    // The least privilege the page claims, asked of PostgreSQL as the serving role.
    const tls = `sslmode=verify-full&sslrootcert=${etc}/pi-gateway/db-ca.crt`;
    const asNode = new pg.Client({
      connectionString: `postgres://pi_gateway:${nodePassword}@127.0.0.1:${db.port}/pi_gateway?${tls}`,
    });
    await asNode.connect();
    t.teardown(() => asNode.end());
    const refused = async (sql: string) =>
      (await asNode.query(sql).then(
        () => 'allowed',
        (e: Error) => e.message,
      )) as string;
    t.match(
      await refused('ALTER TABLE ledger DISABLE TRIGGER ledger_no_update'),
      /must be owner/,
      'the serving role cannot disable the ledger’s triggers',
    );
    t.match(await refused('TRUNCATE request_log'), /permission denied/, 'nor truncate a table');
    t.match(await refused('CREATE TABLE intruder (x int)'), /permission denied/, 'nor create one');
    t.match(await refused('DROP TABLE holds'), /must be owner/, 'nor drop one');
    t.match(await refused("UPDATE ledger SET note = 'x'"), /append-only/, 'the ledger stays append-only');
    const plain = new pg.Client({
      connectionString: `postgres://pi_gateway:${nodePassword}@127.0.0.1:${db.port}/pi_gateway?sslmode=disable`,
    });
    t.match(
      await plain.connect().then(
        () => 'connected',
        (e: Error) => e.message,
      ),
      /no pg_hba\.conf entry .*no encryption/,
      'a connection without TLS is refused',
    );
    await plain.end().catch(() => undefined);

    // The node command as systemd runs it (deploy.md's unit plus the page's drop-in) is the by-hand one.
    const start = block(SH.start, 'sh');
    const dropIn = block('### 6. Start the nodes', 'ini');
    t.match(
      start,
      /pi-gateway serve --host 0\.0\.0\.0 --port 8080 --admin-host 0\.0\.0\.0 --admin-port 9090\n/,
      'the node command',
    );
    for (const line of ['Environment=PI_HOST=0.0.0.0', 'Environment=PI_PORT=8080', 'Environment=PI_ADMIN_PORT=9090'])
      t.ok(UNIT.includes(`\n${line}\n`), `the unit has ${line}`);
    t.match(dropIn, /^EnvironmentFile=\/etc\/pi-gateway\/fleet\.env$/m, 'the drop-in loads the same environment file');
    t.match(
      dropIn,
      /^Environment=PI_ADMIN_HOST=0\.0\.0\.0$/m,
      'and opens the admin listener as the by-hand command does',
    );
    const lb = block('HAProxy, for example:', '');
    t.match(lb, /option httpchk GET \/health\/ready/, 'the load balancer checks /health/ready');
    t.match(lb, /check port 9090/, 'on the admin port');

    // Two nodes, each with the page's command.
    const nodes: Node[] = [];
    for (const address of ['127.0.0.2', '127.0.0.3']) {
      const script = substitute(start, [
        etcPath,
        ['0.0.0.0', address],
        ['8080', String(apiPort)],
        ['9090', String(adminPort)],
      ]);
      nodes.push(await startNode(t, script, root, env));
    }
    const [na, nb] = nodes as [Node, Node];
    t.equal(na.api, `http://127.0.0.2:${apiPort}`, 'node a’s API on its address');
    t.equal(nb.admin, `http://127.0.0.3:${adminPort}`, 'node b’s admin listener on its address');

    const ready = await bash(sh('ready', [...hosts, ['9090', String(adminPort)]]), root, env);
    t.equal(ready.code, 0, 'the readiness loop ran');
    t.equal(ready.stdout, '127.0.0.2 ready: 200\n127.0.0.3 ready: 200\n', 'both nodes are ready');

    // A request through each node (a session id, so pins go through Redis too).
    const candidates = openAiChatModels();
    let model = '';
    for (const m of candidates) {
      const res = await chat(na.api, key, m);
      await res.text();
      if (res.status === 200) {
        model = m;
        break;
      }
    }
    t.not(model, '', `a chat model on openai-prod answers (tried ${candidates.join(', ')})`);
    for (const n of nodes) {
      const res = await chat(n.api, key, model, {}, { 'x-pi-session-id': 'fleet-doc' });
      t.equal(res.status, 200, `a request through ${n.api}`);
      await res.text();
    }
    const sessions = new pg.Client({ connectionString: `postgres://pigw@127.0.0.1:${db.port}/pi_gateway` });
    await sessions.connect();
    t.teardown(() => sessions.end());
    const conns = await sessions.query<{ usename: string; ssl: boolean }>(
      "SELECT a.usename, s.ssl FROM pg_stat_activity a JOIN pg_stat_ssl s USING (pid) WHERE a.datname = 'pi_gateway' AND a.application_name = 'pi-gateway'",
    );
    t.ok(conns.rows.length >= 2, 'the nodes hold connections');
    t.ok(
      conns.rows.every((r) => r.usename === 'pi_gateway' && r.ssl),
      'every node connection is the serving role, over TLS',
    );
    for (const n of nodes) {
      const metrics = await (await fetch(`${n.admin}/metrics`)).text();
      t.match(metrics, /^pi_gateway_redis_up 1$/m, `${n.admin}: Redis up (TLS, the ACL user)`);
      t.notMatch(
        metrics,
        /^pi_gateway_redis_fallbacks_total\{[^}]*\} [1-9]/m,
        'no decision fell back to the node’s own limiter or pins',
      );
    }

    // Reload every node with the page's loop: a workspace added to the config serves on both.
    const store = await openPgStore(`postgres://pigw@127.0.0.1:${db.port}/pi_gateway`, { masterKey: '' });
    const newcomer = (await store.apiKeys.create({ workspace: 'newcomer', name: 'fleet-doc' })).key;
    await store.wallets.credit('newcomer', decimalToNano('10'), 'fleet-doc');
    await store.close();
    for (const n of nodes) {
      const res = await chat(n.api, newcomer, model);
      t.equal(res.status, 401, `${n.api}: the new workspace is unknown before the reload`);
      await res.text();
    }
    const workspaces = join(etc, 'pi-gateway', 'config', 'workspaces.yaml');
    writeFileSync(
      workspaces,
      readFileSync(workspaces, 'utf8').replace(
        'workspaces:\n',
        'workspaces:\n  - id: newcomer\n    name: Newcomer\n    rate_limit_rpm: 600\n',
      ),
    );
    const hash = sourceHashOf(join(etc, 'pi-gateway', 'config'));
    const reload = await bash(sh('reload', [...hosts, etcPath, ['9090', String(adminPort)]]), root, env);
    if (reload.code !== 0) t.comment(reload.stderr);
    t.equal(reload.code, 0, 'the reload loop ran');
    t.equal(
      reload.stdout,
      `reloaded: config ${hash} (127.0.0.2:${adminPort}, pid ${na.pid})\nreloaded: config ${hash} (127.0.0.3:${adminPort}, pid ${nb.pid})\n`,
      'every node reloaded',
    );
    for (const n of nodes) {
      const res = await chat(n.api, newcomer, model);
      t.equal(res.status, 200, `${n.api}: the new workspace serves after the reload`);
      await res.text();
      const r = (await (await fetch(`${n.admin}/health/ready`)).json()) as { config: { hash: string } };
      t.equal(r.config.hash, hash, `${n.admin}: readiness shows the new config`);
    }

    // Drain node a with a stream in flight: readiness 503 at once, the stream ends whole, exit 0, and
    // node b keeps serving.
    const stream = await chat(na.api, key, model, { stream: true, sim: { chunks: 20, chunkDelayMs: 100 } });
    t.equal(stream.status, 200, 'a stream through node a');
    const reader = (stream.body as ReadableStream<Uint8Array>).getReader();
    await reader.read();
    const drain = await bash(sh('drain', [['systemctl stop pi-gateway', `kill -TERM ${na.pid}`]]), root, env);
    t.equal(drain.code, 0, 'the drain block ran');
    // kill returns once the signal is sent, not once the node has handled it: ask until the node
    // has seen it (a bounded number of times), then readiness must say draining.
    let during = await fetch(`${na.admin}/health/ready`);
    for (let i = 0; during.status === 200 && i < 200; i++) {
      await during.arrayBuffer();
      await new Promise((resolve) => setTimeout(resolve, 10));
      during = await fetch(`${na.admin}/health/ready`);
    }
    t.equal(during.status, 503, 'readiness answers 503 while it drains');
    t.match(await during.json(), { status: 'not_ready', state: 'draining' });
    let text = '';
    const decoder = new TextDecoder();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      text += decoder.decode(value, { stream: true });
    }
    t.match(text, /data: \[DONE\]/, 'the stream in flight finished whole');
    t.equal(await na.exited, 0, 'the drained node exited 0');
    t.match(na.log(), /"event":"drained"/, 'and logged its drain');
    t.equal(
      await fetch(na.api).then(
        () => 'answered',
        () => 'refused',
      ),
      'refused',
      'node a no longer accepts connections',
    );
    const after = await chat(nb.api, key, model);
    t.equal(after.status, 200, 'node b keeps serving');
    await after.text();

    // No password of the page's, nor the operator token, in anything printed.
    const printed = [
      a.stdout,
      a.stderr,
      ready.stdout,
      ready.stderr,
      reload.stdout,
      reload.stderr,
      drain.stdout,
      drain.stderr,
      ...nodes.map((n) => n.log()),
    ].join('\n');
    for (const [what, secret] of [
      ['the serving role’s password', nodePassword],
      ['the owner’s password', ownerPassword],
      ['the Redis password', redisPassword],
      ['the operator token', token],
    ] as const) {
      t.ok(secret.length >= 32, `${what} was generated`);
      t.notOk(printed.includes(secret), `${what} is never printed`);
    }

    // The versions the page names are the ones this ran on.
    const version =
      (await sessions.query<{ server_version: string }>('SHOW server_version')).rows[0]?.server_version ?? '';
    const redisVersion =
      /v=(\d+\.\d+)/.exec(execFileSync('redis-server', ['--version'], { env: realClockEnv() }).toString())?.[1] ?? '';
    t.match(
      DOC,
      new RegExp(`Tested: PostgreSQL ${version.split('.')[0]} and Redis ${redisVersion.replace('.', '\\.')}`),
      `the page names PostgreSQL ${version} and Redis ${redisVersion}`,
    );
    process.kill(nb.pid, 'SIGTERM');
    t.equal(await nb.exited, 0, 'node b stops cleanly');
  },
);

t.test('every sh block of the page is one this test runs; every substitution finds its text', async (t) => {
  const all = [...DOC.matchAll(/```sh\n/g)].length;
  t.equal(all, Object.keys(SH).length, 'no sh block is left out');
  for (const literal of LITERALS) t.ok(DOC.includes(literal), `the page has "${literal}"`);
});
