/**
 * Checkpoint quantization in the layouts Hugging Face loaders read, on raw little-endian bytes:
 *
 * - FP8 blocks (transformers' FineGrainedFP8 `Fp8Quantize` / `Fp8Dequantize`, DeepSeek-V3): a 2-D
 *   weight in tiles of R x C (128 x 128), scale = 448 / amax in float32 (fp8BlockScale), the weight
 *   the float32 product w * scale clamped to +/-448 and cast to float8e4m3fn, `weight_scale_inv` =
 *   1 / scale in float32, or with "ue8m0" a power of two stored as float8e8m0.
 * - MXFP4 experts as gpt-oss stores them: [experts, in, out] transposed to [experts, out, in],
 *   32-element blocks along `in` sharing an e8m0 exponent (mxScaleCode), float4e2m1 elements two a
 *   byte, low nibble first; dequantized as transformers' convert_moe_packed_tensors.
 *
 * Every rule comes from scales.ts (amax, scale selection), layout.ts (which scale an element uses)
 * and arithmetic.ts / kernels.ts (the exact decode, the one encoder, DequantizeLinear's product):
 * nothing here rounds by itself. The block kernels (amax of each block, the scaled cast with its
 * nibble packing) run as WebAssembly SIMD where it is available (simd.ts: the same kernels as
 * QuantizeLinear's float8e4m3fn / float4e2m1 outputs), on the source converted exactly to float32;
 * the scalar code below is their reference and the fallback. Browser-safe: no Node built-ins.
 */
import { dtype, type DType, type Storage } from "../../dtype/table.js";
import { TensorcastError } from "../../errors.js";
import { decodeExact, encodeExact, writeNaN } from "./arithmetic.js";
import { convert } from "../convert.js";
import { CHUNK, dequantizeLinearKernel, type DequantizeArgs } from "./kernels.js";
import { blockLayout, rowBandLayout, scaleIndices, type QuantLayout } from "./layout.js";
import { e8m0Value, fp8BlockScale, fp8InverseScale, groupAbsMax, mxScaleCode, ue8m0InverseScaleCode } from "./scales.js";
import { dequantizeSimd, simdAbsMax, simdScaledCast } from "./simd.js";

/** How FP8 inverse scales are stored: float32 values, or "ue8m0" powers of two as float8e8m0. */
export type Fp8ScaleFormat = "float32" | "ue8m0";

/** float8e4m3fn's largest finite value: the FP8 block rule's qmax. */
export const FP8_MAX = 448;
/** Elements per MX block. */
export const MX_BLOCK = 32;

const F8E4M3 = dtype("float8e4m3fn");
const E8M0 = dtype("float8e8m0");
const F4 = dtype("float4e2m1");
const F32 = dtype("float32");

/** The source types the quantizers take (what transformers converts to float32 exactly). */
const SOURCE_TYPES = new Set(["float32", "float16", "bfloat16"]);

function checkSource(t: DType, what: string): void {
  if (!SOURCE_TYPES.has(t.name)) {
    throw new TensorcastError("UNSUPPORTED_TYPE", `${what}: source type ${t.name} is not one of float32, float16, bfloat16`);
  }
}

function checkBytes(bytes: Uint8Array, expected: number, what: string): void {
  if (bytes.byteLength !== expected) {
    throw new TensorcastError("SHAPE_MISMATCH", `${what}: ${bytes.byteLength} bytes given, ${expected} expected`);
  }
}

/** A typed view of raw little-endian bytes as a storage of `t` (copied when misaligned). */
export function storageOfBytes(bytes: Uint8Array, t: DType): Storage {
  const size = t.packed ? 1 : t.bits / 8;
  const aligned = bytes.byteOffset % size === 0 ? bytes : bytes.slice();
  const n = aligned.byteLength / size;
  switch (size) {
    case 1: return aligned;
    case 2: return new Uint16Array(aligned.buffer, aligned.byteOffset, n);
    case 4: return new Float32Array(aligned.buffer, aligned.byteOffset, n);
    default: return new Float64Array(aligned.buffer, aligned.byteOffset, n);
  }
}

