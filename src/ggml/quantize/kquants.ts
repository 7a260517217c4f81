/**
 * ggml's K-quants, super-blocks of 256 with per-sub-block scales quantized again against one fp16
 * super-scale: Q2_K, Q3_K, Q4_K, Q5_K, Q6_K (quantize_row_*_ref without an importance matrix,
 * quantize_row_*_impl with one). Every variant has the same four steps: a search per sub-block
 * (its scale, for Q2_K, Q4_K, Q5_K its minimum, and codes), the super-block's scales from those,
 * the codes recomputed from the stored (fp16-rounded, integer-scaled) scales with nearest_int
 * (except in sub-blocks whose stored scale is zero, which keep the codes the search gave), and the
 * packing. Where WebAssembly SIMD runs, the searches and the recomputation are search-simd.ts's
 * kernels, a chunk of super-blocks at a time, giving the same bits as the reference steps here;
 * for Q3_K without importance weights the kernels take all four steps (blocksSimd).
 *
 * Browser-safe: no Node built-ins.
 */
import { fp16Bits, halfValues } from "../scalars.js";
import { put16, type RowEncoder } from "./row.js";
import { nearestInt } from "./rounding.js";
import { GROUP_MAX_EPS, makeQkxQuants, makeQpQuants, makeQ3Quants, makeQxQuants, type MinOut } from "./search.js";
import { blocksSimd, requantSimd, SEARCH_CHUNK, searchCodesSimd, searchSimd, type SearchName, type SearchOut } from "./search-simd.js";

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
/** Per sub-block of a chunk: the stored scale and minimum the codes are recomputed from. */
const chunkDl = new Float32Array(SEARCH_CHUNK / 16);
const chunkMl = new Float32Array(SEARCH_CHUNK / 16);
const sigmas = new Float32Array(SEARCH_CHUNK / 256);
/** A chunk's packed codes, where the SIMD kernels pack them (at most 192 bytes per super-block). */
const packed = new Uint8Array((SEARCH_CHUNK / 256) * 192);
/**
 * Q3_K with importance weights: each super-block's make_qx_quants over its sixteen scales, for a
 * chunk at once by the SIMD kernel of Q6_K's (the same search: 16 values, nmax 32, given weights),
 * its inputs padded with zero super-blocks to whole runs of four.
 */
const superX = new Float32Array(SEARCH_CHUNK / 16);
const superW = new Float32Array(SEARCH_CHUNK / 16);
const superOut: SearchOut = { scales: new Float32Array(SEARCH_CHUNK / 256), mins: new Float32Array(SEARCH_CHUNK / 256), sw: new Float32Array(SEARCH_CHUNK / 256), codes: new Uint8Array(SEARCH_CHUNK / 16) };
/** Per super-block of a chunk: 1 where superScales wrote the whole block. */
const written = new Uint8Array(SEARCH_CHUNK / 256);
/** subScale's minimum (Q2_K, Q4_K, Q5_K). */
let ml = 0;

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

/** One K-quant's steps (see the file comment). */
interface KQuant {
  readonly size: number;
  /** Sub-blocks per super-block (8 of 32 or 16 of 16). */
  readonly subs: number;
  /** The codes' array, the recomputation's clamp [lo, hi] and the offset added after it. */
  readonly L: Uint8Array | Int8Array;
  readonly lo: number;
  readonly hi: number;
  readonly offset: number;
  /** Whether the recomputation adds the sub-block's minimum first: fr(fr(x + ml) / dl). */
  readonly withMin: boolean;
  /** The SIMD searches without and with importance weights; sigma2 of the latter where it takes one. */
  readonly kernels: readonly [SearchName, SearchName];
  readonly sigma2?: (x: Float32Array, s: number) => number;
  /** The reference searches of super-block x[s..] (weights qw from column b) into scales, mins, sw and L. */
  search(x: Float32Array, s: number, b: number, qw: Float32Array | undefined): void;
  /**
   * The super-block's scales from the searches' into y[o..]; false when the block is all written
   * (Q6_K's zero block). `sb` is its index in a chunk whose chunkScales ran and returned true, else -1.
   */
  superScales(y: Uint8Array, o: number, qw: Float32Array | undefined, sb: number): boolean;
  /** Where the super-blocks' own searches have a SIMD form: run it on the `blocks` of the chunk (after its searches), or false. */
  chunkScales?(blocks: number, qw: Float32Array | undefined): boolean;
  /** Sub-block j's stored scale (its minimum into `ml`), from the block at y[o..], with H the fp16 table. */
  subScale(y: Uint8Array, o: number, j: number, H: Float32Array): number;
  pack(y: Uint8Array, o: number): void;
}

