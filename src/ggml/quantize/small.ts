/**
 * The one-pass types with no scale search: TQ1_0 and TQ2_0 (ternary: d = amax, codes
 * lroundf(x / d) + 1, half away from zero) and GGML's MXFP4 (a shared exponent
 * floor(log2(amax)) - 2 and each value's nearest E2M1 level, the first on a tie, by
 * best_index_mxfp4's linear scan; not OCP's rule, which rounds the scaled value to nearest even).
 * ggml ignores an importance matrix for all three. small-simd.ts's WebAssembly SIMD kernels give the
 * same bytes where they can.
 *
 * Browser-safe: no Node built-ins.
 */
import { GGML_FP4_DOUBLED } from "../dequantize.js";
import { e8m0Half, fp16Bits } from "../scalars.js";
import { put16, type RowEncoder } from "./row.js";
import { floorLog2f, lroundfPlusOne, toUint8 } from "./rounding.js";
import { encodeSmallSimd } from "./small-simd.js";

const fr = Math.fround;
const FP4 = Int8Array.from(GGML_FP4_DOUBLED);

function amaxOf(x: Float32Array, s: number, count: number): number {
  let amax = 0;
  for (let j = 0; j < count; j++) {
    const a = Math.abs(x[s + j]);
    amax = amax > a ? amax : a;
  }
  return amax;
}

/** Base-3 digits packed into a byte as a fixed-point fraction: ceil(q * 256 / 243). */
function ternaryByte(q: number): number {
  return Math.floor((q * 256 + 242) / 243) & 0xff;
}

export const tq1_0: RowEncoder = (x, s, n, y, o) => {
  if (encodeSmallSimd("TQ1_0", x, s, n, y, o)) return;
  for (let b = 0; b < n; b += 256, o += 54) {
    const d = amaxOf(x, s, 256);
    const id = d !== 0 ? fr(1 / d) : 0;
    put16(y, o + 52, fp16Bits(d));
    // 32 bytes of five digits each (elements m + 32 * k), then 16 (m + 16 * k), then 4 of four.
    for (const [at, width] of [[0, 32], [32, 16]]) {
      for (let m = 0; m < width; m++) {
        let q = 0;
        for (let k = 0; k < 5; k++) q = (q * 3 + lroundfPlusOne(fr(x[s + m + k * width] * id))) & 0xff;
        y[o + at + m] = ternaryByte(q);
      }
      s += 5 * width;
    }
    for (let j = 0; j < 4; j++) {
      let q = 0;
      for (let m = 0; m < 4; m++) q = (q * 3 + lroundfPlusOne(fr(x[s + j + 4 * m] * id))) & 0xff;
      y[o + 48 + j] = ternaryByte((q * 3) & 0xff);
    }
    s += 16;
  }
};

export const tq2_0: RowEncoder = (x, s, n, y, o) => {
  if (encodeSmallSimd("TQ2_0", x, s, n, y, o)) return;
  for (let b = 0; b < n; b += 256, o += 66) {
    const d = amaxOf(x, s, 256);
    const id = d !== 0 ? fr(1 / d) : 0;
    put16(y, o + 64, fp16Bits(d));
    for (let j = 0; j < 64; j += 32, s += 128) {
      for (let m = 0; m < 32; m++) {
        let q = 0;
        for (let k = 0; k < 4; k++) q += (lroundfPlusOne(fr(x[s + m + 32 * k] * id)) & 3) << (2 * k);
        y[o + j + m] = q & 0xff;
      }
    }
  }
};

/** best_index_mxfp4: the first level of least |level * e - x|. */
function bestFp4(x: number, e: number): number {
  let best = 0;
  let bestErr = Math.abs(fr(fr(FP4[0] * e) - x));
  for (let i = 1; i < 16; i++) {
    const err = Math.abs(fr(fr(FP4[i] * e) - x));
    if (err < bestErr) { best = i; bestErr = err; }
  }
  return best;
}

export const mxfp4: RowEncoder = (x, s, n, y, o) => {
  if (encodeSmallSimd("MXFP4", x, s, n, y, o)) return;
  for (let b = 0; b < n; b += 32, s += 32, o += 17) {
    let amax = 0;
    for (let j = 0; j < 32; j++) if (amax < Math.abs(x[s + j])) amax = Math.abs(x[s + j]);
    // log2f is glibc's (correctly rounded for float32 here); floor, then the float sum - 2 + 127.
    const e = amax > 0 ? toUint8(fr(fr(floorLog2f(amax) - 2) + 127)) : 0;
    const d = e8m0Half(e);
    y[o] = e;
    for (let j = 0; j < 16; j++) y[o + 1 + j] = bestFp4(x[s + j], d) | (bestFp4(x[s + 16 + j], d) << 4);
  }
};
