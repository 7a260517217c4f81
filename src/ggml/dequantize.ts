/**
 * One reference decoder per GGML type: blocks of raw little-endian bytes to float32, bit for bit what
 * ggml's `dequantize_row_*` (ggml-quants.c, the `to_float` of ggml_get_type_traits) gives when
 * compiled without fused multiply-adds. Every C float operation is one float32 rounding here, in the
 * C code's order: `a * b - c` is fround(fround(a * b) - c). A double product of two float32 values
 * is exact and rounding it once gives the float32 product, and a double sum rounded to float32 is
 * the float32 sum (53 >= 2 * 24 + 2), so each step is fround of the double operation, and a store
 * into a Float32Array is the last fround.
 *
 * NaN in a scale (a binary16 NaN code) gives NaN elements, as in C; payloads are not meaningful.
 * The plain types (F32, F16, BF16, F64, I8 ... I64) go through tensorcast's Cast to float32, which
 * rounds once to nearest-even (C's conversion).
 *
 * dequantizeBlocks (and so dequantizeGgml) runs the WebAssembly SIMD kernel of the type first where
 * there is one (simd.ts: the same bits, tested against these decoders), and these decoders otherwise.
 *
 * Browser-safe: no Node built-ins.
 */
import { dtype, type DType, type Storage } from "../dtype/table.js";
import { TensorcastError } from "../errors.js";
import { convert } from "../kernels/convert.js";
import { iqGrids } from "./grids.js";
import { GGML_FP4_DOUBLED, IQ4_NL_LEVELS } from "./levels.js";
import { e8m0Half, halfValues, ue4m3Half } from "./scalars.js";
import { dequantizeSimd } from "./simd.js";
import { GGML_TYPES, ggmlType, QK_K, type GgmlType, type GgmlTypeName } from "./types.js";

const fr = Math.fround;

const IQ4NL = Int8Array.from(IQ4_NL_LEVELS);
const FP4 = Int8Array.from(GGML_FP4_DOUBLED);

/** Decodes `blocks` blocks starting at byte `s` of `x` into `y` from index `o`. */
type BlockDecoder = (x: Uint8Array, s: number, y: Float32Array, o: number, blocks: number) => void;

function u16(x: Uint8Array, at: number): number {
  return x[at] | (x[at + 1] << 8);
}

function u32(x: Uint8Array, at: number): number {
  return (x[at] | (x[at + 1] << 8) | (x[at + 2] << 16) | (x[at + 3] << 24)) >>> 0;
}

function i8(b: number): number {
  return (b << 24) >> 24;
}

const q4_0: BlockDecoder = (x, s, y, o, blocks) => {
  const H = halfValues();
  for (let i = 0; i < blocks; i++, s += 18, o += 32) {
    const d = H[u16(x, s)];
    for (let j = 0; j < 16; j++) {
      const b = x[s + 2 + j];
      y[o + j] = ((b & 15) - 8) * d;
      y[o + j + 16] = ((b >> 4) - 8) * d;
    }
  }
};

const q4_1: BlockDecoder = (x, s, y, o, blocks) => {
  const H = halfValues();
  for (let i = 0; i < blocks; i++, s += 20, o += 32) {
    const d = H[u16(x, s)];
    const m = H[u16(x, s + 2)];
    for (let j = 0; j < 16; j++) {
      const b = x[s + 4 + j];
      y[o + j] = fr((b & 15) * d) + m;
      y[o + j + 16] = fr((b >> 4) * d) + m;
    }
  }
};

