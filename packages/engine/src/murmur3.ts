/**
 * MurmurHash3 x86_32 over the UTF-8 bytes of a string.
 *
 * Hand-written rather than pulled from npm because:
 *  - bucketing must be byte-exact with other MurmurHash3 implementations fed
 *    UTF-8 (several popular JS ports hash UTF-16 code units or truncate them to
 *    8 bits, which silently disagrees on non-ASCII input);
 *  - the engine has zero runtime dependencies;
 *  - this is the evaluation hot path: ASCII input (the overwhelmingly common
 *    case for flag keys, user ids and emails) is hashed straight from
 *    `charCodeAt` without allocating anything.
 */

const C1 = 0xcc9e2d51;
const C2 = 0x1b873593;

const encoder = new TextEncoder();
/** Reused scratch buffer for UTF-8 encoding of short non-ASCII strings. */
let scratch = new Uint8Array(256);
const SCRATCH_MAX = 16 * 1024;

export function murmur3_x86_32(input: string, seed = 0): number {
  return murmur3_x86_32_continue(seed === 0 ? NO_PREFIX : emptyState(seed), input);
}

/** MurmurHash3 x86_32 over `bytes[0, byteLength)`. */
export function murmur3_x86_32_bytes(bytes: Uint8Array, byteLength: number = bytes.length, seed = 0): number {
  const blockEnd = byteLength & ~3;
  let h1 = seed | 0;
  let i = 0;

  for (; i < blockEnd; i += 4) {
    h1 = mixH(h1, mixK((bytes[i] as number) | ((bytes[i + 1] as number) << 8) | ((bytes[i + 2] as number) << 16) | ((bytes[i + 3] as number) << 24)));
  }

  const rem = byteLength - blockEnd;
  if (rem !== 0) {
    let k1 = 0;
    if (rem === 3) k1 ^= (bytes[i + 2] as number) << 16;
    if (rem >= 2) k1 ^= (bytes[i + 1] as number) << 8;
    k1 ^= bytes[i] as number;
    h1 ^= mixK(k1);
  }

  return fmix(h1, byteLength);
}

/**
 * Hash state after absorbing a fixed prefix, so that `murmur3_x86_32_continue(
 * murmur3_x86_32_state(p), s)` equals `murmur3_x86_32(p + s)` without building
 * the concatenated string or re-hashing the prefix. Used for rollout bucketing,
 * where the prefix (`"<flag key>:"`) is known when the flag is compiled.
 */
export interface Murmur3State {
  readonly prefix: string;
  readonly seed: number;
  /** h1 after all complete 4-byte blocks of the prefix */
  readonly h1: number;
  /** pending (unmixed) bytes of the prefix's last partial block, little-endian */
  readonly k1: number;
  /** number of pending bytes: 0..3 */
  readonly tailLen: number;
  /** UTF-8 byte length of the prefix */
  readonly byteLength: number;
}

const emptyState = (seed: number): Murmur3State => Object.freeze({ prefix: '', seed: seed | 0, h1: seed | 0, k1: 0, tailLen: 0, byteLength: 0 });
const NO_PREFIX = emptyState(0);

export function murmur3_x86_32_state(prefix: string, seed = 0): Murmur3State {
  const bytes = encoder.encode(prefix);
  const blockEnd = bytes.length & ~3;
  let h1 = seed | 0;
  for (let i = 0; i < blockEnd; i += 4) {
    const k1 =
      (bytes[i] as number) |
      ((bytes[i + 1] as number) << 8) |
      ((bytes[i + 2] as number) << 16) |
      ((bytes[i + 3] as number) << 24);
    h1 = mixH(h1, mixK(k1));
  }
  const tailLen = bytes.length - blockEnd;
  let k1 = 0;
  for (let j = 0; j < tailLen; j++) k1 |= (bytes[blockEnd + j] as number) << (8 * j);
  return Object.freeze({ prefix, seed: seed | 0, h1, k1, tailLen, byteLength: bytes.length });
}

/**
 * murmur3_x86_32(state.prefix + suffix, state.seed), reading ASCII straight from charCodeAt
 * (zero allocation); a non-ASCII suffix is encoded to UTF-8 and hashed whole.
 */
export function murmur3_x86_32_continue(state: Murmur3State, suffix: string): number {
  const len = suffix.length;
  let h1 = state.h1;
  let k1 = state.k1;
  let i = 0;
  let c: number;

  // 1. Complete the prefix's pending partial block, if any.
  const pending = state.tailLen;
  if (pending !== 0) {
    const need = 4 - pending;
    let shift = pending << 3;
    const stop = len < need ? len : need;
    for (; i < stop; i++) {
      c = suffix.charCodeAt(i);
      if (c > 0x7f) return hashNonAscii(state.prefix + suffix, state.seed);
      k1 |= c << shift;
      shift += 8;
    }
    if (len < need) {
      // Everything fits in the final partial block.
      h1 ^= mixK(k1);
      return fmix(h1, state.byteLength + len);
    }
    h1 = mixH(h1, mixK(k1));
  }

  // 2. Complete blocks of the suffix.
  const blockEnd = i + ((len - i) & ~3);
  for (; i < blockEnd; i += 4) {
    const c0 = suffix.charCodeAt(i);
    const c1 = suffix.charCodeAt(i + 1);
    const c2 = suffix.charCodeAt(i + 2);
    const c3 = suffix.charCodeAt(i + 3);
    if ((c0 | c1 | c2 | c3) > 0x7f) return hashNonAscii(state.prefix + suffix, state.seed);
    h1 = mixH(h1, mixK(c0 | (c1 << 8) | (c2 << 16) | (c3 << 24)));
  }

  // 3. Tail.
  const rem = len - i;
  if (rem !== 0) {
    let or = 0;
    k1 = 0;
    if (rem === 3) {
      c = suffix.charCodeAt(i + 2);
      or |= c;
      k1 ^= c << 16;
    }
    if (rem >= 2) {
      c = suffix.charCodeAt(i + 1);
      or |= c;
      k1 ^= c << 8;
    }
    c = suffix.charCodeAt(i);
    or |= c;
    k1 ^= c;
    if (or > 0x7f) return hashNonAscii(state.prefix + suffix, state.seed);
    h1 ^= mixK(k1);
  }

  return fmix(h1, state.byteLength + len);
}