function bytesOf(s: Storage): Uint8Array {
  const a = s as Exclude<Storage, string[]>;
  return new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
}

/**
 * Element (i, j) of each [rows, cols] matrix of `count` consecutive ones becomes element (j, i):
 * a byte copy, `elementBytes` per element (gpt-oss' [in, out] <-> the stored [out, in]).
 */
export function transposeMatrices(src: Uint8Array, count: number, rows: number, cols: number, elementBytes: number): Uint8Array {
  const out = new Uint8Array(src.byteLength);
  transposeMatricesInto(src, out, count, rows, cols, elementBytes);
  return out;
}

/** transposeMatrices into `out` (src.byteLength bytes, not overlapping src), for callers that reuse buffers. */
export function transposeMatricesInto(src: Uint8Array, out: Uint8Array, count: number, rows: number, cols: number, elementBytes: number): void {
  const m = rows * cols * elementBytes;
  const aligned = (elementBytes === 2 || elementBytes === 4) && src.byteOffset % elementBytes === 0 && out.byteOffset % elementBytes === 0;
  if (!aligned) {
    for (let e = 0; e < count; e++) {
      const base = e * m;
      for (let i = 0; i < rows; i++) {
        for (let j = 0; j < cols; j++) {
          const from = base + (i * cols + j) * elementBytes;
          const to = base + (j * rows + i) * elementBytes;
          for (let b = 0; b < elementBytes; b++) out[to + b] = src[from + b];
        }
      }
    }
    return;
  }
  // 32-bit words need both sides on a multiple of 4 (a view at an odd 16-bit offset would throw).
  if (elementBytes === 2 && rows % 2 === 0 && cols % 2 === 0 && src.byteOffset % 4 === 0 && out.byteOffset % 4 === 0) {
    const words = (b: Uint8Array): Uint32Array => new Uint32Array(b.buffer as ArrayBuffer, b.byteOffset, (count * m) / 4);
    transpose16(words(src), words(out), count, rows, cols);
    return;
  }
  // Whole elements, in tiles of 64 x 64 so that both sides stay in cache, each output row written
  // in order (measured on [1024, 4096] bfloat16: 25 ms by bytes, 22 by 32-tiles, 14 this way).
  const View = elementBytes === 2 ? Uint16Array : Uint32Array;
  const a = new View(src.buffer as ArrayBuffer, src.byteOffset, src.byteLength / elementBytes);
  const b = new View(out.buffer as ArrayBuffer, out.byteOffset, a.length);
  const T = 64;
  for (let e = 0; e < count; e++) {
    const base = e * rows * cols;
    for (let j0 = 0; j0 < cols; j0 += T) {
      const j1 = Math.min(cols, j0 + T);
      for (let i0 = 0; i0 < rows; i0 += T) {
        const i1 = Math.min(rows, i0 + T);
        for (let j = j0; j < j1; j++) {
          const to = base + j * rows;
          for (let i = i0; i < i1; i++) b[to + i] = a[base + i * cols + j];
        }
      }
    }
  }
}

/**
 * transposeMatrices of 16-bit elements, rows and cols even, by 2 x 2 blocks held in 32-bit words
 * (two reads and two writes per four elements), in tiles of 32 x 32 blocks: about 15 ms for
 * [1024, 4096] bfloat16 where bytes took 25 (a loaded machine; 6 ms where the sizes are constants).
 */