/** Q5_0 and Q5_1: the fifth bits of element j and j + 16 are bits j and j + 16 of the word qh. */
function q5(x: Uint8Array, s: number, y: Float32Array, o: number, blocks: number, withMin: boolean): void {
  const H = halfValues();
  const size = withMin ? 24 : 22;
  const qhAt = withMin ? 4 : 2;
  for (let i = 0; i < blocks; i++, s += size, o += 32) {
    const d = H[u16(x, s)];
    const qh = u32(x, s + qhAt);
    const qs = s + qhAt + 4;
    if (withMin) {
      const m = H[u16(x, s + 2)];
      for (let j = 0; j < 16; j++) {
        const b = x[qs + j];
        y[o + j] = fr(((b & 15) | (((qh >>> j) << 4) & 0x10)) * d) + m;
        y[o + j + 16] = fr(((b >> 4) | ((qh >>> (j + 12)) & 0x10)) * d) + m;
      }
    } else {
      for (let j = 0; j < 16; j++) {
        const b = x[qs + j];
        y[o + j] = (((b & 15) | (((qh >>> j) << 4) & 0x10)) - 16) * d;
        y[o + j + 16] = (((b >> 4) | ((qh >>> (j + 12)) & 0x10)) - 16) * d;
      }
    }
  }
}

const q8_0: BlockDecoder = (x, s, y, o, blocks) => {
  const H = halfValues();
  const q = new Int8Array(x.buffer, x.byteOffset, x.length);
  for (let i = 0; i < blocks; i++, s += 34, o += 32) {
    const d = H[x[s] | (x[s + 1] << 8)];
    for (let j = 0; j < 32; j++) y[o + j] = q[s + 2 + j] * d;
  }
};

const q2_K: BlockDecoder = (x, s, y, o, blocks) => {
  const H = halfValues();
  for (let i = 0; i < blocks; i++, s += 84) {
    const d = H[u16(x, s + 80)];
    const min = H[u16(x, s + 82)];
    let is = s;
    for (let n = 0; n < 256; n += 128) {
      const q = s + 16 + n / 4;
      for (let shift = 0; shift < 8; shift += 2) {
        for (let half = 0; half < 32; half += 16) {
          const sc = x[is++];
          const dl = fr(d * (sc & 15));
          const ml = fr(min * (sc >> 4));
          for (let l = 0; l < 16; l++) y[o++] = fr(dl * ((x[q + half + l] >> shift) & 3)) - ml;
        }
      }
    }
  }
};

const q3_K: BlockDecoder = (x, s, y, o, blocks) => {
  const H = halfValues();
  const scales = new Int32Array(16);
  for (let i = 0; i < blocks; i++, s += 110) {
    const dAll = H[u16(x, s + 108)];
    // Sixteen 6-bit scales: low 4 bits from the first 8 bytes, high 2 bits from the last 4.
    const a0 = u32(x, s + 96), a1 = u32(x, s + 100), tmp = u32(x, s + 104);
    const w0 = (a0 & 0x0f0f0f0f) | (((tmp >>> 0) & 0x03030303) << 4);
    const w1 = (a1 & 0x0f0f0f0f) | (((tmp >>> 2) & 0x03030303) << 4);
    const w2 = ((a0 >>> 4) & 0x0f0f0f0f) | (((tmp >>> 4) & 0x03030303) << 4);
    const w3 = ((a1 >>> 4) & 0x0f0f0f0f) | (((tmp >>> 6) & 0x03030303) << 4);
    for (let k = 0; k < 4; k++) {
      scales[k] = ((w0 >>> (8 * k)) & 0xff) - 32;
      scales[k + 4] = ((w1 >>> (8 * k)) & 0xff) - 32;
      scales[k + 8] = ((w2 >>> (8 * k)) & 0xff) - 32;
      scales[k + 12] = ((w3 >>> (8 * k)) & 0xff) - 32;
    }
    let is = 0;
    let bit = 0;
    for (let n = 0; n < 256; n += 128) {
      const q = s + 32 + n / 4;
      for (let shift = 0; shift < 8; shift += 2, bit++) {
        for (let half = 0; half < 32; half += 16) {
          const dl = fr(dAll * scales[is++]);
          // q - (hmask bit ? 0 : 4) without a branch: random bits would mispredict half the time.
          for (let l = 0; l < 16; l++) {
            y[o++] = dl * (((x[q + half + l] >> shift) & 3) + (((x[s + half + l] >> bit) & 1) << 2) - 4);
          }
        }
      }
    }
  }
};

