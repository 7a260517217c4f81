/**
 * IQ2_XXS, IQ2_XS and IQ2_S (quantize_row_iq2_{xxs,xs,s}_impl): groups of 8 on the
 * E8 lattice points of ggml's 256- and 512-point codebooks, levels 1, 3, 5 times a group scale,
 * signs kept apart with an even count of negatives (an odd group flips its element of least
 * w * x^2). Scales come from a search over (5 + 0.1 is) / max, is = -6..6 (-9..9 for IQ2_XS),
 * rounding each element to a level and, off the grid, taking the best neighbour; then 4-bit
 * sub-scales against max / 31. ggml requires an importance matrix for both. IQ2_S (1024 points,
 * eight sign bits per group, weights sigma2 / 4 + x^2 where there is no matrix) is IQ2_XS's search
 * with its own layout.
 *
 * Browser-safe: no Node built-ins.
 */
import { iqGridIndices } from "../grids.js";
import { fp16Bits } from "../scalars.js";
import { aborts, Lattice } from "./lattice.js";
import { put16, put32, type RowEncoder } from "./row.js";
import { nearestInt } from "./rounding.js";
import { GROUP_MAX_EPS, makeQpQuants } from "./search.js";

const fr = Math.fround;
const TENTH = fr(0.1);
const K_MAX_Q = 3;

let xxs: Lattice | undefined;
let xs: Lattice | undefined;
let s2: Lattice | undefined;

const weight = new Float32Array(32);
const waux = new Float32Array(32);
const xval = new Float32Array(32);
const L = new Int8Array(32);
const Laux = new Int8Array(32);
const Lqp = new Uint8Array(32);
const scales = new Float32Array(16);
const signs = new Uint8Array(4);
const q2 = new Uint32Array(16);
const onGrid = [true, true];
const onGridAux = [true, true];

function clamp(l: number, lo: number, hi: number): number {
  return l < lo ? lo : l > hi ? hi : l;
}

/** The level index nearest_int(0.5 * (id * x - 1)) of ggml's IQ2 searches, in [0, 2]. */
function level(id: number, v: number): number {
  return clamp(nearestInt(fr(0.5 * fr(fr(id * v) - 1))), 0, K_MAX_Q - 1);
}

function sigma2Of(x: Float32Array, s: number, twice = false): number {
  let sum = 0;
  for (let i = 0; i < 256; i++) sum = fr(sum + fr(x[s + i] * x[s + i]));
  return fr((twice ? fr(2 * sum) : sum) / 256);
}

/**
 * Weights, their square roots, |x| with the sign sets of `groups` groups of 8: with `parity` an odd
 * count of negatives flips the element of least w * x^2 (IQ2_XXS, IQ2_XS keep 7 sign bits); IQ2_S
 * keeps all 8. Without an importance matrix (IQ2_S only) the weights are sigma2 / 4 + x^2.
 */
function prepare(x: Float32Array, s: number, qw: Float32Array | undefined, qo: number, sigma2: number, groups: number, parity = true): void {
  const n = 8 * groups;
  const quarter = fr(0.25 * sigma2);
  for (let i = 0; i < n; i++) {
    const v = x[s + i];
    weight[i] = qw !== undefined ? fr(qw[qo + i] * fr(Math.sqrt(fr(sigma2 + fr(v * v))))) : fr(quarter + fr(v * v));
  }
  for (let i = 0; i < n; i++) waux[i] = fr(Math.sqrt(weight[i]));
  for (let k = 0; k < groups; k++) {
    let nflip = 0;
    let sg = 0;
    for (let i = 0; i < 8; i++) {
      const v = x[s + 8 * k + i];
      if (v >= 0) xval[8 * k + i] = v;
      else { xval[8 * k + i] = -v; nflip++; sg |= 1 << i; }
    }
    if (!parity) {
      signs[k] = sg;
      continue;
    }
    if (nflip % 2 !== 0) {
      let imin = 0;
      let min = fr(fr(weight[8 * k] * x[s + 8 * k]) * x[s + 8 * k]);
      for (let i = 1; i < 8; i++) {
        const v = x[s + 8 * k + i];
        const ax = fr(fr(weight[8 * k + i] * v) * v);
        if (ax < min) { min = ax; imin = i; }
      }
      xval[8 * k + imin] = -xval[8 * k + imin];
      sg ^= 1 << imin;
    }
    signs[k] = sg & 127;
  }
}

function packed(Lv: Int8Array, at: number): number {
  let u = 0;
  for (let i = 0; i < 8; i++) u |= Lv[at + i] << (2 * i);
  return u;
}

