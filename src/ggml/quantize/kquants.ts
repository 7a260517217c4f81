/**
 * ggml's K-quants, super-blocks of 256 with per-sub-block scales quantized again against one fp16
 * super-scale: Q2_K, Q3_K, Q4_K, Q5_K, Q6_K (quantize_row_*_ref without an importance matrix,
 * quantize_row_*_impl with one). Every variant ends the same way: the codes are recomputed from
 * the stored (fp16-rounded, integer-scaled) scales with nearest_int, except in sub-blocks whose
 * stored scale is zero, which keep the codes the search gave.
 *
 * Browser-safe: no Node built-ins.
 */
import { fp16Bits, halfValues } from "../scalars.js";
import { put16, type RowEncoder } from "./row.js";
import { nearestInt } from "./rounding.js";
import { GROUP_MAX_EPS, makeQkxQuants, makeQpQuants, makeQ3Quants, makeQxQuants, type MinOut } from "./search.js";
import { SEARCH_CHUNK, searchSimd, type SearchName, type SearchOut } from "./search-simd.js";

const fr = Math.fround;

const L8 = new Int8Array(256);
const LU = new Uint8Array(256);
const Laux = new Uint8Array(32);
const weights = new Float32Array(32);
const scales = new Float32Array(16);
const mins = new Float32Array(16);
const sw = new Float32Array(16);
const Ls = new Uint8Array(16);
const Lm = new Uint8Array(16);
const Ls8 = new Int8Array(16);
const minOut: MinOut = { min: 0 };
const chunk: SearchOut = {
  scales: new Float32Array(SEARCH_CHUNK / 16), mins: new Float32Array(SEARCH_CHUNK / 16), sw: new Float32Array(SEARCH_CHUNK / 16), codes: new Uint8Array(SEARCH_CHUNK),
};
const sigmas = new Float32Array(SEARCH_CHUNK / 256);

function clamp(l: number, lo: number, hi: number): number {
  return l < lo ? lo : l > hi ? hi : l;
}

/** Sum of x^2 over the super-block at `s`. */
function sumSquares(x: Float32Array, s: number): number {
  let sum = 0;
  for (let j = 0; j < 256; j++) sum = fr(sum + fr(x[s + j] * x[s + j]));
  return sum;
}

/** weights[l] = qw[l] * sqrt(sigma2 + x^2) for `count` elements. */
function imatrixWeights(x: Float32Array, s: number, qw: Float32Array, qo: number, sigma2: number, count: number): void {
  for (let l = 0; l < count; l++) weights[l] = fr(qw[qo + l] * fr(Math.sqrt(fr(sigma2 + fr(x[s + l] * x[s + l])))));
}

function sumOf(a: Float32Array, count: number): number {
  let sum = 0;
  for (let l = 0; l < count; l++) sum = fr(sum + a[l]);
  return sum;
}

/** sigma2 of the _impl quantizers: Q2_K's sum of x^2 / 256, the others' twice that. */
const sigma2Q2 = (x: Float32Array, s: number): number => fr(sumSquares(x, s) / 256);
const sigma2K = (x: Float32Array, s: number): number => fr(fr(2 * sumSquares(x, s)) / 256);

/**
 * The super-blocks' searches (scales, mins, sums of weights and codes of every sub-block) for the
 * `count` values from x[s] at once by the SIMD kernel `name` into `chunk`, or false where it declines.
 */
function searchChunk(name: SearchName, x: Float32Array, s: number, count: number, qw: Float32Array | undefined, qo: number,
  sigma2?: (x: Float32Array, s: number) => number): boolean {
  if (sigma2 !== undefined) for (let k = 0; k < count / 256; k++) sigmas[k] = sigma2(x, s + 256 * k);
  return searchSimd(name, x, s, count, qw, qo, sigma2 !== undefined ? sigmas : undefined, chunk);
}

/** Super-block `at` (values from the chunk's start) of the chunk's searches into scales, mins, sw and L. */
function fromChunk(at: number, subs: number, L: Uint8Array | Int8Array): void {
  const first = at / (256 / subs);
  for (let j = 0; j < subs; j++) {
    scales[j] = chunk.scales[first + j];
    mins[j] = chunk.mins[first + j];
    sw[j] = chunk.sw[first + j];
  }
  L.set(chunk.codes.subarray(at, at + 256));
}

/** Q2_K's and Q3_K's 2-bit planes: byte l of each 32 holds elements l, l + 32, l + 64, l + 96. */
function pack2(L: Int8Array | Uint8Array, y: Uint8Array, at: number): void {
  for (let j = 0; j < 256; j += 128) {
    for (let l = 0; l < 32; l++) y[at + j / 4 + l] = L[j + l] | (L[j + l + 32] << 2) | (L[j + l + 64] << 4) | (L[j + l + 96] << 6);
  }
}