/**
 * get_scale_min_k4 for all eight j of a Q4_K / Q5_K block (scales at byte `at`): each block's
 * d * scale into dl[j] and dmin * min into ml[j].
 */
function scalesMins(x: Uint8Array, at: number, d: number, min: number, dl: Float64Array, ml: Float64Array): void {
  for (let j = 0; j < 4; j++) {
    dl[j] = fr(d * (x[at + j] & 63));
    ml[j] = fr(min * (x[at + j + 4] & 63));
    dl[j + 4] = fr(d * ((x[at + j + 8] & 0xf) | ((x[at + j] >> 6) << 4)));
    ml[j + 4] = fr(min * ((x[at + j + 8] >> 4) | ((x[at + j + 4] >> 6) << 4)));
  }
}

/** Q4_K and Q5_K: eight groups of 32, each d * scale * q - dmin * min. */
function qk(x: Uint8Array, s: number, y: Float32Array, o: number, blocks: number, five: boolean): void {
  const H = halfValues();
  const dl = new Float64Array(8), ml = new Float64Array(8);
  const size = five ? 176 : 144;
  for (let i = 0; i < blocks; i++, s += size) {
    scalesMins(x, s + 4, H[u16(x, s)], H[u16(x, s + 2)], dl, ml);
    const qh = s + 16;
    let ql = five ? s + 48 : s + 16;
    for (let j = 0; j < 8; j += 2, ql += 32) {
      const d1 = dl[j], m1 = ml[j], d2 = dl[j + 1], m2 = ml[j + 1];
      if (five) {
        // The fifth bit without a branch: random bits would mispredict half the time.
        for (let l = 0; l < 32; l++) y[o++] = fr(d1 * ((x[ql + l] & 15) | (((x[qh + l] >> j) & 1) << 4))) - m1;
        for (let l = 0; l < 32; l++) y[o++] = fr(d2 * ((x[ql + l] >> 4) | (((x[qh + l] >> (j + 1)) & 1) << 4))) - m2;
      } else {
        for (let l = 0; l < 32; l++) y[o++] = fr(d1 * (x[ql + l] & 15)) - m1;
        for (let l = 0; l < 32; l++) y[o++] = fr(d2 * (x[ql + l] >> 4)) - m2;
      }
    }
  }
}

const q6_K: BlockDecoder = (x, s, y, o, blocks) => {
  const H = halfValues();
  for (let i = 0; i < blocks; i++, s += 210) {
    const d = H[u16(x, s + 208)];
    for (let n = 0; n < 256; n += 128, o += 128) {
      const ql = s + n / 2, qh = s + 128 + n / 4, sc = s + 192 + n / 16;
      for (let l = 0; l < 32; l++) {
        const is = l >> 4;
        const h = x[qh + l];
        const q1 = ((x[ql + l] & 15) | ((h & 3) << 4)) - 32;
        const q2 = ((x[ql + l + 32] & 15) | (((h >> 2) & 3) << 4)) - 32;
        const q3 = ((x[ql + l] >> 4) | (((h >> 4) & 3) << 4)) - 32;
        const q4 = ((x[ql + l + 32] >> 4) | (((h >> 6) & 3) << 4)) - 32;
        y[o + l] = fr(d * i8(x[sc + is])) * q1;
        y[o + l + 32] = fr(d * i8(x[sc + is + 2])) * q2;
        y[o + l + 64] = fr(d * i8(x[sc + is + 4])) * q3;
        y[o + l + 96] = fr(d * i8(x[sc + is + 6])) * q4;
      }
    }
  }
};