function transpose16(a: Uint32Array, b: Uint32Array, count: number, rows: number, cols: number): void {
  const hc = cols >>> 1;
  const hr = rows >>> 1;
  const T = 32;
  for (let e = 0; e < count; e++) {
    const base = e * hr * cols;
    for (let j0 = 0; j0 < hc; j0 += T) {
      const j1 = Math.min(hc, j0 + T);
      for (let i0 = 0; i0 < hr; i0 += T) {
        const i1 = Math.min(hr, i0 + T);
        for (let j = j0; j < j1; j++) {
          // Output rows 2j and 2j + 1 (source columns), words i: source rows 2i and 2i + 1.
          let o0 = base + 2 * j * hr + i0;
          let o1 = o0 + hr;
          let r = base + 2 * i0 * hc + j;
          for (let i = i0; i < i1; i++, o0++, o1++, r += cols) {
            const w0 = a[r];
            const w1 = a[r + hc];
            b[o0] = (w0 & 0xffff) | (w1 << 16);
            b[o1] = (w0 >>> 16) | (w1 & 0xffff0000);
          }
        }
      }
    }
  }
}

const CAST_OPTIONS = { saturate: true, roundMode: "up" } as const;

let float32Scratch = new Float32Array(0);
/**
 * The elements as float32 (exact for the source types): the storage itself, or a converted copy in
 * a scratch array reused from call to call (a fresh one per band would cost its page faults; each
 * caller is done with it before the next call).
 */
function asFloat32(x: Storage, xType: DType, count: number): Float32Array {
  if (xType.name === "float32") return x as Float32Array;
  if (float32Scratch.length < count) float32Scratch = new Float32Array(count);
  const out = float32Scratch.subarray(0, count);
  convert(x, xType, out, F32, count, CAST_OPTIONS);
  return out;
}

/**
 * DequantizeLinear for the checkpoints' way back. With e8m0 scales a float8e4m3fn or float4e2m1
 * code times its power of two is exact in float32 (at least 2^-9 * 2^-127 = 2^-136, above float32's
 * smallest subnormal; 2^128 and more overflow to Inf in float32 as in every narrower type), so the
 * SIMD kernel's float32 product cast once to bfloat16 / float16 is the reference's one rounding of
 * the exact product. Other scales into a narrower type take the reference (a float32 product
 * would round twice).
 */
export function dequantizeBlocks(a: DequantizeArgs): void {
  if (a.yType.name !== "float32" && a.scaleType === E8M0 && (a.xType === F8E4M3 || a.xType === F4)) {
    const count = a.layout.count;
    if (float32Scratch.length < count) float32Scratch = new Float32Array(count);
    const y32 = float32Scratch.subarray(0, count);
    if (dequantizeSimd({ ...a, y: y32, yType: F32 })) {
      convert(y32, F32, a.y, a.yType, count, CAST_OPTIONS);
      return;
    }
  }
  dequantizeLinearKernel(a);
}

/** groupAbsMax(..., true) by the SIMD amax kernel where the blocks allow it. */
function blockAbsMax(xs: Storage, xType: DType, x32: Float32Array | undefined, layout: QuantLayout, amax: Float64Array): void {
  if (!x32 || !simdAbsMax(x32, layout, amax)) groupAbsMax(xs, xType, layout, amax, true);
}

type Apply = "fp8" | "mx";

/**
 * The scaled cast both quantizers share, in CHUNK blocks: each element of `x`, converted to float32
 * as torch does, times (fp8: rounded to float32, clamped to +/-448) or divided by (mx: exact, the
 * scale is a power of two) its group's scale, then encoded into `yType` by the one encoder with
 * saturation. The float32 rounding of the fp8 product matters: a product just below a tie that
 * rounds onto it in float32 then goes to the even neighbour, as torch's does. A NaN keeps x's sign; a NaN the arithmetic makes (Inf * 0) is negative, as x86's
 * default NaN that torch's CPU product gives.
 */
