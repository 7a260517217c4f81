/**
 * Encoders from float32: each reads the first `n` float32 elements of a source (as bits through an
 * Int32Array view, or as values through a Float32Array view of the same memory) and writes the
 * first `n` elements of a zero-filled target. One function per target class, each a single loop
 * from index 0 with no offsets (V8 then drops most bounds checks: about 30% faster than indexing
 * `s0 + i`), so that V8 sees one element type per load and store site. Callers working in blocks
 * pass subarrays.
 *
 * Every result equals castReference's: a float32 is its own exact value, so "round the exact
 * value once" is "round these bits once", done here in 32-bit integer arithmetic.
 */
import { floatToInt64Words } from "../reference.js";

const TWO31 = 2147483648;
const TWO32 = 4294967296;
const TWO63 = 9223372036854775808;

/**
 * A 32-bit view of the first `words` whole words of a byte or 16-bit output, or undefined when the
 * output does not start on a 4-byte boundary (then the kernels store one element at a time).
 * Narrow outputs go 2 or 4 elements per 32-bit store: 1.1x (float16) to 1.6x (float8, bfloat16)
 * faster in V8 than element stores.
 */
function wordsOf(out: Uint8Array | Uint16Array, words: number): Int32Array | undefined {
  return (out.byteOffset & 3) === 0 && words > 0 ? new Int32Array(out.buffer, out.byteOffset, words) : undefined;
}

/**
 * float32 bits -> float16 bits: round to nearest even from the float32 bits, overflow to +/-Inf,
 * NaN to the quiet NaN 0x7E00 with the source's sign (the reference's `nanCode`).
 */
export function f16Of(s: number): number {
  const a = s & 0x7fffffff;
  let h: number;
  if (a >= 0x38800000) {
    // |x| >= 2^-14: a float16 normal (or Inf). Rebias the exponent (127 -> 15: minus 112 << 23)
    // and round away 13 mantissa bits: + 0xFFF + the kept lsb, so ties go to even. A carry out
    // of the mantissa steps the exponent, up to 0x7C00 (Inf) from 65520 on.
    if (a < 0x47800000) h = (a - 0x37fff001 + ((a >>> 13) & 1)) >>> 13;
    else h = a > 0x7f800000 ? 0x7e00 : 0x7c00;
  } else if (a > 0x33000000) {
    // 2^-25 < |x| < 2^-14: a float16 subnormal, in units of 2^-24. The float32 is
    // m * 2^(e - 150) with m the 24-bit significand, so the count is m >> (126 - e), rounded.
    const shift = 126 - (a >>> 23);
    const m = (a & 0x7fffff) | 0x800000;
    h = (m + (1 << (shift - 1)) - 1 + ((m >>> shift) & 1)) >>> shift;
  } else h = 0; // |x| <= 2^-25 (2^-25 itself is a tie to the even 0)
  return h | ((s >>> 16) & 0x8000);
}

export function f32ToF16(si: Int32Array, out: Uint16Array, n: number): void {
  const pairs = n >>> 1;
  const w = wordsOf(out, pairs);
  let i = 0;
  if (w) {
    for (let p = 0; p < pairs; p++, i += 2) w[p] = f16Of(si[i]) | (f16Of(si[i + 1]) << 16);
  }
  for (; i < n; i++) out[i] = f16Of(si[i]);
}

/**
 * float32 bits -> bfloat16 bits: keep the top 16 bits, rounded to nearest even (+ 0x7FFF + the
 * kept lsb; overflow carries into Inf); NaN to the quiet NaN 0x7FC0 with the source's sign. Cannot
 * overflow int32: the largest non-NaN magnitude is 0x7F800000.
 */
export function bf16Of(s: number): number {
  return (s & 0x7fffffff) > 0x7f800000 ? ((s >>> 16) & 0x8000) | 0x7fc0 : (s + 0x7fff + ((s >>> 16) & 1)) >>> 16;
}

export function f32ToBf16(si: Int32Array, out: Uint16Array, n: number): void {
  const pairs = n >>> 1;
  const w = wordsOf(out, pairs);
  let i = 0;
  if (w) {
    for (let p = 0; p < pairs; p++, i += 2) w[p] = bf16Of(si[i]) | (bf16Of(si[i + 1]) << 16);
  }
  for (; i < n; i++) out[i] = bf16Of(si[i]);
}

/**
 * The bucket of float32 bits in a 2^17-entry encode table (tables.ts `encodeTable`): the top 16
 * bits, and whether the low 16 are non-zero.
 */
function bucket(s: number): number {
  return ((s >>> 15) & 0x1fffe) | (((s & 0xffff) + 0xffff) >>> 16);
}

