/**
 * IQ1_S and IQ1_M (quantize_row_iq1_s_impl, quantize_row_iq1_m_impl): ternary groups of 8 on
 * ggml's 2048-point codebook, each value -1, 0 or 1 shifted by +/-0.125. A group of 32 (IQ1_M: 16)
 * is sorted by value and every pair of split points (i1, i2) is tried exhaustively for the weighted
 * least-squares scale with each shift (IQ1_M: a shift per half); points off the grid take the
 * neighbour of least weighted error. Then 3-bit sub-scales against max / 15 and an fp16 block
 * scale times 1.125 (IQ1_M: the least-squares block scale over the stored codes, times 1.1125).
 * IQ1_S needs an importance matrix; IQ1_M's weights are x^2 without one.
 *
 * The sort is glibc's qsort as ggml-base runs it here (glibc 2.36: a top-down merge sort, so equal
 * values keep their order); which element of a tie comes first changes the split, so a C library
 * whose qsort orders ties otherwise (glibc 2.37's introsort) can give other bytes.
 *
 * Browser-safe: no Node built-ins.
 */
import { iqGridIndices } from "../grids.js";
import { fp16Bits } from "../scalars.js";
import { aborts, Lattice } from "./lattice.js";
import { NeighbourKernel } from "./lattice-simd.js";
import { ggmlQuantizeSimdOn } from "./search-simd.js";
import { put16, type RowEncoder } from "./row.js";
import { nearestInt } from "./rounding.js";

const fr = Math.fround;
const FLT_MAX = 3.4028234663852886e38;
const XP = [-0.875, 0.125, 1.125];
const XM = [-1.125, -0.125, 0.875];

let lattice: Lattice | undefined;
/** The neighbour kernel of IQ1's lattice, levels -1, 0, 1 before the shift (null where there is none). */
let kernel: NeighbourKernel | null | undefined;

function simd(lat: Lattice): NeighbourKernel | null {
  if (!ggmlQuantizeSimdOn()) return null;
  if (kernel === undefined) kernel = NeighbourKernel.create(Float32Array.from(lat.grid, (g) => ((g - 1) >> 1) - 1), 8, true, lat.map.length, (v) => lat.neighbours(v));
  return kernel;
}

const weight = new Float32Array(32);
const L = new Int8Array(32);
const idx = new Int32Array(32);
const tmp = new Int32Array(32);
const sumx = new Float32Array(33);
const sumw = new Float32Array(33);
const scales = new Float32Array(16);
const shifts = new Int8Array(16);
const index = new Uint16Array(4);

function clamp(l: number, lo: number, hi: number): number {
  return l < lo ? lo : l > hi ? hi : l;
}

/**
 * glibc 2.36's msort_with_tmp on (value, index) pairs with iq1_sort_helper (a < b, a > b, else
 * equal): element indices into idx[0..n) in sorted order.
 */
function mergeSort(x: Float32Array, s: number, n: number): void {
  for (let j = 0; j < n; j++) idx[j] = j;
  const cmp = (a: number, b: number): number => (x[s + a] < x[s + b] ? -1 : x[s + a] > x[s + b] ? 1 : 0);
  const sort = (lo: number, count: number): void => {
    if (count <= 1) return;
    const n1 = count >> 1, n2 = count - n1;
    sort(lo, n1);
    sort(lo + n1, n2);
    let a = lo, b = lo + n1, t = 0;
    let r1 = n1, r2 = n2;
    while (r1 > 0 && r2 > 0) {
      if (cmp(idx[a], idx[b]) <= 0) { tmp[t++] = idx[a++]; r1--; } else { tmp[t++] = idx[b++]; r2--; }
    }
    while (r1-- > 0) tmp[t++] = idx[a++];
    for (let k = 0; k < t; k++) idx[lo + k] = tmp[k];
  };
  sort(0, n);
}

/** iq1_find_best_neighbour2: the neighbour of least sum w * (scale * xx[level] - x)^2. */
function bestNeighbour(lat: Lattice, u: number, x: Float32Array, xo: number, wo: number, scale: number, xx: readonly number[], lo: number): number {
  const k = simd(lat);
  let gi: number;
  if (k !== null) {
    k.values(x, xo, weight, wo, 8);
    gi = k.best(u, 0, scale, xx[1]);
  } else {
    gi = scan(lat, u, x, xo, wo, scale, xx);
  }
  // ggml's fallback over the whole grid reads past its 8 values (undefined behaviour): refuse.
  if (gi < 0) throw aborts("no IQ1 neighbour has a finite error");
  for (let i = 0; i < 8; i++) L[lo + i] = (lat.grid[8 * gi + i] - 1) >> 1;
  return gi;
}

