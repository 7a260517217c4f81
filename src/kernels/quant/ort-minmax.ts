/**
 * onnxruntime's min / max weight quantization, the rule of its Python quantizers' `quantize_data`
 * (onnxruntime/python/tools/quantization/quant_utils.py: compute_scale_zp, quantize_nparray),
 * which its dynamic IntegerOps quantizer applies to initializers per tensor or per channel. It
 * differs from DynamicQuantizeLinear's (scales.ts rangeParams) in where it rounds:
 *
 * - the range is the float32 min / max widened to include 0; symmetric, it is [-a, a] with a the
 *   larger magnitude;
 * - scale = (max - min) / (qmax - qmin), the difference in float32 and the quotient in float64,
 *   then rounded to float32; a float64 scale below float32's smallest normal gives scale 1 and
 *   zero point 0;
 * - zero point: symmetric, round((qmin + qmax) / 2) (128 for uint8, 0 for int8); otherwise
 *   round(qmin - min / scale) with the float64 scale; numpy rounds halves to even;
 * - codes = clip(round(x / scale) + zero point) with x / scale in float32 and round half to even,
 *   clipped to [qmin, qmax] of the symmetric range (int8: [-127, 127], uint8: [0, 255]).
 *
 * Signed types quantize with qmin = -(2^(b-1) - 1) when symmetric ([-127, 127] for int8).
 */
import { roundHalfEven } from "./arithmetic.js";

/** The integer types the rule quantizes to. */
export type OrtIntType = "int8" | "uint8";

/** A scale (float32 value) and zero point. */
export interface OrtQuantParams {
  readonly scale: number;
  readonly zeroPoint: number;
}

/** float32's smallest normal (numpy's finfo(float32).tiny). */
const F32_TINY = 1.1754943508222875e-38;

/** [qmin, qmax] of `t` (quant_utils.get_qmin_qmax_for_qType without reduce_range). */
export function ortQRange(t: OrtIntType, symmetric: boolean): [number, number] {
  if (t === "uint8") return [0, 255];
  return symmetric ? [-127, 127] : [-128, 127];
}

/**
 * quant_utils.compute_scale_zp for float32 bounds `min` / `max` (data.min() / data.max()).
 * @example ortScaleZeroPoint(-1, 2, "uint8", false)  // { scale: 0.0117647061124444, zeroPoint: 85 }
 */
export function ortScaleZeroPoint(min: number, max: number, t: OrtIntType, symmetric: boolean): OrtQuantParams {
  const [qmin, qmax] = ortQRange(t, symmetric);
  let lo = Math.min(min, 0);
  let hi = Math.max(max, 0);
  if (symmetric) {
    const a = Math.max(Math.abs(lo), Math.abs(hi));
    lo = -a;
    hi = a;
  }
  const scale = Math.fround(hi - lo) / (qmax - qmin);
  if (!(scale >= F32_TINY)) return { scale: 1, zeroPoint: 0 };
  const zeroPoint = symmetric ? roundHalfEven((qmin + qmax) / 2) : roundHalfEven(qmin - lo / scale);
  return { scale: Math.fround(scale), zeroPoint };
}

/**
 * quant_utils.quantize_nparray: `x` (float32 values) coded with `p` into `out` (Int8Array or
 * Uint8Array) from `at`, stepping `stride` between outputs.
 */
export function ortQuantizeValues(x: ArrayLike<number>, p: OrtQuantParams, t: OrtIntType, out: Int8Array | Uint8Array, at = 0, stride = 1): void {
  const [qmin, qmax] = ortQRange(t, true);
  if (x instanceof Float32Array && stride === 1) {
    // The common case (a whole weight, or a per-channel slice), monomorphic.
    if (out instanceof Int8Array) quantizeRun(x, p.scale, p.zeroPoint, qmin, qmax, out, at);
    else quantizeRun(x, p.scale, p.zeroPoint, qmin, qmax, out as Uint8Array, at);
    return;
  }
  for (let i = 0; i < x.length; i++) {
    const q = roundHalfEven(Math.fround(x[i] / p.scale)) + p.zeroPoint;
    out[at + i * stride] = q < qmin ? qmin : q > qmax ? qmax : q;
  }
}

/** 1.5 * 2^52: adding and subtracting it rounds a double of magnitude below 2^51 to an integer, halves to even. */
const ROUND_EVEN = 6755399441055744;

/**
 * ortQuantizeValues' loop on float32 values: round half to even by ROUND_EVEN (exact for every
 * float32 quotient that can land inside [qmin, qmax]; a larger one stays beyond the bound it is
 * clamped to), the clamp by Math.min / Math.max (NaN stays NaN and is stored as 0, as before).
 */
function quantizeRun<A extends Int8Array | Uint8Array>(x: Float32Array, scale: number, zeroPoint: number, qmin: number, qmax: number, out: A, at: number): void {
  const n = x.length;
  for (let i = 0; i < n; i++) {
    const v = Math.fround(x[i] / scale);
    out[at + i] = Math.min(Math.max(v + ROUND_EVEN - ROUND_EVEN + zeroPoint, qmin), qmax);
  }
}

/** The float32 min and max of `x` (numpy's min / max: NaN wins). */
export function minMax(x: ArrayLike<number>): [number, number] {
  return x instanceof Float32Array ? minMaxRun(x) : minMaxRun(x as number[]);
}

function minMaxRun(x: ArrayLike<number>): [number, number] {
  let lo = Infinity;
  let hi = -Infinity;
  for (let i = 0; i < x.length; i++) {
    const v = x[i];
    if (v !== v) return [NaN, NaN];
    if (v < lo) lo = v;
    if (v > hi) hi = v;
  }
  return [lo, hi];
}
