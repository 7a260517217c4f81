/**
 * Kernels for 32- and 64-bit sources: float64, int64 / uint64 (read as word pairs through a
 * Uint32Array view, never as BigInt), int32 / uint32. Each is a whole-array loop over `n` elements
 * from index 0, with the reference's rules:
 * - float64 -> float32 rounds once to nearest even (a Float32Array store does exactly that) and
 *   writes NaN as 0x7FC00000 with the source's sign; -> integers follow x86-64 (truncate; INT_MIN
 *   when out of range or NaN), then keep the low bits;
 * - 64-bit integer -> narrower integer keeps the low bits; -> float rounds once (via the
 *   round-to-odd double of reference.ts when the value needs more than 53 bits);
 * - int32 / uint32 -> float32 rounds once; -> narrower integers wrap; -> 64-bit extends.
 */
import { wordsToOddDouble } from "../reference.js";

const TWO31 = 2147483648;
const TWO32 = 4294967296;

// ---- float64 sources

export function f64ToF32(src: Float64Array, srcWords: Uint32Array, out: Float32Array, outBits: Int32Array, n: number): void {
  for (let i = 0; i < n; i++) {
    const x = src[i];
    if (x === x) out[i] = x;
    else outBits[i] = (srcWords[2 * i + 1] & 0x80000000) | 0x7fc00000;
  }
}

/**
 * Float32 bits of x rounded to odd: truncated toward zero, the last bit set when that dropped
 * anything. Rounding such a float32 once more, to nearest even, into a format of 22 or fewer
 * significand bits gives x correctly rounded once (float16, bfloat16, float8, float6, float4 from a
 * float64 or a wide integer, never rounded twice). Beyond the float32 range it gives +/-max (odd),
 * which every such format still treats as out of range; below, the smallest subnormal.
 */
function oddF32(x: number, bits: Int32Array, values: Float32Array, i: number): void {
  values[i] = x; // one rounding to nearest even
  const f = values[i];
  if (f !== x) bits[i] = (Math.abs(f) > Math.abs(x) ? bits[i] - 1 : bits[i]) | 1; // sign-magnitude: - 1 steps toward zero
}

/** float64 -> float32 bits rounded to odd (see oddF32); NaN -> 0x7FC00000 with the source's sign. */
export function f64ToOddF32(src: Float64Array, srcWords: Uint32Array, bits: Int32Array, values: Float32Array, n: number): void {
  for (let i = 0; i < n; i++) {
    const hi = srcWords[2 * i + 1];
    const lo = srcWords[2 * i];
    const e = (hi >>> 20) & 0x7ff;
    if (((e - 897) >>> 0) < 254) {
      // A float32 normal: truncate the bits, and set the last one when the 29 dropped are not all
      // zero (branch-free: the inexact/rounding-side branches of oddF32 mispredict half the time).
      bits[i] = (hi & 0x80000000) | ((e - 896) << 23) | ((hi & 0xfffff) << 3) | (lo >>> 29) | (((lo & 0x1fffffff) + 0x1fffffff) >>> 29);
    } else {
      const x = src[i];
      if (x === x) oddF32(x, bits, values, i);
      else bits[i] = (hi & 0x80000000) | 0x7fc00000;
    }
  }
}

/** int32 / uint32 -> float32 bits rounded to odd (the values are exact as numbers). */
export function int32ToOddF32(src: Int32Array | Uint32Array, bits: Int32Array, values: Float32Array, n: number): void {
  for (let i = 0; i < n; i++) oddF32(src[i], bits, values, i);
}

/** int64 / uint64 words -> float32 bits rounded to odd, through the round-to-odd float64. */
export function wideToOddF32(words: Uint32Array, signed: boolean, bits: Int32Array, values: Float32Array, n: number): void {
  for (let i = 0; i < n; i++) oddF32(wordsToOddDouble(words[2 * i], words[2 * i + 1], signed), bits, values, i);
}

export function f64ToInt8(src: Float64Array, out: Uint8Array, n: number): void {
  for (let i = 0; i < n; i++) {
    const x = src[i];
    out[i] = x > -2147483649 && x < TWO31 ? x | 0 : 0;
  }
}

export function f64ToInt16(src: Float64Array, out: Uint16Array, n: number): void {
  for (let i = 0; i < n; i++) {
    const x = src[i];
    out[i] = x > -2147483649 && x < TWO31 ? x | 0 : 0;
  }
}

export function f64ToInt32(src: Float64Array, out: Int32Array, n: number): void {
  for (let i = 0; i < n; i++) {
    const x = src[i];
    out[i] = x > -2147483649 && x < TWO31 ? x | 0 : -2147483648;
  }
}

