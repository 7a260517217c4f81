/**
 * The scaled arithmetic of QuantizeLinear and DequantizeLinear, defined once, on exact float64
 * values. Every operand is first decoded exactly (castReference to float64); every result is
 * written as a float64 and encoded by castReference, so float8, float4 and float6 outputs follow
 * Cast's rules (saturate, NaN codes) with the one minifloat encoder of src/dtype/minifloat.ts.
 *
 * Why float64 is exact enough: a division or product of two float64 operands is correctly rounded
 * to float64 (53 bits), and rounding that again to a format of p <= 24 bits gives the correctly
 * rounded result of the exact operation, since 53 >= 2p + 2 (the innocuous double rounding of
 * Figueroa, "When is double rounding innocuous?", 1995). So `round_P(a / b)` below is the
 * quotient correctly rounded in P, for P float32, float16 or bfloat16; quotients of every input
 * and scale type fit float64's range without overflow or underflow (at most 2^128 / 2^-149).
 */
import { encodeFloat } from "../../dtype/minifloat.js";
import { dtype, type DType, type Storage } from "../../dtype/table.js";
import { castReference } from "../reference.js";
import { decodeTableWords } from "../tables.js";

/** The type a quotient is rounded to: the `precision` of QuantizeLinear. */
export type PrecisionName = "float32" | "float16" | "bfloat16" | "float64";

const F64 = dtype("float64");
const NO_SATURATE = { saturate: false, roundMode: "up" } as const;

const valueTables = new Map<string, Float64Array>();
function values16(t: DType): Float64Array {
  let v = valueTables.get(t.name);
  if (!v) {
    v = new Float64Array(decodeTableWords(t).buffer);
    valueTables.set(t.name, v);
  }
  return v;
}

/**
 * A function rounding a float64 to the nearest value of `p` (ties to even; float16 / bfloat16
 * overflow to +/-Inf as IEEE does). NaN stays NaN (its sign is tracked separately by callers).
 */
export function precisionRounder(p: PrecisionName): (v: number) => number {
  switch (p) {
    case "float64":
      return (v) => v;
    case "float32":
      return Math.fround;
    case "float16":
    case "bfloat16": {
      const t = dtype(p);
      const f = t.format!;
      const table = values16(t);
      return (v) => (v !== v ? v : table[encodeFloat(f, v, false)]);
    }
  }
}

/** Round half to even of a float64 (infinities and NaN pass through). Exact for every input. */
export function roundHalfEven(q: number): number {
  const r = Math.round(q); // half up: -2.5 -> -2, 2.5 -> 3
  return r - q === 0.5 && r % 2 !== 0 ? r - 1 : r;
}

/**
 * `count` elements of `src` (type `from`) starting at element `start`, decoded exactly into
 * out[0 .. count) as float64. A NaN keeps its sign bit in `out`'s memory (read it through a
 * Uint32Array view of `out`, high word at 2i + 1).
 */
export function decodeExact(src: Storage, from: DType, start: number, count: number, out: Float64Array): void {
  castReference(subStorage(src, from, start, count), from, out, F64, count, NO_SATURATE);
}

/**
 * Encodes out[0 .. count) (float64 values whose NaNs carry their sign in memory) into `dst` (type
 * `to`, zeroed where packed) from element `start`, with Cast's rules and `saturate`.
 */
export function encodeExact(values: Float64Array, dst: Storage, to: DType, start: number, count: number, saturate: boolean): void {
  castReference(values, F64, subStorage(dst, to, start, count), to, count, { saturate, roundMode: "up" });
}

/**
 * The view of `count` elements of a storage from element `start`. Packed types need `start` on a
 * byte boundary (start * bits a multiple of 8): callers step in blocks of a multiple of 8.
 */
export function subStorage(s: Storage, t: DType, start: number, count: number): Storage {
  const a = s as Exclude<Storage, string[]>;
  if (t.packed) return (a as Uint8Array).subarray((start * t.bits) / 8, Math.ceil(((start + count) * t.bits) / 8));
  const per = t.kind === "complex" ? 2 : 1;
  return a.subarray(start * per, (start + count) * per) as Storage;
}

/** Writes a quiet NaN with the given sign at values[i] (a JS NaN's bits are the engine's choice). */
export function writeNaN(words: Uint32Array, i: number, negative: boolean): void {
  words[2 * i] = 0;
  words[2 * i + 1] = negative ? 0xfff80000 : 0x7ff80000;
}