/** quantize_row_q2_K's searches of super-block x[s..] (importance weights from qw[b]) into scales, mins, sw and LU. */
function q2Search(x: Float32Array, s: number, b: number, qw: Float32Array | undefined): void {
  if (qw === undefined) {
    for (let j = 0; j < 16; j++) {
      for (let l = 0; l < 16; l++) weights[l] = Math.abs(x[s + 16 * j + l]);
      scales[j] = makeQkxQuants(true, 16, 3, x, s + 16 * j, weights, LU, 16 * j, minOut, Laux, -0.5, fr(0.1), 15, true);
      mins[j] = minOut.min;
    }
  } else {
    const sigma2 = sigma2Q2(x, s);
    for (let j = 0; j < 16; j++) {
      imatrixWeights(x, s + 16 * j, qw, b + 16 * j, sigma2, 16);
      sw[j] = sumOf(weights, 16);
      scales[j] = makeQkxQuants(false, 16, 3, x, s + 16 * j, weights, LU, 16 * j, minOut, Laux, fr(-0.9), fr(0.05), 36, false);
      mins[j] = minOut.min;
    }
  }
}

export const q2_K: RowEncoder = (x, s, n, y, o, qw) => {
  const H = halfValues();
  for (let c = 0; c < n; c += SEARCH_CHUNK) {
    const count = Math.min(SEARCH_CHUNK, n - c);
    const fast = qw === undefined ? searchChunk("Q2_K", x, s + c, count, qw, c) : searchChunk("Q2_K_IM", x, s + c, count, qw, c, sigma2Q2);
    for (let b = c; b < c + count; b += 256) q2Block(x, s + b, b, y, o + (b / 256) * 84, qw, fast ? b - c : -1, H);
  }
};

/** One Q2_K super-block: its searches from the chunk's (at >= 0) or by the reference, then the scales and codes. */
function q2Block(x: Float32Array, s: number, b: number, y: Uint8Array, o: number, qw: Float32Array | undefined, at: number, H: Float32Array): void {
  if (at >= 0) fromChunk(at, 16, LU);
  else q2Search(x, s, b, qw);
  if (qw === undefined) {
    let maxScale = 0;
    let maxMin = 0;
    for (let j = 0; j < 16; j++) {
      if (scales[j] > maxScale) maxScale = scales[j];
      if (mins[j] > maxMin) maxMin = mins[j];
    }
    if (maxScale > 0) {
      const iscale = fr(15 / maxScale);
      for (let j = 0; j < 16; j++) y[o + j] = nearestInt(fr(iscale * scales[j]));
      put16(y, o + 80, fp16Bits(fr(maxScale / 15)));
    } else {
      for (let j = 0; j < 16; j++) y[o + j] = 0;
      put16(y, o + 80, 0);
    }
    if (maxMin > 0) {
      const iscale = fr(15 / maxMin);
      for (let j = 0; j < 16; j++) y[o + j] |= nearestInt(fr(iscale * mins[j])) << 4;
      put16(y, o + 82, fp16Bits(fr(maxMin / 15)));
    } else {
      put16(y, o + 82, 0);
    }
  } else {
    const dm = makeQpQuants(16, 15, scales, Ls, sw);
    const mm = makeQpQuants(16, 15, mins, Lm, sw);
    put16(y, o + 80, fp16Bits(dm));
    put16(y, o + 82, fp16Bits(mm));
    for (let j = 0; j < 16; j++) y[o + j] = Ls[j] | (Lm[j] << 4);
  }
  const d = H[y[o + 80] | (y[o + 81] << 8)];
  const dmin = H[y[o + 82] | (y[o + 83] << 8)];
  for (let j = 0; j < 16; j++) {
    const dl = fr(d * (y[o + j] & 0xf));
    if (dl === 0) continue;
    const ml = fr(dmin * (y[o + j] >> 4));
    for (let ii = 0; ii < 16; ii++) LU[16 * j + ii] = clamp(nearestInt(fr(fr(x[s + 16 * j + ii] + ml) / dl)), 0, 3);
  }
  pack2(LU, y, o + 16);
}

/** Q3_K's sixteen 6-bit scales (biased by 32): low nibbles in bytes 0..7, high 2 bits in 8..11. */
function packQ3Scales(y: Uint8Array, at: number, j: number, l: number): void {
  if (j < 8) y[at + j] = l & 0xf;
  else y[at + j - 8] |= (l & 0xf) << 4;
  y[at + 8 + (j % 4)] |= (l >> 4) << (2 * (j >> 2));
}