const q8_K: BlockDecoder = (x, s, y, o, blocks) => {
  const f = new Float32Array(1);
  const fb = new Uint8Array(f.buffer);
  for (let i = 0; i < blocks; i++, s += 292, o += 256) {
    fb.set(x.subarray(s, s + 4));
    const d = f[0];
    for (let j = 0; j < 256; j++) y[o + j] = i8(x[s + 4 + j]) * d;
  }
};

/** Eight elements of a 2-bit IQ grid point, each db * level, negated where its sign bit is set. */
function signed8(y: Float32Array, o: number, db: number, grid: Uint8Array, point: number, signs: number): void {
  const g = point * 8;
  // The sign as a factor of +-1 (exact), not a branch on random bits.
  for (let j = 0; j < 8; j++) y[o + j] = fr(db * grid[g + j]) * (1 - ((signs >> j) & 1) * 2);
}

const iq2_xxs: BlockDecoder = (x, s, y, o, blocks) => {
  const H = halfValues();
  const { iq2xxs, signs } = iqGrids();
  for (let i = 0; i < blocks; i++, s += 66) {
    const d = H[u16(x, s)];
    for (let ib = 0; ib < 8; ib++) {
      const at = s + 2 + 8 * ib;
      const a1 = u32(x, at + 4);
      const db = fr(fr(d * (0.5 + (a1 >>> 28))) * 0.25);
      for (let l = 0; l < 4; l++, o += 8) signed8(y, o, db, iq2xxs, x[at + l], signs[(a1 >>> (7 * l)) & 127]);
    }
  }
};

const iq2_xs: BlockDecoder = (x, s, y, o, blocks) => {
  const H = halfValues();
  const { iq2xs, signs } = iqGrids();
  for (let i = 0; i < blocks; i++, s += 74) {
    const d = H[u16(x, s)];
    for (let ib = 0; ib < 8; ib++) {
      const sc = x[s + 66 + ib];
      const db0 = fr(fr(d * (0.5 + (sc & 15))) * 0.25);
      const db1 = fr(fr(d * (0.5 + (sc >> 4))) * 0.25);
      for (let l = 0; l < 4; l++, o += 8) {
        const q = u16(x, s + 2 + 2 * (4 * ib + l));
        signed8(y, o, l < 2 ? db0 : db1, iq2xs, q & 511, signs[q >> 9]);
      }
    }
  }
};

const iq2_s: BlockDecoder = (x, s, y, o, blocks) => {
  const H = halfValues();
  const { iq2s } = iqGrids();
  for (let i = 0; i < blocks; i++, s += 82) {
    const d = H[u16(x, s)];
    for (let ib = 0; ib < 8; ib++) {
      const sc = x[s + 74 + ib];
      const db0 = fr(fr(d * (0.5 + (sc & 15))) * 0.25);
      const db1 = fr(fr(d * (0.5 + (sc >> 4))) * 0.25);
      const qh = x[s + 66 + ib];
      for (let l = 0; l < 4; l++, o += 8) {
        const point = x[s + 2 + 4 * ib + l] | ((qh << (8 - 2 * l)) & 0x300);
        signed8(y, o, l < 2 ? db0 : db1, iq2s, point, x[s + 34 + 4 * ib + l]);
      }
    }
  }
};

/** Two 4-element IQ3 grid points under one 8-bit sign set. */
function signed4x2(y: Float32Array, o: number, db: number, grid: Uint8Array, p1: number, p2: number, signs: number): void {
  for (let j = 0; j < 4; j++) {
    y[o + j] = fr(db * grid[4 * p1 + j]) * (1 - ((signs >> j) & 1) * 2);
    y[o + j + 4] = fr(db * grid[4 * p2 + j]) * (1 - ((signs >> (j + 4)) & 1) * 2);
  }
}