function scaledCast(
  x: Storage, xType: DType, layout: QuantLayout, scale: Float64Array, apply: Apply, y: Storage, yType: DType, x32?: Float32Array,
): void {
  if (x32 && simdScaledCast(x32, layout, Float32Array.from(scale), apply, y as Uint8Array)) return;
  const xs = new Float64Array(Math.min(CHUNK, layout.count));
  const xWords = new Uint32Array(xs.buffer);
  const out = new Float64Array(xs.length);
  const outWords = new Uint32Array(out.buffer);
  const index = new Int32Array(xs.length);
  for (let start = 0; start < layout.count; start += CHUNK) {
    const n = Math.min(CHUNK, layout.count - start);
    decodeExact(x, xType, start, n, xs);
    scaleIndices(layout, start, n, index);
    for (let j = 0; j < n; j++) {
      const v = xs[j];
      const s = scale[index[j]];
      let q = apply === "fp8" ? Math.fround(Math.fround(v) * s) : v / s;
      if (q !== q) {
        writeNaN(outWords, j, v !== v ? xWords[2 * j + 1] >>> 31 === 1 : apply === "fp8");
        continue;
      }
      // torch.clamp(+/-448) before the cast is the encoder's saturation.
      out[j] = q;
    }
    encodeExact(out, y, yType, start, n, true);
  }
}

/** Why a [rows, cols] weight cannot take R x C FP8 blocks, or undefined when it can. */
export function fp8BlockRefusal(shape: readonly number[], block: readonly [number, number]): string | undefined {
  if (shape.length !== 2) return `not 2-D (shape [${shape.join(", ")}])`;
  const [rows, cols] = shape;
  if (rows % block[0] !== 0 || cols % block[1] !== 0) {
    return `shape [${rows}, ${cols}] is not a multiple of the ${block[0]}x${block[1]} block (transformers leaves such weights unquantized)`;
  }
  return undefined;
}

/** An FP8-quantized weight: float8e4m3fn bytes and its inverse scales. */
export interface Fp8Quantized {
  /** rows * cols float8e4m3fn codes. */
  readonly weight: Uint8Array;
  /** [rows / R, cols / C] inverse scales: float32 little-endian bytes, or float8e8m0 codes. */
  readonly scaleInv: Uint8Array;
  readonly scaleType: DType;
  readonly scaleShape: readonly [number, number];
}

/**
 * FP8 block quantization of a band of `rows` rows (at most one block high) of a [rows, cols] weight:
 * the band's float8e4m3fn codes and its one row of inverse scales, as `fp8BlockQuantize` computes
 * them. Partial blocks (a band lower than R, a last block narrower than C) are quantized over the
 * elements they have; `fp8BlockQuantize` only calls this on whole tiles, as transformers does.
 */
export function fp8QuantizeBand(
  x: Uint8Array, xType: DType, rows: number, cols: number, blockCols: number, format: Fp8ScaleFormat,
): { weight: Uint8Array; scaleInv: Uint8Array } {
  checkSource(xType, "fp8 quantize");
  checkBytes(x, (rows * cols * xType.bits) / 8, "fp8 quantize band");
  const layout = rowBandLayout(rows, cols, blockCols);
  const xs = storageOfBytes(x, xType);
  const x32 = asFloat32(xs, xType, layout.count);
  const amax = new Float64Array(layout.scaleCount);
  blockAbsMax(xs, xType, x32, layout, amax);
  const scale = new Float64Array(layout.scaleCount);
  let scaleInv: Uint8Array;
  if (format === "ue8m0") {
    scaleInv = new Uint8Array(layout.scaleCount);
    for (let g = 0; g < scale.length; g++) {
      const code = ue8m0InverseScaleCode(fp8InverseScale(fp8BlockScale(amax[g], FP8_MAX)));
      scaleInv[g] = code;
      scale[g] = Math.fround(1 / e8m0Value(code));
    }
  } else {
    const inv = new Float32Array(layout.scaleCount);
    for (let g = 0; g < scale.length; g++) {
      scale[g] = fp8BlockScale(amax[g], FP8_MAX);
      inv[g] = fp8InverseScale(scale[g]);
    }
    scaleInv = bytesOf(inv);
  }
  const weight = new Uint8Array(rows * cols);
  scaledCast(xs, xType, layout, scale, "fp8", weight, F8E4M3, x32);
  return { weight, scaleInv };
}

