/**
 * ggml's scale searches (make_qx_quants, make_q3_quants, make_qkx2_quants / make_qkx3_quants,
 * make_qp_quants in ggml-quants.c), each C float operation one Math.fround in the C code's order:
 * `w*x*l` is fround(fround(w * x) * l) and a running sum rounds after every addition, as the
 * reference build (no FMA, no reassociation) does. Candidates are tried in ggml's order and a later
 * one replaces the best only when strictly better, so ties keep the earlier one.
 *
 * C's `if (!d)` is d == 0 (NaN is true in C, false in JS): every such test here is written `=== 0`.
 *
 * Browser-safe: no Node built-ins.
 */
import { nearestInt } from "./rounding.js";

const fr = Math.fround;

/** GROUP_MAX_EPS: a group whose largest magnitude is below it is all zero. */
export const GROUP_MAX_EPS = fr(1e-15);
const TENTH = fr(0.1);
/** make_qx_quants's codes of the last candidate tried (n is at most 32 in every caller; 256 for room). */
const QX_LAST = new Int8Array(256);

function clamp(l: number, lo: number, hi: number): number {
  return l < lo ? lo : l > hi ? hi : l;
}

/**
 * make_qx_quants: symmetric codes L (stored as l + nmax, l in [-nmax, nmax - 1]) of `n` values
 * from `x[xo]`, and the scale. Weights are `qw` (from `qo`) or, for rmse_type 1 (the only one the
 * quantizers here use without weights), x^2. Tries -(nmax + 0.1 * is) / max for is = -9..9.
 */
export function makeQxQuants(n: number, nmax: number, x: Float32Array, xo: number, L: Int8Array | Uint8Array, lo: number,
  rmseType: number, qw: Float32Array | undefined, qo: number): number {
  let max = 0;
  let amax = 0;
  for (let i = 0; i < n; i++) {
    const ax = Math.abs(x[xo + i]);
    if (ax > amax) { amax = ax; max = x[xo + i]; }
  }
  if (amax < GROUP_MAX_EPS) {
    for (let i = 0; i < n; i++) L[lo + i] = 0;
    return 0;
  }
  let iscale = fr(-nmax / max);
  const weight = (i: number): number => {
    const v = x[xo + i];
    if (qw !== undefined) return qw[qo + i];
    switch (rmseType) {
      case 1: return fr(v * v);
      case 2: return 1;
      case 3: return Math.abs(v);
      default: return fr(Math.sqrt(Math.abs(v)));
    }
  };
  if (rmseType === 0) {
    for (let i = 0; i < n; i++) L[lo + i] = nmax + clamp(nearestInt(fr(iscale * x[xo + i])), -nmax, nmax - 1);
    return fr(1 / iscale);
  }
  let returnEarly = false;
  if (rmseType < 0) {
    rmseType = -rmseType;
    returnEarly = true;
  }
  let sumlx = 0;
  let suml2 = 0;
  for (let i = 0; i < n; i++) {
    const v = x[xo + i];
    const l = clamp(nearestInt(fr(iscale * v)), -nmax, nmax - 1);
    L[lo + i] = l + nmax;
    const w = weight(i);
    sumlx = fr(sumlx + fr(fr(w * v) * l));
    suml2 = fr(suml2 + fr(fr(w * l) * l));
  }
  let scale = suml2 !== 0 ? fr(sumlx / suml2) : 0;
  if (returnEarly) return suml2 > 0 ? fr(0.5 * fr(scale + fr(1 / iscale))) : fr(1 / iscale);
  let best = fr(scale * sumlx);
  for (let is = -9; is <= 9; is++) {
    if (is === 0) continue;
    iscale = fr(-fr(nmax + fr(TENTH * is)) / max);
    // Codes equal to the last candidate's give its sums again: it was taken (and taking it again
    // sets the same codes, scale and best) or it was not (and best has not moved since).
    let same = is > -9;
    for (let i = 0; i < n; i++) {
      const l = clamp(nearestInt(fr(iscale * x[xo + i])), -nmax, nmax - 1);
      if (l !== QX_LAST[i]) {
        QX_LAST[i] = l;
        same = false;
      }
    }
    if (same) continue;
    sumlx = 0;
    suml2 = 0;
    for (let i = 0; i < n; i++) {
      const v = x[xo + i];
      const l = QX_LAST[i];
      const w = weight(i);
      sumlx = fr(sumlx + fr(fr(w * v) * l));
      suml2 = fr(suml2 + fr(fr(w * l) * l));
    }
    if (suml2 > 0 && fr(sumlx * sumlx) > fr(best * suml2)) {
      for (let i = 0; i < n; i++) L[lo + i] = nmax + clamp(nearestInt(fr(iscale * x[xo + i])), -nmax, nmax - 1);
      scale = fr(sumlx / suml2);
      best = fr(scale * sumlx);
    }
  }
  return scale;
}

/**
 * make_q3_quants with do_rmse: symmetric codes, then up to five passes that move one code at a
 * time to where the weighted least-squares scale (weights x^2) wants it, when that lowers the error.
 * L holds l + nmax on return.
 */