const iq3_xxs: BlockDecoder = (x, s, y, o, blocks) => {
  const H = halfValues();
  const { iq3xxs, signs } = iqGrids();
  for (let i = 0; i < blocks; i++, s += 98) {
    const d = H[u16(x, s)];
    for (let ib = 0; ib < 8; ib++) {
      const aux = u32(x, s + 66 + 4 * ib);
      const db = fr(fr(d * (0.5 + (aux >>> 28))) * 0.5);
      const qs = s + 2 + 8 * ib;
      for (let l = 0; l < 4; l++, o += 8) signed4x2(y, o, db, iq3xxs, x[qs + 2 * l], x[qs + 2 * l + 1], signs[(aux >>> (7 * l)) & 127]);
    }
  }
};

const iq3_s: BlockDecoder = (x, s, y, o, blocks) => {
  const H = halfValues();
  const { iq3s } = iqGrids();
  for (let i = 0; i < blocks; i++, s += 110) {
    const d = H[u16(x, s)];
    let qs = s + 2, qh = s + 66, sg = s + 74;
    for (let ib = 0; ib < 8; ib += 2) {
      const sc = x[s + 106 + ib / 2];
      const db0 = fr(d * (1 + 2 * (sc & 15))), db1 = fr(d * (1 + 2 * (sc >> 4)));
      for (let half = 0; half < 2; half++, qs += 8, sg += 4) {
        const h = x[qh + half];
        const db = half === 0 ? db0 : db1;
        for (let l = 0; l < 4; l++, o += 8) {
          const p1 = x[qs + 2 * l] | ((h << (8 - 2 * l)) & 256);
          const p2 = x[qs + 2 * l + 1] | ((h << (7 - 2 * l)) & 256);
          signed4x2(y, o, db, iq3s, p1, p2, x[sg + l]);
        }
      }
      qh += 2;
    }
  }
};

const IQ1_DELTA = 0.125;

const iq1_s: BlockDecoder = (x, s, y, o, blocks) => {
  const H = halfValues();
  const { iq1s } = iqGrids();
  for (let i = 0; i < blocks; i++, s += 50) {
    const d = H[u16(x, s)];
    for (let ib = 0; ib < 8; ib++) {
      const qh = u16(x, s + 34 + 2 * ib);
      const dl = fr(d * (2 * ((qh >> 12) & 7) + 1));
      const delta = qh & 0x8000 ? -IQ1_DELTA : IQ1_DELTA;
      for (let l = 0; l < 4; l++, o += 8) {
        const g = 8 * (x[s + 2 + 4 * ib + l] | (((qh >> (3 * l)) & 7) << 8));
        for (let j = 0; j < 8; j++) y[o + j] = dl * (iq1s[g + j] + delta);
      }
    }
  }
};

const iq1_m: BlockDecoder = (x, s, y, o, blocks) => {
  const H = halfValues();
  const { iq1s } = iqGrids();
  const sc = new Int32Array(4);
  for (let i = 0; i < blocks; i++, s += 56) {
    for (let k = 0; k < 4; k++) sc[k] = u16(x, s + 48 + 2 * k);
    // The block's binary16 scale is spread over the top nibbles of the four scale words.
    const d = H[(sc[0] >> 12) | ((sc[1] >> 8) & 0x00f0) | ((sc[2] >> 4) & 0x0f00) | (sc[3] & 0xf000)];
    for (let ib = 0; ib < 8; ib++) {
      const w = sc[ib >> 1] >> (6 * (ib & 1));
      const dl1 = fr(d * (2 * (w & 7) + 1));
      const dl2 = fr(d * (2 * ((w >> 3) & 7) + 1));
      const qs = s + 4 * ib;
      for (let l = 0; l < 4; l++, o += 8) {
        // Grid point l: 8 bits from qs, 3 from the low (even l) or high (odd l) nibble of its qh byte,
        // whose fourth bit is the delta's sign.
        const h = x[s + 32 + 2 * ib + (l >> 1)] >> (4 * (l & 1));
        const dl = l < 2 ? dl1 : dl2;
        const delta = h & 0x08 ? -IQ1_DELTA : IQ1_DELTA;
        const g = 8 * (x[qs + l] | ((h << 8) & 0x700));
        for (let j = 0; j < 8; j++) y[o + j] = dl * (iq1s[g + j] + delta);
      }
    }
  }
};

