/**
 * ggml's first block types, 32 elements a block: Q8_0, Q4_0, Q5_0 (symmetric, one fp16 scale) and
 * Q4_1, Q5_1 (a scale and a minimum). Without an importance matrix each is ggml's
 * quantize_row_*_ref, one pass with no search:
 *
 * - Q8_0: d = amax / 127, codes roundf(x / d) (half away from zero).
 * - Q4_0 / Q5_0: d = max / -8 (-16) where max is the signed value of largest magnitude (the first
 *   one on a tie), codes (int8_t)(x / d + 8.5) truncated, capped at 15 (31).
 * - Q4_1 / Q5_1: d = (max - min) / 15 (31), codes (uint8_t)((x - min) / d + 0.5) truncated.
 *
 * With one (quantize_row_*_impl) the weights are qw * sqrt(sigma2 + x^2), sigma2 the row's mean
 * square, and the codes come from make_qx_quants (Q4_0, Q5_0) or make_qkx3_quants (Q4_1, Q5_1);
 * Q8_0 ignores the matrix, as ggml does.
 *
 * Without one, blocks-simd.ts's WebAssembly SIMD kernels give the same bytes where they can.
 *
 * Browser-safe: no Node built-ins.
 */
import { fp16Bits } from "../scalars.js";
import { put16, put32, type RowEncoder } from "./row.js";
import { roundAway, toInt8, toUint8 } from "./rounding.js";
import { makeQkxQuants, makeQxQuants, type MinOut } from "./search.js";
import { encodeBlocksSimd } from "./blocks-simd.js";

const fr = Math.fround;
const FLT_MAX = 3.4028234663852886e38;

export const q8_0: RowEncoder = (x, s, n, y, o) => {
  if (encodeBlocksSimd("Q8_0", x, s, n, y, o)) return;
  for (let b = 0; b < n; b += 32, s += 32, o += 34) {
    let amax = 0;
    for (let j = 0; j < 32; j++) {
      const a = Math.abs(x[s + j]);
      amax = amax > a ? amax : a;
    }
    const d = fr(amax / 127);
    const id = d !== 0 ? fr(1 / d) : 0;
    put16(y, o, fp16Bits(d));
    for (let j = 0; j < 32; j++) y[o + 2 + j] = toInt8(roundAway(fr(x[s + j] * id)));
  }
};

/** The signed value of largest magnitude (the first on a tie), as Q4_0 / Q5_0 / MXFP4 scan. */
function signedMax(x: Float32Array, s: number): number {
  let amax = 0;
  let max = 0;
  for (let j = 0; j < 32; j++) {
    const v = x[s + j];
    if (amax < Math.abs(v)) { amax = Math.abs(v); max = v; }
  }
  return max;
}

/** Sum of squares over the row, divided by its length: the sigma2 of the weighted variants. */
function rowSigma2(x: Float32Array, s: number, n: number): number {
  let sum = 0;
  for (let j = 0; j < n; j++) sum = fr(sum + fr(x[s + j] * x[s + j]));
  return fr(sum / n);
}

const weight = new Float32Array(32);
const codes8 = new Int8Array(32);
const codesU = new Uint8Array(32);
const aux = new Uint8Array(32);
const minOut: MinOut = { min: 0 };

function weigh(x: Float32Array, s: number, qw: Float32Array, qo: number, sigma2: number): void {
  for (let j = 0; j < 32; j++) weight[j] = fr(qw[qo + j] * fr(Math.sqrt(fr(sigma2 + fr(x[s + j] * x[s + j])))));
}

export const q4_0: RowEncoder = (x, s, n, y, o, qw) => {
  if (qw !== undefined) {
    const sigma2 = rowSigma2(x, s, n);
    for (let b = 0; b < n; b += 32, o += 18) {
      weigh(x, s + b, qw, b, sigma2);
      const d = makeQxQuants(32, 8, x, s + b, codes8, 0, 1, weight, 0);
      put16(y, o, fp16Bits(d));
      for (let j = 0; j < 16; j++) y[o + 2 + j] = codes8[j] | (codes8[j + 16] << 4);
    }
    return;
  }
  if (encodeBlocksSimd("Q4_0", x, s, n, y, o)) return;
  for (let b = 0; b < n; b += 32, s += 32, o += 18) {
    const d = fr(signedMax(x, s) / -8);
    const id = d !== 0 ? fr(1 / d) : 0;
    put16(y, o, fp16Bits(d));
    for (let j = 0; j < 16; j++) {
      const a = Math.min(15, toInt8(fr(fr(x[s + j] * id) + 8.5)));
      const c = Math.min(15, toInt8(fr(fr(x[s + 16 + j] * id) + 8.5)));
      y[o + 2 + j] = a | (c << 4);
    }
  }
};

