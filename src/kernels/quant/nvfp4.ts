/**
 * NVFP4 as compressed-tensors' `nvfp4-pack-quantized` stores a Linear weight [out, in]: float4e2m1
 * elements in blocks of 16 along `in`, each block with a float8e4m3fn scale s_b, the tensor with a
 * float32 global scale g = 448 * 6 / amax (dequantization divides by it):
 *
 *   s_b = e4m3(min(448, g * (amax_b / 6)))   (a block scale that rounds to 0 becomes 0.125)
 *   q   = e2m1(clamp(w / (s_b / g), +/-6))    (ties to the even code; -0 only from a negative value)
 *   w'  = e2m1_value(q) * (s_b / g)
 *
 * every step in float32 (the weight converted to float32 exactly first). compressed-tensors computes
 * some of these steps in the weight's own dtype when its observer runs in it (see
 * docs/quantize-checkpoints.md, "NVFP4"); this module is the float32 reading of the rule. An
 * all-zero weight gets g = 1 (the rule would divide by zero). Browser-safe.
 */
import { dtype, type DType } from "../../dtype/table.js";
import { TensorcastError } from "../../errors.js";
import { decodeExact, encodeExact } from "./arithmetic.js";
import { storageOfBytes } from "./checkpoint.js";

/** Elements per NVFP4 block. */
export const NV_BLOCK = 16;

const F8E4M3 = dtype("float8e4m3fn");
const F4 = dtype("float4e2m1");
const SOURCE_TYPES = new Set(["float32", "float16", "bfloat16"]);

function checkType(t: DType, what: string): void {
  if (!SOURCE_TYPES.has(t.name)) throw new TensorcastError("UNSUPPORTED_TYPE", `${what}: type ${t.name} is not one of float32, float16, bfloat16`);
}

/** Why a weight cannot take NVFP4, or undefined when it can. */
export function nvfp4Refusal(shape: readonly number[]): string | undefined {
  if (shape.length !== 2) return `not 2-D (shape [${shape.join(", ")}])`;
  if (shape[1] % NV_BLOCK !== 0) return `input dimension ${shape[1]} is not a multiple of ${NV_BLOCK}`;
  return undefined;
}

/** The largest |w| of `count` elements of raw bytes of `t` (NaN when one is NaN). */
export function nvfp4AbsMax(x: Uint8Array, t: DType, count: number): number {
  checkType(t, "nvfp4 amax");
  const s = storageOfBytes(x, t);
  const v = new Float64Array(Math.min(4096, count));
  let amax = 0;
  for (let start = 0; start < count; start += v.length) {
    const n = Math.min(v.length, count - start);
    decodeExact(s, t, start, n, v);
    for (let i = 0; i < n; i++) {
      const a = Math.abs(v[i]);
      if (a !== a) return NaN;
      if (a > amax) amax = a;
    }
  }
  return amax;
}

/** g = 448 * 6 / amax in float32 (1 for an all-zero weight). */
export function nvfp4GlobalScale(amax: number): number {
  if (!(amax >= 0) || amax === Infinity) throw new TensorcastError("INVALID_DATA", `nvfp4 quantize: the weight's largest magnitude is ${amax}; NVFP4 needs finite values`);
  return amax === 0 ? 1 : Math.fround(2688 / amax);
}

/**
 * NVFP4 of `rows` rows of a [rows, cols] weight under global scale `g`: packed float4e2m1 codes
 * ([rows, cols / 2], element 2k in the low nibble) and float8e4m3fn block scales ([rows, cols / 16]).
 */
export function nvfp4QuantizeRows(x: Uint8Array, xType: DType, rows: number, cols: number, g: number): { packed: Uint8Array; scales: Uint8Array } {
  checkType(xType, "nvfp4 quantize");
  if (cols % NV_BLOCK !== 0) throw new TensorcastError("INVALID_SHAPE", `nvfp4 quantize: ${cols} columns are not a multiple of ${NV_BLOCK}`);
  const n = rows * cols;
  if (x.byteLength !== (n * xType.bits) / 8) throw new TensorcastError("SHAPE_MISMATCH", `nvfp4 quantize: ${x.byteLength} bytes given, ${(n * xType.bits) / 8} expected`);
  const w = new Float64Array(n);
  decodeExact(storageOfBytes(x, xType), xType, 0, n, w);
  const blocks = n / NV_BLOCK;
  const scaleValues = new Float64Array(blocks);
  for (let b = 0; b < blocks; b++) {
    let amax = 0;
    for (let i = b * NV_BLOCK; i < (b + 1) * NV_BLOCK; i++) amax = Math.max(amax, Math.abs(Math.fround(w[i])));
    scaleValues[b] = Math.min(448, Math.fround(g * Math.fround(amax / 6)));
  }
  const scales = new Uint8Array(blocks);
  encodeExact(scaleValues, scales, F8E4M3, 0, blocks, true);
  decodeExact(scales, F8E4M3, 0, blocks, scaleValues);
  const q = new Float64Array(n);
  for (let b = 0; b < blocks; b++) {
    if (scaleValues[b] === 0) {
      // compressed-tensors' torch.where(scales == 0, 0.125, scales)
      scaleValues[b] = 0.125;
      scales[b] = 0x20;
    }
    const s = Math.fround(scaleValues[b] / g);
    for (let i = b * NV_BLOCK; i < (b + 1) * NV_BLOCK; i++) {
      // An exact zero stays +0 (torch.sign(0) is 0); a negative value that rounds to 0 is -0.
      q[i] = w[i] === 0 ? 0 : Math.max(-6, Math.min(6, Math.fround(Math.fround(w[i]) / s)));
    }
  }
  const packed = new Uint8Array(n / 2);
  encodeExact(q, packed, F4, 0, n, true);
  return { packed, scales };
}

/** The way back: each code times (float32(s_b) / g) in float32, rounded once to `outType`. */
export function nvfp4DequantizeRows(packed: Uint8Array, scales: Uint8Array, rows: number, cols: number, g: number, outType: DType): Uint8Array {
  checkType(outType, "nvfp4 dequantize output");
  const n = rows * cols;
  if (packed.byteLength !== n / 2 || scales.byteLength !== n / NV_BLOCK) {
    throw new TensorcastError("SHAPE_MISMATCH", `nvfp4 dequantize: ${packed.byteLength} packed bytes and ${scales.byteLength} scales for [${rows}, ${cols}]`);
  }
  if (!(g > 0 && g < Infinity)) throw new TensorcastError("INVALID_DATA", `nvfp4 dequantize: global scale ${g}; it must be finite and positive`);
  const s = new Float64Array(scales.length);
  decodeExact(scales, F8E4M3, 0, scales.length, s);
  for (let b = 0; b < s.length; b++) {
    if (!(s[b] > 0 && s[b] < Infinity)) throw new TensorcastError("INVALID_DATA", `nvfp4 dequantize: scale ${b} is ${s[b]}; scales must be finite and positive`);
    s[b] = Math.fround(s[b] / g);
  }
  const v = new Float64Array(n);
  decodeExact(packed, F4, 0, n, v);
  for (let i = 0; i < n; i++) v[i] = Math.fround(v[i] * s[Math.floor(i / NV_BLOCK)]);
  const out = new Uint8Array((n * outType.bits) / 8);
  encodeExact(v, storageOfBytes(out, outType), outType, 0, n, false);
  return out;
}