const iq4_nl: BlockDecoder = (x, s, y, o, blocks) => {
  const H = halfValues();
  for (let i = 0; i < blocks; i++, s += 18, o += 32) {
    const d = H[u16(x, s)];
    for (let j = 0; j < 16; j++) {
      const b = x[s + 2 + j];
      y[o + j] = d * IQ4NL[b & 15];
      y[o + j + 16] = d * IQ4NL[b >> 4];
    }
  }
};

const iq4_xs: BlockDecoder = (x, s, y, o, blocks) => {
  const H = halfValues();
  for (let i = 0; i < blocks; i++, s += 136) {
    const d = H[u16(x, s)];
    const sh = u16(x, s + 2);
    for (let ib = 0; ib < 8; ib++, o += 32) {
      const ls = ((x[s + 4 + (ib >> 1)] >> (4 * (ib & 1))) & 15) | (((sh >> (2 * ib)) & 3) << 4);
      const dl = fr(d * (ls - 32));
      const qs = s + 8 + 16 * ib;
      for (let j = 0; j < 16; j++) {
        y[o + j] = dl * IQ4NL[x[qs + j] & 15];
        y[o + j + 16] = dl * IQ4NL[x[qs + j] >> 4];
      }
    }
  }
};

/**
 * TQ1_0's base-3 digits: a byte is a fixed-point fraction, and its digit n (its n-th ternary place)
 * is ((b * 3^n mod 256) * 3 >> 8) - 1.
 */
const tq1_0: BlockDecoder = (x, s, y, o, blocks) => {
  const H = halfValues();
  for (let i = 0; i < blocks; i++, s += 54) {
    const d = H[u16(x, s + 52)];
    // 48 bytes of five digits: the first 32 bytes as one run, the last 16 as another; then 4 of four.
    for (let pow3 = 1, n = 0; n < 5; n++, pow3 *= 3) for (let m = 0; m < 32; m++) y[o++] = (((((x[s + m] * pow3) & 0xff) * 3) >> 8) - 1) * d;
    for (let pow3 = 1, n = 0; n < 5; n++, pow3 *= 3) for (let m = 32; m < 48; m++) y[o++] = (((((x[s + m] * pow3) & 0xff) * 3) >> 8) - 1) * d;
    for (let pow3 = 1, n = 0; n < 4; n++, pow3 *= 3) for (let j = 48; j < 52; j++) y[o++] = (((((x[s + j] * pow3) & 0xff) * 3) >> 8) - 1) * d;
  }
};

const tq2_0: BlockDecoder = (x, s, y, o, blocks) => {
  const H = halfValues();
  for (let i = 0; i < blocks; i++, s += 66) {
    const d = H[u16(x, s + 64)];
    for (let j = 0; j < 64; j += 32) {
      for (let shift = 0; shift < 8; shift += 2) for (let m = 0; m < 32; m++) y[o++] = (((x[s + j + m] >> shift) & 3) - 1) * d;
    }
  }
};

const mxfp4: BlockDecoder = (x, s, y, o, blocks) => {
  for (let i = 0; i < blocks; i++, s += 17, o += 32) {
    const d = e8m0Half(x[s]);
    for (let j = 0; j < 16; j++) {
      const b = x[s + 1 + j];
      y[o + j] = FP4[b & 15] * d;
      y[o + j + 16] = FP4[b >> 4] * d;
    }
  }
};

