/**
 * The roundings ggml's quantizers mix, each as the C code does it on x86-64 (SSE, no FMA): the
 * argument of each is a float32 value (already Math.fround-ed), the result an integer.
 *
 * - nearest_int adds 1.5 * 2^23 in float32 and reads the low mantissa bits: half to even, and for
 *   |x| > 2^22 (where ggml only asserts in debug builds) whatever those bits hold.
 * - roundf and lroundf are half away from zero.
 * - A float converted to an integer type (`(int8_t)f`, `(uint8_t)f`, `int l = f`) truncates with
 *   cvttss2si: NaN and anything outside int32 give 0x80000000, and a narrower type keeps the low
 *   bits of that.
 *
 * Browser-safe: no Node built-ins.
 */
import { f32Bits } from "../scalars.js";

const fr = Math.fround;

/** 1.5 * 2^23: adding it leaves the integer part of |x| < 2^22 in the low 23 mantissa bits, rounded to even. */
const MAGIC = 12582912;

/** ggml's nearest_int(fval). */
export function nearestInt(fval: number): number {
  const v = fr(fval + MAGIC);
  // Inside [2^23, 2^24) the float's value minus 2^23 is its mantissa field.
  if (v >= 8388608 && v < 16777216) return (v - MAGIC) | 0;
  return (f32Bits(v) & 0x007fffff) - 0x00400000;
}

/** x86-64's cvttss2si to a 32-bit integer: truncation, with NaN and out-of-range as INT32_MIN. */
export function truncInt32(f: number): number {
  return f > -2147483649 && f < 2147483648 ? Math.trunc(f) | 0 : -2147483648;
}

/** C's roundf: half away from zero (an integral float). */
export function roundAway(f: number): number {
  // |f| + 0.5 is exact in binary64 for every float32 below 2^29; above, f is already integral.
  return f < 0 ? -Math.floor(0.5 - f) : Math.floor(f + 0.5);
}

/**
 * `int xi = lroundf(f) + 1`, as TQ1_0 and TQ2_0 write it: glibc's lroundf gives LONG_MIN for NaN,
 * Inf and anything past 2^63, and the int keeps the low 32 bits of the sum (so those give 1).
 */
export function lroundfPlusOne(f: number): number {
  if (!(Math.abs(f) < 9223372036854775808)) return 1;
  const r = roundAway(f);
  return ((r % 4294967296) + 1) | 0;
}

/** A C float-to-int8_t conversion: cvttss2si's low byte, sign-extended. */
export function toInt8(f: number): number {
  return (truncInt32(f) << 24) >> 24;
}

/** A C float-to-uint8_t conversion: cvttss2si's low byte. */
export function toUint8(f: number): number {
  return truncInt32(f) & 0xff;
}

/** floorf(log2f(a)) for a float32 a > 0: glibc's log2f is correctly rounded here, as fround of log2. */
export function floorLog2f(a: number): number {
  return Math.floor(fr(Math.log2(a)));
}