/** sum w * x * q and sum w * q^2 over n elements with q = 2 L + 1. */
function sums(Lv: Int8Array, n: number): [number, number] {
  let sumqx = 0, sumq2 = 0;
  for (let i = 0; i < n; i++) {
    const w = weight[i];
    const q = 2 * Lv[i] + 1;
    sumqx = fr(sumqx + fr(fr(w * xval[i]) * q));
    sumq2 = fr(sumq2 + fr(fr(w * q) * q));
  }
  return [sumqx, sumq2];
}

export const iq2_xxs: RowEncoder = (x, s, n, y, o, qw) => {
  if (qw === undefined) throw aborts("IQ2_XXS needs an importance matrix");
  const lat = (xxs ??= new Lattice(iqGridIndices().iq2xxs, 2));
  for (let b = 0; b < n; b += 256, s += 256, o += 66) {
    put16(y, o, 0);
    q2.fill(0);
    let maxScale = 0;
    const sigma2 = sigma2Of(x, s);
    for (let ib = 0; ib < 8; ib++) {
      prepare(x, s + 32 * ib, qw, b + 32 * ib, sigma2, 4);
      let max = xval[0];
      for (let i = 1; i < 32; i++) max = max > xval[i] ? max : xval[i];
      if (max < GROUP_MAX_EPS) {
        scales[ib] = 0;
        L.fill(0);
        continue;
      }
      lat.values(xval, waux, 32);
      let scale = makeQpQuants(32, K_MAX_Q + 1, xval, Lqp, weight);
      L.set(Lqp);
      const effMax = fr(scale * K_MAX_Q);
      if (effMax <= 0) {
        scales[ib] = 0;
        L.fill(0);
        continue;
      }
      let best = 0;
      for (let is = -6; is <= 6; is++) {
        const id = fr(fr(2 * K_MAX_Q - 1 + fr(is * TENTH)) / effMax);
        const thisScale = fr(1 / id);
        for (let k = 0; k < 4; k++) {
          for (let i = 0; i < 8; i++) Laux[8 * k + i] = level(id, xval[8 * k + i]);
          const u = packed(Laux, 8 * k);
          if (lat.map[u] < 0) lat.bestNeighbour(u, xval, 8 * k, waux, thisScale, Laux, 8 * k);
        }
        const [sumqx, sumq2] = sums(Laux, 32);
        if (sumq2 > 0 && fr(sumqx * sumqx) > fr(best * sumq2)) {
          scale = fr(sumqx / sumq2);
          best = fr(scale * sumqx);
          L.set(Laux);
        }
      }
      if (scale > 0) {
        const id = fr(1 / scale);
        for (let k = 0; k < 4; k++) {
          let u = 0;
          for (let i = 0; i < 8; i++) u |= level(id, xval[8 * k + i]) << (2 * i);
          let gi = lat.map[u];
          if (gi < 0) gi = lat.bestNeighbour(u, xval, 8 * k, waux, scale, L, 8 * k);
          for (let i = 0; i < 8; i++) L[8 * k + i] = (lat.grid[8 * gi + i] - 1) >> 1;
        }
        const [sumqx, sumq2] = sums(L, 32);
        if (sumq2 > 0) scale = fr(sumqx / sumq2);
      }
      if (scale < 0) {
        scale = -scale;
        for (let k = 0; k < 4; k++) signs[k] = ~signs[k] & 127;
      }
      for (let k = 0; k < 4; k++) {
        const gi = lat.map[packed(L, 8 * k)];
        if (gi < 0) throw aborts("a point off the IQ2_XXS grid");
        q2[2 * ib] |= gi << (8 * k);
        q2[2 * ib + 1] |= signs[k] << (7 * k);
      }
      if (!(scale >= 0)) throw aborts("a NaN scale");
      scales[ib] = scale;
      maxScale = maxScale > scale ? maxScale : scale;
    }
    if (maxScale === 0) {
      y.fill(0, o + 2, o + 66);
      continue;
    }
    const d = fr(maxScale / 31);
    put16(y, o, fp16Bits(d));
    const id = fr(1 / d);
    for (let ib = 0; ib < 8; ib++) q2[2 * ib + 1] |= clamp(nearestInt(fr(0.5 * fr(fr(id * scales[ib]) - 1))), 0, 15) << 28;
    for (let k = 0; k < 16; k++) put32(y, o + 2 + 4 * k, q2[k]);
  }
};

