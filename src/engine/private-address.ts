import { BlockList, isIP } from 'node:net';

/**
 * Whether a URL (or a bare host) points at the machine itself, its private networks or a cloud
 * metadata service: the `private_address` condition operator, which lets a fetch tool's `deny_if`
 * refuse server-side request forgery. The host is read the way the server's HTTP client will read
 * it — by the WHATWG URL parser — so every spelling it accepts is caught: decimal, hex and octal
 * IPv4 (`2130706433`, `0x7f.1`, `0177.0.0.1`), IPv4-mapped and other IPv6 forms that embed an IPv4
 * address (`[::ffff:127.0.0.1]`, NAT64, 6to4), trailing dots (`localhost.`), upper case and
 * userinfo (`http://trusted.example@127.0.0.1/`).
 *
 * What it cannot see: a public name that resolves to a private address (DNS rebinding, wildcard
 * DNS such as `127.0.0.1.nip.io`, a redirect from a public URL). Only the fetching server, at
 * connect time, can refuse those.
 */

const blocked = new BlockList();
for (const [net, bits] of [
  ['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12],
  ['192.0.0.0', 24], ['192.0.2.0', 24], ['192.168.0.0', 16], ['198.18.0.0', 15], ['198.51.100.0', 24], ['203.0.113.0', 24],
  ['224.0.0.0', 4], ['240.0.0.0', 4],
] as const) blocked.addSubnet(net, bits, 'ipv4');
// Azure's wire server answers instance requests from a public-looking address.
blocked.addAddress('168.63.129.16', 'ipv4');
for (const [net, bits] of [
  ['::', 128], ['::1', 128], ['fc00::', 7], ['fe80::', 10], ['fec0::', 10], ['ff00::', 8], ['100::', 64], ['2001:db8::', 32],
] as const) blocked.addSubnet(net, bits, 'ipv6');

/** Host names that are the machine itself or a metadata service, wherever DNS points. */
const PRIVATE_NAMES = /^(localhost|ip6-localhost|ip6-loopback|metadata|metadata\.google\.internal|instance-data|kubernetes\.default(\.svc)?)$|\.(localhost|internal|local|localdomain|home\.arpa|intranet|corp|lan|svc\.cluster\.local)$/;

/** The eight 16-bit groups of an IPv6 address as the URL parser serialises it (hex, "::" allowed). */
function groups(v6: string): number[] {
  const [head, tail] = v6.includes('::') ? v6.split('::') : [v6, undefined];
  const parse = (s: string | undefined) => (s ? s.split(':').map((g) => parseInt(g, 16)) : []);
  const h = parse(head);
  const t = parse(tail);
  return tail === undefined ? h : [...h, ...Array(8 - h.length - t.length).fill(0), ...t];
}

const v4 = (hi: number, lo: number) => `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;

/** IPv4 addresses carried inside an IPv6 one: mapped, compatible, NAT64, 6to4 and Teredo. */
function embedded(g: number[]): string[] {
  const out: string[] = [];
  if (g.slice(0, 5).every((x) => x === 0) && (g[5] === 0xffff || g[5] === 0)) out.push(v4(g[6], g[7]));
  if (g[0] === 0x64 && g[1] === 0xff9b) out.push(v4(g[6], g[7]));
  if (g[0] === 0x2002) out.push(v4(g[1], g[2]));
  if (g[0] === 0x2001 && g[1] === 0) out.push(v4(g[6] ^ 0xffff, g[7] ^ 0xffff));
  return out;
}

/** Schemes that reach no host: a data: URI is content, not a request. */
const NO_NETWORK = new Set(['data:', 'mailto:', 'tel:', 'urn:', 'about:', 'blob:']);

/** The host a client would connect to; null when the URL reaches no host; undefined when nothing parses. */
function hostOf(value: string): string | null | undefined {
  const text = value.trim();
  for (const candidate of /^[a-z][a-z0-9+.-]*:\/\//i.test(text) ? [text] : [text, `http://${text}`]) {
    try {
      const url = new URL(candidate);
      if (url.protocol === 'file:') return 'localhost';
      if (url.hostname) return url.hostname;
      if (NO_NETWORK.has(url.protocol)) return null;
    } catch { /* try the next reading */ }
  }
  return undefined;
}

/**
 * True when the value names a loopback, link-local, private-range, reserved or metadata host. A
 * string that no URL reading accepts counts as private too: a tool cannot fetch it, and a lenient
 * server might read it in a way this check did not (fail closed).
 */
export function isPrivateAddress(value: unknown): boolean {
  if (typeof value !== 'string') return false;
  const raw = hostOf(value);
  if (raw === undefined) return true;
  if (raw === null) return false;
  const host = raw.toLowerCase().replace(/\.+$/, '');
  if (host === '' || PRIVATE_NAMES.test(host)) return true;
  const bare = host.startsWith('[') ? host.slice(1, -1) : host;
  const kind = isIP(bare);
  if (kind === 4) return blocked.check(bare, 'ipv4');
  if (kind === 6) return blocked.check(bare, 'ipv6') || embedded(groups(bare)).some((a) => blocked.check(a, 'ipv4'));
  return false;
}
