/**
 * IQ4_NL (blocks of 32, one fp16 scale) and IQ4_XS (super-blocks of 256: eight 6-bit sub-scales
 * against one fp16 scale), both on ggml's sixteen non-linear levels, as quantize_row_iq4_nl_impl
 * makes them through ggml_quantize_chunk (ntry 7: the scales -max / -127 and (itry - 127) / max for
 * itry = -7..7, by weighted least squares; weights x^2, or qw * sqrt(sigma2 + x^2) with an
 * importance matrix). Each value goes to the nearest level by best_index_int8's bisection (a tie
 * goes to the upper level).
 *
 * Browser-safe: no Node built-ins.
 */
import { IQ4_NL_LEVELS } from "../dequantize.js";
import { fp16Bits } from "../scalars.js";
import { put16, type RowEncoder } from "./row.js";
import { nearestInt } from "./rounding.js";
import { GROUP_MAX_EPS } from "./search.js";

const fr = Math.fround;
const V = Int8Array.from(IQ4_NL_LEVELS);
const NTRY = 7;

/** best_index_int8 over the sixteen levels, as ggml writes it: a bisection, a tie to the upper level. */
export function bestIndexBisect(x: number): number {
  if (x <= V[0]) return 0;
  if (x >= V[15]) return 15;
  let ml = 0, mu = 15;
  while (mu - ml > 1) {
    const mav = (ml + mu) >> 1;
    if (x < V[mav]) mu = mav; else ml = mav;
  }
  return fr(x - V[mu - 1]) < fr(V[mu] - x) ? mu - 1 : mu;
}

/**
 * MID[k]: the midpoint of levels k and k + 1 (MID[15] past every value). The bisection's float32
 * differences are exact near a midpoint (both below 256, at the value's own precision) and rounding
 * is monotonic elsewhere, so it picks the nearest level, a midpoint going up: the level whose
 * interval [MID[k - 1], MID[k]) holds the value.
 */
const MID = Float64Array.from({ length: 16 }, (_, k) => (k < 15 ? (V[k] + V[k + 1]) / 2 : Infinity));
/** FLOOR[i]: the level of the integer i - 128 (midpoints below or at it), for i in 0..255. */
const FLOOR = Uint8Array.from({ length: 256 }, (_, i) => MID.filter((m) => m <= i - 128).length);

/** bestIndexBisect's answer by table: the integer part picks a level, one midpoint test moves it up. */
export function bestIndex(x: number): number {
  // NaN fails every test of the bisection and ends at the top level, as do values of 128 and up.
  if (!(x > -128 && x < 128)) return x <= -128 ? 0 : 15;
  const c = FLOOR[Math.floor(x) + 128];
  return x >= MID[c] ? c + 1 : c;
}

const L = new Uint8Array(256);
const weight = new Float32Array(32);
const scales = new Float32Array(8);

/**
 * One super-block of `size` (32 or 256) from x[s]: codes into L, sub-block scales into `scales`,
 * and (for 256) the packed sub-scales at y[o + 2..7]; returns the fp16 bits of the block scale.
 */
function superBlock(x: Float32Array, s: number, size: number, qw: Float32Array | undefined, qo: number, y: Uint8Array, o: number): number {
  let sigma2 = 0;
  for (let j = 0; j < size; j++) sigma2 = fr(sigma2 + fr(x[s + j] * x[s + j]));
  sigma2 = fr(sigma2 * fr(2 / size));
  let maxScale = 0, amaxScale = 0;
  for (let ib = 0; ib < size / 32; ib++) {
    const xb = s + 32 * ib;
    for (let j = 0; j < 32; j++) {
      const v = x[xb + j];
      weight[j] = qw !== undefined ? fr(qw[qo + 32 * ib + j] * fr(Math.sqrt(fr(sigma2 + fr(v * v))))) : fr(v * v);
    }
    let amax = 0, max = 0;
    for (let j = 0; j < 32; j++) {
      const ax = Math.abs(x[xb + j]);
      if (ax > amax) { amax = ax; max = x[xb + j]; }
    }
    if (amax < GROUP_MAX_EPS) {
      scales[ib] = 0;
      continue;
    }
    let d = fr(-max / V[0]);
    let id = fr(1 / d);
    let sumqx = 0, sumq2 = 0;
    for (let j = 0; j < 32; j++) {
      const v = x[xb + j];
      const l = bestIndex(fr(id * v));
      L[32 * ib + j] = l;
      const q = V[l];
      const w = weight[j];
      sumqx = fr(sumqx + fr(fr(w * q) * v));
      sumq2 = fr(sumq2 + fr(fr(w * q) * q));
    }
    d = sumq2 > 0 ? fr(sumqx / sumq2) : 0;
    let best = fr(d * sumqx);
    for (let itry = -NTRY; itry <= NTRY; itry++) {
      id = fr((itry + V[0]) / max);
      sumqx = 0;
      sumq2 = 0;
      for (let j = 0; j < 32; j++) {
        const v = x[xb + j];
        const q = V[bestIndex(fr(id * v))];
        const w = weight[j];
        sumqx = fr(sumqx + fr(fr(w * q) * v));
        sumq2 = fr(sumq2 + fr(fr(w * q) * q));
      }
      if (sumq2 > 0 && fr(sumqx * sumqx) > fr(best * sumq2)) {
        d = fr(sumqx / sumq2);
        best = fr(d * sumqx);
      }
    }
    scales[ib] = d;
    const ad = Math.abs(d);
    if (ad > amaxScale) { amaxScale = ad; maxScale = d; }
  }
  if (size === 32) {
    const id = scales[0] !== 0 ? fr(1 / scales[0]) : 0;
    for (let j = 0; j < 32; j++) L[j] = bestIndex(fr(id * x[s + j]));
    return fp16Bits(scales[0]);
  }
  y[o + 2] = 0;
  y[o + 3] = 0;
  const d = fr(-maxScale / 32);
  const id = d !== 0 ? fr(1 / d) : 0;
  for (let ib = 0; ib < 8; ib++) {
    let l = nearestInt(fr(id * scales[ib]));
    l = l < -32 ? -32 : l > 31 ? 31 : l;
    const dl = fr(d * l);
    const idl = dl !== 0 ? fr(1 / dl) : 0;
    for (let j = 0; j < 32; j++) L[32 * ib + j] = bestIndex(fr(idl * x[s + 32 * ib + j]));
    l += 32;
    if (ib % 2 === 0) y[o + 4 + (ib >> 1)] = l & 0xf;
    else y[o + 4 + (ib >> 1)] |= (l & 0xf) << 4;
    const h = ((l >> 4) << (2 * ib)) | y[o + 2] | (y[o + 3] << 8);
    put16(y, o + 2, h);
  }
  return fp16Bits(d);
}

function pack(y: Uint8Array, at: number, size: number): void {
  for (let i = 0; i < size / 32; i++) {
    for (let j = 0; j < 16; j++) y[at + 16 * i + j] = L[32 * i + j] | (L[32 * i + 16 + j] << 4);
  }
}

export const iq4_nl: RowEncoder = (x, s, n, y, o, qw) => {
  for (let b = 0; b < n; b += 32, o += 18) {
    put16(y, o, superBlock(x, s + b, 32, qw, b, y, o));
    pack(y, o + 2, 32);
  }
};

export const iq4_xs: RowEncoder = (x, s, n, y, o, qw) => {
  for (let b = 0; b < n; b += 256, o += 136) {
    put16(y, o, superBlock(x, s + b, 256, qw, b, y, o));
    pack(y, o + 8, 256);
  }
};