export const q5_0: RowEncoder = (x, s, n, y, o, qw) => {
  if (qw !== undefined) {
    const sigma2 = rowSigma2(x, s, n);
    for (let b = 0; b < n; b += 32, o += 22) {
      weigh(x, s + b, qw, b, sigma2);
      const d = makeQxQuants(32, 16, x, s + b, codes8, 0, 1, weight, 0);
      put16(y, o, fp16Bits(d));
      packQ5(codes8, y, o + 2);
    }
    return;
  }
  if (encodeBlocksSimd("Q5_0", x, s, n, y, o)) return;
  for (let b = 0; b < n; b += 32, s += 32, o += 22) {
    const d = fr(signedMax(x, s) / -16);
    const id = d !== 0 ? fr(1 / d) : 0;
    put16(y, o, fp16Bits(d));
    for (let j = 0; j < 32; j++) codesU[j] = Math.min(31, toInt8(fr(fr(x[s + j] * id) + 16.5)));
    packQ5(codesU, y, o + 2);
  }
};

/** Five-bit codes: fifth bits into the 32-bit word at `at`, low nibbles after it as Q4_0's. */
function packQ5(L: Int8Array | Uint8Array, y: Uint8Array, at: number): void {
  let qh = 0;
  for (let j = 0; j < 16; j++) {
    const a = L[j] & 0xff, c = L[j + 16] & 0xff;
    y[at + 4 + j] = (a & 0x0f) | ((c & 0x0f) << 4);
    qh |= ((a & 0x10) >>> 4) << j;
    qh |= ((c & 0x10) >>> 4) << (j + 16);
  }
  put32(y, at, qh);
}

/** Q4_1 / Q5_1: `bits` 4 or 5. */
function withMin(bits: 4 | 5): RowEncoder {
  const nmax = (1 << bits) - 1;
  const size = bits === 4 ? 20 : 24;
  return (x, s, n, y, o, qw) => {
    if (qw !== undefined) {
      const sigma2 = rowSigma2(x, s, n);
      for (let b = 0; b < n; b += 32, o += size) {
        weigh(x, s + b, qw, b, sigma2);
        const d = makeQkxQuants(false, 32, nmax, x, s + b, weight, codesU, 0, minOut, aux, fr(-0.9), fr(0.05), 36, false);
        put16(y, o, fp16Bits(d));
        put16(y, o + 2, fp16Bits(-minOut.min));
        if (bits === 4) for (let j = 0; j < 16; j++) y[o + 4 + j] = codesU[j] | (codesU[j + 16] << 4);
        else packQ5(codesU, y, o + 4);
      }
      return;
    }
    if (encodeBlocksSimd(bits === 4 ? "Q4_1" : "Q5_1", x, s, n, y, o)) return;
    for (let b = 0; b < n; b += 32, s += 32, o += size) {
      let min = FLT_MAX;
      let max = -FLT_MAX;
      for (let j = 0; j < 32; j++) {
        const v = x[s + j];
        if (v < min) min = v;
        if (v > max) max = v;
      }
      const d = fr(fr(max - min) / nmax);
      const id = d !== 0 ? fr(1 / d) : 0;
      put16(y, o, fp16Bits(d));
      put16(y, o + 2, fp16Bits(min));
      if (bits === 4) {
        for (let j = 0; j < 16; j++) {
          const a = Math.min(15, toInt8(fr(fr(fr(x[s + j] - min) * id) + 0.5)));
          const c = Math.min(15, toInt8(fr(fr(fr(x[s + 16 + j] - min) * id) + 0.5)));
          y[o + 4 + j] = a | (c << 4);
        }
      } else {
        for (let j = 0; j < 32; j++) codesU[j] = toUint8(fr(fr(fr(x[s + j] - min) * id) + 0.5));
        packQ5(codesU, y, o + 4);
      }
    }
  };
}

export const q4_1 = withMin(4);
export const q5_1 = withMin(5);
