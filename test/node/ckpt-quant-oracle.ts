/**
 * An oracle for the checkpoint quantizer written from the published rules alone (transformers'
 * Fp8Quantize / Fp8Dequantize and convert_moe_packed_tensors as issue 27 states them, the OCP MX
 * v1.0 rule), sharing no code with src/: float8e4m3fn and float4e2m1 by enumeration of their
 * codes, bfloat16 by its bits, safetensors files by their header. Plain float64 / Math.fround.
 */
import { readFileSync } from "node:fs";

/** A tensor of a safetensors file, read by its header alone. */
export interface Raw {
  readonly dtype: string;
  readonly shape: number[];
  readonly bytes: Uint8Array;
}

/** Every tensor of a safetensors file, and its data bytes (the sum of the tensors' byte ranges). */
export function readSafetensors(path: string): { tensors: Map<string, Raw>; dataBytes: number } {
  const file = readFileSync(path);
  const n = Number(file.readBigUInt64LE(0));
  const header = JSON.parse(file.subarray(8, 8 + n).toString("utf8")) as Record<string, { dtype: string; shape: number[]; data_offsets: [number, number] }>;
  const tensors = new Map<string, Raw>();
  let dataBytes = 0;
  for (const [name, h] of Object.entries(header)) {
    if (name === "__metadata__") continue;
    const [a, b] = h.data_offsets;
    tensors.set(name, { dtype: h.dtype, shape: h.shape, bytes: new Uint8Array(file.subarray(8 + n + a, 8 + n + b)) });
    dataBytes += b - a;
  }
  return { tensors, dataBytes };
}

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

export function bf16ToNumber(code: number): number {
  u32[0] = code << 16;
  return f32[0];
}

/** bfloat16 code of a number: rounded to float32, then to bfloat16 with ties to even. */
export function numberToBf16(x: number): number {
  f32[0] = x;
  const b = u32[0];
  if ((b & 0x7fffffff) > 0x7f800000) return (b >>> 16) | 0x40;
  return ((b + 0x7fff + ((b >>> 16) & 1)) >>> 16) & 0xffff;
}