/**
 * transformers' Fp8Quantize of a [rows, cols] weight (raw bytes of float32, float16 or bfloat16) in
 * R x C tiles: bit for bit the float8e4m3fn weight and `weight_scale_inv`.
 * @throws TensorcastError INVALID_SHAPE when the shape is not 2-D or not a multiple of the block
 * (see fp8BlockRefusal), UNSUPPORTED_TYPE for another source type.
 */
export function fp8BlockQuantize(
  x: Uint8Array, xType: DType, shape: readonly number[], block: readonly [number, number] = [128, 128], format: Fp8ScaleFormat = "float32",
): Fp8Quantized {
  const refusal = fp8BlockRefusal(shape, block);
  if (refusal) throw new TensorcastError("INVALID_SHAPE", `fp8 quantize: ${refusal}`);
  checkSource(xType, "fp8 quantize");
  const [rows, cols] = shape;
  const [br, bc] = block;
  checkBytes(x, (rows * cols * xType.bits) / 8, "fp8 quantize");
  const bands = rows / br;
  const perRow = cols / bc;
  const scaleBytes = format === "ue8m0" ? 1 : 4;
  const weight = new Uint8Array(rows * cols);
  const scaleInv = new Uint8Array(bands * perRow * scaleBytes);
  const bandBytes = (br * cols * xType.bits) / 8;
  for (let b = 0; b < bands; b++) {
    const r = fp8QuantizeBand(x.subarray(b * bandBytes, (b + 1) * bandBytes), xType, br, cols, bc, format);
    weight.set(r.weight, b * br * cols);
    scaleInv.set(r.scaleInv, b * perRow * scaleBytes);
  }
  return { weight, scaleInv, scaleType: format === "ue8m0" ? E8M0 : F32, scaleShape: [bands, perRow] };
}

/**
 * The inverse-scale type of a stored FP8 checkpoint: float32 (or float16 / bfloat16) values, or
 * e8m0 codes stored as float8e8m0 or uint8 (MXFP8 checkpoints), which decode as 2^(code - 127).
 */
function scaleDecodeType(t: DType): DType {
  if (t.name === "uint8" || t.name === "float8e8m0") return E8M0;
  if (SOURCE_TYPES.has(t.name)) return t;
  throw new TensorcastError("UNSUPPORTED_TYPE", `fp8 scales of type ${t.name}: float32, float16, bfloat16, float8e8m0 or uint8 expected`);
}

/**
 * Refuses scales a dequantization cannot trust: NaN, Inf, zero or negative values (an e8m0 code
 * 0xFF is NaN).
 * @throws TensorcastError INVALID_DATA naming the first bad scale.
 */
export function checkScales(scales: Storage, t: DType, count: number, what: string): void {
  const v = new Float64Array(Math.min(CHUNK, count));
  for (let start = 0; start < count; start += CHUNK) {
    const n = Math.min(CHUNK, count - start);
    decodeExact(scales, t, start, n, v);
    for (let j = 0; j < n; j++) {
      const s = v[j];
      if (!(s > 0 && s < Infinity)) {
        throw new TensorcastError("INVALID_DATA", `${what}: scale ${start + j} is ${s}; scales must be finite and positive`);
      }
    }
  }
}

/**
 * transformers' Fp8Dequantize: each float8e4m3fn code times its tile's inverse scale (the block is
 * the weight's shape over the scale grid's), rounded once to `outType` (float32, float16 or
 * bfloat16; torch's float32 product then cast rounds the same, see arithmetic.ts on double rounding).
 * @throws TensorcastError INVALID_SHAPE when the grid does not divide the weight, INVALID_DATA for
 * a NaN, Inf, zero or negative scale.
 */