/** The row encoder of `k`: by chunks, the SIMD kernels' steps where they run, else the reference's per super-block. */
function encoder(k: KQuant): RowEncoder {
  const n = 256 / k.subs;
  return (x, s, count, y, o, qw) => {
    const H = halfValues();
    for (let c = 0; c < count; c += SEARCH_CHUNK) {
      const len = Math.min(SEARCH_CHUNK, count - c);
      const name = k.kernels[qw === undefined ? 0 : 1];
      if (qw === undefined && blocksSimd(name, x, s + c, len, y, o + (c / 256) * k.size)) continue;
      const sigma2 = qw === undefined ? undefined : k.sigma2;
      if (sigma2 !== undefined) for (let b = 0; b < len; b += 256) sigmas[b / 256] = sigma2(x, s + c + b);
      if (searchSimd(name, x, s + c, len, qw, c, sigma2 !== undefined ? sigmas : undefined, chunk)) {
        const whole = k.chunkScales?.(len / 256, qw) === true;
        for (let b = 0; b < len; b += 256) {
          const yo = o + ((c + b) / 256) * k.size;
          const first = b / n;
          for (let j = 0; j < k.subs; j++) {
            scales[j] = chunk.scales[first + j];
            mins[j] = chunk.mins[first + j];
            sw[j] = chunk.sw[first + j];
          }
          written[b / 256] = k.superScales(y, yo, qw, whole ? b / 256 : -1) ? 0 : 1;
          for (let j = 0; j < k.subs; j++) {
            chunkDl[first + j] = written[b / 256] ? 0 : k.subScale(y, yo, j, H);
            chunkMl[first + j] = ml;
          }
        }
        const bytes = requantSimd(name, len, chunkDl, chunkMl, chunk.codes, packed);
        for (let b = 0; b < len; b += 256) {
          if (written[b / 256] === 1) continue;
          const yo = o + ((c + b) / 256) * k.size;
          if (bytes > 0) {
            y.set(packed.subarray((b / 256) * bytes, (b / 256 + 1) * bytes), yo);
          } else {
            k.L.set(chunk.codes.subarray(b, b + 256));
            k.pack(y, yo);
          }
        }
      } else {
        for (let b = c; b < c + len; b += 256) {
          const xs = s + b;
          const yo = o + (b / 256) * k.size;
          k.search(x, xs, b, qw);
          if (!k.superScales(y, yo, qw, -1)) continue;
          for (let j = 0; j < k.subs; j++) {
            const dl = k.subScale(y, yo, j, H);
            if (dl === 0) continue;
            for (let ii = 0, at = xs + n * j; ii < n; ii++) {
              const v = k.withMin ? fr(x[at + ii] + ml) : x[at + ii];
              k.L[n * j + ii] = clamp(nearestInt(fr(v / dl)), k.lo, k.hi) + k.offset;
            }
          }
          k.pack(y, yo);
        }
      }
    }
  };
}

/** Q2_K's and Q3_K's 2-bit planes: byte l of each 32 holds elements l, l + 32, l + 64, l + 96. */
function pack2(L: Int8Array | Uint8Array, y: Uint8Array, at: number): void {
  for (let j = 0; j < 256; j += 128) {
    for (let l = 0; l < 32; l++) y[at + j / 4 + l] = L[j + l] | (L[j + l + 32] << 2) | (L[j + l + 64] << 4) | (L[j + l + 96] << 6);
  }
}

export const q2_K: RowEncoder = encoder({
  size: 84, subs: 16, L: LU, lo: 0, hi: 3, offset: 0, withMin: true, kernels: ["Q2_K", "Q2_K_IM"], sigma2: sigma2Q2,
  search(x, s, b, qw) {
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
  },
  superScales(y, o, qw) {
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
    return true;
  },
  subScale(y, o, j, H) {
    ml = fr(H[y[o + 82] | (y[o + 83] << 8)] * (y[o + j] >> 4));
    return fr(H[y[o + 80] | (y[o + 81] << 8)] * (y[o + j] & 0xf));
  },
  pack(y, o) {
    pack2(LU, y, o + 16);
  },
});

/** Q3_K's sixteen 6-bit scales (biased by 32): low nibbles in bytes 0..7, high 2 bits in 8..11. */
function packQ3Scales(y: Uint8Array, at: number, j: number, l: number): void {
  if (j < 8) y[at + j] = l & 0xf;
  else y[at + j - 8] |= (l & 0xf) << 4;
  y[at + 8 + (j % 4)] |= (l >> 4) << (2 * (j >> 2));
}

