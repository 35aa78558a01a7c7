/**
 * Reading the texts that conditions compare: numbers, dates, versions, IP addresses and ranges.
 * The same parsers run when a condition is saved (its value must parse) and when it is evaluated
 * (an attribute that does not parse makes the condition false). docs/targeting.md says what each
 * accepts.
 */
import ipaddr from 'ipaddr.js';
import semver from 'semver';

/** A finite number written as a number (surrounding spaces allowed), else undefined. */
export function parseNumber(text: string): number | undefined {
  if (text.trim() === '') return undefined;
  const number = Number(text);
  return Number.isFinite(number) ? number : undefined;
}

const ISO_8601 = /^\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})?)?$/i;

/** Milliseconds since the epoch of an ISO 8601 date or date-time (one without an offset is UTC), else undefined. */
export function parseDate(text: string): number | undefined {
  const match = ISO_8601.exec(text);
  if (match === null) return undefined;
  // Date.parse rolls a day past the month's end over ("2026-02-30" is 2 March): refuse it.
  const [year, month, day] = [Number(text.slice(0, 4)), Number(text.slice(5, 7)), Number(text.slice(8, 10))];
  if (month < 1 || month > 12 || day < 1 || day > new Date(Date.UTC(year, month, 0)).getUTCDate()) return undefined;
  const dateOnly = text.length === 10;
  const time = Date.parse(dateOnly || match[1] !== undefined ? text : `${text}Z`);
  return Number.isFinite(time) ? time : undefined;
}

const VERSION = /^\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?$/;

/** A version `x.y.z[-pre]`, else undefined. */
export function parseVersion(text: string): semver.SemVer | undefined {
  if (!VERSION.test(text)) return undefined;
  return semver.parse(text) ?? undefined;
}

/** SemVer precedence of two versions as a sign. semver's compare tests each numeric part with a regex (~230 ns); the parts are numbers already. */
export function compareVersions(a: semver.SemVer, b: semver.SemVer): number {
  return a.major - b.major || a.minor - b.minor || a.patch - b.patch || a.comparePre(b);
}

/**
 * An IPv4 address only as four decimal parts: ipaddr.js alone also reads "10.1", "167772161" and
 * octal "012.0.0.1" (= 10.0.0.1), which no one means by an address in a context or a rule.
 */
function isAddress(text: string): boolean {
  return ipaddr.IPv4.isValidFourPartDecimal(text) || ipaddr.IPv6.isValid(text);
}

const DOTTED_QUAD = /^(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(?:\.(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/;

/**
 * An attribute's address at evaluation: an IPv4 address (also one written IPv4-mapped) as its
 * 32-bit number, an IPv6 address as ipaddr.js's. IPv4 is read by hand: ipaddr.js's isValid,
 * process and toIPv4MappedAddress try both families, throw inside or re-parse a string, and
 * cost 1–30 µs an evaluation.
 */
export function parseAddress(text: string): number | ipaddr.IPv6 | undefined {
  if (DOTTED_QUAD.test(text)) return ipv4Number(text.split('.').map(Number));
  if (!text.includes(':')) return undefined;
  const mapped = text.length <= 22 && /^::ffff:/i.test(text) ? text.slice(7) : '';
  if (DOTTED_QUAD.test(mapped)) return ipv4Number(mapped.split('.').map(Number)); // the usual IPv4-mapped form
  let address: ipaddr.IPv6;
  try {
    address = ipaddr.IPv6.parse(text);
  } catch {
    return undefined;
  }
  return address.isIPv4MappedAddress() ? ipv4Number(address.toIPv4Address().octets) : address;
}

function ipv4Number(octets: readonly number[]): number {
  return ((octets[0]! << 24) | (octets[1]! << 16) | (octets[2]! << 8) | octets[3]!) >>> 0;
}

/** Whether two IPv4 numbers share their first `bits` bits. */
export function sameNetwork(a: number, b: number, bits: number): boolean {
  return bits === 0 || (a ^ b) >>> (32 - bits) === 0;
}

/** A range as written in a condition (a bare address is a /32 or /128), else undefined. */
export function parseCidr(text: string): [ipaddr.IPv4 | ipaddr.IPv6, number] | undefined {
  const [address, prefix, ...rest] = text.split('/');
  if (rest.length > 0 || !isAddress(address!) || (prefix !== undefined && !/^\d{1,3}$/.test(prefix))) return undefined;
  try {
    return ipaddr.parseCIDR(prefix !== undefined ? text : `${text}/${text.includes(':') ? 128 : 32}`);
  } catch {
    return undefined;
  }
}

/** A condition's ranges, split by family: each IPv4 range it holds as [network, bits], each IPv6 range as ipaddr.js's. */
export interface Ranges {
  readonly v4: readonly (readonly [number, number])[];
  readonly v6: readonly (readonly [ipaddr.IPv6, number])[];
}

/**
 * Ranges ready for testing: an IPv4-mapped IPv6 range is also the IPv4 range it holds, and an
 * IPv6 range that holds all of ::ffff:0:0/96 (such as ::/0) holds every IPv4 address.
 */
export function splitRanges(ranges: readonly (readonly [ipaddr.IPv4 | ipaddr.IPv6, number])[]): Ranges {
  const v4: [number, number][] = [];
  const v6: [ipaddr.IPv6, number][] = [];
  const mappedBlock = ipaddr.IPv6.parse('::ffff:0:0');
  for (const [network, bits] of ranges) {
    if (network.kind() === 'ipv4') v4.push([ipv4Number((network as ipaddr.IPv4).octets), bits]);
    else {
      const address = network as ipaddr.IPv6;
      v6.push([address, bits]);
      if (bits >= 96 && address.isIPv4MappedAddress()) v4.push([ipv4Number(address.toIPv4Address().octets), bits - 96]);
      else if (bits < 96 && mappedBlock.match(address, bits)) v4.push([0, 0]);
    }
  }
  return { v4, v6 };
}

/** Whether an address (parseAddress's) is in one of the ranges. */
export function inRanges(address: number | ipaddr.IPv6, { v4, v6 }: Ranges): boolean {
  if (typeof address === 'number') {
    for (const [network, bits] of v4) if (sameNetwork(address, network, bits)) return true;
    return false;
  }
  for (const range of v6) if (address.match(range as [ipaddr.IPv6, number])) return true;
  return false;
}
