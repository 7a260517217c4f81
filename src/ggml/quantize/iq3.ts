/**
 * IQ3_XXS and IQ3_S (quantize_row_iq3_xxs_impl, quantize_row_iq3_s_impl): groups of 4 on ggml's
 * 256- and 512-point codebooks of odd levels 1..15 times a group scale (32 elements a group), signs
 * apart. The search tries (15 + 0.2 is) / max, is = -15..15 (IQ3_S: -9..9), each element to its
 * level and, off the grid, the best neighbour; then 4-bit sub-scales against max / 31 and a block
 * scale made 1.0125 (IQ3_S: 1.033) times larger. Weights are x^2, or qw * sqrt(2 mean square + x^2)
 * with an importance matrix; ggml needs none for either.
 *
 * IQ3_XXS keeps 7 sign bits a group of 8 (an odd count of negatives flips the element of least
 * w * x^2) and re-searches only the groups that were off the grid; IQ3_S keeps 8 and re-searches
 * every group once any is off (its flags start false, so a block no candidate improved counts as
 * off the grid everywhere).
 *
 * Browser-safe: no Node built-ins.
 */
import { iqGridIndices } from "../grids.js";
import { fp16Bits } from "../scalars.js";
import { aborts, Lattice } from "./lattice.js";
import { put16, put32, type RowEncoder } from "./row.js";
import { nearestInt } from "./rounding.js";

const fr = Math.fround;
const FIFTH = fr(0.2);
const K_MAX_Q = 8;

let xxsLattice: Lattice | undefined;
let sLattice: Lattice | undefined;

const weight = new Float32Array(32);
const waux = new Float32Array(32);
const xval = new Float32Array(32);
const L = new Int8Array(32);
const Laux = new Int8Array(32);
const scales = new Float32Array(8);
const signs = new Uint8Array(4);
const onGrid: boolean[] = new Array<boolean>(8).fill(true);
const onGridAux: boolean[] = new Array<boolean>(8).fill(true);

function clamp(l: number, lo: number, hi: number): number {
  return l < lo ? lo : l > hi ? hi : l;
}

function level(id: number, v: number): number {
  return clamp(nearestInt(fr(0.5 * fr(fr(id * v) - 1))), 0, K_MAX_Q - 1);
}

function packed(Lv: Int8Array, at: number): number {
  return Lv[at] | (Lv[at + 1] << 3) | (Lv[at + 2] << 6) | (Lv[at + 3] << 9);
}

function sums(Lv: Int8Array): [number, number] {
  let sumqx = 0, sumq2 = 0;
  for (let i = 0; i < 32; i++) {
    const w = weight[i];
    const q = 2 * Lv[i] + 1;
    sumqx = fr(sumqx + fr(fr(w * xval[i]) * q));
    sumq2 = fr(sumq2 + fr(fr(w * q) * q));
  }
  return [sumqx, sumq2];
}

/** What `group` returns for a group ggml leaves empty (all below IQ3_XXS's 1e-8, IQ3_S's all zero). */
const EMPTY = -1;

/**
 * One group of 32 from x[s]: codes into L, signs into `signs`; returns the group's scale (>= 0,
 * or NaN where ggml would assert) or EMPTY. `xxs` picks IQ3_XXS's rules over IQ3_S's.
 */
