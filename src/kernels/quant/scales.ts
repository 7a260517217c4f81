/**
 * Scale selection for the quantizers: the range of each scale group, and the rules that turn a
 * range into a scale and zero point. Every rule lives here once; QuantizeLinear's kernels then use
 * the scale (src/kernels/quant/kernels.ts).
 */
import { exponentOf, pow2 } from "../../dtype/minifloat.js";
import type { DType, Storage } from "../../dtype/table.js";
import { decodeExact, roundHalfEven } from "./arithmetic.js";
import { CHUNK } from "./kernels.js";
import { scaleIndices, type QuantLayout } from "./layout.js";

/**
 * The smallest and largest value of each scale group of `x` (type `xType`, any numeric type but
 * the 64-bit integers), written to min[g] / max[g] for g < layout.scaleCount. NaN elements are
 * skipped (onnxruntime's DynamicQuantizeLinear does the same); a group with no other element gets
 * min = +Inf, max = -Inf. Infinities count. `nanGroups`, when given, gets 1 at each group holding a NaN.
 */
export function groupMinMax(
  x: Storage, xType: DType, layout: QuantLayout, min: Float64Array, max: Float64Array, nanGroups?: Uint8Array,
): void {
  min.fill(Infinity, 0, layout.scaleCount);
  max.fill(-Infinity, 0, layout.scaleCount);
  const values = new Float64Array(Math.min(CHUNK, layout.count));
  const index = new Int32Array(values.length);
  for (let start = 0; start < layout.count; start += CHUNK) {
    const n = Math.min(CHUNK, layout.count - start);
    decodeExact(x, xType, start, n, values);
    scaleIndices(layout, start, n, index);
    for (let j = 0; j < n; j++) {
      const v = values[j];
      const g = index[j];
      if (v < min[g]) min[g] = v;
      if (v > max[g]) max[g] = v;
      if (nanGroups && v !== v) nanGroups[g] = 1;
    }
  }
}

/**
 * The largest magnitude of each scale group (amax), NaN elements skipped; 0 for a group of only
 * NaN (or no) elements. +/-Inf gives Inf. With `propagateNaN`, a group holding a NaN gets NaN, as
 * torch's amax (the checkpoint quantizers' reference) and the MX spec's scale rule want.
 */
export function groupAbsMax(x: Storage, xType: DType, layout: QuantLayout, out: Float64Array, propagateNaN = false): void {
  const min = new Float64Array(layout.scaleCount);
  const nan = propagateNaN ? new Uint8Array(layout.scaleCount) : undefined;
  groupMinMax(x, xType, layout, min, out, nan);
  for (let g = 0; g < layout.scaleCount; g++) out[g] = nan?.[g] ? NaN : Math.max(0, -min[g], out[g]);
}

/** A scale (a float32 value) and zero point computed from a range. */
export interface DynamicParams {
  /** A float32 value. */
  readonly scale: number;
  /** An integer in [qmin, qmax] ([0, 255] for DynamicQuantizeLinear). */
  readonly zeroPoint: number;
}

/**
 * DynamicQuantizeLinear's scale and zero point for a tensor whose (NaN-free) minimum and maximum
 * are `min` and `max`: `rangeParams(min, max, 0, 255)`, the operator's function body step by step.
 * An all-zero range gives scale 0 and zero point 0, as the formula says (the reference evaluator
 * gives 1/255, onnxruntime 1). An empty tensor (min = +Inf, max = -Inf) is the range [0, 0].
 *
 * @example dynamicQuantizeParams(-1, 2)   // { scale: 0.0117647061124444, zeroPoint: 85 }
 */
export function dynamicQuantizeParams(min: number, max: number): DynamicParams {
  return rangeParams(min, max, 0, 255);
}

/**
 * Asymmetric (min / max) quantization parameters onto the integer range [qmin, qmax], in float32
 * arithmetic as DynamicQuantizeLinear spells it for uint8: the range is widened to include 0;
 * scale = (max - min) / (qmax - qmin); the zero point is clamp(qmin - min / scale, qmin, qmax)
 * rounded half to even, NaN (a zero range) giving qmin. `rangeParams(lo, hi, 0, 15)` is the
 * uint4 block rule of weight-only quantizers.
 */