export function fp8BlockDequantize(
  q: Uint8Array, shape: readonly number[], scaleInv: Uint8Array, scaleType: DType, scaleShape: readonly number[], outType: DType,
): Uint8Array {
  if (shape.length !== 2 || scaleShape.length !== 2) {
    throw new TensorcastError("INVALID_SHAPE", `fp8 dequantize: weight [${shape.join(", ")}] and scales [${scaleShape.join(", ")}] must both be 2-D`);
  }
  const [rows, cols] = shape;
  const [sr, sc] = scaleShape;
  if (sr === 0 || sc === 0 || rows % sr !== 0 || cols % sc !== 0) {
    throw new TensorcastError("INVALID_SHAPE", `fp8 dequantize: weight [${rows}, ${cols}] is not divisible by the scale grid [${sr}, ${sc}]`);
  }
  checkSource(outType, "fp8 dequantize output");
  checkBytes(q, rows * cols, "fp8 dequantize weight");
  const st = scaleDecodeType(scaleType);
  checkBytes(scaleInv, (sr * sc * st.bits) / 8, "fp8 dequantize scales");
  const scales = storageOfBytes(scaleInv, st);
  checkScales(scales, st, sr * sc, "fp8 dequantize");
  const br = rows / sr;
  const out = new Uint8Array((rows * cols * outType.bits) / 8);
  const bandOut = (br * cols * outType.bits) / 8;
  const scaleRow = (sc * st.bits) / 8;
  for (let b = 0; b < sr; b++) {
    const y = storageOfBytes(out.subarray(b * bandOut, (b + 1) * bandOut), outType);
    dequantizeBlocks({
      x: q.subarray(b * br * cols, (b + 1) * br * cols), xType: F8E4M3,
      scale: storageOfBytes(scaleInv.subarray(b * scaleRow, (b + 1) * scaleRow), st), scaleType: st,
      y, yType: outType, layout: rowBandLayout(br, cols, cols / sc),
    });
  }
  return out;
}

/** Why experts of this shape cannot take MXFP4 (gpt-oss layout), or undefined when they can. */
export function mxfp4Refusal(shape: readonly number[]): string | undefined {
  if (shape.length !== 3) return `not 3-D [experts, in, out] (shape [${shape.join(", ")}])`;
  if (shape[1] % MX_BLOCK !== 0) return `input dimension ${shape[1]} is not a multiple of ${MX_BLOCK}`;
  return undefined;
}

/** MXFP4 experts as gpt-oss stores them. */
export interface Mxfp4Quantized {
  /** uint8 [experts, out, in / 32, 16]: float4e2m1 pairs, low nibble first. */
  readonly blocks: Uint8Array;
  readonly blocksShape: readonly number[];
  /** uint8 [experts, out, in / 32]: e8m0 codes. */
  readonly scales: Uint8Array;
  readonly scalesShape: readonly number[];
}

/**
 * MXFP4 (OCP MX v1.0) of experts [E, in, out] (raw bytes of float32, float16 or bfloat16) in
 * gpt-oss' layout: transposed to [E, out, in], 32-element blocks along `in`, shared exponent
 * mxScaleCode(amax, float4e2m1) (NaN in a block: 0xFF), elements w / 2^e rounded to nearest even in
 * float4e2m1 and saturated to +/-6.
 * @throws TensorcastError INVALID_SHAPE (see mxfp4Refusal), UNSUPPORTED_TYPE.
 */