const nvfp4: BlockDecoder = (x, s, y, o, blocks) => {
  for (let i = 0; i < blocks; i++, s += 36) {
    for (let sub = 0; sub < 4; sub++, o += 16) {
      const d = ue4m3Half(x[s + sub]);
      for (let j = 0; j < 8; j++) {
        const b = x[s + 4 + 8 * sub + j];
        y[o + j] = FP4[b & 15] * d;
        y[o + j + 8] = FP4[b >> 4] * d;
      }
    }
  }
};

const q1_0: BlockDecoder = (x, s, y, o, blocks) => {
  const H = halfValues();
  for (let i = 0; i < blocks; i++, s += 18, o += 128) {
    const d = H[u16(x, s)];
    // +-d as d times +-1 (exact), not a branch on random bits.
    for (let j = 0; j < 128; j++) y[o + j] = d * ((((x[s + 2 + (j >> 3)] >> (j & 7)) & 1) << 1) - 1);
  }
};

const q2_0: BlockDecoder = (x, s, y, o, blocks) => {
  const H = halfValues();
  for (let i = 0; i < blocks; i++, s += 18, o += 64) {
    const d = H[u16(x, s)];
    for (let j = 0; j < 64; j++) y[o + j] = (((x[s + 2 + (j >> 2)] >> (2 * (j & 3))) & 3) - 1) * d;
  }
};

/** The tensorcast type each plain GGML type is, for the Cast to float32. */
const PLAIN: Partial<Record<GgmlTypeName, DType>> = {
  F32: dtype("float32"), F16: dtype("float16"), BF16: dtype("bfloat16"), F64: dtype("float64"),
  I8: dtype("int8"), I16: dtype("int16"), I32: dtype("int32"), I64: dtype("int64"),
};

function plainView(bytes: Uint8Array, t: DType): Storage {
  const size = t.bits / 8;
  const b = bytes.byteOffset % size === 0 ? bytes : bytes.slice();
  const n = b.byteLength / size;
  switch (t.name) {
    case "float32": return new Float32Array(b.buffer, b.byteOffset, n);
    case "float64": return new Float64Array(b.buffer, b.byteOffset, n);
    case "float16": case "bfloat16": return new Uint16Array(b.buffer, b.byteOffset, n);
    case "int8": return new Int8Array(b.buffer, b.byteOffset, n);
    case "int16": return new Int16Array(b.buffer, b.byteOffset, n);
    case "int32": return new Int32Array(b.buffer, b.byteOffset, n);
    default: return new BigInt64Array(b.buffer, b.byteOffset, n);
  }
}

const F32 = dtype("float32");

function plain(t: DType): BlockDecoder {
  const size = t.bits / 8;
  return (x, s, y, o, blocks) => {
    const src = plainView(x.subarray(s, s + blocks * size), t);
    const dst = y.subarray(o, o + blocks);
    if (t.name === "float32") {
      // A bit copy: Cast would keep NaN's sign but not its payload.
      new Uint32Array(dst.buffer, dst.byteOffset, blocks).set(new Uint32Array((src as Float32Array).buffer, (src as Float32Array).byteOffset, blocks));
      return;
    }
    dst.fill(0);
    convert(src, t, dst, F32, blocks, { saturate: false, roundMode: "nearest" });
  };
}

