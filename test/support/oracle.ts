/**
 * Independent oracles for the exhaustive tests. They share nothing with src/ beyond the data-type
 * table's traits: values come from bit-field arithmetic with Math.pow, and rounding is a brute-force
 * search for the nearest representable value, so a bug in the codec cannot hide in its own oracle.
 */
import type { DType, FloatFormat } from "../../src/index.js";

/** The value of `code` by the textbook formula, NaN for NaN codes. */
export function textbookValue(f: FloatFormat, code: number): number {
  const m = f.manBits;
  const e = f.expBits;
  const sign = f.signed ? Math.floor(code / 2 ** (e + m)) % 2 : 0;
  const exp = Math.floor(code / 2 ** m) % 2 ** e;
  const man = code % 2 ** m;
  const expAll = 2 ** e - 1;
  if (f.nan === "ieee" && exp === expAll) return man === 0 ? (sign ? -Infinity : Infinity) : NaN;
  if (f.nan === "allOnes" && exp === expAll && man === 2 ** m - 1) return NaN;
  if (f.nan === "negativeZero" && sign === 1 && exp === 0 && man === 0) return NaN;
  const magnitude = exp === 0 && f.subnormals
    ? (man / 2 ** m) * Math.pow(2, 1 - f.bias)
    : (1 + man / 2 ** m) * Math.pow(2, exp - f.bias);
  return sign ? -magnitude : magnitude;
}

export interface RoundingOracle {
  /** The code a cast with RNE gives, for a non-NaN value. */
  encode(x: number, saturate: boolean): number;
}

/**
 * Brute-force RNE: the nearest of all finite non-negative codes, ties to the even code. The value
 * one step past the largest finite code stands in for "overflow", so a tie at the top resolves as
 * an unbounded exponent would (e4m3fn: 464 -> 448, e4m3fnuz: 248 -> overflow).
 */
export function bruteForceOracle(f: FloatFormat): RoundingOracle {
  const codes: number[] = [];
  const values: number[] = [];
  for (let c = 0; c <= f.maxCode; c++) {
    const v = textbookValue(f, c);
    if (Number.isFinite(v)) { codes.push(c); values.push(v); }
  }
  // One ulp past max, in max's binade: where an unbounded exponent would put code maxCode + 1.
  const top = values[values.length - 1];
  codes.push(f.maxCode + 1);
  values.push(top + Math.pow(2, Math.floor(Math.log2(top)) - f.manBits));
  const signBit = 2 ** (f.expBits + f.manBits);
  const infCode = (2 ** f.expBits - 1) * 2 ** f.manBits;
  const nan = (negative: boolean): number => {
    if (f.nan === "allOnes") return signBit - 1 + (negative ? signBit : 0);
    if (f.nan === "negativeZero") return signBit;
    throw new Error("no NaN");
  };
  return {
    encode(x, saturate) {
      const negative = x < 0 || Object.is(x, -0);
      const a = Math.abs(x);
      let lo = 0;
      let hi = values.length - 1;
      while (hi - lo > 1) {
        const mid = (lo + hi) >> 1;
        if (values[mid] <= a) lo = mid; else hi = mid;
      }
      let k: number;
      if (a >= values[hi]) k = hi;
      else {
        const dLo = a - values[lo];
        const dHi = values[hi] - a;
        k = dLo < dHi ? lo : dHi < dLo ? hi : codes[lo] % 2 === 0 ? lo : hi;
      }
      let mag = codes[k];
      if (mag > f.maxCode) {
        if (f.overflow === "clamp" || (f.overflow === "saturable" && saturate)) mag = f.maxCode;
        else if (f.inf) mag = infCode;
        else return nan(negative);
      }
      if (mag === 0 && f.nan === "negativeZero") return 0;
      return negative ? mag + signBit : mag;
    },
  };
}

/** float -> integer of `bits` bits (<= 16): truncate, int32 with INT_MIN out of range, keep low bits. */
export function x86LowBits(x: number, t: DType): number {
  const i32 = Number.isFinite(x) && Math.abs(Math.trunc(x)) < 2 ** 31 ? Math.trunc(x) : -(2 ** 31);
  const span = 2 ** t.bits;
  let low = ((i32 % span) + span) % span;
  if (t.kind === "int" && low >= span / 2) low -= span;
  return low;
}

/** The e8m0 code onnxruntime gives (onnx.md 2.7), by search over all 254 powers of two. */
export function e8m0Oracle(x: number, saturate: boolean, mode: "up" | "down" | "nearest"): number {
  if (Number.isNaN(x)) return 0xff;
  if (!(x >= Math.pow(2, -127))) return saturate ? 0 : 0xff;
  if (x > Math.pow(2, 127)) return saturate ? 0xfe : 0xff;
  for (let c = 0; c <= 0xfe; c++) {
    const lo = Math.pow(2, c - 127);
    const hi = lo * 2;
    if (x === lo) return c;
    if (x > lo && x < hi) {
      if (mode === "down") return c;
      if (mode === "up") return c + 1;
      return x >= 1.5 * lo ? c + 1 : c;
    }
  }
  throw new Error(`e8m0Oracle: ${x}`);
}
