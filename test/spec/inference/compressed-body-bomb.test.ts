// A decompression bomb as a request body (1 GiB decoded from about 1 MB sent) costs the gateway the
// body limit's worth of memory and time, never its decoded size: `pi-gateway serve` runs as a child
// process with the default 4 MiB body limit, and its peak RSS (VmHWM in /proc/PID/status) is read
// before and after several bombs sent at once, in gzip and zstd.
import t from 'tap';
import { cpSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync, zstdCompressSync } from 'node:zlib';
import { tempDir } from '../../helpers/admission.ts';
import { prepareDb, startServe } from '../../helpers/serve-process.ts';
import { FIXTURES } from '../../helpers/stack.ts';

const MIB = 1024 * 1024;

/** A field of /proc/PID/status in MiB (VmRSS, VmHWM). */
function memoryMib(pid: number, field: string): number {
  const m = new RegExp(`^${field}:\\s+(\\d+) kB$`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (!m) throw new Error(`no ${field} in /proc/${pid}/status`);
  return Number(m[1]) / 1024;
}

/** 16 members (gzip) or frames (zstd) of 64 MiB of one JSON-ish byte: 1 GiB decoded. */
function bomb(compress: (b: Buffer) => Buffer): Buffer {
  const one = compress(Buffer.alloc(64 * MIB, 0x20));
  return Buffer.concat(Array.from({ length: 16 }, () => one));
}

t.test('decompression bombs are refused 413 with bounded memory and time', async (t) => {
  // The fixture config with the default body limit (4 MiB) instead of its 64 KiB.
  const config = join(tempDir(t, 'pi-bomb-config-'), 'gateway');
  cpSync(join(FIXTURES, 'gateway'), config, { recursive: true });
  const yaml = join(config, 'gateway.yaml');
  writeFileSync(yaml, readFileSync(yaml, 'utf8').replace('max_body_bytes: 65536', `max_body_bytes: ${4 * MIB}`));
  const db = prepareDb(t);
  const p = await startServe(t, { config, db });
  const pid = p.child.pid ?? 0;

  const bombs: [string, Buffer][] = [
    ['gzip', bomb((b) => gzipSync(b, { level: 9 }))],
    ['zstd', bomb((b) => zstdCompressSync(b))],
  ];
  for (const [coding, body] of bombs)
    t.ok(body.length <= 2 * MIB, `${coding}: ${body.length} bytes sent for 1 GiB decoded`);

  const send = (coding: string, body: Buffer): Promise<Response> =>
    fetch(`${p.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${db.key}`, 'content-type': 'application/json', 'content-encoding': coding },
      body,
    });
  // Warm up the request path (and the decoders) so the peak measured below is the bombs'.
  const warm = await send('gzip', gzipSync(JSON.stringify({ model: 'acme/chat-small', messages: [] })));
  t.equal(warm.status, 422, 'an ordinary compressed body is read (and its empty messages refused)');
  await warm.arrayBuffer();

  const hwm0 = memoryMib(pid, 'VmHWM');
  const t0 = performance.now();
  // Four of each at once: 8 GiB decoded if nothing stopped them.
  const answers = await Promise.all(
    bombs.flatMap(([coding, body]) =>
      Array.from({ length: 4 }, () =>
        send(coding, body).then(async (r) => ({ coding, status: r.status, body: await r.json() })),
      ),
    ),
  );
  const ms = performance.now() - t0;
  const grew = memoryMib(pid, 'VmHWM') - hwm0;
  for (const a of answers) {
    t.equal(a.status, 413, `${a.coding} bomb`);
    t.match(a.body, {
      error: { code: 'request_too_large', message: `request body is larger than the ${4 * MIB}-byte limit` },
    });
  }
  // Decoding them whole would have taken the process's peak RSS up by gigabytes.
  t.ok(grew < 128, `peak RSS grew ${grew.toFixed(1)} MiB for 8 bombs`);
  t.ok(ms < 10_000, `answered in ${Math.round(ms)} ms`);
  t.ok(p.child.exitCode === null, 'the gateway is still running');
  const after = await send('gzip', gzipSync(JSON.stringify({ model: 'acme/chat-small', messages: [] })));
  t.equal(after.status, 422, 'and reads the next compressed body');
});
