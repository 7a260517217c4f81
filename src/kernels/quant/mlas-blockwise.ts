/**
 * onnxruntime's blockwise 4-bit weight quantization, the rule behind its MatMulNBitsQuantizer
 * (onnxruntime/python/tools/quantization/matmul_nbits_quantizer.py calls the C++
 * `quantize_matmul_4bits`, which runs MLAS's `BlockwiseQuantizer<float, block, 4, columnwise>::
 * quantizeAndTranspose` in onnxruntime/core/mlas/lib/q4_dq.cpp). It differs from the ONNX
 * operators' rules in src/kernels/quant/scales.ts, so it lives here once:
 *
 * - a block is `blockSize` consecutive rows (K) of one column (N) of the row-major [K, N] weight;
 *   its range is the float32 min / max of its elements, starting from FLT_MAX / -FLT_MAX (NaN
 *   skipped, as `v < min` skips it; a block of only NaN has min FLT_MAX, max -FLT_MAX);
 * - symmetric (`range2scale`): m = the one of min / max with the larger magnitude (min on a tie),
 *   scale = -m / 8, codes centred on 8 (the larger half maps to [0, 8]);
 * - asymmetric (`range2scalezp`): the range widened to include 0, scale = (max - min) / 15 in
 *   float32, zero point = roundf(-min / scale) clamped to [0, 15] (0 for a zero range);
 * - code = clamp(roundf(v * (1 / scale) + zp), 0, 15), every step in float32 (a zero scale gives
 *   a reciprocal of 0), roundf rounding halves away from zero (not to even, as QuantizeLinear);
 * - layout: the transpose [N, ceil(K / blockSize), blockSize / 2] bytes, two consecutive rows per
 *   byte, the lower row in the low nibble; scales [N, blocks]; zero points [N, ceil(blocks / 2)]
 *   bytes, the even block in the low nibble.
 *
 * - a float16 weight (MLAS's MLFloat16 instantiation): the same in float32 (float16 values are
 *   exact there), but each scale is stored as float16 (nearest even) and the codes use the stored
 *   scale's reciprocal, while an asymmetric zero point comes from the float32 scale.
 *
 * MLAS quantizes in thread tasks of two blocks of one column; two details of that show in the
 * bytes and are kept: a task's zero points start at 8 (kMid), so when the number of blocks is odd
 * the unused high nibble of a column's last zero-point byte is 8, not 0; and for an odd K the
 * unused high nibble of a column's last code byte repeats the code of the row two above it in the
 * same task (the pair buffer `vi` is not cleared between pairs), 0 when the task holds one row.
 */

import { dtype } from "../../dtype/table.js";
import { convert } from "../convert.js";

/** The three tensors of a MatMulNBits weight. */
export interface Blockwise4 {
  /** [N, blocks, blockSize / 2] bytes. */
  readonly packed: Uint8Array;
  /** [N, blocks] scales: float32 values (float16 ones for scaleType "float16"). */
  readonly scales: Float32Array;
  /** [N, ceil(blocks / 2)] bytes of two 4-bit zero points; undefined when symmetric. */
  readonly zeroPoints?: Uint8Array;
}

/** C's roundf: to nearest, halves away from zero (the argument is a float32 value). */
export function roundHalfAway(v: number): number {
  return v < 0 ? -Math.round(-v) : Math.round(v);
}

/**
 * MLAS's blockwise 4-bit quantization of a row-major float32 [K, N] weight (see the file comment).
 * @example mlasQuantize4(new Float32Array(32), 32, 1, 32, true).scales  // Float32Array [0] (and every code 8)
 */