const DECODERS: Readonly<Record<GgmlTypeName, BlockDecoder | undefined>> = {
  F32: plain(PLAIN.F32!), F16: plain(PLAIN.F16!), BF16: plain(PLAIN.BF16!), F64: plain(PLAIN.F64!),
  I8: plain(PLAIN.I8!), I16: plain(PLAIN.I16!), I32: plain(PLAIN.I32!), I64: plain(PLAIN.I64!),
  Q4_0: q4_0, Q4_1: q4_1,
  Q5_0: (x, s, y, o, n) => q5(x, s, y, o, n, false), Q5_1: (x, s, y, o, n) => q5(x, s, y, o, n, true),
  Q8_0: q8_0, Q8_1: undefined, Q2_K: q2_K, Q3_K: q3_K,
  Q4_K: (x, s, y, o, n) => qk(x, s, y, o, n, false), Q5_K: (x, s, y, o, n) => qk(x, s, y, o, n, true),
  Q6_K: q6_K, Q8_K: q8_K,
  IQ2_XXS: iq2_xxs, IQ2_XS: iq2_xs, IQ2_S: iq2_s, IQ3_XXS: iq3_xxs, IQ3_S: iq3_s, IQ1_S: iq1_s, IQ1_M: iq1_m,
  IQ4_NL: iq4_nl, IQ4_XS: iq4_xs, TQ1_0: tq1_0, TQ2_0: tq2_0, MXFP4: mxfp4, NVFP4: nvfp4, Q1_0: q1_0, Q2_0: q2_0,
};

/** Whether tensorcast decodes `t` (every type files carry; not Q8_1, which ggml does not decode either). */
export function canDequantize(t: GgmlType): boolean {
  return DECODERS[t.name] !== undefined;
}

/**
 * Decodes `blocks` whole blocks of `t` from byte `srcAt` of `src` into `out` from element `outAt`:
 * the unchecked kernel under `dequantizeGgml`, for callers that stream a tensor in pieces.
 */
export function dequantizeBlocks(t: GgmlType, src: Uint8Array, srcAt: number, out: Float32Array, outAt: number, blocks: number): void {
  const decode = DECODERS[t.name];
  if (decode === undefined) throw new TensorcastError("UNSUPPORTED_TYPE", `GGML type ${t.name} has no decoder (ggml has none either: it is a dot-product intermediate)`);
  // No blocks, nothing to read (the buffer may even be detached: views of it cannot be made).
  if (blocks <= 0) return;
  if (!dequantizeSimd(t, src, srcAt, out, outAt, blocks)) decode(src, srcAt, out, outAt, blocks);
}

/**
 * Dequantizes raw little-endian blocks of a GGML type to float32, bit for bit as ggml's
 * `dequantize_row_*`. `type` is a row of GGML_TYPES or a name in any case ("q4_k").
 * @example dequantizeGgml("Q8_0", block) // 34 bytes -> Float32Array(32): each code times the fp16 scale
 * @throws TensorcastError UNKNOWN_DTYPE for a name that is no GGML type, UNSUPPORTED_TYPE for Q8_1,
 *         SHAPE_MISMATCH when the bytes are not whole blocks or `out` has not one element per value.
 */
export function dequantizeGgml(type: GgmlType | string, bytes: Uint8Array, out?: Float32Array): Float32Array {
  const t = typeof type === "string" ? ggmlType(type) : type;
  if (!GGML_TYPES.includes(t)) throw new TensorcastError("INVALID_ATTRIBUTE", "dequantizeGgml's type must be a GGML type name or a row of GGML_TYPES");
  if (!(bytes instanceof Uint8Array)) throw new TensorcastError("INVALID_ATTRIBUTE", `dequantizeGgml takes a Uint8Array of ${t.name} blocks`);
  if (bytes.byteLength % t.typeSize !== 0) {
    throw new TensorcastError("SHAPE_MISMATCH", `${bytes.byteLength} bytes are not whole ${t.name} blocks of ${t.typeSize} bytes`);
  }
  const blocks = bytes.byteLength / t.typeSize;
  const y: unknown = out === undefined ? new Float32Array(blocks * t.blockSize) : out;
  if (!(y instanceof Float32Array) || y.length !== blocks * t.blockSize) {
    throw new TensorcastError("SHAPE_MISMATCH", `${blocks} ${t.name} blocks hold ${blocks * t.blockSize} values; out must be a Float32Array of that length`);
  }
  dequantizeBlocks(t, bytes, 0, y, 0, blocks);
  return y;
}

export { QK_K, GGML_FP4_DOUBLED, IQ4_NL_LEVELS };
