// The single executable (a Node single executable application built by `npm run dist`): its own
// files travel inside the binary as assets and are unpacked once, on first start, into a
// content-addressed folder — the native addons (uWebSockets.js, better-sqlite3) because a native
// addon can only be loaded from a file, the bundle because worker threads start from a file, and
// schemas/, console/dist/ and the example config/ so that every reader of the project's files reads
// them from disk exactly as in a checkout.
//
// Where: PI_CACHE_DIR, else systemd's CACHE_DIRECTORY (CacheDirectory= in the unit), else
// $XDG_CACHE_HOME/pi-gateway, else ~/.cache/pi-gateway. Never a shared /tmp by default: hardened hosts
// mount it noexec, and dlopen refuses a library there. The folder's name is the hash of the asset
// manifest, so a new binary unpacks beside an old one and never reads its files.
//
// Several processes may start at once (a unit restarted beside a CLI command, two workers' hosts):
// each unpacks into a private temporary folder and renames it into place; rename of a directory is
// atomic, so the loser finds a complete folder, deletes its own copy and uses the winner's.
import { mkdirSync, renameSync, rmSync, writeFileSync, existsSync, chmodSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import * as sea from 'node:sea';

/** The asset that lists every other asset: `{ id, files: { path: mode } }` (paths with `/`). */
export const MANIFEST_ASSET = 'manifest.json';
/** The file inside an unpacked folder written last: its presence means the folder is whole. */
const COMPLETE_MARK = '.complete';

interface Manifest {
  /** Hash of every asset's bytes: the folder's name. */
  id: string;
  /** Asset key (a relative path) → file mode. */
  files: Record<string, number>;
}

let unpacked: string | null = null;

/** Whether this process is the single executable. */
export function isSingleExecutable(): boolean {
  try {
    return sea.isSea();
  } catch {
    return false;
  }
}

/** The folder the binary's files are unpacked into, for this binary; null outside the binary. */
export function singleExecutableRoot(): string | null {
  if (unpacked !== null) return unpacked;
  if (!isSingleExecutable()) return null;
  const manifest = JSON.parse(sea.getAsset(MANIFEST_ASSET, 'utf8')) as Manifest;
  unpacked = unpack(manifest, cacheBase());
  return unpacked;
}

/** The cache folder the binary unpacks into (see the header for the order). */
export function cacheBase(env: NodeJS.ProcessEnv = process.env): string {
  const own = env['PI_CACHE_DIR'];
  if (own) return own;
  const systemd = env['CACHE_DIRECTORY']?.split(':')[0];
  if (systemd) return systemd;
  const xdg = env['XDG_CACHE_HOME'];
  if (xdg) return join(xdg, 'pi-gateway');
  return join(homedir(), '.cache', 'pi-gateway');
}

function unpack(manifest: Manifest, base: string): string {
  const target = join(base, manifest.id);
  if (existsSync(join(target, COMPLETE_MARK))) return target;
  try {
    mkdirSync(base, { recursive: true, mode: 0o700 });
  } catch (err) {
    throw new Error(
      `cannot create the folder the executable unpacks its files into (${base}): ${reason(err)}; set PI_CACHE_DIR to a writable folder on a file system that allows executables`,
    );
  }
  const temp = join(base, `.${manifest.id}.${process.pid}.${Math.random().toString(36).slice(2)}`);
  try {
    for (const [key, mode] of Object.entries(manifest.files)) {
      const file = join(temp, ...key.split('/'));
      mkdirSync(join(file, '..'), { recursive: true, mode: 0o700 });
      writeFileSync(file, new Uint8Array(sea.getRawAsset(key)), { mode });
      chmodSync(file, mode);
    }
    writeFileSync(join(temp, COMPLETE_MARK), manifest.id);
    try {
      renameSync(temp, target);
    } catch (err) {
      // Another process renamed its copy into place first: use that one.
      if (!existsSync(join(target, COMPLETE_MARK))) throw err;
    }
  } catch (err) {
    throw new Error(
      `cannot unpack the executable's files into ${base}: ${reason(err)}; set PI_CACHE_DIR to a writable folder on a file system that allows executables`,
    );
  } finally {
    rmSync(temp, { recursive: true, force: true });
  }
  return target;
}

const reason = (err: unknown): string => (err instanceof Error ? err.message : String(err));

/** Loads a native addon unpacked from the binary (`natives/<name>.node`). */
export function loadNativeAddon(name: string): unknown {
  const root = singleExecutableRoot();
  if (root === null) throw new Error(`native addon ${name}: not running as the single executable`);
  const module = { exports: {} as unknown };
  process.dlopen(module, join(root, 'natives', `${name}.node`));
  return module.exports;
}