function mixK(k1: number): number {
  k1 = Math.imul(k1, C1);
  k1 = (k1 << 15) | (k1 >>> 17);
  return Math.imul(k1, C2);
}

function mixH(h1: number, k1: number): number {
  h1 ^= k1;
  h1 = (h1 << 13) | (h1 >>> 19);
  return (Math.imul(h1, 5) + 0xe6546b64) | 0;
}

function hashNonAscii(input: string, seed: number): number {
  // A UTF-16 code unit encodes to at most 3 UTF-8 bytes (a surrogate pair,
  // 2 units, encodes to 4). Lone surrogates become U+FFFD, like Buffer.from.
  const needed = input.length * 3;
  if (needed > SCRATCH_MAX) {
    const bytes = encoder.encode(input);
    return murmur3_x86_32_bytes(bytes, bytes.length, seed);
  }
  if (needed > scratch.length) scratch = new Uint8Array(Math.max(needed, scratch.length * 2));
  const { written } = encoder.encodeInto(input, scratch);
  return murmur3_x86_32_bytes(scratch, written, seed);
}

function fmix(h1: number, byteLength: number): number {
  h1 ^= byteLength;
  h1 ^= h1 >>> 16;
  h1 = Math.imul(h1, 0x85ebca6b);
  h1 ^= h1 >>> 13;
  h1 = Math.imul(h1, 0xc2b2ae35);
  h1 ^= h1 >>> 16;
  return h1 >>> 0;
}

/** Suffixes longer than this many complete blocks are hashed by murmur3_x86_32_continue. */
const SUFFIX_MAX_BLOCKS = 64;

/**
 * One suffix hashed after many prefixes (a context's identifier after each rollout flag's
 * `"<key>:"`): its bytes are read and its blocks mixed once, for each of the four ways a prefix
 * can leave it aligned, so each prefix costs only the mixing into its state. finish(state)
 * equals murmur3_x86_32_continue(state, suffix) (tested for equivalence). Reused: call prepare
 * for each new suffix.
 */
export class Murmur3Suffix {
  private suffix = '';
  private length = 0;
  /** false: not ASCII, or too long; finish hashes the plain way. */
  private prepared = false;
  private readonly bytes = new Uint8Array(SUFFIX_MAX_BLOCKS * 4 + 3);
  /** Per alignment p (bytes the prefix left pending: 0..3): the suffix bytes that complete the prefix's block, placed. */
  private readonly head = new Int32Array(4);
  /** Per alignment: whether the suffix completes that block. */
  private readonly headCompletes = new Uint8Array(4);
  /** Per alignment: the complete blocks that follow, already mixed (mixK). */
  private readonly mixed = new Int32Array(4 * SUFFIX_MAX_BLOCKS);
  private readonly blocks = new Int32Array(4);
  /** Per alignment: the last partial block, and whether there is one. */
  private readonly tail = new Int32Array(4);
  private readonly hasTail = new Uint8Array(4);

  prepare(suffix: string): void {
    this.suffix = suffix;
    const len = (this.length = suffix.length);
    this.prepared = false;
    if (len > SUFFIX_MAX_BLOCKS * 4) return;
    const { bytes } = this;
    for (let i = 0; i < len; i++) {
      const c = suffix.charCodeAt(i);
      if (c > 0x7f) return;
      bytes[i] = c;
    }
    for (let p = 0; p < 4; p++) {
      const need = p === 0 ? 0 : 4 - p;
      let i = 0;
      let k = 0;
      for (; i < need && i < len; i++) k |= bytes[i]! << ((p + i) * 8);
      this.head[p] = k;
      this.headCompletes[p] = p !== 0 && len >= need ? 1 : 0;
      let b = 0;
      for (; i + 4 <= len; i += 4) this.mixed[p * SUFFIX_MAX_BLOCKS + b++] = mixK(bytes[i]! | (bytes[i + 1]! << 8) | (bytes[i + 2]! << 16) | (bytes[i + 3]! << 24));
      this.blocks[p] = b;
      let t = 0;
      for (let shift = 0; i < len; i++, shift += 8) t |= bytes[i]! << shift;
      this.tail[p] = t;
      this.hasTail[p] = len > need + b * 4 ? 1 : 0;
    }
    this.prepared = true;
  }

  /** murmur3_x86_32(state.prefix + the prepared suffix, state.seed). */
  finish(state: Murmur3State): number {
    if (!this.prepared) return murmur3_x86_32_continue(state, this.suffix);
    const p = state.tailLen;
    const byteLength = state.byteLength + this.length;
    let h1 = state.h1;
    if (p !== 0) {
      const k1 = state.k1 | this.head[p]!;
      if (this.headCompletes[p] === 0) return fmix(h1 ^ mixK(k1), byteLength);
      h1 = mixH(h1, mixK(k1));
    }
    const base = p * SUFFIX_MAX_BLOCKS;
    const end = base + this.blocks[p]!;
    for (let b = base; b < end; b++) h1 = mixH(h1, this.mixed[b]!);
    if (this.hasTail[p] === 1) h1 ^= mixK(this.tail[p]!);
    return fmix(h1, byteLength);
  }
}