export function mxfp4Quantize(x: Uint8Array, xType: DType, shape: readonly number[]): Mxfp4Quantized {
  const refusal = mxfp4Refusal(shape);
  if (refusal) throw new TensorcastError("INVALID_SHAPE", `mxfp4 quantize: ${refusal}`);
  checkSource(xType, "mxfp4 quantize");
  const [experts, inDim, outDim] = shape;
  const elementBytes = xType.bits / 8;
  checkBytes(x, experts * inDim * outDim * elementBytes, "mxfp4 quantize");
  const groups = inDim / MX_BLOCK;
  const blocks = new Uint8Array((experts * outDim * inDim) / 2);
  const scales = new Uint8Array(experts * outDim * groups);
  const m = inDim * outDim;
  const layout = blockLayout([outDim, inDim], 1, MX_BLOCK);
  const amax = new Float64Array(layout.scaleCount);
  const value = new Float64Array(layout.scaleCount);
  for (let e = 0; e < experts; e++) {
    const t = transposeMatrices(x.subarray(e * m * elementBytes, (e + 1) * m * elementBytes), 1, inDim, outDim, elementBytes);
    const xs = storageOfBytes(t, xType);
    const x32 = asFloat32(xs, xType, layout.count);
    blockAbsMax(xs, xType, x32, layout, amax);
    const codes = scales.subarray(e * outDim * groups, (e + 1) * outDim * groups);
    for (let g = 0; g < codes.length; g++) {
      codes[g] = mxScaleCode(amax[g], F4);
      value[g] = e8m0Value(codes[g]);
    }
    scaledCast(xs, xType, layout, value, "mx", blocks.subarray((e * m) / 2, ((e + 1) * m) / 2), F4, x32);
  }
  return { blocks, blocksShape: [experts, outDim, groups, MX_BLOCK / 2], scales, scalesShape: [experts, outDim, groups] };
}

/**
 * transformers' convert_moe_packed_tensors: blocks [E, out, G, 16] and e8m0 scales [E, out, G] back
 * to experts [E, G * 32, out] in `outType` (each value lut[nibble] * 2^(code - 127), rounded once;
 * bfloat16 overflows to Inf as torch's ldexp does).
 * @throws TensorcastError SHAPE_MISMATCH when the shapes disagree, INVALID_DATA for a NaN scale
 * (code 0xFF).
 */
export function mxfp4Dequantize(
  blocks: Uint8Array, blocksShape: readonly number[], scales: Uint8Array, scalesShape: readonly number[], outType: DType,
): { data: Uint8Array; shape: number[] } {
  if (blocksShape.length !== 4 || blocksShape[3] !== MX_BLOCK / 2 || scalesShape.length !== 3 || blocksShape.slice(0, 3).some((d, i) => d !== scalesShape[i])) {
    throw new TensorcastError("SHAPE_MISMATCH", `mxfp4 dequantize: blocks [${blocksShape.join(", ")}] and scales [${scalesShape.join(", ")}] are not [E, out, G, 16] and [E, out, G]`);
  }
  checkSource(outType, "mxfp4 dequantize output");
  const [experts, outDim, groups] = scalesShape;
  const inDim = groups * MX_BLOCK;
  checkBytes(blocks, (experts * outDim * inDim) / 2, "mxfp4 dequantize blocks");
  checkBytes(scales, experts * outDim * groups, "mxfp4 dequantize scales");
  checkScales(scales, E8M0, scales.length, "mxfp4 dequantize");
  const m = outDim * inDim;
  const elementBytes = outType.bits / 8;
  const out = new Uint8Array(experts * m * elementBytes);
  const layout = blockLayout([outDim, inDim], 1, MX_BLOCK);
  for (let e = 0; e < experts; e++) {
    const y = new Uint8Array(m * elementBytes);
    dequantizeBlocks({
      x: blocks.subarray((e * m) / 2, ((e + 1) * m) / 2), xType: F4,
      scale: scales.subarray(e * outDim * groups, (e + 1) * outDim * groups), scaleType: E8M0,
      y: storageOfBytes(y, outType), yType: outType, layout,
    });
    transposeMatricesInto(y, out.subarray(e * m * elementBytes, (e + 1) * m * elementBytes), 1, outDim, inDim, elementBytes);
  }
  return { data: out, shape: [experts, inDim, outDim] };
}
