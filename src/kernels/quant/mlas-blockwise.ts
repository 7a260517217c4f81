/**
 * onnxruntime's blockwise 4-bit weight quantization, the rule behind its MatMulNBitsQuantizer
 * (onnxruntime/python/tools/quantization/matmul_nbits_quantizer.py calls the C++
 * `quantize_matmul_4bits`, which runs MLAS's `BlockwiseQuantizer<float, block, 4, columnwise>::
 * quantizeAndTranspose` in onnxruntime/core/mlas/lib/q4_dq.cpp). It differs from the ONNX
 * operators' rules in src/kernels/quant/scales.ts, so it lives here once:
 *
 * - a block is `blockSize` consecutive rows (K) of one column (N) of the row-major [K, N] weight;
 *   its range is the float32 min / max of its elements (NaN skipped, as `v < min` skips it);
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
 * MLAS quantizes in thread tasks of two blocks of one column; two details of that show in the
 * bytes and are kept: a task's zero points start at 8 (kMid), so when the number of blocks is odd
 * the unused high nibble of a column's last zero-point byte is 8, not 0; and for an odd K the
 * unused high nibble of a column's last code byte repeats the code of the row two above it in the
 * same task (the pair buffer `vi` is not cleared between pairs), 0 when the task holds one row.
 */
import { groupMinMax } from "./scales.js";
import { blockLayout } from "./layout.js";
import { dtype } from "../../dtype/table.js";

/** The three tensors of a MatMulNBits weight. */
export interface Blockwise4 {
  /** [N, blocks, blockSize / 2] bytes. */
  readonly packed: Uint8Array;
  /** [N, blocks] float32 scales. */
  readonly scales: Float32Array;
  /** [N, ceil(blocks / 2)] bytes of two 4-bit zero points; undefined when symmetric. */
  readonly zeroPoints?: Uint8Array;
}

const F32 = dtype("float32");

/** C's roundf: to nearest, halves away from zero (the argument is a float32 value). */
export function roundHalfAway(v: number): number {
  return v < 0 ? -Math.round(-v) : Math.round(v);
}

/**
 * MLAS's blockwise 4-bit quantization of a row-major float32 [K, N] weight (see the file comment).
 * @example mlasQuantize4(new Float32Array(32), 32, 1, 32, true).scales  // Float32Array [0] (and every code 8)
 */
export function mlasQuantize4(w: Float32Array, K: number, N: number, blockSize: number, symmetric: boolean): Blockwise4 {
  const blocks = Math.ceil(K / blockSize);
  const blob = blockSize / 2;
  const qRows = blocks * blob;
  const mins = new Float64Array(blocks * N);
  const maxs = new Float64Array(blocks * N);
  groupMinMax(w, F32, blockLayout([K, N], 0, blockSize), mins, maxs);
  const packed = new Uint8Array(N * qRows);
  const scales = new Float32Array(N * blocks);
  const zpStride = Math.ceil(blocks / 2);
  const zeroPoints = symmetric ? undefined : new Uint8Array(N * zpStride);
  const zp = [0, 0];
  const vi = [0, 0];
  for (let j = 0; j < N; j++) {
    // One MLAS task: rows [r, r + 2 * blockSize) of column j.
    for (let r = 0; r < K; r += 2 * blockSize) {
      const rEnd = Math.min(r + 2 * blockSize, K);
      zp[0] = zp[1] = 8;
      vi[0] = vi[1] = 0;
      for (let p = 0; p < 2; p++) {
        const b = r / blockSize + p;
        if (b >= blocks) break;
        // groupMinMax leaves +/-Inf for an all-NaN block; MLAS starts from -/+FLT_MAX.
        const lo = Math.max(mins[b * N + j], -F32_MAX);
        const hi = Math.min(maxs[b * N + j], F32_MAX);
        if (symmetric) scales[j * blocks + b] = symmetricScale4(lo, hi);
        else {
          const { scale, zeroPoint } = asymmetricParams4(lo, hi);
          scales[j * blocks + b] = scale;
          zp[p] = zeroPoint;
        }
      }
      if (zeroPoints) zeroPoints[j * zpStride + r / blockSize / 2] = (zp[0] & 0xf) | ((zp[1] << 4) & 0xff);
      for (let i = r; i < rEnd; i += 2) {
        for (let l = 0; l < 2 && i + l < rEnd; l++) {
          const b = Math.floor((i + l) / blockSize);
          const scale = scales[j * blocks + b];
          const reciprocal = scale !== 0 ? Math.fround(1 / scale) : 0;
          const q = roundHalfAway(Math.fround(Math.fround(w[(i + l) * N + j] * reciprocal) + zp[b % 2]));
          // std::clamp passes NaN through and the float-to-uint8 conversion of NaN gives 0 on x86.
          vi[l] = q !== q ? 0 : q < 0 ? 0 : q > 15 ? 15 : q;
        }
        packed[j * qRows + i / 2] = (vi[0] & 0xf) | ((vi[1] << 4) & 0xff);
      }
    }
  }
  return { packed, scales, zeroPoints };
}

const F32_MAX = 3.4028234663852886e38;

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
