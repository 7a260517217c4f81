/**
 * The reference QuantizeLinear and DequantizeLinear kernels on storages: argument checks are the
 * operator's (src/ops/quantize.ts); here every combination the ONNX versions allow is computed,
 * in blocks of CHUNK elements, without per-element allocation.
 *
 *   quantize:   q = round_P(round_P(x) / round_P(scale)), then
 *               integer y: clamp(roundHalfEven(q) + zeroPoint, min, max); NaN -> min
 *               float y:   Cast(q + zeroPoint) with `saturate`; the sum is IEEE's, so -0 with
 *                          the (default) zero point +0 gives +0
 *   dequantize: y = Cast((x - zeroPoint) * scale), the exact product rounded once to y's type
 *
 * A NaN result carries the sign of the first NaN operand (x, then the zero point, then the scale);
 * NaN made by the arithmetic itself (0/0, Inf/Inf, 0*Inf) is positive.
 */
import type { DType, Storage } from "../../dtype/table.js";
import { decodeExact, encodeExact, precisionRounder, roundHalfEven, writeNaN, type PrecisionName } from "./arithmetic.js";
import { scaleIndices, type QuantLayout } from "./layout.js";
import { dequantizeSimd, quantizeSimd } from "./simd.js";

/** Elements per block: a multiple of 8, so packed 2-, 4- and 6-bit blocks start on a byte. */
export const CHUNK = 4096;

/** The tensors both kernels take, as storages with their types. */
export interface ScaledArgs {
  readonly x: Storage;
  readonly xType: DType;
  readonly scale: Storage;
  readonly scaleType: DType;
  /** One per scale; undefined means 0. QuantizeLinear: `y`'s type; DequantizeLinear: `x`'s. */
  readonly zeroPoint?: Storage;
  /** The output, `layout.count` elements of `yType`, zero-filled. */
  readonly y: Storage;
  readonly yType: DType;
  readonly layout: QuantLayout;
}

export interface QuantizeArgs extends ScaledArgs {
  /** The type the division is rounded to (and both operands first converted to). */
  readonly precision: PrecisionName;
  /** Float8 outputs: Cast's saturate (true: overflow and Inf to +/-max). */
  readonly saturate: boolean;
}

/** DequantizeLinear's arguments: `yType` is float32, float16 or bfloat16. */
export type DequantizeArgs = ScaledArgs;

/** Per-scale operands decoded once: values and, for NaNs, their sign. */
export interface Operands {
  readonly values: Float64Array;
  readonly words: Uint32Array;
}

/** Decodes `count` elements of a scale or zero-point storage exactly. */
export function decodeOperands(s: Storage, t: DType, count: number): Operands {
  const values = new Float64Array(count);
  decodeExact(s, t, 0, count, values);
  return { values, words: new Uint32Array(values.buffer) };
}

const negativeNaN = (words: Uint32Array, i: number): boolean => words[2 * i + 1] >>> 31 === 1;

interface Scratch {
  readonly xs: Float64Array;
  readonly xWords: Uint32Array;
  readonly out: Float64Array;
  readonly outWords: Uint32Array;
  readonly index: Int32Array;
}
let shared: Scratch | undefined;
function scratch(): Scratch {
  if (!shared) {
    const xs = new Float64Array(CHUNK);
    const out = new Float64Array(CHUNK);
    shared = { xs, xWords: new Uint32Array(xs.buffer), out, outWords: new Uint32Array(out.buffer), index: new Int32Array(CHUNK) };
  }
  return shared;
}

/**
 * The sign of a NaN result: the first NaN operand's (x, then the zero point, then the scale);
 * positive when the arithmetic made the NaN (0/0, Inf/Inf, 0 * Inf).
 */
function nanResultIsNegative(xs: Float64Array, xWords: Uint32Array, j: number, zp: Operands | undefined, scale: Operands, g: number): boolean {
  const x = xs[j];
  if (x !== x) return negativeNaN(xWords, j);
  if (zp && zp.values[g] !== zp.values[g]) return negativeNaN(zp.words, g);
  return scale.values[g] !== scale.values[g] && negativeNaN(scale.words, g);
}

/**
 * Runs `body` on each block of up to CHUNK elements of `a.x`, decoded exactly into the scratch
 * `xs` with the scale number of each element in `index`, then encodes the block's `out` into `a.y`.
 */
function inChunks(a: ScaledArgs, saturate: boolean, body: (n: number, s: Scratch) => void): void {
  const work = scratch();
  for (let start = 0; start < a.layout.count; start += CHUNK) {
    const n = Math.min(CHUNK, a.layout.count - start);
    decodeExact(a.x, a.xType, start, n, work.xs);
    scaleIndices(a.layout, start, n, work.index);
    body(n, work);
    encodeExact(work.out, a.y, a.yType, start, n, saturate);
  }
}

/** QuantizeLinear on storages; see the module comment for the arithmetic. */
export function quantizeLinearKernel(a: QuantizeArgs): void {
  if (quantizeSimd(a)) return;
  const { layout, yType } = a;
  // The encoder merges packed codes into zeros; the output may be reused memory (a pooled or *Into one).
  if (yType.packed) (a.y as Uint8Array).fill(0, 0, Math.ceil((layout.count * yType.bits) / 8));
  const round = precisionRounder(a.precision);
  const scale = decodeOperands(a.scale, a.scaleType, layout.scaleCount);
  const s = new Float64Array(layout.scaleCount);
  for (let i = 0; i < s.length; i++) s[i] = round(scale.values[i]);
  const zp = a.zeroPoint ? decodeOperands(a.zeroPoint, yType, layout.scaleCount) : undefined;
  const z = zp?.values;
  const integer = yType.kind === "int" || yType.kind === "uint";
  const min = yType.min as number;
  const max = yType.max as number;
  inChunks(a, a.saturate, (n, { xs, xWords, out, outWords, index }) => {
    for (let j = 0; j < n; j++) {
      const g = index[j];
      const q = round(round(xs[j]) / s[g]);
      if (integer) {
        if (q !== q) out[j] = min;
        else {
          const v = roundHalfEven(q) + (z ? z[g] : 0);
          out[j] = v < min ? min : v > max ? max : v;
        }
      } else {
        // The formula's IEEE sum, as the official float4e2m1 vector expects: -0 + 0 is +0.
        const v = q + (z ? z[g] : 0);
        if (v === v) out[j] = v;
        else writeNaN(outWords, j, nanResultIsNegative(xs, xWords, j, zp, scale, g));
      }
    }
  });
}

/** DequantizeLinear on storages; see the module comment for the arithmetic. */
export function dequantizeLinearKernel(a: DequantizeArgs): void {
  if (dequantizeSimd(a)) return;
  const { layout } = a;
  const scale = decodeOperands(a.scale, a.scaleType, layout.scaleCount);
  const s = scale.values;
  const zp = a.zeroPoint ? decodeOperands(a.zeroPoint, a.xType, layout.scaleCount) : undefined;
  const z = zp?.values;
  inChunks(a, true, (n, { xs, xWords, out, outWords, index }) => {
    for (let j = 0; j < n; j++) {
      const g = index[j];
      // x - 0 keeps -0 (IEEE: -0 - +0 = -0); the product of two float64s is rounded once more by
      // the encoder, innocuously (see arithmetic.ts).
      const v = (xs[j] - (z ? z[g] : 0)) * s[g];
      if (v === v) out[j] = v;
      else writeNaN(outWords, j, nanResultIsNegative(xs, xWords, j, zp, scale, g));
    }
  });
}