export function mlasQuantize4(w: Float32Array, K: number, N: number, blockSize: number, symmetric: boolean, scaleType: "float32" | "float16" = "float32"): Blockwise4 {
  const blocks = Math.ceil(K / blockSize);
  const qRows = blocks * (blockSize / 2);
  const packed = new Uint8Array(N * qRows);
  const scales = new Float32Array(N * blocks);
  const zpStride = Math.ceil(blocks / 2);
  const zeroPoints = symmetric ? undefined : new Uint8Array(N * zpStride);
  // One block of rows of every column at a time, read row by row (the weight is row-major [K, N]:
  // a column walk strides N * 4 bytes and missed the cache at every element). Per column: the
  // block's min / max (float32 values, so float32 arrays hold them exactly), its reciprocal and
  // zero point.
  const mins = new Float32Array(N);
  const maxs = new Float32Array(N);
  const reciprocals = new Float32Array(N);
  const zps = new Uint8Array(N);
  const taskZp = new Uint8Array(N);
  const blockScales = new Float32Array(N);
  const halfScales = scaleType === "float16" ? new Uint16Array(N) : undefined;
  for (let b = 0; b < blocks; b++) {
    const r0 = b * blockSize;
    const r1 = Math.min(r0 + blockSize, K);
    // MLAS starts from min = FLT_MAX, max = -FLT_MAX and skips NaN (`v < min` is false): a block
    // of only NaN keeps those, and an infinity replaces them.
    mins.fill(F32_MAX);
    maxs.fill(-F32_MAX);
    for (let r = r0; r < r1; r++) {
      const row = r * N;
      for (let j = 0; j < N; j++) {
        const v = w[row + j];
        if (v < mins[j]) mins[j] = v;
        if (v > maxs[j]) maxs[j] = v;
      }
    }
    for (let j = 0; j < N; j++) {
      const lo = mins[j];
      const hi = maxs[j];
      let scale: number;
      // A task's zero points start at 8 (kMid), which symmetric blocks keep.
      let zp = 8;
      if (symmetric) scale = symmetricScale4(lo, hi);
      else {
        const p = asymmetricParams4(lo, hi);
        scale = p.scale;
        zp = p.zeroPoint;
      }
      blockScales[j] = scale;
      zps[j] = zp;
    }
    // A float16 weight's scales are stored as float16 (MLFloat16(scale_f), nearest even), and the
    // codes divide by the stored scale; the zero point came from the float one.
    if (halfScales) {
      convert(blockScales, F32, halfScales, F16, N, CAST);
      convert(halfScales, F16, blockScales, F32, N, CAST);
    }
    for (let j = 0; j < N; j++) {
      const scale = blockScales[j];
      scales[j * blocks + b] = scale;
      reciprocals[j] = scale !== 0 ? Math.fround(1 / scale) : 0;
    }
    if (zeroPoints) {
      // Two blocks per byte, the even one low; an odd last block leaves the high nibble at 8.
      const at = b >> 1;
      for (let j = 0; j < N; j++) {
        if ((b & 1) === 0) taskZp[j] = zps[j];
        if ((b & 1) === 1 || b === blocks - 1) zeroPoints[j * zpStride + at] = (taskZp[j] & 0xf) | ((((b & 1) === 1 ? zps[j] : 8) << 4) & 0xff);
      }
    }
    for (let i = r0; i < r1; i += 2) {
      const lowRow = i * N;
      const byte = i >> 1;
      if (i + 1 < r1) {
        const highRow = lowRow + N;
        for (let j = 0; j < N; j++) {
          const rc = reciprocals[j];
          const zp = zps[j];
          packed[j * qRows + byte] = code4(Math.fround(Math.fround(w[lowRow + j] * rc) + zp)) | (code4(Math.fround(Math.fround(w[highRow + j] * rc) + zp)) << 4);
        }
      } else {
        // An odd K's last row: MLAS's pair buffer still holds the code of the row above it (two
        // above the missing row) when the task (two blocks) has an earlier pair, 0 when not.
        const taskStart = i - (i % (2 * blockSize));
        for (let j = 0; j < N; j++) {
          const high = i > taskStart ? packed[j * qRows + byte - 1] >> 4 : 0;
          packed[j * qRows + byte] = code4(Math.fround(Math.fround(w[lowRow + j] * reciprocals[j]) + zps[j])) | (high << 4);
        }
      }
    }
  }
  return { packed, scales, zeroPoints };
}

/**
 * roundf(v) clamped to [0, 15], then converted to uint8 as x86 does (NaN gives 0): halves away from
 * zero, and below 0.5 (negative values included) 0.
 */
function code4(v: number): number {
  return v >= 0.5 ? (v >= 14.5 ? 15 : (v + 0.5) | 0) : 0;
}

const F32_MAX = 3.4028234663852886e38;
const F32 = dtype("float32");
const F16 = dtype("float16");
const CAST = { saturate: false, roundMode: "up" } as const;

/** MLAS range2scale for 4 bits: -m / 8, m the bound of larger magnitude. */
function symmetricScale4(min: number, max: number): number {
  const m = Math.abs(max) > Math.abs(min) ? max : min;
  return Math.fround(-m / 8);
}

/** MLAS range2scalezp for unsigned 4 bits. */
function asymmetricParams4(min: number, max: number): { scale: number; zeroPoint: number } {
  const lo = Math.min(min, 0);
  const hi = Math.max(max, 0);
  const scale = Math.fround(Math.fround(hi - lo) / 15);
  const zpFloat = scale !== 0 ? Math.fround(0 - Math.fround(lo / scale)) : lo;
  const zeroPoint = zpFloat < 0 ? 0 : zpFloat > 15 ? 15 : roundHalfAway(zpFloat);
  return { scale, zeroPoint };
}