/** The reference search of bestNeighbour: the grid index, or -1. */
function scan(lat: Lattice, u: number, x: Float32Array, xo: number, wo: number, scale: number, xx: readonly number[]): number {
  const list = lat.neighbours(u);
  let best = FLT_MAX;
  let gi = -1;
  for (let n = 0; n < list.length; n++) {
    const g = 8 * list[n];
    let d2 = 0;
    for (let i = 0; i < 8; i++) {
      const diff = fr(fr(scale * xx[(lat.grid[g + i] - 1) >> 1]) - x[xo + i]);
      d2 = fr(d2 + fr(fr(weight[wo + i] * diff) * diff));
    }
    if (d2 < best) { best = d2; gi = list[n]; }
  }
  return gi;
}

function sigma2Of(x: Float32Array, s: number): number {
  let sum = 0;
  for (let i = 0; i < 256; i++) sum = fr(sum + fr(x[s + i] * x[s + i]));
  return fr(fr(2 * sum) / 256);
}

function weigh(x: Float32Array, s: number, n: number, qw: Float32Array | undefined, qo: number, sigma2: number): void {
  for (let i = 0; i < n; i++) {
    const v = x[s + i];
    weight[i] = qw !== undefined ? fr(qw[qo + i] * fr(Math.sqrt(fr(sigma2 + fr(v * v))))) : fr(v * v);
  }
}

function maxAbs(x: Float32Array, s: number, n: number): number {
  let max = Math.abs(x[s]);
  for (let i = 1; i < n; i++) {
    const a = Math.abs(x[s + i]);
    max = max > a ? max : a;
  }
  return max;
}

