import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Murmur3Suffix, murmur3_x86_32, murmur3_x86_32_bytes, murmur3_x86_32_continue, murmur3_x86_32_state } from './murmur3.js';

/** Deliberately naive reference: byte-at-a-time over Buffer's UTF-8 encoding. */
function reference(input: string, seed = 0): number {
  const data = Buffer.from(input, 'utf8');
  const c1 = 0xcc9e2d51;
  const c2 = 0x1b873593;
  let h = seed >>> 0;
  const nblocks = Math.floor(data.length / 4);
  for (let b = 0; b < nblocks; b++) {
    let k = data.readUInt32LE(b * 4);
    k = Math.imul(k, c1);
    k = ((k << 15) | (k >>> 17)) >>> 0;
    k = Math.imul(k, c2);
    h = (h ^ k) >>> 0;
    h = ((h << 13) | (h >>> 19)) >>> 0;
    h = (Math.imul(h, 5) + 0xe6546b64) >>> 0;
  }
  const tail = nblocks * 4;
  let k = 0;
  for (let j = data.length - tail - 1; j >= 0; j--) k = (k << 8) | (data[tail + j] as number);
  if (data.length - tail > 0) {
    k = Math.imul(k, c1);
    k = ((k << 15) | (k >>> 17)) >>> 0;
    k = Math.imul(k, c2);
    h = (h ^ k) >>> 0;
  }
  h = (h ^ data.length) >>> 0;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b) >>> 0;
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35) >>> 0;
  h ^= h >>> 16;
  return h >>> 0;
}

test('murmur3_x86_32: published vectors (seed 0)', () => {
  assert.equal(murmur3_x86_32(''), 0);
  assert.equal(murmur3_x86_32('hello'), 613153351);
  assert.equal(murmur3_x86_32('The quick brown fox jumps over the lazy dog'), 0x2e4ff723);
});

test('murmur3_x86_32: published vectors with a seed', () => {
  assert.equal(murmur3_x86_32('', 1), 0x514e28b7);
  assert.equal(murmur3_x86_32('', 0xffffffff), 0x81f16f39);
  assert.equal(murmur3_x86_32('The quick brown fox jumps over the lazy dog', 0x9747b28c), 0x2fa826cd);
});

test('murmur3_x86_32: result is an unsigned 32-bit integer', () => {
  for (const s of ['a', 'ab', 'abc', 'abcd', 'hello', 'flag:user', '\u00e9', '😀']) {
    const h = murmur3_x86_32(s);
    assert.ok(Number.isInteger(h) && h >= 0 && h <= 0xffffffff, `${s} -> ${h}`);
  }
});

test('murmur3_x86_32: hashes UTF-8 bytes, matches a byte-wise reference (ASCII and non-ASCII)', () => {
  const samples = [
    '',
    'a',
    'ab',
    'abc',
    'abcd',
    'abcde',
    'hello',
    'dark_mode:user_1',
    '\u00e9', // é: 2 bytes
    'caf\u00e9',
    'caf\u00e9s',
    'Jos\u00e9@exampl\u00e9.com',
    '\u00e9abc', // non-ASCII in the first block
    'abcd\u00e9', // non-ASCII in the tail only
    'abcdefgh\u4e2d', // 3-byte char after full ASCII blocks
    '\u4e2d\u6587',
    '😀', // surrogate pair: 4 bytes
    'user-😀-1',
    'flag:👩‍💻 emoji zwj',
    '\ud800', // lone surrogate -> U+FFFD, same as Buffer
    'x'.repeat(10_000) + '\u00e9', // larger than the scratch buffer
  ];
  for (const s of samples) {
    assert.equal(murmur3_x86_32(s), reference(s), JSON.stringify(s.slice(0, 40)));
    assert.equal(murmur3_x86_32(s, 42), reference(s, 42), JSON.stringify(s.slice(0, 40)) + ' seed 42');
    const bytes = Buffer.from(s, 'utf8');
    assert.equal(murmur3_x86_32_bytes(bytes), reference(s));
  }
  // Non-ASCII must really be hashed as UTF-8, not as UTF-16 code units or latin-1.
  assert.notEqual(murmur3_x86_32('\u00e9'), murmur3_x86_32_bytes(Uint8Array.of(0xe9)));
  assert.equal(murmur3_x86_32('\u00e9'), murmur3_x86_32_bytes(Uint8Array.of(0xc3, 0xa9)));
});

test('murmur3_x86_32: matches the reference on pseudo-random strings of every length 0..64', () => {
  let state = 12345;
  const next = (): number => {
    state = (Math.imul(state, 1103515245) + 12345) >>> 0;
    return state;
  };
  const alphabet = ['a', 'Z', '0', '@', '.', '-', '\u00e9', '\u00df', '\u4e2d', '😀', '\u007f', '\u0080'];
  for (let len = 0; len <= 64; len++) {
    for (let rep = 0; rep < 5; rep++) {
      let s = '';
      for (let j = 0; j < len; j++) s += alphabet[next() % (rep === 0 ? 5 : alphabet.length)];
      assert.equal(murmur3_x86_32(s), reference(s), JSON.stringify(s));
    }
  }
});

test('murmur3_x86_32_continue(state(prefix), suffix) equals murmur3_x86_32(prefix + suffix)', () => {
  // Every prefix length mod 4 (pending 0..3 bytes) crossed with every suffix
  // length 0..9, ASCII and non-ASCII on both sides.
  const prefixes = ['', 'f:', 'ab:', 'abc:', 'dark_mode:', 'new_checkout:', 'caf\u00e9:', '\u4e2d:', '😀:', 'x'];
  const suffixes: string[] = ['anonymous', 'alice@example.com', 'u-😀', '\u00e9', 'ab\u00e9', 'abcd\u00e9f'];
  for (let len = 0; len <= 9; len++) suffixes.push('abcdefghij'.slice(0, len));
  for (const seed of [0, 7]) {
    for (const p of prefixes) {
      const state = murmur3_x86_32_state(p, seed);
      assert.equal(state.byteLength, Buffer.byteLength(p, 'utf8'));
      for (const s of suffixes) {
        assert.equal(murmur3_x86_32_continue(state, s), reference(p + s, seed), JSON.stringify([p, s, seed]));
      }
    }
  }
});

test('Murmur3Suffix: one suffix after many prefixes equals murmur3_x86_32(prefix + suffix), for every alignment, length and seed', () => {
  const prefixes = ['', 'a', 'ab', 'abc', 'abcd', 'flag_1:', 'flag_12:', 'long_flag_key_123:', 'é:', 'ключ:'];
  const suffixes = ['', 'x', 'xy', 'xyz', 'wxyz', 'user-1', 'user-123456', 'u'.repeat(255), 'u'.repeat(256), 'u'.repeat(257), 'v'.repeat(300), 'é', 'user-é', 'a\u{1F600}b', '\ud800'];
  for (let n = 0; n < 40; n++) suffixes.push(Array.from({ length: n }, (_, i) => String.fromCharCode(33 + ((i * 7 + n) % 90))).join(''));
  const suffix = new Murmur3Suffix();
  for (const text of suffixes) {
    suffix.prepare(text);
    for (const prefix of prefixes) {
      for (const seed of [0, 1, 0x9747b28c]) {
        assert.equal(suffix.finish(murmur3_x86_32_state(prefix, seed)), murmur3_x86_32(prefix + text, seed), `${JSON.stringify(prefix)} + ${JSON.stringify(text)}, seed ${seed}`);
      }
    }
  }
});
