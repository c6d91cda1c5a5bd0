// The deploy kit (deploy/, docs/deploy.md) checked as far as this machine can run it: the systemd unit
// passes `systemd-analyze verify` and its offline security review; the Dockerfile lints clean and
// says what the image needs (a non-root user, the cache folder, probes through the executable's own
// `probe` command); the compose file and the Kubernetes manifest give the drain the time it needs and
// probe paths the admin listener serves; nginx, configured as docs/deploy.md says, terminates TLS in
// front of a real gateway and passes a streamed answer through event by event.
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import t from 'tap';
import { Agent, fetch as undiciFetch } from 'undici';
import { DockerfileParser } from 'dockerfile-ast';
import { validate } from 'dockerfile-utils';
import { parse as parseYaml } from 'yaml';
import { REPO, tempDir, waitFor } from '../helpers/admission.ts';
import { freePort } from '../helpers/free-port.ts';
import { fixtureConfig, startStack } from '../helpers/stack.ts';

const DEPLOY = join(REPO, 'deploy');
const BINARY = join(REPO, 'dist', 'pi-gateway-linux-x64');
const drainSeconds = fixtureConfig('bundled').settings.limits.drainTimeoutMs / 1000;

t.test('systemd unit: verifies, keeps its hardening, outlasts the drain', async (t) => {
  const unit = readFileSync(join(DEPLOY, 'systemd', 'pi-gateway.service'), 'utf8');
  const stop = Number(/^TimeoutStopSec=(\d+)$/m.exec(unit)?.[1]);
  t.ok(stop > drainSeconds, `TimeoutStopSec ${stop} s is longer than the ${drainSeconds}-s drain`);
  t.match(unit, /^ExecReload=\/bin\/kill -HUP \$MAINPID$/m, 'reload is SIGHUP');
  t.match(unit, /^LoadCredential=pi-master-key:/m, 'the master key comes as a credential');
  t.notMatch(unit, /PI_MASTER_KEY=|PI_ADMIN_TOKEN=/, 'no secret in the unit');
  if (!existsSync('/usr/bin/systemd-analyze')) {
    t.fail('systemd-analyze is not installed (Debian: systemd)');
    return;
  }
  // verify needs ExecStart to exist: the executable as built here stands in for /usr/local/bin.
  const dir = tempDir(t, 'pi-unit-');
  const file = join(dir, 'pi-gateway.service');
  writeFileSync(file, unit.replace('ExecStart=/usr/local/bin/pi-gateway', `ExecStart=${BINARY}`));
  const verify = spawnSync('systemd-analyze', ['verify', file], { encoding: 'utf8' });
  t.equal(verify.status, 0, `systemd-analyze verify: ${verify.stderr}`);
  t.equal(verify.stderr.trim(), '', 'no warnings');
  const security = spawnSync('systemd-analyze', ['security', '--offline=true', file], { encoding: 'utf8' });
  const exposure = Number(/Overall exposure level for \S+: ([\d.]+)/.exec(security.stdout)?.[1]);
  t.ok(exposure <= 2, `systemd's exposure level ${exposure} (0 safest, 10 unsafe) is at most 2`);
});

t.test('Dockerfile: lints clean, runs the executable as a user of its own with probes', async (t) => {
  const text = readFileSync(join(DEPLOY, 'container', 'Dockerfile'), 'utf8');
  t.same(
    validate(text).map((d) => d.message),
    [],
    'no lint diagnostics',
  );
  const file = DockerfileParser.parse(text);
  const by = (kw: string) =>
    file
      .getInstructions()
      .filter((i) => i.getKeyword() === kw)
      .map((i) => i.getArgumentsContent() ?? '');
  const user = by('USER').at(-1) ?? '';
  t.ok(user !== '' && !/^(root|0)(:|$)/.test(user), `runs as ${user}, not root`);
  t.match(by('FROM')[0] ?? '', /^debian:bookworm-slim$/, 'a glibc base the executable runs on');
  t.match(by('COPY').join('\n'), /dist\/pi-gateway-linux-x64 \/usr\/local\/bin\/pi-gateway/, 'copies the executable');
  const env = by('ENV').join(' ');
  for (const v of ['PI_CONFIG', 'PI_DB', 'PI_CACHE_DIR', 'PI_ADMIN_PORT'])
    t.match(env, new RegExp(`${v}=`), `sets ${v}`);
  t.match(by('HEALTHCHECK')[0] ?? '', /"probe"/, "the health check is the executable's probe");
  t.same(by('STOPSIGNAL'), ['SIGTERM'], 'SIGTERM drains');
  t.match(by('ENTRYPOINT')[0] ?? '', /\/usr\/local\/bin\/pi-gateway/);
});