export function makeQ3Quants(n: number, nmax: number, x: Float32Array, xo: number, L: Int8Array, lo: number): number {
  let max = 0;
  let amax = 0;
  for (let i = 0; i < n; i++) {
    const ax = Math.abs(x[xo + i]);
    if (ax > amax) { amax = ax; max = x[xo + i]; }
  }
  if (amax < GROUP_MAX_EPS) {
    for (let i = 0; i < n; i++) L[lo + i] = 0;
    return 0;
  }
  const iscale = fr(-nmax / max);
  let sumlx = 0;
  let suml2 = 0;
  for (let i = 0; i < n; i++) {
    const v = x[xo + i];
    const l = clamp(nearestInt(fr(iscale * v)), -nmax, nmax - 1);
    L[lo + i] = l;
    const w = fr(v * v);
    sumlx = fr(sumlx + fr(fr(w * v) * l));
    suml2 = fr(suml2 + fr(fr(w * l) * l));
  }
  for (let itry = 0; itry < 5; itry++) {
    let changed = 0;
    for (let i = 0; i < n; i++) {
      const v = x[xo + i];
      const w = fr(v * v);
      const li = L[lo + i];
      let slx = fr(sumlx - fr(fr(w * v) * li));
      if (slx > 0) {
        let sl2 = fr(suml2 - fr(fr(w * li) * li));
        const nl = clamp(nearestInt(fr(fr(v * sl2) / slx)), -nmax, nmax - 1);
        if (nl !== li) {
          slx = fr(slx + fr(fr(w * v) * nl));
          sl2 = fr(sl2 + fr(fr(w * nl) * nl));
          if (sl2 > 0 && fr(fr(slx * slx) * suml2) > fr(fr(sumlx * sumlx) * sl2)) {
            L[lo + i] = nl;
            sumlx = slx;
            suml2 = sl2;
            changed++;
          }
        }
      }
    }
    if (changed === 0) break;
  }
  for (let i = 0; i < n; i++) L[lo + i] += nmax;
  return suml2 > 0 ? fr(sumlx / suml2) : 0;
}

/** The minimum a make_qkx*_quants search found, negated as ggml returns it (`*the_min = -min`). */
export interface MinOut { min: number }

/**
 * make_qkx2_quants (`x2` true) and make_qkx3_quants: asymmetric codes in [0, nmax] with a scale and
 * a non-positive minimum, by weighted least squares over the grid iscale = (rmin + rdelta * is +
 * nmax) / (max - min), is = 0..nstep. qkx3 takes x^2 where `weights` is undefined and returns early
 * when max <= min (qkx2: max == min). The error is |diff| (use_mad) or diff^2, weighted.
 */
export function makeQkxQuants(x2: boolean, n: number, nmax: number, x: Float32Array, xo: number, weights: Float32Array | undefined,
  L: Uint8Array, lo: number, out: MinOut, Laux: Uint8Array, rmin: number, rdelta: number, nstep: number, useMad: boolean): number {
  const wt = (i: number): number => (weights !== undefined ? weights[i] : fr(x[xo + i] * x[xo + i]));
  let min = x[xo];
  let max = x[xo];
  let sumW = wt(0);
  let sumX = fr(sumW * x[xo]);
  for (let i = 1; i < n; i++) {
    const v = x[xo + i];
    if (v < min) min = v;
    if (v > max) max = v;
    const w = wt(i);
    sumW = fr(sumW + w);
    sumX = fr(sumX + fr(w * v));
  }
  if (min > 0) min = 0;
  if (x2 ? max === min : max <= min) {
    for (let i = 0; i < n; i++) L[lo + i] = 0;
    out.min = -min;
    return 0;
  }
  let iscale = fr(nmax / fr(max - min));
  let scale = fr(1 / iscale);
  let bestError = 0;
  for (let i = 0; i < n; i++) {
    const v = x[xo + i];
    const l = clamp(nearestInt(fr(iscale * fr(v - min))), 0, nmax);
    L[lo + i] = l;
    let diff = fr(fr(fr(scale * l) + min) - v);
    diff = useMad ? Math.abs(diff) : fr(diff * diff);
    bestError = fr(bestError + fr(wt(i) * diff));
  }
  if (nstep < 1) {
    out.min = -min;
    return scale;
  }
  for (let is = 0; is <= nstep; is++) {
    // min is the best so far: a better candidate moves the grid of the next ones.
    iscale = fr(fr(fr(rmin + fr(rdelta * is)) + nmax) / fr(max - min));
    // Codes equal to the last candidate's give its sums, scale, minimum and error again, and an
    // error that is not strictly lower replaces nothing: skipping them changes no byte.
    let changed = is > 0 ? 0 : 1;
    for (let i = 0; i < n; i++) {
      const l = clamp(nearestInt(fr(iscale * fr(x[xo + i] - min))), 0, nmax);
      changed |= l ^ Laux[i];
      Laux[i] = l;
    }
    if (changed === 0) continue;
    let sumL = 0, sumL2 = 0, sumXL = 0;
    if (weights !== undefined) {
      for (let i = 0; i < n; i++) {
        const l = Laux[i];
        const wl = fr(weights[i] * l);
        sumL = fr(sumL + wl);
        sumL2 = fr(sumL2 + fr(wl * l));
        sumXL = fr(sumXL + fr(wl * x[xo + i]));
      }
    } else {
      for (let i = 0; i < n; i++) {
        const l = Laux[i];
        const v = x[xo + i];
        const wl = fr(fr(v * v) * l);
        sumL = fr(sumL + wl);
        sumL2 = fr(sumL2 + fr(wl * l));
        sumXL = fr(sumXL + fr(wl * v));
      }
    }
    const D = fr(fr(sumW * sumL2) - fr(sumL * sumL));
    if (D > 0) {
      let thisScale = fr(fr(fr(sumW * sumXL) - fr(sumX * sumL)) / D);
      let thisMin = fr(fr(fr(sumL2 * sumX) - fr(sumL * sumXL)) / D);
      if (thisMin > 0) {
        thisMin = 0;
        thisScale = fr(sumXL / sumL2);
      }
      let err = 0;
      if (useMad) {
        for (let i = 0; i < n; i++) err = fr(err + fr(wt(i) * Math.abs(fr(fr(fr(thisScale * Laux[i]) + thisMin) - x[xo + i]))));
      } else if (weights !== undefined) {
        for (let i = 0; i < n; i++) {
          const diff = fr(fr(fr(thisScale * Laux[i]) + thisMin) - x[xo + i]);
          err = fr(err + fr(weights[i] * fr(diff * diff)));
        }
      } else {
        for (let i = 0; i < n; i++) {
          const diff = fr(fr(fr(thisScale * Laux[i]) + thisMin) - x[xo + i]);
          err = fr(err + fr(wt(i) * fr(diff * diff)));
        }
      }
      if (err < bestError) {
        for (let i = 0; i < n; i++) L[lo + i] = Laux[i];
        bestError = err;
        scale = thisScale;
        min = thisMin;
      }
    }
  }
  out.min = -min;
  return scale;
}