export const iq1_s: RowEncoder = (x, s, n, y, o, qw) => {
  if (qw === undefined) throw aborts("IQ1_S needs an importance matrix");
  const lat = (lattice ??= new Lattice(iqGridIndices().iq1s, 3));
  for (let b = 0; b < n; b += 256, s += 256, o += 50) {
    y.fill(0, o, o + 50);
    let maxScale = 0;
    const sigma2 = sigma2Of(x, s);
    for (let ib = 0; ib < 8; ib++) {
      const xb = s + 32 * ib;
      weigh(x, xb, 32, qw, b + 32 * ib, sigma2);
      const max = maxAbs(x, xb, 32);
      if (max < fr(1e-12)) {
        scales[ib] = 0;
        shifts[ib] = 1;
        continue;
      }
      mergeSort(x, xb, 32);
      sumx[0] = 0;
      sumw[0] = 0;
      for (let j = 0; j < 32; j++) {
        const i = idx[j];
        sumx[j + 1] = fr(sumx[j] + fr(weight[i] * x[xb + i]));
        sumw[j + 1] = fr(sumw[j] + weight[i]);
      }
      let best = -FLT_MAX, scale = max;
      let b1 = -1, b2 = -1, shift = 0;
      for (let i1 = 0; i1 <= 32; i1++) {
        for (let i2 = i1; i2 <= 32; i2++) {
          for (const [xx, sh] of [[XP, 1], [XM, -1]] as const) {
            const sumqx = fr(fr(fr(fr(sumx[i1] - sumx[0]) * xx[0]) + fr(fr(sumx[i2] - sumx[i1]) * xx[1])) + fr(fr(sumx[32] - sumx[i2]) * xx[2]));
            const sumq2 = fr(fr(fr(fr(fr(sumw[i1] - sumw[0]) * xx[0]) * xx[0]) + fr(fr(fr(sumw[i2] - sumw[i1]) * xx[1]) * xx[1])) + fr(fr(fr(sumw[32] - sumw[i2]) * xx[2]) * xx[2]));
            if (sumq2 > 0 && fr(sumqx * sumqx) > fr(best * sumq2)) {
              scale = fr(sumqx / sumq2);
              best = fr(scale * sumqx);
              b1 = i1; b2 = i2; shift = sh;
            }
          }
        }
      }
      if (b1 < 0 || b2 < 0 || shift === 0) {
        scales[ib] = 0;
        shifts[ib] = 1;
        continue;
      }
      for (let j = 0; j < 32; j++) L[idx[j]] = j < b1 ? 0 : j < b2 ? 1 : 2;
      if (scale < 0) {
        for (let j = 0; j < 32; j++) L[j] = 2 - L[j];
        scale = -scale;
        shift = -shift;
      }
      let allOnGrid = true;
      const xx = shift === 1 ? XP : XM;
      for (let k = 0; k < 4; k++) {
        let u = 0;
        for (let j = 0; j < 8; j++) u |= L[8 * k + j] << (2 * j);
        let gi = lat.map[u];
        if (gi < 0) {
          allOnGrid = false;
          gi = bestNeighbour(lat, u, x, xb + 8 * k, 8 * k, scale, xx, 8 * k);
        }
        index[k] = gi;
      }
      if (!allOnGrid) {
        let sumqx = 0, sumq2 = 0;
        for (let k = 0; k < 4; k++) {
          for (let j = 0; j < 8; j++) {
            const w = weight[8 * k + j];
            const q = xx[(lat.grid[8 * index[k] + j] - 1) >> 1];
            sumqx = fr(sumqx + fr(fr(w * q) * x[xb + 8 * k + j]));
            sumq2 = fr(sumq2 + fr(fr(w * q) * q));
          }
        }
        if (sumqx > 0 && sumq2 > 0) scale = fr(sumqx / sumq2);
      }
      let h = 0;
      for (let k = 0; k < 4; k++) {
        y[o + 2 + 4 * ib + k] = index[k] & 255;
        h |= (index[k] >> 8) << (3 * k);
      }
      put16(y, o + 34 + 2 * ib, h);
      if (!(scale >= 0)) throw aborts("a NaN scale");
      scales[ib] = scale;
      shifts[ib] = shift;
      maxScale = maxScale > scale ? maxScale : scale;
    }
    if (maxScale === 0) continue;
    const d = fr(maxScale / 15);
    put16(y, o, fp16Bits(fr(d * 1.125)));
    const id = fr(1 / d);
    for (let ib = 0; ib < 8; ib++) {
      let l = clamp(nearestInt(fr(0.5 * fr(fr(id * scales[ib]) - 1))), 0, 7);
      if (shifts[ib] === -1) l |= 8;
      const at = o + 34 + 2 * ib;
      put16(y, at, (y[at] | (y[at + 1] << 8)) | (l << 12));
    }
  }
};

/** IQ1_M's shifts: which half of a group of 16 takes x_m (bit 1: the first, bit 0: the second). */
const MASKS = [0x00, 0x80, 0x08, 0x88];

function halfShift(k: number, half: number): readonly number[] {
  return (half === 0 ? k < 2 : k % 2 === 0) ? XP : XM;
}

