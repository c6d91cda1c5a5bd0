// Who called, as the access log says it: the address of the connection's peer, or — only when that
// peer is one of the operator's trusted proxies (`serve --trusted-proxies`) — the client that
// X-Forwarded-For names. The header is read from its right end (the hop nearest the gateway) and each
// address a trusted proxy added is skipped: the first address no trusted proxy owns is the client.
// Anything left of it was written by the client itself and proves nothing. With no trusted proxies
// (the default) the header is never read: any client could write one.
import { BlockList, isIP } from 'node:net';

export class TrustedProxyError extends Error {}

/** The operator's trusted proxies: addresses and CIDR ranges, IPv4 or IPv6. */
export class TrustedProxies {
  private readonly list = new BlockList();
  readonly size: number;

  /** `entries` as given (`10.0.0.0/8`, `192.168.1.7`, `fd00::/8`); TrustedProxyError names a bad one. */
  constructor(entries: readonly string[]) {
    for (const raw of entries) {
      const entry = raw.trim();
      const slash = entry.indexOf('/');
      const address = slash === -1 ? entry : entry.slice(0, slash);
      const family = isIP(address);
      if (family === 0)
        throw new TrustedProxyError(`"${raw}" is not an IP address or a CIDR range (like 10.0.0.0/8 or fd00::/8)`);
      const type = family === 4 ? 'ipv4' : 'ipv6';
      if (slash === -1) {
        this.list.addAddress(address, type);
        continue;
      }
      const bits = entry.slice(slash + 1);
      const max = family === 4 ? 32 : 128;
      if (!/^\d{1,3}$/.test(bits) || Number(bits) > max)
        throw new TrustedProxyError(`"${raw}": the prefix length must be a whole number from 0 to ${max}`);
      this.list.addSubnet(address, Number(bits), type);
    }
    this.size = entries.length;
  }

  /** Whether `address` (an IP address in text) is a trusted proxy. */
  has(address: string): boolean {
    if (this.size === 0) return false;
    const family = isIP(address);
    return family !== 0 && this.list.check(address, family === 4 ? 'ipv4' : 'ipv6');
  }
}

/** `::ffff:192.0.2.1` (an IPv4 peer on a dual-stack socket) → `192.0.2.1`; anything else unchanged. */
export function plainAddress(address: string): string {
  const m = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(address);
  return m ? (m[1] as string) : address;
}

/** One X-Forwarded-For entry as an address: brackets and a port removed (`[2001:db8::1]:443`,
 *  `192.0.2.1:80`); null when it is no IP address. */
function forwardedAddress(entry: string): string | null {
  let a = entry.trim();
  const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(a);
  if (bracketed) a = bracketed[1] as string;
  else if (/^\d{1,3}(?:\.\d{1,3}){3}:\d+$/.test(a)) a = a.slice(0, a.lastIndexOf(':'));
  return isIP(a) === 0 ? null : plainAddress(a);
}

/**
 * The client's address: `peer` unless it is a trusted proxy; then the right-most X-Forwarded-For
 * entry no trusted proxy owns (every entry trusted: the left-most; an entry that is no IP address
 * ends the walk at the hop that sent it).
 */
export function clientAddress(peer: string, forwardedFor: string | undefined, trusted: TrustedProxies): string {
  let client = plainAddress(peer);
  if (forwardedFor === undefined || !trusted.has(client)) return client;
  const hops = forwardedFor.split(',');
  for (let i = hops.length - 1; i >= 0; i--) {
    const hop = forwardedAddress(hops[i] as string);
    if (hop === null) return client;
    client = hop;
    if (!trusted.has(hop)) return hop;
  }
  return client;
}