export function rangeParams(min: number, max: number, qmin: number, qmax: number): DynamicParams {
  const lo = Math.fround(Math.min(min, 0));
  const hi = Math.fround(Math.max(max, 0));
  const scale = Math.fround(Math.fround(hi - lo) / (qmax - qmin));
  const initial = Math.fround(qmin - Math.fround(lo / scale));
  const clipped = initial < qmin ? qmin : initial > qmax ? qmax : initial;
  return { scale, zeroPoint: clipped !== clipped ? qmin : roundHalfEven(clipped) };
}

/**
 * The symmetric scale amax / qmax (for int8 qmax = 127, for float8e4m3fn 448), rounded to nearest
 * even in `round` (Math.fround for a float32 scale, a precisionRounder for float16 / bfloat16).
 * A zero amax gives 0: quantizing by it gives NaN-rule codes for 0/0, so callers that want a
 * usable scale for an all-zero group substitute their own (the FP8 checkpoint convention is 1).
 */
export function symmetricScale(amax: number, qmax: number, round: (v: number) => number = Math.fround): number {
  return round(amax / qmax);
}

/**
 * The MX (OCP Microscaling v1.0) shared scale of a block whose largest magnitude is `amax`, as a
 * float8e8m0 code: 2^(floor(log2(amax)) - emax), where emax is the exponent of the element type's
 * largest normal value (float8e4m3fn 8, float8e5m2 15, float4e2m1 2, float6e2m3 2, float6e3m2 4,
 * int8 as MXINT8 0). The code is that exponent + 127, clamped to [0, 254]; amax 0 gives code 0
 * (2^-127); NaN or Inf amax gives 0xFF (NaN), as the spec asks when a block holds either.
 */
export function mxScaleCode(amax: number, elementType: DType): number {
  if (amax !== amax || amax === Infinity) return 0xff;
  if (amax === 0) return 0;
  const e = exponentOf(amax) - mxElementEmax(elementType) + 127;
  return e < 0 ? 0 : e > 254 ? 254 : e;
}

/** emax of an MX element type: floor(log2(max finite value)). */
export function mxElementEmax(t: DType): number {
  if (t.kind !== "float") return 0; // MXINT8: elements are 1.6 fixed point, |x| < 2 = 2^(0 + 1)
  return exponentOf(t.max as number);
}

/** The value of a float8e8m0 code (0xFF: NaN). */
export function e8m0Value(code: number): number {
  return code === 0xff ? NaN : pow2(code - 127);
}

/**
 * The FP8 block scale of transformers' FineGrainedFP8 (and DeepSeek-V3's `weight_scale_inv`
 * convention): qmax / amax in float32 as torch evaluates `qmax / tensor`, which is
 * `tensor.reciprocal() * qmax`: the reciprocal rounded to float32, times qmax, rounded again. That
 * differs from the correctly rounded quotient by an ulp for some amax (2 of the 6 tiles of the golden
 * a.weight), and the weight's ties then fall the other way: the golden files follow torch. 1 for an
 * all-zero block and, as torch.where(amax > 0, ...) has it, for a block whose amax is NaN; an Inf
 * amax gives 0.
 * The weight is then the float32 product w * scale, clamped to +/-qmax and cast; the stored
 * inverse is `fp8InverseScale(scale)`.
 */
export function fp8BlockScale(amax: number, qmax: number): number {
  return amax > 0 ? Math.fround(Math.fround(1 / amax) * qmax) : 1;
}

/** `weight_scale_inv`: 1 / scale rounded to float32 (1 / 0 is Inf). */
export function fp8InverseScale(scale: number): number {
  return Math.fround(1 / scale);
}

/**
 * The "ue8m0" form of an inverse scale: 2^ceil(log2(inv)) as a float8e8m0 code, with the log taken
 * in float32 as transformers does (torch.log2 on float32, after clamping inv to float32's smallest
 * normal 2^-126). So an inverse within half a float32 ulp of log2 above a power of two rounds
 * down to it, not up; the cast then saturates the block's largest element to 448. NaN or Inf
 * inverses give 0xFF.
 */
export function ue8m0InverseScaleCode(inv: number): number {
  if (inv !== inv || inv === Infinity) return 0xff;
  const clamped = Math.max(inv, pow2(-126));
  return Math.ceil(Math.fround(Math.log2(clamped))) + 127;
}