/** quantize_row_q3_K's searches of super-block x[s..] into scales (and sw with importance weights) and L8. */
function q3Search(x: Float32Array, s: number, b: number, qw: Float32Array | undefined): void {
  if (qw === undefined) {
    for (let j = 0; j < 16; j++) scales[j] = makeQ3Quants(16, 4, x, s + 16 * j, L8, 16 * j);
  } else {
    const sigma2 = sigma2K(x, s);
    for (let j = 0; j < 16; j++) {
      imatrixWeights(x, s + 16 * j, qw, b + 16 * j, sigma2, 16);
      sw[j] = sumOf(weights, 16);
      scales[j] = makeQxQuants(16, 4, x, s + 16 * j, L8, 16 * j, 1, weights, 0);
    }
  }
}

export const q3_K: RowEncoder = (x, s, n, y, o, qw) => {
  const H = halfValues();
  for (let c = 0; c < n; c += SEARCH_CHUNK) {
    const count = Math.min(SEARCH_CHUNK, n - c);
    const fast = qw === undefined ? searchChunk("Q3_K", x, s + c, count, qw, c) : searchChunk("Q3_K_IM", x, s + c, count, qw, c, sigma2K);
    for (let b = c; b < c + count; b += 256) q3Block(x, s + b, b, y, o + (b / 256) * 110, qw, fast ? b - c : -1, H);
  }
};

/** One Q3_K super-block: its searches from the chunk's (at >= 0) or by the reference, then the scales and codes. */
function q3Block(x: Float32Array, s: number, b: number, y: Uint8Array, o: number, qw: Float32Array | undefined, at: number, H: Float32Array): void {
  if (at >= 0) fromChunk(at, 16, L8);
  else q3Search(x, s, b, qw);
  for (let k = 0; k < 12; k++) y[o + 96 + k] = 0;
  if (qw === undefined) {
    let maxScale = 0;
    let amax = 0;
    for (let j = 0; j < 16; j++) {
      const a = Math.abs(scales[j]);
      if (a > amax) { amax = a; maxScale = scales[j]; }
    }
    if (maxScale !== 0) {
      const iscale = fr(-32 / maxScale);
      for (let j = 0; j < 16; j++) {
        const l = (nearestInt(fr(iscale * scales[j])) << 24) >> 24;
        packQ3Scales(y, o + 96, j, clamp(l, -32, 31) + 32);
      }
      put16(y, o + 108, fp16Bits(fr(1 / iscale)));
    } else {
      put16(y, o + 108, 0);
    }
  } else {
    const dBlock = makeQxQuants(16, 32, scales, 0, Ls8, 0, 1, sw, 0);
    for (let j = 0; j < 16; j++) packQ3Scales(y, o + 96, j, Ls8[j]);
    put16(y, o + 108, fp16Bits(dBlock));
  }
  const d = H[y[o + 108] | (y[o + 109] << 8)];
  for (let j = 0; j < 16; j++) {
    const low = j < 8 ? y[o + 96 + j] & 0xf : y[o + 96 + j - 8] >> 4;
    const sc = (low | (((y[o + 104 + (j % 4)] >> (2 * (j >> 2))) & 3) << 4)) - 32;
    const dl = fr(d * sc);
    if (dl === 0) continue;
    for (let ii = 0; ii < 16; ii++) L8[16 * j + ii] = clamp(nearestInt(fr(x[s + 16 * j + ii] / dl)), -4, 3) + 4;
  }
  // The third bit of element j goes to bit (j / 32) of hmask byte j % 32.
  for (let k = 0; k < 32; k++) y[o + k] = 0;
  for (let j = 0; j < 256; j++) {
    if (L8[j] > 3) {
      y[o + (j & 31)] |= 1 << (j >> 5);
      L8[j] -= 4;
    }
  }
  pack2(L8, y, o + 32);
}

/** Q4_K's and Q5_K's eight 6-bit scales and mins in 12 bytes (get_scale_min_k4's layout). */
function packScaleMin(y: Uint8Array, at: number, j: number, ls: number, lm: number): void {
  if (j < 4) {
    y[at + j] = ls;
    y[at + j + 4] = lm;
  } else {
    y[at + j + 4] = (ls & 0xf) | ((lm & 0xf) << 4);
    y[at + j - 4] |= (ls >> 4) << 6;
    y[at + j] |= (lm >> 4) << 6;
  }
}

