import { lookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';

/** Loopback, link-local, private, carrier-grade NAT, unspecified, multicast (contract §11). */
const PRIVATE = new BlockList();
for (const [prefix, bits] of [
  ['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16],
  ['172.16.0.0', 12], ['192.168.0.0', 16], ['224.0.0.0', 4], ['240.0.0.0', 4],
] as const) PRIVATE.addSubnet(prefix, bits, 'ipv4');
for (const [prefix, bits] of [['::', 128], ['::1', 128], ['fc00::', 7], ['fe80::', 10], ['ff00::', 8]] as const) PRIVATE.addSubnet(prefix, bits, 'ipv6');

/** BlockList checks an IPv4-mapped IPv6 address (::ffff:127.0.0.1) against the IPv4 ranges too. */
export function isPrivateAddress(address: string): boolean {
  const family = isIP(address);
  return family === 4 ? PRIVATE.check(address, 'ipv4') : family === 6 ? PRIVATE.check(address, 'ipv6') : false;
}

/**
 * 'private' when the URL's host is, or resolves to, an address webhooks may not reach;
 * 'unresolved' when the name does not resolve (accepted at create, fails at delivery); else 'public'.
 */
export async function classifyHost(url: URL): Promise<'private' | 'public' | 'unresolved'> {
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (isIP(host)) return isPrivateAddress(host) ? 'private' : 'public';
  try {
    const addresses = await lookup(host, { all: true, verbatim: true });
    return addresses.some((entry) => isPrivateAddress(entry.address)) ? 'private' : 'public';
  } catch {
    return 'unresolved';
  }
}