/** float32 -> 8-bit code through a bucket table. */
export function f32ByTable(si: Int32Array, out: Uint8Array, n: number, table: Uint8Array): void {
  const quads = n >>> 2;
  const w = wordsOf(out, quads);
  let i = 0;
  if (w) {
    for (let q = 0; q < quads; q++, i += 4) {
      w[q] = table[bucket(si[i])] | (table[bucket(si[i + 1])] << 8)
        | (table[bucket(si[i + 2])] << 16) | (table[bucket(si[i + 3])] << 24);
    }
  }
  for (; i < n; i++) out[i] = table[bucket(si[i])];
}

/** float32 -> 4-bit code through a bucket table, packed two per byte (element 0 low). */
export function f32ByTable4(si: Int32Array, out: Uint8Array, n: number, table: Uint8Array): void {
  const octets = n >>> 3;
  const w = wordsOf(out, octets);
  let i = 0;
  if (w) {
    for (let q = 0; q < octets; q++, i += 8) {
      w[q] = table[bucket(si[i])] | (table[bucket(si[i + 1])] << 4)
        | (table[bucket(si[i + 2])] << 8) | (table[bucket(si[i + 3])] << 12)
        | (table[bucket(si[i + 4])] << 16) | (table[bucket(si[i + 5])] << 20)
        | (table[bucket(si[i + 6])] << 24) | (table[bucket(si[i + 7])] << 28);
    }
  }
  for (; i + 1 < n; i += 2) out[i >>> 1] = table[bucket(si[i])] | (table[bucket(si[i + 1])] << 4);
  if (i < n) out[i >>> 1] = table[bucket(si[i])];
}

/** float32 -> 6-bit code through a bucket table, four per three bytes. */
export function f32ByTable6(si: Int32Array, out: Uint8Array, n: number, table: Uint8Array): void {
  let at = 0;
  for (let j = 0; j < n; j += 4, at += 3) {
    let v = 0;
    const k = Math.min(4, n - j);
    for (let q = 0; q < k; q++) v |= table[bucket(si[j + q])] << (6 * q);
    out[at] = v & 0xff;
    if (k > 1) out[at + 1] = (v >>> 8) & 0xff;
    if (k > 2) out[at + 2] = v >>> 16;
  }
}

/**
 * float32 bits -> float8e8m0 (2^(code - 127)), the reference's `encodeE8M0` on bits:
 * NaN -> 0xFF; x < 2^-127 (so every x <= 0) -> `low`; x > 2^127 (and +Inf) -> `high`; otherwise the
 * exponent, plus one when the fraction bits m satisfy m + `bump` >= 2^23 ("up": any fraction,
 * bump 0x7FFFFF; "nearest": from 1.5, bump 0x400000; "down": never, bump 0). A float32 subnormal
 * >= 2^-127 has exponent -127 (code 0) and fraction bits one place lower.
 */
function e8m0Of(s: number, low: number, high: number, bump: number): number {
  if (s >= 0x400000 && s <= 0x7f000000) {
    const e = s >>> 23;
    const m = e === 0 ? (s << 1) & 0x7fffff : s & 0x7fffff;
    return e + ((m + bump) >>> 23);
  }
  if ((s & 0x7fffffff) > 0x7f800000) return 0xff;
  return s > 0x7f000000 ? high : low;
}

export function f32ToE8M0(si: Int32Array, out: Uint8Array, n: number, low: number, high: number, bump: number): void {
  const quads = n >>> 2;
  const w = wordsOf(out, quads);
  let i = 0;
  if (w) {
    for (let q = 0; q < quads; q++, i += 4) {
      w[q] = e8m0Of(si[i], low, high, bump) | (e8m0Of(si[i + 1], low, high, bump) << 8)
        | (e8m0Of(si[i + 2], low, high, bump) << 16) | (e8m0Of(si[i + 3], low, high, bump) << 24);
    }
  }
  for (; i < n; i++) out[i] = e8m0Of(si[i], low, high, bump);
}

/**
 * float32 -> int8 / uint8 (stored through bytes): the x86-64 int32 conversion (truncation,
 * INT_MIN out of range or NaN), then the low 8 bits. No range check is needed: a float32 with
 * |x| >= 2^31 is a multiple of 2^8 (24 significant bits), so JS's modular ToInt32 (`x | 0`) leaves
 * low 8 bits of 0, as INT_MIN does; NaN and +/-Inf give 0 too.
 */
export function f32ToInt8(sf: Float32Array, out: Uint8Array, n: number): void {
  const quads = n >>> 2;
  const w = wordsOf(out, quads);
  let i = 0;
  if (w) {
    for (let q = 0; q < quads; q++, i += 4) {
      w[q] = ((sf[i] | 0) & 0xff) | (((sf[i + 1] | 0) & 0xff) << 8)
        | (((sf[i + 2] | 0) & 0xff) << 16) | ((sf[i + 3] | 0) << 24);
    }
  }
  for (; i < n; i++) out[i] = sf[i] | 0;
}

