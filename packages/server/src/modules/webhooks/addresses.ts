import dns, { type LookupAddress, type LookupOptions } from 'node:dns';
import { isIP, type LookupFunction } from 'node:net';
import ipaddr from 'ipaddr.js';

const NAT64: [ipaddr.IPv6, number] = ipaddr.IPv6.parseCIDR('64:ff9b::/96');
const SIX_TO_FOUR: [ipaddr.IPv6, number] = ipaddr.IPv6.parseCIDR('2002::/16');

/** The IPv4 address an IPv6 one carries to: IPv4-mapped, NAT64 (64:ff9b::/96) and 6to4 (2002::/16). */
function embeddedIPv4(address: ipaddr.IPv6): ipaddr.IPv4 | null {
  if (address.isIPv4MappedAddress()) return address.toIPv4Address();
  const bytes = address.toByteArray();
  if (address.match(NAT64)) return new ipaddr.IPv4(bytes.slice(12, 16));
  if (address.match(SIX_TO_FOUR)) return new ipaddr.IPv4(bytes.slice(2, 6));
  return null;
}

/**
 * Whether webhooks may not connect to this address (docs/security.md): anything but public unicast.
 * ipaddr.js names the special ranges: loopback, private, link-local, carrier-grade NAT,
 * unspecified, broadcast, multicast, benchmark (198.18.0.0/15), documentation and the other
 * reserved ones; in IPv6 also unique-local, site-local (fec0::/10), discard, Teredo, local-use
 * NAT64 (64:ff9b:1::/48) and the rest of the IETF's. An IPv4 address carried in IPv6 (mapped,
 * NAT64, 6to4) is judged as that IPv4 address; the IPv4-compatible ::/96 is refused whole.
 */
export function isBlockedAddress(address: string): boolean {
  if (isIP(address) === 0) return true;
  const parsed = ipaddr.parse(address);
  if (parsed.kind() === 'ipv4') return parsed.range() !== 'unicast';
  const v6 = parsed as ipaddr.IPv6;
  const carried = embeddedIPv4(v6);
  if (carried) return carried.range() !== 'unicast';
  if (v6.parts.slice(0, 6).every((part) => part === 0)) return true;
  return v6.range() !== 'unicast';
}

/** A send refused because the host is, or resolves to, an address webhooks may not reach. */
export class BlockedAddress extends Error {
  readonly code = 'EWEBHOOKBLOCKED';
  constructor(host: string) {
    super(`refused: ${host} is or resolves to a private, loopback, link-local or reserved address`);
  }
}

/** Every address of a name, as the system resolver answers (dns.lookup, read at call time). */
function lookupAll(hostname: string, options: LookupOptions = {}): Promise<LookupAddress[]> {
  return new Promise((resolve, reject) => {
    dns.lookup(hostname, { ...options, all: true }, (error, addresses) => (error ? reject(error) : resolve(addresses)));
  });
}

/**
 * 'private' when the URL's host is, or resolves to, an address webhooks may not reach;
 * 'unresolved' when the name does not resolve (accepted at create, fails at delivery); else 'public'.
 */
export async function classifyHost(url: URL): Promise<'private' | 'public' | 'unresolved'> {
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (isIP(host)) return isBlockedAddress(host) ? 'private' : 'public';
  try {
    const addresses = await lookupAll(host);
    return addresses.some((entry) => isBlockedAddress(entry.address)) ? 'private' : 'public';
  } catch {
    return 'unresolved';
  }
}

/**
 * The sends' lookup (node:http's `lookup` option, handed on to net.connect): resolves the name
 * once, refuses it when any of its addresses is blocked, and gives the socket exactly the
 * addresses it checked, so the connection goes to a checked address and the name is not
 * resolved again (DNS rebinding). net does not call it for an IP literal: the sender checks those.
 */
export const pinnedLookup: LookupFunction = (hostname, options, callback) => {
  lookupAll(hostname, options).then(
    (addresses) => {
      if (addresses.length === 0 || addresses.some((entry) => isBlockedAddress(entry.address))) {
        callback(new BlockedAddress(hostname), '', 0);
      } else if (options.all) {
        callback(null, addresses);
      } else {
        callback(null, addresses[0]!.address, addresses[0]!.family);
      }
    },
    (error: NodeJS.ErrnoException) => callback(error, '', 0),
  );
};