export const iq1_m: RowEncoder = (x, s, n, y, o, qw) => {
  const lat = (lattice ??= new Lattice(iqGridIndices().iq1s, 3));
  const sumqx = new Float32Array(4);
  const sumq2 = new Float32Array(4);
  const sc = new Uint16Array(4);
  for (let b = 0; b < n; b += 256, s += 256, o += 56) {
    y.fill(0, o, o + 56);
    let maxScale = 0;
    const sigma2 = sigma2Of(x, s);
    for (let ib = 0; ib < 16; ib++) {
      const xb = s + 16 * ib;
      weigh(x, xb, 16, qw, b + 16 * ib, sigma2);
      const max = maxAbs(x, xb, 16);
      if (max < fr(1e-7)) {
        scales[ib] = 0;
        shifts[ib] = 0;
        continue;
      }
      mergeSort(x, xb, 16);
      let best = -FLT_MAX, scale = max;
      let b1 = -1, b2 = -1, bestK = -1;
      for (let i1 = 0; i1 <= 16; i1++) {
        for (let i2 = i1; i2 <= 16; i2++) {
          sumqx.fill(0);
          sumq2.fill(0);
          for (let j = 0; j < 16; j++) {
            const i = idx[j];
            const t = j < i1 ? 0 : j < i2 ? 1 : 2;
            const w = weight[i], v = x[xb + i];
            for (let k = 0; k < 4; k++) {
              const q = halfShift(k, i < 8 ? 0 : 1)[t];
              sumqx[k] = fr(sumqx[k] + fr(fr(w * q) * v));
              sumq2[k] = fr(sumq2[k] + fr(fr(w * q) * q));
            }
          }
          for (let k = 0; k < 4; k++) {
            if (sumq2[k] > 0 && fr(sumqx[k] * sumqx[k]) > fr(best * sumq2[k])) {
              scale = fr(sumqx[k] / sumq2[k]);
              best = fr(scale * sumqx[k]);
              b1 = i1; b2 = i2; bestK = k;
            }
          }
        }
      }
      if (b1 < 0 || b2 < 0 || bestK < 0) {
        scales[ib] = 0;
        shifts[ib] = 0;
        continue;
      }
      for (let j = 0; j < 16; j++) L[idx[j]] = j < b1 ? 0 : j < b2 ? 1 : 2;
      if (scale < 0) {
        for (let j = 0; j < 16; j++) L[j] = 2 - L[j];
        scale = -scale;
        bestK = 3 - bestK;
      }
      let allOnGrid = true;
      for (let k = 0; k < 2; k++) {
        let u = 0;
        for (let j = 0; j < 8; j++) u |= L[8 * k + j] << (2 * j);
        let gi = lat.map[u];
        if (gi < 0) {
          allOnGrid = false;
          gi = bestNeighbour(lat, u, x, xb + 8 * k, 8 * k, scale, halfShift(bestK, k), 8 * k);
        }
        index[k] = gi;
      }
      if (!allOnGrid) {
        let sx = 0, s2 = 0;
        for (let k = 0; k < 2; k++) {
          const xx = halfShift(bestK, k);
          for (let j = 0; j < 8; j++) {
            const w = weight[8 * k + j];
            const q = xx[(lat.grid[8 * index[k] + j] - 1) >> 1];
            sx = fr(sx + fr(fr(w * q) * x[xb + 8 * k + j]));
            s2 = fr(s2 + fr(fr(w * q) * q));
          }
        }
        if (sx > 0 && s2 > 0) scale = fr(sx / s2);
      }
      y[o + 2 * ib] = index[0] & 255;
      y[o + 2 * ib + 1] = index[1] & 255;
      y[o + 32 + ib] = (index[0] >> 8) | ((index[1] >> 8) << 4);
      if (!(scale >= 0)) throw aborts("a NaN scale");
      scales[ib] = scale;
      shifts[ib] = bestK;
      maxScale = maxScale > scale ? maxScale : scale;
    }
    if (maxScale === 0) continue;
    sc.fill(0);
    let d = fr(maxScale / 15);
    const id = fr(1 / d);
    let sx = 0, s2 = 0;
    // The block scale is fitted again over the codes as stored: each group's point (from the bytes,
    // the empty groups' point 0 included) times its 3-bit sub-scale.
    for (let ib = 0; ib < 16; ib++) {
      const l = clamp(nearestInt(fr(0.5 * fr(fr(id * scales[ib]) - 1))), 0, 7);
      sc[ib >> 2] |= l << (3 * (ib % 4));
      y[o + 32 + ib] |= MASKS[shifts[ib]];
      const xb = s + 16 * ib;
      weigh(x, xb, 16, qw, b + 16 * ib, sigma2);
      for (let k = 0; k < 2; k++) {
        const xx = halfShift(shifts[ib], k);
        const point = y[o + 2 * ib + k] + ((y[o + 32 + ib] << (8 - 4 * k)) & 0x700);
        for (let j = 0; j < 8; j++) {
          const w = weight[8 * k + j];
          const q = fr(xx[(lat.grid[8 * point + j] - 1) >> 1] * (2 * l + 1));
          sx = fr(sx + fr(fr(w * q) * x[xb + 8 * k + j]));
          s2 = fr(s2 + fr(fr(w * q) * q));
        }
      }
    }
    if (s2 > 0) d = fr(sx / s2);
    const h = fp16Bits(fr(d * fr(1.1125)));
    sc[0] |= (h & 0x000f) << 12;
    sc[1] |= (h & 0x00f0) << 8;
    sc[2] |= (h & 0x0f00) << 4;
    sc[3] |= h & 0xf000;
    for (let k = 0; k < 4; k++) put16(y, o + 48 + 2 * k, sc[k]);
  }
};