/** float32 -> int16 / uint16 (stored through Uint16Array): x86-64 int32, then the low 16 bits. */
export function f32ToInt16(sf: Float32Array, out: Uint16Array, n: number): void {
  for (let i = 0; i < n; i++) {
    const x = sf[i];
    out[i] = x > -2147483649 && x < TWO31 ? x | 0 : 0;
  }
}

/** float32 -> int32: truncation, INT_MIN when out of range or NaN (x86-64 cvttss2si). */
export function f32ToInt32(sf: Float32Array, out: Int32Array, n: number): void {
  for (let i = 0; i < n; i++) {
    const x = sf[i];
    out[i] = x > -2147483649 && x < TWO31 ? x | 0 : -2147483648;
  }
}

/** float32 -> uint32 by the reference's scheme: from 2^31 up, shift into int32 range and back. */
export function f32ToUint32(sf: Float32Array, out: Uint32Array, n: number): void {
  for (let i = 0; i < n; i++) {
    const x = sf[i];
    let v: number;
    if (x > -2147483649 && x < TWO31) v = x | 0;
    else if (x >= TWO31 && x < TWO32) v = ((x - TWO31) | 0) ^ 0x80000000;
    else v = x >= TWO31 ? 0 : -2147483648; // x - 2^31 out of int32 range: INT_MIN ^ 2^31 = 0
    out[i] = v;
  }
}

/** float32 -> int4 / uint4 packed two per byte: x86-64 int32, low 4 bits (`x | 0` suffices, see f32ToInt8). */
export function f32ToInt4(sf: Float32Array, out: Uint8Array, n: number): void {
  const pairs = n >>> 1;
  for (let p = 0, i = 0; p < pairs; p++, i += 2) out[p] = ((sf[i] | 0) & 15) | (((sf[i + 1] | 0) & 15) << 4);
  if ((n & 1) === 1) out[pairs] = (sf[n - 1] | 0) & 15;
}

/** float32 -> int2 / uint2 packed four per byte: x86-64 int32, low 2 bits (`x | 0` suffices, see f32ToInt8). */
export function f32ToInt2(sf: Float32Array, out: Uint8Array, n: number): void {
  const quads = n >>> 2;
  let i = 0;
  for (let q = 0; q < quads; q++, i += 4) {
    out[q] = ((sf[i] | 0) & 3) | (((sf[i + 1] | 0) & 3) << 2) | (((sf[i + 2] | 0) & 3) << 4) | (((sf[i + 3] | 0) & 3) << 6);
  }
  let v = 0;
  for (let k = 0; i < n; i++, k += 2) v |= ((sf[i] | 0) & 3) << k;
  if ((n & 3) !== 0) out[quads] = v;
}

/** float32 -> bool: 1 unless +/-0 (NaN is true). */
export function f32ToBool(si: Int32Array, out: Uint8Array, n: number): void {
  for (let i = 0; i < n; i++) out[i] = (si[i] & 0x7fffffff) !== 0 ? 1 : 0;
}

/** float32 -> float64: exact; NaN as the canonical quiet NaN 0x7FF8... with the source's sign. */
export function f32ToF64(
  si: Int32Array, sf: Float32Array, out: Float64Array, outWords: Uint32Array, n: number,
): void {
  for (let i = 0; i < n; i++) {
    const x = sf[i];
    if (x === x) out[i] = x;
    else {
      const at = 2 * i;
      outWords[at] = 0;
      outWords[at + 1] = (si[i] & 0x80000000) | 0x7ff80000;
    }
  }
}

/** Words of the x86-64 int64 conversion of a float: the int32 range inline, the rest as the reference does. */
function int64Words(x: number, out: Uint32Array, at: number): void {
  if (x > -2147483649 && x < TWO31) {
    const lo = x | 0;
    out[at] = lo;
    out[at + 1] = lo >> 31;
    return;
  }
  floatToInt64Words(x, out, at);
}

/** float32 -> int64 (as word pairs). */
export function f32ToInt64(sf: Float32Array, outWords: Uint32Array, n: number): void {
  for (let i = 0; i < n; i++) int64Words(sf[i], outWords, 2 * i);
}

/** float32 -> uint64 (as word pairs): from 2^63 up, shift into int64 range and flip the top bit back. */
export function f32ToUint64(sf: Float32Array, outWords: Uint32Array, n: number): void {
  for (let i = 0; i < n; i++) {
    const x = sf[i];
    const at = 2 * i;
    if (x >= TWO63) {
      int64Words(x - TWO63, outWords, at);
      outWords[at + 1] ^= 0x80000000;
    } else int64Words(x, outWords, at);
  }
}
