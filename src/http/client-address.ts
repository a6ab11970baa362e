import type { IncomingMessage } from 'node:http';
import { BlockList, isIP } from 'node:net';

/** An IPv6 address (no zone id) as its eight 16-bit groups; an embedded IPv4 tail counts as two. */
function ipv6Groups(address: string): number[] {
  const [head, tail] = address.includes('::') ? address.split('::') : [address, undefined];
  const parts = (text: string): number[] => text === '' ? [] : text.split(':').flatMap((g) => {
    if (!g.includes('.')) return [parseInt(g, 16)];
    const [a, b, c, d] = g.split('.').map(Number);
    return [(a << 8) | b, (c << 8) | d];
  });
  const left = parts(head);
  if (tail === undefined) return left;
  const right = parts(tail);
  return [...left, ...Array<number>(8 - left.length - right.length).fill(0), ...right];
}

/** Eight groups as RFC 5952 writes them: lower case, the longest run of two or more zero groups as `::`. */
function compress(groups: number[]): string {
  let best = -1;
  let bestLength = 1;
  for (let i = 0; i < 8;) {
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLength) { best = i; bestLength = j - i; }
    i = j === i ? i + 1 : j;
  }
  const hex = (gs: number[]) => gs.map((g) => g.toString(16)).join(':');
  return best < 0 ? hex(groups) : `${hex(groups.slice(0, best))}::${hex(groups.slice(best + bestLength))}`;
}

/**
 * One spelling per address: IPv6 in lower case and zero-compressed, without a zone id (`%eth0`)
 * or brackets, and an IPv4 client on a dual-stack socket (`::ffff:1.2.3.4`, `::ffff:102:304`) as
 * plain IPv4. Anything that is no address is returned as it is.
 */
export function plainAddress(address: string): string {
  const bare = address.replace(/^\[(.*)\]$/, '$1').replace(/%.*$/, '');
  const family = isIP(bare);
  if (family === 4) return bare;
  if (family !== 6) return address;
  const g = ipv6Groups(bare.toLowerCase());
  if (g.slice(0, 5).every((x) => x === 0) && g[5] === 0xffff) return `${g[6] >> 8}.${g[6] & 255}.${g[7] >> 8}.${g[7] & 255}`;
  return compress(g);
}

/**
 * The key every per-address cap and throttle counts under (connections, requests in progress
 * behind a proxy, failed authentication, OAuth registration): the address in one spelling, and
 * for IPv6 its /64, since one host usually holds a whole /64 and could otherwise rotate through it.
 */
export function addressKey(address: string): string {
  const a = plainAddress(address);
  if (isIP(a) !== 6) return a;
  return `${compress([...ipv6Groups(a).slice(0, 4), 0, 0, 0, 0])}/64`;
}

function parseCidr(text: string): { address: string; prefix?: number; family: 'ipv4' | 'ipv6' } | undefined {
  const [address, prefix, ...rest] = text.trim().split('/');
  const family = isIP(address);
  if (family === 0 || rest.length > 0) return undefined;
  if (prefix === undefined) return { address, family: family === 4 ? 'ipv4' : 'ipv6' };
  const bits = Number(prefix);
  if (!/^\d{1,3}$/.test(prefix) || bits > (family === 4 ? 32 : 128)) return undefined;
  return { address, prefix: bits, family: family === 4 ? 'ipv4' : 'ipv6' };
}

export function isAddressOrCidr(text: string): boolean {
  return parseCidr(text) !== undefined;
}

/** An X-Forwarded-For entry as an address: bare, `1.2.3.4:port` or `[v6]:port`; undefined when it is none. */
function forwardedAddress(entry: string): string | undefined {
  let a = entry.trim();
  const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(a);
  if (bracketed) a = bracketed[1];
  else if (/^\d+\.\d+\.\d+\.\d+:\d+$/.test(a)) a = a.slice(0, a.lastIndexOf(':'));
  return isIP(a) ? plainAddress(a) : undefined;
}

const known = new WeakMap<IncomingMessage, string>();

/**
 * Who a request comes from. Without trusted proxies, the connection's address. From a trusted
 * proxy, X-Forwarded-For read from the right: each hop a trusted proxy added is passed, and the
 * first address that is not a trusted proxy is the client (what the client itself wrote further
 * left is never believed). Every per-address cap and throttle uses this address.
 */
export class ClientAddresses {
  private readonly trusted = new BlockList();
  private readonly any: boolean;

  constructor(trustedProxies: readonly string[]) {
    for (const t of trustedProxies) {
      const c = parseCidr(t);
      if (!c) throw new Error(`trusted_proxies: "${t}" is not an IP address or CIDR`);
      if (c.prefix === undefined) this.trusted.addAddress(c.address, c.family);
      else this.trusted.addSubnet(c.address, c.prefix, c.family);
    }
    this.any = trustedProxies.length > 0;
  }

  isTrusted(address: string): boolean {
    if (!this.any) return false;
    const a = plainAddress(address);
    const family = isIP(a);
    return family !== 0 && this.trusted.check(a, family === 4 ? 'ipv4' : 'ipv6');
  }

  /** The client's address for this request, worked out once and remembered for `clientAddress`. */
  of(req: IncomingMessage): string {
    const seen = known.get(req);
    if (seen !== undefined) return seen;
    let client = plainAddress(req.socket.remoteAddress ?? 'unknown');
    if (this.isTrusted(client)) {
      const header = req.headers['x-forwarded-for'];
      const hops = (Array.isArray(header) ? header.join(',') : header ?? '').split(',');
      for (let i = hops.length - 1; i >= 0; i--) {
        const hop = forwardedAddress(hops[i]);
        // A hop that is no address ends the walk: the last believed address is the client.
        if (hop === undefined) break;
        client = hop;
        if (!this.isTrusted(hop)) break;
      }
    }
    known.set(req, client);
    return client;
  }
}

/** The client address the gateway worked out for this request, or the connection's. */
export function clientAddress(req: IncomingMessage): string {
  return known.get(req) ?? plainAddress(req.socket.remoteAddress ?? 'unknown');
}