export function bf16Values(bytes: Uint8Array): Float64Array {
  const out = new Float64Array(bytes.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = bf16ToNumber(bytes[2 * i] | (bytes[2 * i + 1] << 8));
  return out;
}

/** float8e4m3fn: bias 7, 3 mantissa bits, no infinities, S.1111.111 NaN. */
export function e4m3Value(code: number): number {
  const s = code & 0x80 ? -1 : 1;
  const e = (code >> 3) & 15;
  const m = code & 7;
  if (e === 15 && m === 7) return NaN;
  return s * (e === 0 ? (m / 8) * 2 ** -6 : (1 + m / 8) * 2 ** (e - 7));
}

const E4M3_POS = Array.from({ length: 127 }, (_, c) => e4m3Value(c)); // codes 0..126, increasing
const E2M1_POS = [0, 0.5, 1, 1.5, 2, 3, 4, 6]; // codes 0..7

/** The code of the value of `table` nearest to |x| (ties to the even code), saturating at the top. */
function nearest(table: readonly number[], ax: number): number {
  if (ax >= table[table.length - 1]) return table.length - 1;
  let best = 0;
  for (let c = 1; c < table.length; c++) {
    const d = Math.abs(table[c] - ax);
    const db = Math.abs(table[best] - ax);
    if (d < db || (d === db && c % 2 === 0)) best = c;
  }
  return best;
}

/** float8e4m3fn code of x, saturating to +/-448 (transformers clamps before its cast). */
export function e4m3Code(x: number): number {
  return nearest(E4M3_POS, Math.abs(x)) | (x < 0 || Object.is(x, -0) ? 0x80 : 0);
}

/** float4e2m1 code of x, saturating to +/-6. */
export function e2m1Code(x: number): number {
  return nearest(E2M1_POS, Math.abs(x)) | (x < 0 || Object.is(x, -0) ? 8 : 0);
}

export function e2m1Value(code: number): number {
  return (code & 8 ? -1 : 1) * E2M1_POS[code & 7];
}

/**
 * transformers' Fp8Quantize of a [rows, cols] float64 matrix (values exact in float32) in R x C
 * tiles: codes, the inverse scales as float32 numbers or, with ue8m0, e8m0 codes.
 */
export function fp8Oracle(w: Float64Array, rows: number, cols: number, br: number, bc: number, ue8m0: boolean): { q: Uint8Array; inv: number[] } {
  const q = new Uint8Array(rows * cols);
  const inv: number[] = [];
  for (let bi = 0; bi < rows / br; bi++) {
    for (let bj = 0; bj < cols / bc; bj++) {
      let amax = 0;
      for (let i = bi * br; i < (bi + 1) * br; i++) for (let j = bj * bc; j < (bj + 1) * bc; j++) amax = Math.max(amax, Math.abs(w[i * cols + j]));
      // torch: 448 / amax as amax.reciprocal() * 448 (two float32 roundings); 1 for an all-zero tile.
      let scale = amax > 0 ? Math.fround(Math.fround(1 / amax) * 448) : 1;
      if (ue8m0) {
        const e = Math.ceil(Math.fround(Math.log2(Math.max(Math.fround(1 / scale), 2 ** -126))));
        inv.push(e + 127);
        scale = Math.fround(1 / 2 ** e);
      } else inv.push(Math.fround(1 / scale));
      for (let i = bi * br; i < (bi + 1) * br; i++) {
        for (let j = bj * bc; j < (bj + 1) * bc; j++) q[i * cols + j] = e4m3Code(Math.fround(w[i * cols + j] * scale));
      }
    }
  }
  return { q, inv };
}

/** Fp8Dequantize to bfloat16: float32 product code * inverse scale, then cast. */
export function fp8DequantOracle(q: Uint8Array, rows: number, cols: number, inv: readonly number[], sr: number, sc: number): Uint16Array {
  const br = rows / sr;
  const bc = cols / sc;
  const out = new Uint16Array(rows * cols);
  for (let i = 0; i < rows; i++) {
    for (let j = 0; j < cols; j++) out[i * cols + j] = numberToBf16(Math.fround(e4m3Value(q[i * cols + j]) * inv[Math.floor(i / br) * sc + Math.floor(j / bc)]));
  }
  return out;
}

/**
 * OCP MX v1.0 MXFP4 of experts [E, in, out] in gpt-oss' stored layout: blocks [E, out, in/32, 16]
 * (two elements a byte, low nibble first) and e8m0 scales [E, out, in/32].
 */
export function mxfp4Oracle(w: Float64Array, experts: number, inDim: number, outDim: number): { blocks: Uint8Array; scales: Uint8Array } {
  const g = inDim / 32;
  const blocks = new Uint8Array((experts * outDim * inDim) / 2);
  const scales = new Uint8Array(experts * outDim * g);
  for (let e = 0; e < experts; e++) {
    for (let o = 0; o < outDim; o++) {
      for (let k = 0; k < g; k++) {
        const at = (i: number): number => w[e * inDim * outDim + (k * 32 + i) * outDim + o];
        let amax = 0;
        for (let i = 0; i < 32; i++) amax = Math.max(amax, Math.abs(at(i)));
        // floor(log2(amax)) - 2 (float4e2m1's largest exponent), clamped to e8m0's [-127, 127].
        const x = amax > 0 ? Math.max(-127, Math.min(127, Math.floor(Math.log2(amax)) - 2)) : -127;
        const s = (e * outDim + o) * g + k;
        scales[s] = x + 127;
        for (let i = 0; i < 32; i += 2) {
          blocks[s * 16 + i / 2] = e2m1Code(at(i) / 2 ** x) | (e2m1Code(at(i + 1) / 2 ** x) << 4);
        }
      }
    }
  }
  return { blocks, scales };
}

/** convert_moe_packed_tensors to bfloat16: lut[nibble] * 2^(code - 127), back to [E, in, out]. */
export function mxfp4DequantOracle(blocks: Uint8Array, scales: Uint8Array, experts: number, outDim: number, g: number): Uint16Array {
  const inDim = g * 32;
  const out = new Uint16Array(experts * inDim * outDim);
  for (let e = 0; e < experts; e++) {
    for (let o = 0; o < outDim; o++) {
      for (let k = 0; k < g; k++) {
        const s = (e * outDim + o) * g + k;
        for (let b = 0; b < 16; b++) {
          const byte = blocks[s * 16 + b];
          for (const [n, i] of [[byte & 15, k * 32 + 2 * b], [byte >> 4, k * 32 + 2 * b + 1]]) {
            out[e * inDim * outDim + i * outDim + o] = numberToBf16(e2m1Value(n) * 2 ** (scales[s] - 127));
          }
        }
      }
    }
  }
  return out;
}

export function float32Values(bytes: Uint8Array): Float64Array {
  const f = new Float32Array(bytes.slice().buffer);
  return Float64Array.from(f);
}

export function u16(bytes: Uint8Array): Uint16Array {
  return new Uint16Array(bytes.slice().buffer);
}

/**
 * compressed-tensors' NVFP4 of a [rows, cols] weight read in float32: g = 2688 / amax, block scale
 * e4m3(min(448, g * (amax_b / 6))) (0 -> 0.125), element e2m1(clamp(w / (s_b / g), +/-6)), an exact
 * zero +0; packed two a byte along each row, low nibble first.
 */
export function nvfp4Oracle(w: Float64Array, rows: number, cols: number): { packed: Uint8Array; scales: Uint8Array; g: number; back: Uint16Array; values: Float32Array } {
  let amax = 0;
  for (const v of w) amax = Math.max(amax, Math.abs(v));
  const g = amax === 0 ? 1 : Math.fround(2688 / amax);
  const packed = new Uint8Array((rows * cols) / 2);
  const scales = new Uint8Array((rows * cols) / 16);
  const back = new Uint16Array(rows * cols);
  const values = new Float32Array(rows * cols);
  for (let b = 0; b < scales.length; b++) {
    let amaxB = 0;
    for (let i = b * 16; i < b * 16 + 16; i++) amaxB = Math.max(amaxB, Math.abs(w[i]));
    let code = e4m3Code(Math.min(448, Math.fround(g * Math.fround(amaxB / 6))));
    if (e4m3Value(code) === 0) code = e4m3Code(0.125);
    scales[b] = code;
    const s = Math.fround(e4m3Value(code) / g);
    for (let i = b * 16; i < b * 16 + 16; i++) {
      const q = e2m1Code(w[i] === 0 ? 0 : Math.max(-6, Math.min(6, Math.fround(w[i] / s))));
      packed[i >> 1] |= i % 2 === 0 ? q : q << 4;
      values[i] = e2m1Value(q) * s;
      back[i] = numberToBf16(values[i]);
    }
  }
  return { packed, scales, g, back, values };
}