/** IQ2_XS (`twoS` false) and IQ2_S: sixteen groups of 16, each two lattice points under one scale. */
function iq2Pairs(twoS: boolean): RowEncoder {
  const size = twoS ? 82 : 74;
  const eps = twoS ? fr(1e-8) : GROUP_MAX_EPS;
  return (x, s, n, y, o, qw) => {
    if (qw === undefined && !twoS) throw aborts("IQ2_XS needs an importance matrix");
    const lat = twoS ? (s2 ??= new Lattice(iqGridIndices().iq2s, 1)) : (xs ??= new Lattice(iqGridIndices().iq2xs, 2));
    const q = new Uint16Array(32);
    for (let b = 0; b < n; b += 256, s += 256, o += size) {
      y.fill(0, o, o + size);
      let maxScale = 0;
      const sigma2 = sigma2Of(x, s, twoS);
      for (let ib = 0; ib < 16; ib++) {
        prepare(x, s + 16 * ib, qw, b + 16 * ib, sigma2, 2, !twoS);
        let max = xval[0];
        for (let i = 1; i < 16; i++) max = max > xval[i] ? max : xval[i];
        L.fill(0, 0, 16);
        if (max < eps) {
          scales[ib] = 0;
          q[2 * ib] = 0;
          q[2 * ib + 1] = 0;
          continue;
        }
        lat.values(xval, waux, 16);
        let best = 0;
        let scale = fr(max / (2 * K_MAX_Q - 1));
        onGrid[0] = onGrid[1] = true;
        for (let is = -9; is <= 9; is++) {
          const id = fr(fr(2 * K_MAX_Q - 1 + fr(is * TENTH)) / max);
          const thisScale = fr(1 / id);
          for (let k = 0; k < 2; k++) {
            for (let i = 0; i < 8; i++) Laux[8 * k + i] = level(id, xval[8 * k + i]);
            const u = packed(Laux, 8 * k);
            onGridAux[k] = true;
            if (lat.map[u] < 0) {
              onGridAux[k] = false;
              lat.bestNeighbour(u, xval, 8 * k, waux, thisScale, Laux, 8 * k);
            }
          }
          const [sumqx, sumq2] = sums(Laux, 16);
          if (sumq2 > 0 && fr(sumqx * sumqx) > fr(best * sumq2)) {
            scale = fr(sumqx / sumq2);
            best = fr(scale * sumqx);
            for (let i = 0; i < 16; i++) L[i] = Laux[i];
            onGrid[0] = onGridAux[0];
            onGrid[1] = onGridAux[1];
          }
        }
        if ((!onGrid[0] || !onGrid[1]) && scale > 0) {
          const id = fr(1 / scale);
          for (let k = 0; k < 2; k++) {
            if (onGrid[k]) continue;
            let u = 0;
            for (let i = 0; i < 8; i++) {
              const l = level(id, xval[8 * k + i]);
              u |= l << (2 * i);
              L[8 * k + i] = l;
            }
            if (lat.map[u] < 0) lat.bestNeighbour(u, xval, 8 * k, waux, scale, L, 8 * k);
          }
          const [sumqx, sumq2] = sums(L, 16);
          if (sumq2 > 0) scale = fr(sumqx / sumq2);
        }
        if (scale < 0) {
          scale = -scale;
          for (let k = 0; k < 2; k++) signs[k] = ~signs[k] & (twoS ? 255 : 127);
        }
        for (let k = 0; k < 2; k++) {
          const gi = lat.map[packed(L, 8 * k)];
          if (gi < 0) throw aborts("a point off the IQ2 grid");
          if (twoS) {
            // Low index bytes, then the sign bytes, then two high index bits per point.
            const i8 = 2 * ib + k;
            y[o + 2 + i8] = gi & 255;
            y[o + 66 + (i8 >> 2)] |= (gi >> 8) << (2 * (i8 % 4));
            y[o + 34 + i8] = signs[k];
          } else {
            q[2 * ib + k] = gi | (signs[k] << 9);
          }
        }
        if (!(scale >= 0)) throw aborts("a NaN scale");
        scales[ib] = scale;
        maxScale = maxScale > scale ? maxScale : scale;
      }
      if (maxScale === 0) {
        // ggml zeroes IQ2_XS's codes here; IQ2_S keeps the grid indices and signs it wrote.
        if (!twoS) y.fill(0, o + 2, o + 66);
        continue;
      }
      const d = fr(maxScale / 31);
      // IQ2_S stores a slightly smaller block scale than its sub-scales were made against.
      put16(y, o, fp16Bits(twoS ? fr(d * fr(0.9875)) : d));
      const id = fr(1 / d);
      const at = o + (twoS ? 74 : 66);
      for (let ib = 0; ib < 16; ib++) {
        const l = clamp(nearestInt(fr(0.5 * fr(fr(id * scales[ib]) - 1))), 0, 15);
        if (ib % 2 === 0) y[at + (ib >> 1)] = l;
        else y[at + (ib >> 1)] |= l << 4;
      }
      if (!twoS) for (let k = 0; k < 32; k++) put16(y, o + 2 + 2 * k, q[k]);
    }
  };
}

export const iq2_xs = iq2Pairs(false);
export const iq2_s = iq2Pairs(true);