/**
 * make_qp_quants: codes in [0, nmax] (stored as uint8_t, so a negative code wraps) for the
 * non-negative sub-block scales or mins `x` of a K-quant super-block, weighted by `qw`: the best of
 * nmax / max and (nmax + 0.1 * is) / max for is = -4..4 by weighted squared error, then up to five
 * passes moving one code at a time.
 */
export function makeQpQuants(n: number, nmax: number, x: Float32Array, L: Uint8Array, qw: Float32Array): number {
  let max = 0;
  for (let i = 0; i < n; i++) max = max > x[i] ? max : x[i];
  if (max < GROUP_MAX_EPS) {
    for (let i = 0; i < n; i++) L[i] = 0;
    return 0;
  }
  let iscale = fr(nmax / max);
  for (let i = 0; i < n; i++) L[i] = nearestInt(fr(iscale * x[i]));
  const scale = fr(1 / iscale);
  let bestMse = 0;
  for (let i = 0; i < n; i++) {
    const diff = fr(x[i] - fr(scale * L[i]));
    bestMse = fr(bestMse + fr(fr(qw[i] * diff) * diff));
  }
  for (let is = -4; is <= 4; is++) {
    if (is === 0) continue;
    const iscaleIs = fr(fr(fr(TENTH * is) + nmax) / max);
    const scaleIs = fr(1 / iscaleIs);
    let mse = 0;
    for (let i = 0; i < n; i++) {
      const l = Math.min(nmax, nearestInt(fr(iscaleIs * x[i])));
      const diff = fr(x[i] - fr(scaleIs * l));
      mse = fr(mse + fr(fr(qw[i] * diff) * diff));
    }
    if (mse < bestMse) {
      bestMse = mse;
      iscale = iscaleIs;
    }
  }
  let sumlx = 0;
  let suml2 = 0;
  for (let i = 0; i < n; i++) {
    const l = Math.min(nmax, nearestInt(fr(iscale * x[i])));
    L[i] = l;
    const w = qw[i];
    sumlx = fr(sumlx + fr(fr(w * x[i]) * l));
    suml2 = fr(suml2 + fr(fr(w * l) * l));
  }
  for (let itry = 0; itry < 5; itry++) {
    let changed = 0;
    for (let i = 0; i < n; i++) {
      const w = qw[i];
      const li = L[i];
      let slx = fr(sumlx - fr(fr(w * x[i]) * li));
      let sl2 = fr(suml2 - fr(fr(w * li) * li));
      if (slx > 0 && sl2 > 0) {
        const nl = Math.min(nmax, nearestInt(fr(fr(x[i] * sl2) / slx)));
        if (nl !== li) {
          slx = fr(slx + fr(fr(w * x[i]) * nl));
          sl2 = fr(sl2 + fr(fr(w * nl) * nl));
          if (fr(fr(slx * slx) * suml2) > fr(fr(sumlx * sumlx) * sl2)) {
            L[i] = nl;
            sumlx = slx;
            suml2 = sl2;
            changed++;
          }
        }
      }
    }
    if (changed === 0) break;
  }
  return suml2 > 0 ? fr(sumlx / suml2) : 0;
}