export const q3_K: RowEncoder = encoder({
  size: 110, subs: 16, L: L8, lo: -4, hi: 3, offset: 4, withMin: false, kernels: ["Q3_K", "Q3_K_IM"], sigma2: sigma2K,
  search(x, s, b, qw) {
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
  },
  superScales(y, o, qw, sb) {
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
      let dBlock: number;
      if (sb >= 0) {
        dBlock = superOut.scales[sb];
        for (let j = 0; j < 16; j++) Ls8[j] = superOut.codes[16 * sb + j];
      } else {
        dBlock = makeQxQuants(16, 32, scales, 0, Ls8, 0, 1, sw, 0);
      }
      for (let j = 0; j < 16; j++) packQ3Scales(y, o + 96, j, Ls8[j]);
      put16(y, o + 108, fp16Bits(dBlock));
    }
    return true;
  },
  chunkScales(blocks, qw) {
    if (qw === undefined) return false;
    const padded = 4 * Math.ceil(blocks / 4);
    superX.set(chunk.scales.subarray(0, 16 * blocks));
    superW.set(chunk.sw.subarray(0, 16 * blocks));
    superX.fill(0, 16 * blocks, 16 * padded);
    superW.fill(0, 16 * blocks, 16 * padded);
    if (!searchSimd("Q6_K_IM", superX, 0, 16 * padded, superW, 0, undefined, superOut)) return false;
    searchCodesSimd("Q6_K_IM", 16 * padded, superOut.codes);
    return true;
  },
  subScale(y, o, j, H) {
    const low = j < 8 ? y[o + 96 + j] & 0xf : y[o + 96 + j - 8] >> 4;
    const sc = (low | (((y[o + 104 + (j % 4)] >> (2 * (j >> 2))) & 3) << 4)) - 32;
    return fr(H[y[o + 108] | (y[o + 109] << 8)] * sc);
  },
  pack(y, o) {
    // The third bit of element j goes to bit (j / 32) of hmask byte j % 32.
    for (let k = 0; k < 32; k++) y[o + k] = 0;
    for (let j = 0; j < 256; j++) {
      if (L8[j] > 3) {
        y[o + (j & 31)] |= 1 << (j >> 5);
        L8[j] -= 4;
      }
    }
    pack2(L8, y, o + 32);
  },
});

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

/** quantize_row_q4_K's (nmax 15) and q5_K's (nmax 31) steps but the packing. */
function qk(nmax: number): Omit<KQuant, "size" | "pack"> {
  return {
    subs: 8, L: LU, lo: 0, hi: nmax, offset: 0, withMin: true, kernels: nmax === 15 ? ["Q4_K", "Q4_K_IM"] : ["Q5_K", "Q5_K_IM"], sigma2: sigma2K,
    search(x, s, b, qw) {
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
    },
    superScales(y, o, qw) {
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
      return true;
    },
    subScale(y, o, j, H) {
      // get_scale_min_k4.
      const at = o + 4;
      const sc = j < 4 ? y[at + j] & 63 : (y[at + j + 4] & 0xf) | ((y[at + j - 4] >> 6) << 4);
      const m = j < 4 ? y[at + j + 4] & 63 : (y[at + j + 4] >> 4) | ((y[at + j] >> 6) << 4);
      ml = fr(H[y[o + 2] | (y[o + 3] << 8)] * m);
      return fr(H[y[o] | (y[o + 1] << 8)] * sc);
    },
  };
}

export const q4_K: RowEncoder = encoder({
  ...qk(15), size: 144,
  pack(y, o) {
    for (let j = 0, q = o + 16; j < 256; j += 64, q += 32) {
      for (let l = 0; l < 32; l++) y[q + l] = LU[j + l] | (LU[j + l + 32] << 4);
    }
  },
});

export const q5_K: RowEncoder = encoder({
  ...qk(31), size: 176,
  pack(y, o) {
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
  },
});

export const q6_K: RowEncoder = encoder({
  size: 210, subs: 16, L: L8, lo: -32, hi: 31, offset: 32, withMin: false, kernels: ["Q6_K", "Q6_K_IM"],
  search(x, s, b, qw) {
    for (let ib = 0; ib < 16; ib++) scales[ib] = makeQxQuants(16, 32, x, s + 16 * ib, L8, 16 * ib, 1, qw, b + 16 * ib);
  },
  superScales(y, o) {
    let maxScale = 0;
    let maxAbs = 0;
    for (let ib = 0; ib < 16; ib++) {
      const a = Math.abs(scales[ib]);
      if (a > maxAbs) { maxAbs = a; maxScale = scales[ib]; }
    }
    if (maxAbs < GROUP_MAX_EPS) {
      y.fill(0, o, o + 210);
      return false;
    }
    const iscale = fr(-128 / maxScale);
    put16(y, o + 208, fp16Bits(fr(1 / iscale)));
    for (let ib = 0; ib < 16; ib++) y[o + 192 + ib] = Math.min(127, nearestInt(fr(iscale * scales[ib])));
    return true;
  },
  subScale(y, o, j, H) {
    return fr(H[y[o + 208] | (y[o + 209] << 8)] * ((y[o + 192 + j] << 24) >> 24));
  },
  pack(y, o) {
    for (let j = 0, ql = o, qh = o + 128; j < 256; j += 128, ql += 64, qh += 32) {
      for (let l = 0; l < 32; l++) {
        const a = L8[j + l], c = L8[j + l + 32], e = L8[j + l + 64], g = L8[j + l + 96];
        y[ql + l] = (a & 0xf) | ((e & 0xf) << 4);
        y[ql + l + 32] = (c & 0xf) | ((g & 0xf) << 4);
        y[qh + l] = (a >> 4) | ((c >> 4) << 2) | ((e >> 4) << 4) | ((g >> 4) << 6);
      }
    }
  },
});