function scaleMinOf(y: Uint8Array, at: number, j: number): [number, number] {
  if (j < 4) return [y[at + j] & 63, y[at + j + 4] & 63];
  return [(y[at + j + 4] & 0xf) | ((y[at + j - 4] >> 6) << 4), (y[at + j + 4] >> 4) | ((y[at + j] >> 6) << 4)];
}

/** quantize_row_q4_K's (nmax 15) and q5_K's (nmax 31) searches of super-block x[s..] into scales, mins, sw and LU. */
function qkSearch(x: Float32Array, s: number, b: number, qw: Float32Array | undefined, nmax: number): void {
  if (qw === undefined) {
    for (let j = 0; j < 8; j++) {
      let sumX2 = 0;
      for (let l = 0; l < 32; l++) sumX2 = fr(sumX2 + fr(x[s + 32 * j + l] * x[s + 32 * j + l]));
      const avX = fr(Math.sqrt(fr(sumX2 / 32)));
      for (let l = 0; l < 32; l++) weights[l] = fr(avX + Math.abs(x[s + 32 * j + l]));
      scales[j] = nmax === 15
        ? makeQkxQuants(true, 32, 15, x, s + 32 * j, weights, LU, 32 * j, minOut, Laux, -1, fr(0.1), 20, false)
        : makeQkxQuants(true, 32, 31, x, s + 32 * j, weights, LU, 32 * j, minOut, Laux, -0.5, fr(0.1), 15, false);
      mins[j] = minOut.min;
    }
  } else {
    const sigma2 = sigma2K(x, s);
    for (let j = 0; j < 8; j++) {
      imatrixWeights(x, s + 32 * j, qw, b + 32 * j, sigma2, 32);
      sw[j] = sumOf(weights, 32);
      scales[j] = makeQkxQuants(false, 32, nmax, x, s + 32 * j, weights, LU, 32 * j, minOut, Laux, fr(-0.9), fr(0.05), 36, false);
      mins[j] = minOut.min;
    }
  }
}

/**
 * Q4_K (nmax 15) and Q5_K (nmax 31), each super-block's scales and mins into y and its requantized
 * codes into LU, then `pack` of the codes; the searches by the SIMD kernels a chunk at a time where
 * they run, else by the reference.
 */
function qkRow(x: Float32Array, s: number, n: number, y: Uint8Array, o: number, qw: Float32Array | undefined, nmax: number,
  size: number, pack: (y: Uint8Array, o: number) => void): void {
  const name: SearchName = nmax === 15 ? (qw === undefined ? "Q4_K" : "Q4_K_IM") : qw === undefined ? "Q5_K" : "Q5_K_IM";
  for (let c = 0; c < n; c += SEARCH_CHUNK) {
    const count = Math.min(SEARCH_CHUNK, n - c);
    const fast = searchChunk(name, x, s + c, count, qw, c, qw === undefined ? undefined : sigma2K);
    for (let b = c; b < c + count; b += 256) {
      const yo = o + (b / 256) * size;
      if (fast) fromChunk(b - c, 8, LU);
      else qkSearch(x, s + b, b, qw, nmax);
      qkScales(x, s + b, y, yo, qw, nmax);
      pack(y, yo);
    }
  }
}

/** Q4_K's and Q5_K's scales and mins from the searches' into y, and the requantized codes into LU. */
function qkScales(x: Float32Array, s: number, y: Uint8Array, o: number, qw: Float32Array | undefined, nmax: number): void {
  const H = halfValues();
  if (qw === undefined) {
    let maxScale = 0;
    let maxMin = 0;
    for (let j = 0; j < 8; j++) {
      if (scales[j] > maxScale) maxScale = scales[j];
      if (mins[j] > maxMin) maxMin = mins[j];
    }
    const invScale = maxScale > 0 ? fr(63 / maxScale) : 0;
    const invMin = maxMin > 0 ? fr(63 / maxMin) : 0;
    for (let j = 0; j < 8; j++) {
      const ls = Math.min(63, nearestInt(fr(invScale * scales[j])) & 0xff);
      const lm = Math.min(63, nearestInt(fr(invMin * mins[j])) & 0xff);
      packScaleMin(y, o + 4, j, ls, lm);
    }
    put16(y, o, fp16Bits(fr(maxScale / 63)));
    put16(y, o + 2, fp16Bits(fr(maxMin / 63)));
  } else {
    const dBlock = makeQpQuants(8, 63, scales, Ls, sw);
    const mBlock = makeQpQuants(8, 63, mins, Lm, sw);
    for (let j = 0; j < 8; j++) packScaleMin(y, o + 4, j, Math.min(63, Ls[j]), Math.min(63, Lm[j]));
    put16(y, o, fp16Bits(dBlock));
    put16(y, o + 2, fp16Bits(mBlock));
  }
  const d = H[y[o] | (y[o + 1] << 8)];
  const dmin = H[y[o + 2] | (y[o + 3] << 8)];
  for (let j = 0; j < 8; j++) {
    const [sc, m] = scaleMinOf(y, o + 4, j);
    const dl = fr(d * sc);
    if (dl === 0) continue;
    const dm = fr(dmin * m);
    for (let ii = 0; ii < 32; ii++) LU[32 * j + ii] = clamp(nearestInt(fr(fr(x[s + 32 * j + ii] + dm) / dl)), 0, nmax);
  }
}