export function f64ToUint32(src: Float64Array, out: Uint32Array, n: number): void {
  for (let i = 0; i < n; i++) {
    const x = src[i];
    let v: number;
    if (x > -2147483649 && x < TWO31) v = x | 0;
    else if (x >= TWO31 && x < TWO32) v = ((x - TWO31) | 0) ^ 0x80000000;
    else v = x >= TWO31 ? 0 : -2147483648;
    out[i] = v;
  }
}

/** float64 -> bool: 1 unless +/-0 (NaN is true), read from the words. */
export function f64ToBool(srcWords: Uint32Array, out: Uint8Array, n: number): void {
  for (let i = 0; i < n; i++) out[i] = ((srcWords[2 * i + 1] & 0x7fffffff) | srcWords[2 * i]) !== 0 ? 1 : 0;
}

// ---- int64 / uint64 sources (word pairs: low, high)

export function wideToU8(srcWords: Uint32Array, out: Uint8Array, n: number): void {
  for (let i = 0; i < n; i++) out[i] = srcWords[2 * i];
}

export function wideToU16(srcWords: Uint32Array, out: Uint16Array, n: number): void {
  for (let i = 0; i < n; i++) out[i] = srcWords[2 * i];
}

export function wideToI32(srcWords: Int32Array, out: Int32Array, n: number): void {
  for (let i = 0; i < n; i++) out[i] = srcWords[2 * i];
}

export function wideToBool(srcWords: Uint32Array, out: Uint8Array, n: number): void {
  for (let i = 0; i < n; i++) out[i] = (srcWords[2 * i] | srcWords[2 * i + 1]) !== 0 ? 1 : 0;
}

export function int64ToF64(srcWords: Uint32Array, out: Float64Array, n: number): void {
  for (let i = 0; i < n; i++) out[i] = (srcWords[2 * i + 1] | 0) * TWO32 + srcWords[2 * i];
}

export function uint64ToF64(srcWords: Uint32Array, out: Float64Array, n: number): void {
  for (let i = 0; i < n; i++) out[i] = srcWords[2 * i + 1] * TWO32 + srcWords[2 * i];
}

/** int64 -> float32: exact double when |x| < 2^53 (high word in [-2^21, 2^21)), else round to odd. */
export function int64ToF32(srcWords: Uint32Array, out: Float32Array, n: number): void {
  for (let i = 0; i < n; i++) {
    const lo = srcWords[2 * i];
    const hi = srcWords[2 * i + 1] | 0;
    out[i] = hi >= -0x200000 && hi < 0x200000 ? hi * TWO32 + lo : wordsToOddDouble(lo, hi, true);
  }
}

export function uint64ToF32(srcWords: Uint32Array, out: Float32Array, n: number): void {
  for (let i = 0; i < n; i++) {
    const lo = srcWords[2 * i];
    const hi = srcWords[2 * i + 1];
    out[i] = hi < 0x200000 ? hi * TWO32 + lo : wordsToOddDouble(lo, hi, false);
  }
}

// ---- int32 / uint32 sources

export function int32ToF32(src: Int32Array, out: Float32Array, n: number): void {
  for (let i = 0; i < n; i++) out[i] = src[i];
}

export function uint32ToF32(src: Uint32Array, out: Float32Array, n: number): void {
  for (let i = 0; i < n; i++) out[i] = src[i];
}

export function int32ToF64(src: Int32Array, out: Float64Array, n: number): void {
  for (let i = 0; i < n; i++) out[i] = src[i];
}

export function uint32ToF64(src: Uint32Array, out: Float64Array, n: number): void {
  for (let i = 0; i < n; i++) out[i] = src[i];
}

/** 32-bit integers (as bits) -> 8-bit: the low byte. */
export function narrowTo8(src: Int32Array, out: Uint8Array, n: number): void {
  for (let i = 0; i < n; i++) out[i] = src[i];
}

/** 32-bit integers (as bits) -> 16-bit: the low half. */
export function narrowTo16(src: Int32Array, out: Uint16Array, n: number): void {
  for (let i = 0; i < n; i++) out[i] = src[i];
}

/** int32 -> 64-bit: sign-extended words. */
export function int32ToWide(src: Int32Array, out: Int32Array, n: number): void {
  for (let i = 0; i < n; i++) {
    const v = src[i];
    out[2 * i] = v;
    out[2 * i + 1] = v >> 31;
  }
}

/** uint32 -> 64-bit: zero-extended words (the output is zero-filled). */
export function uint32ToWide(src: Int32Array, out: Int32Array, n: number): void {
  for (let i = 0; i < n; i++) out[2 * i] = src[i];
}

export function int32ToBool(src: Int32Array, out: Uint8Array, n: number): void {
  for (let i = 0; i < n; i++) out[i] = src[i] !== 0 ? 1 : 0;
}