function group(lat: Lattice, xxs: boolean, x: Float32Array, s: number, qw: Float32Array | undefined, qo: number, sigma2: number): number {
  for (let i = 0; i < 32; i++) {
    const v = x[s + i];
    weight[i] = qw !== undefined ? fr(qw[qo + i] * fr(Math.sqrt(fr(sigma2 + fr(v * v))))) : fr(v * v);
  }
  for (let i = 0; i < 32; i++) waux[i] = fr(Math.sqrt(weight[i]));
  for (let k = 0; k < 4; k++) {
    let nflip = 0;
    let sg = 0;
    for (let i = 0; i < 8; i++) {
      const v = x[s + 8 * k + i];
      if (v >= 0) xval[8 * k + i] = v;
      else { xval[8 * k + i] = -v; nflip++; sg |= 1 << i; }
    }
    if (xxs && nflip % 2 !== 0) {
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
    signs[k] = xxs ? sg & 127 : sg;
  }
  let max = xval[0];
  for (let i = 1; i < 32; i++) max = max > xval[i] ? max : xval[i];
  L.fill(0);
  if (xxs ? max < fr(1e-8) : max === 0) return EMPTY;
  lat.values(xval, waux, 32);
  let best = 0;
  let scale = fr(max / (2 * K_MAX_Q - 1));
  onGrid.fill(xxs);
  const span = xxs ? 15 : 9;
  for (let is = -span; is <= span; is++) {
    const id = fr(fr(2 * K_MAX_Q - 1 + fr(is * FIFTH)) / max);
    const thisScale = fr(1 / id);
    for (let k = 0; k < 8; k++) {
      for (let i = 0; i < 4; i++) Laux[4 * k + i] = level(id, xval[4 * k + i]);
      const u = packed(Laux, 4 * k);
      onGridAux[k] = true;
      if (lat.map[u] < 0) {
        onGridAux[k] = false;
        lat.bestNeighbour(u, xval, 4 * k, waux, thisScale, Laux, 4 * k);
      }
    }
    const [sumqx, sumq2] = sums(Laux);
    if (sumq2 > 0 && fr(sumqx * sumqx) > fr(best * sumq2)) {
      scale = fr(sumqx / sumq2);
      best = fr(scale * sumqx);
      L.set(Laux);
      for (let k = 0; k < 8; k++) onGrid[k] = onGridAux[k];
    }
  }
  if (onGrid.includes(false) && scale > 0) {
    const id = fr(1 / scale);
    for (let k = 0; k < 8; k++) {
      if (xxs && onGrid[k]) continue;
      const u = level(id, xval[4 * k]) | (level(id, xval[4 * k + 1]) << 3) | (level(id, xval[4 * k + 2]) << 6) | (level(id, xval[4 * k + 3]) << 9);
      let gi = lat.map[u];
      if (gi < 0) gi = lat.bestNeighbour(u, xval, 4 * k, waux, scale, L, 4 * k);
      for (let i = 0; i < 4; i++) L[4 * k + i] = (lat.grid[4 * gi + i] - 1) >> 1;
    }
    const [sumqx, sumq2] = sums(L);
    if (sumq2 > 0) scale = fr(sumqx / sumq2);
  }
  if (scale < 0) {
    scale = -scale;
    for (let k = 0; k < 4; k++) signs[k] = ~signs[k] & (xxs ? 127 : 255);
  }
  return scale;
}

function subScale(id: number, scale: number): number {
  return clamp(nearestInt(fr(0.5 * fr(fr(id * scale) - 1))), 0, 15);
}

export const iq3_xxs: RowEncoder = (x, s, n, y, o, qw) => {
  const lat = (xxsLattice ??= new Lattice(iqGridIndices().iq3xxs, 2, 4, 3));
  const sas = new Uint32Array(8);
  for (let b = 0; b < n; b += 256, s += 256, o += 98) {
    y.fill(0, o, o + 98);
    sas.fill(0);
    let maxScale = 0;
    let sum = 0;
    for (let i = 0; i < 256; i++) sum = fr(sum + fr(x[s + i] * x[s + i]));
    const sigma2 = fr(fr(2 * sum) / 256);
    for (let ib = 0; ib < 8; ib++) {
      const scale = group(lat, true, x, s + 32 * ib, qw, b + 32 * ib, sigma2);
      if (scale === EMPTY) {
        scales[ib] = 0;
        continue;
      }
      for (let k = 0; k < 8; k++) {
        const gi = lat.map[packed(L, 4 * k)];
        if (gi < 0) throw aborts("a point off the IQ3_XXS grid");
        y[o + 2 + 8 * ib + k] = gi;
      }
      sas[ib] = (signs[0] | (signs[1] << 7) | (signs[2] << 14) | (signs[3] << 21)) >>> 0;
      if (!(scale >= 0)) throw aborts("a NaN scale");
      scales[ib] = scale;
      maxScale = maxScale > scale ? maxScale : scale;
    }
    if (maxScale === 0) {
      y.fill(0, o + 2, o + 98);
      continue;
    }
    const d = fr(maxScale / 31);
    put16(y, o, fp16Bits(fr(d * fr(1.0125))));
    const id = fr(1 / d);
    for (let ib = 0; ib < 8; ib++) put32(y, o + 66 + 4 * ib, (sas[ib] | (subScale(id, scales[ib]) << 28)) >>> 0);
  }
};

export const iq3_s: RowEncoder = (x, s, n, y, o, qw) => {
  const lat = (sLattice ??= new Lattice(iqGridIndices().iq3s, 3, 4, 3));
  for (let b = 0; b < n; b += 256, s += 256, o += 110) {
    y.fill(0, o, o + 110);
    let maxScale = 0;
    let sum = 0;
    for (let i = 0; i < 256; i++) sum = fr(sum + fr(x[s + i] * x[s + i]));
    const sigma2 = fr(fr(2 * sum) / 256);
    // ggml advances its index and sign pointers only past groups it writes: after an all-zero group
    // the later groups' indices and signs sit one slot early (the high index bits do not move).
    let qsAt = o + 2;
    let signsAt = o + 74;
    for (let ib = 0; ib < 8; ib++) {
      const scale = group(lat, false, x, s + 32 * ib, qw, b + 32 * ib, sigma2);
      if (scale === EMPTY) {
        scales[ib] = 0;
        continue;
      }
      for (let k = 0; k < 8; k++) {
        const gi = lat.map[packed(L, 4 * k)];
        if (gi < 0) throw aborts("a point off the IQ3_S grid");
        y[qsAt + k] = gi & 255;
        y[o + 66 + ib] |= (gi >> 8) << k;
      }
      qsAt += 8;
      for (let k = 0; k < 4; k++) y[signsAt + k] = signs[k];
      signsAt += 4;
      if (!(scale >= 0)) throw aborts("a NaN scale");
      scales[ib] = scale;
      maxScale = maxScale > scale ? maxScale : scale;
    }
    if (maxScale === 0) continue;
    const d = fr(maxScale / 31);
    put16(y, o, fp16Bits(fr(d * fr(1.033))));
    const id = fr(1 / d);
    for (let ib = 0; ib < 8; ib += 2) y[o + 106 + ib / 2] = subScale(id, scales[ib]) | (subScale(id, scales[ib + 1]) << 4);
  }
};