t.test('compose and Kubernetes: the drain fits the grace period, probes hit the admin listener', async (t) => {
  const compose = parseYaml(readFileSync(join(DEPLOY, 'container', 'compose.yaml'), 'utf8')) as {
    services: Record<string, { stop_grace_period: string; environment: Record<string, string> }>;
  };
  const gw = compose.services['gateway'];
  t.ok(
    Number(/^(\d+)s$/.exec(gw?.stop_grace_period ?? '')?.[1]) > drainSeconds,
    'compose stop_grace_period outlasts the drain',
  );
  t.ok(gw?.environment['PI_MASTER_KEY_FILE'], 'the master key comes from a secret file');
  const docs = readFileSync(join(DEPLOY, 'kubernetes', 'pi-gateway.yaml'), 'utf8')
    .split(/^---$/m)
    .map((d) => parseYaml(d) as { kind: string; spec: Record<string, unknown> });
  const dep = docs.find((d) => d.kind === 'Deployment') as unknown as {
    spec: {
      template: {
        spec: {
          terminationGracePeriodSeconds: number;
          containers: {
            readinessProbe: { httpGet: { path: string } };
            livenessProbe: { httpGet: { path: string } };
            lifecycle: { preStop: { exec: { command: string[] } } };
          }[];
        };
      };
    };
  };
  const pod = dep.spec.template.spec;
  const c = pod.containers[0];
  const pause = Number(c?.lifecycle.preStop.exec.command.at(-1));
  t.ok(
    pod.terminationGracePeriodSeconds > drainSeconds + pause,
    `terminationGracePeriodSeconds ${pod.terminationGracePeriodSeconds} > drain ${drainSeconds} + preStop ${pause}`,
  );
  const s = await startStack(t, { admin: true });
  for (const path of [c?.readinessProbe.httpGet.path, c?.livenessProbe.httpGet.path]) {
    const res = await fetch(`${s.admin?.url}${path}`);
    t.equal(res.status, 200, `${path} answers on the admin listener`);
  }
});

/** A self-signed certificate for 127.0.0.1. */
function certificate(dir: string): { cert: string; key: string } {
  const cert = join(dir, 'fullchain.pem');
  const key = join(dir, 'privkey.pem');
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-keyout',
      key,
      '-out',
      cert,
      '-days',
      '2',
      '-subj',
      '/CN=127.0.0.1',
      '-addext',
      'subjectAltName=IP:127.0.0.1',
    ],
    { stdio: 'ignore' },
  );
  return { cert, key };
}

t.test('nginx as docs/deploy.md configures it terminates TLS and streams through', async (t) => {
  const nginx = ['/usr/sbin/nginx', '/usr/bin/nginx'].find((p) => existsSync(p));
  if (!nginx) {
    t.fail('nginx is not installed: apt-get install -y nginx (.ci/run does)');
    return;
  }
  const s = await startStack(t, { admin: true });
  s.credit('open', '10');
  const key = s.key('open');
  const dir = tempDir(t, 'pi-nginx-');
  mkdirSync(join(dir, 'logs'));
  const { cert, key: certKey } = certificate(dir);
  const [api, admin] = [await freePort(), await freePort()];
  // The shipped file, with this test's ports, certificate and upstream addresses.
  const site = readFileSync(join(DEPLOY, 'nginx', 'pi-gateway.conf'), 'utf8')
    .replaceAll('/etc/ssl/pi-gateway/fullchain.pem', cert)
    .replaceAll('/etc/ssl/pi-gateway/privkey.pem', certKey)
    .replace('listen 443 ssl http2;', `listen 127.0.0.1:${api} ssl http2;`)
    .replace(/^\s*listen \[::\]:443 ssl http2;\n/m, '')
    .replace('listen 9443 ssl;', `listen 127.0.0.1:${admin} ssl;`)
    .replace('server 127.0.0.1:8080;', `server ${new URL(s.url).host};`)
    .replace('server 127.0.0.1:9090;', `server ${new URL(s.admin?.url ?? '').host};`);
  writeFileSync(join(dir, 'site.conf'), site);
  writeFileSync(
    join(dir, 'nginx.conf'),
    `daemon off;\nworker_processes 1;\npid ${join(dir, 'nginx.pid')};\nerror_log ${join(dir, 'logs', 'error.log')} warn;\nevents { worker_connections 64; }\n` +
      `http {\n  access_log off;\n  client_body_temp_path ${dir}/body;\n  proxy_temp_path ${dir}/proxy;\n  fastcgi_temp_path ${dir}/fcgi;\n  uwsgi_temp_path ${dir}/uwsgi;\n  scgi_temp_path ${dir}/scgi;\n  include ${join(dir, 'site.conf')};\n}\n`,
  );
  const check = spawnSync(nginx, ['-t', '-p', dir, '-c', join(dir, 'nginx.conf')], { encoding: 'utf8' });
  t.equal(check.status, 0, `nginx -t: ${check.stderr}`);
  const proc = spawn(nginx, ['-p', dir, '-c', join(dir, 'nginx.conf')], { stdio: 'ignore' });
  t.teardown(() => {
    proc.kill('SIGQUIT');
  });
  const tls = new Agent({ connect: { rejectUnauthorized: false } });
  t.teardown(() => tls.close());
  let listening = false;
  await waitFor(() => {
    if (!listening)
      connect(api, '127.0.0.1')
        .on('connect', function (this: Socket) {
          listening = true;
          this.destroy();
        })
        .on('error', () => undefined);
    return listening;
  }, 10_000);
  const res = await undiciFetch(`https://127.0.0.1:${api}/v1/chat/completions`, {
    method: 'POST',
    dispatcher: tls,
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'acme/chat-small', stream: true, messages: [{ role: 'user', content: 'hi' }] }),
  });
  t.equal(res.status, 200, 'answered over TLS');
  t.ok(res.headers.get('x-pi-trace-id'), "the gateway's headers come through");
  const text = await res.text();
  t.match(text, /data: \[DONE\]\n\n$/, 'the stream came through whole');
  const ready = await undiciFetch(`https://127.0.0.1:${admin}/health/ready`, { dispatcher: tls });
  t.equal(ready.status, 200, 'readiness over the admin TLS port');
});