function packQ4(y: Uint8Array, o: number): void {
  for (let j = 0, q = o + 16; j < 256; j += 64, q += 32) {
    for (let l = 0; l < 32; l++) y[q + l] = LU[j + l] | (LU[j + l + 32] << 4);
  }
}

function packQ5(y: Uint8Array, o: number): void {
  const qh = o + 16;
  for (let k = 0; k < 32; k++) y[qh + k] = 0;
  let m1 = 1, m2 = 2;
  for (let nn = 0, ql = o + 48; nn < 256; nn += 64, ql += 32, m1 <<= 2, m2 <<= 2) {
    for (let j = 0; j < 32; j++) {
      let l1 = LU[nn + j];
      if (l1 > 15) { l1 -= 16; y[qh + j] |= m1; }
      let l2 = LU[nn + j + 32];
      if (l2 > 15) { l2 -= 16; y[qh + j] |= m2; }
      y[ql + j] = l1 | (l2 << 4);
    }
  }
}

export const q4_K: RowEncoder = (x, s, n, y, o, qw) => qkRow(x, s, n, y, o, qw, 15, 144, packQ4);

export const q5_K: RowEncoder = (x, s, n, y, o, qw) => qkRow(x, s, n, y, o, qw, 31, 176, packQ5);

export const q6_K: RowEncoder = (x, s, n, y, o, qw) => {
  const H = halfValues();
  for (let c = 0; c < n; c += SEARCH_CHUNK) {
    const count = Math.min(SEARCH_CHUNK, n - c);
    const fast = searchChunk(qw === undefined ? "Q6_K" : "Q6_K_IM", x, s + c, count, qw, c);
    for (let b = c; b < c + count; b += 256) q6Block(x, s + b, b, y, o + (b / 256) * 210, qw, fast ? b - c : -1, H);
  }
};

/** One Q6_K super-block: its searches from the chunk's (at >= 0) or by the reference, then the scales and codes. */
function q6Block(x: Float32Array, s: number, b: number, y: Uint8Array, o: number, qw: Float32Array | undefined, at: number, H: Float32Array): void {
  if (at >= 0) fromChunk(at, 16, L8);
  else for (let ib = 0; ib < 16; ib++) scales[ib] = makeQxQuants(16, 32, x, s + 16 * ib, L8, 16 * ib, 1, qw, b + 16 * ib);
  let maxScale = 0;
  let maxAbs = 0;
  for (let ib = 0; ib < 16; ib++) {
    const a = Math.abs(scales[ib]);
    if (a > maxAbs) { maxAbs = a; maxScale = scales[ib]; }
  }
  if (maxAbs < GROUP_MAX_EPS) {
    y.fill(0, o, o + 210);
    return;
  }
  const iscale = fr(-128 / maxScale);
  put16(y, o + 208, fp16Bits(fr(1 / iscale)));
  for (let ib = 0; ib < 16; ib++) y[o + 192 + ib] = Math.min(127, nearestInt(fr(iscale * scales[ib])));
  const d = H[y[o + 208] | (y[o + 209] << 8)];
  for (let j = 0; j < 16; j++) {
    const dl = fr(d * ((y[o + 192 + j] << 24) >> 24));
    if (dl === 0) continue;
    for (let ii = 0; ii < 16; ii++) L8[16 * j + ii] = clamp(nearestInt(fr(x[s + 16 * j + ii] / dl)), -32, 31) + 32;
  }
  for (let j = 0, ql = o, qh = o + 128; j < 256; j += 128, ql += 64, qh += 32) {
    for (let l = 0; l < 32; l++) {
      const a = L8[j + l], c = L8[j + l + 32], e = L8[j + l + 64], g = L8[j + l + 96];
      y[ql + l] = (a & 0xf) | ((e & 0xf) << 4);
      y[ql + l + 32] = (c & 0xf) | ((g & 0xf) << 4);
      y[qh + l] = (a >> 4) | ((c >> 4) << 2) | ((e >> 4) << 4) | ((g >> 4) << 6);
    }
  }
}
