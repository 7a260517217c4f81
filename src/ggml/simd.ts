/**
 * WebAssembly SIMD decoders of GGML's block types, each giving exactly the bits of its reference
 * decoder in dequantize.ts (and so of ggml's dequantize_row_*), or declining (false, nothing
 * written) where WebAssembly SIMD is absent, the type has no kernel, or `useGgmlSimd(false)`.
 *
 * Float32 semantics are the C code's: every C float operation is one f32x4 operation (mul, sub,
 * add: one rounding each, no fused multiply-add, no relaxed SIMD), in the C code's order. Codes are
 * small integers, unpacked with byte and 16-bit lane operations and made float32 exactly by
 * i32x4 -> f32x4 conversion. Scales: binary16 by integer operations on the bits (subnormals as
 * m * 2^-24, Inf and NaN kept), once per block in scalar code; K-quants' packed 6-bit scales and
 * mins by shuffles and masks, all of one block at once, times the block's scale in f32x4 lanes.
 * Non-linear levels (IQ4_NL, MXFP4) are a 16-entry byte table looked up by i8x16.swizzle.
 *
 * Each kernel is (src, dst, blocks, zero) -> (): `blocks` blocks from byte address src to float32
 * at dst, with `zero` 0 (its constants are built from it before the loop, so that V8 keeps them
 * in registers rather than rebuilding each inside the loop). Loads may read up to 16 bytes past a
 * block's end (never written): in a private memory that is slack, in an arena the memory's last
 * page, which no storage owns.
 *
 * Ordinary arrays are streamed through a private memory (copy the blocks in, decode, copy the
 * float32 out); when the blocks and the output live in one arena (src/arena.ts), the kernels are
 * instantiated on the arena's memory and decode in place, with no copy.
 *
 * Browser-safe; built from source at run time like ../kernels/wasm (no generated file).
 */
import {
  and, extendHighS16, extendHighS8, extendHighU16, extendHighU8, extendLowS16, extendLowS8, extendLowU16, extendLowU8,
  f32Bits, f32ConvertS, f32Mul, f32OfI32Bits, f32x4Add, f32x4ConvertS, f32x4Ge, f32x4Mul, f32x4Splat, f32x4Sub, get, i16x8Mul, i16x8Shl, i16x8ShrU, i16x8Sub,
  i32, i32Add, i32And, i32Eq, i32Eqz, i32GeU, i32LtU, i32OfF32Bits, i32Or, i32Shl, i32ShrU, i32Sub, i32x4ReplaceLane, i32x4ShrS, i32x4ShrU,
  i32x4Eq, i32x4Shl, i32x4Splat, i8x16Eq, i8x16Sub, load, load32Splat, load32Zero, load8x8S, load8x8U, loadI32, xor, loadU16, loadU8, moduleBytes, or, pick, set, shuffle, store,
  repeatWhile, swizzle, v128Const, type Code, type Func,
} from "../kernels/wasm/encoder.js";
import type { WasmApi } from "../kernels/wasm/index.js";
import { residentMemoryOf, type WasmMemory } from "../kernels/wasm/resident.js";
import { staggered } from "../kernels/wasm/stagger.js";
import { iqGrids } from "./grids.js";
import { GGML_FP4_DOUBLED, IQ4_NL_LEVELS } from "./levels.js";
import type { GgmlType, GgmlTypeName } from "./types.js";

const PAGE = 65536;

// Parameters, then i32 scratch for the scalar scale decoding, then v128 locals.
const SRC = 0;
const DST = 1;
const BLOCKS = 2;
const ZERO = 3;
const H = 4;
const A = 5;
/** A block's packed word (IQ2_XXS, IQ3_XXS) or qh byte (IQ2_S, IQ3_S). */
const B = 6;
const I32_LOCALS = 3;
const FIRST_V128 = 7;

/** One kernel's v128 locals: named temporaries and constants (built from `zero` before the loop). */
class Kernel {
  private next = FIRST_V128;
  private readonly constants = new Map<string, number>();
  /** A fresh v128 local. */
  v(): number {
    return this.next++;
  }
  /** A constant of four 32-bit lanes (one value: a splat). */
  c = (w0: number, w1 = w0, w2 = w0, w3 = w0): Code => {
    const words = [w0, w1, w2, w3].map((w) => w | 0);
    const key = words.join(",");
    let i = this.constants.get(key);
    if (i === undefined) {
      i = this.v();
      this.constants.set(key, i);
    }
    return get(i);
  };
  func(name: string, body: Code): Func {
    const prologue: Code[] = [];
    for (const [key, i] of this.constants) {
      const words = key.split(",").map(Number);
      let v = i32x4Splat(i32Add(get(ZERO), i32(words[0])));
      for (let lane = 1; lane < 4; lane++) if (words[lane] !== words[0]) v = i32x4ReplaceLane(v, lane, i32Add(get(ZERO), i32(words[lane])));
      prologue.push(set(i, v));
    }
    return { name, params: 4, i32Locals: I32_LOCALS, v128Locals: this.next - FIRST_V128, body: [...prologue.flat(), ...body] };
  }
}

/** The four bytes b0..b3 as a little-endian 32-bit word. */
const word = (b: readonly number[], at: number): number => (b[at] & 0xff) | ((b[at + 1] & 0xff) << 8) | ((b[at + 2] & 0xff) << 16) | ((b[at + 3] & 0xff) << 24);
/** A byte table (16 entries) as a constant. */
const table16 = (k: Kernel, bytes: readonly number[]): Code => k.c(word(bytes, 0), word(bytes, 4), word(bytes, 8), word(bytes, 12));
const bytes4 = (b: number): number => (b & 0xff) * 0x01010101;

/**
 * The float32 of the binary16 code `h` (an i32 expression), on the stack: exact, as
 * ggml_compute_fp16_to_fp32 (subnormals m * 2^-24, Inf, NaN with its payload shifted up).
 */
function half(h: Code): Code {
  const a = get(A);
  const subnormal = i32OfF32Bits(f32Mul(f32ConvertS(a), f32Bits(0x33800000))); // m * 2^-24
  const other = i32Add(i32Shl(a, i32(13)), pick(i32(0x70000000), i32(0x38000000), i32GeU(a, i32(0x7c00))));
  return [
    ...set(H, h),
    ...set(A, i32And(get(H), i32(0x7fff))),
    ...f32OfI32Bits(i32Or(pick(subnormal, other, i32LtU(a, i32(0x400))), i32Shl(i32And(get(H), i32(0x8000)), i32(16)))),
  ];
}

/**
 * The float32 of the binary16 codes in the low 16 bits of each 32-bit lane of `h` (the high bits
 * zero), as half() gives it, in f32x4 lanes: sign and the 15 other bits moved to float32's places
 * (sign | (h & 0x7fff) << 13) and multiplied by 2^112, exact (a power of two, the product a normal
 * float32: subnormals become m * 2^-136 * 2^112 = m * 2^-24); Inf and NaN, whose product is at least
 * 2^16, get the all-ones exponent back, their payload kept. Eight operations for four codes, where
 * half() is two dozen scalar ones for each.
 */
function halfLanes(k: Kernel, h: Code): Code {
  const f = k.v();
  return [
    ...set(f, f32x4Mul(and(i32x4ShrS(i32x4Shl(h, 16), 3), k.c(0x8fffe000)), k.c(0x77800000))), // times 2^112
    ...or(get(f), and(f32x4Ge(and(get(f), k.c(0x7fffffff)), k.c(0x47800000)), k.c(0x7f800000))), // |f| >= 2^16
  ];
}

/** Lane `lane` of the 32-bit lanes of local `v`, in all four lanes. */
const splatLane = (v: number, lane: number): Code => shuffle(get(v), get(v), [0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3].map((b) => 4 * lane + b));

/** What follows the product of each element: nothing, minus a local (K-quants' mins) or plus one (Q4_1's m). */
type After = undefined | { readonly sub: number } | { readonly add: number };

/**
 * 16 codes (bytes of the i8x16 expression `codes`, signed or unsigned) -> 16 float32 at dst + `off`:
 * each float(code) * local `scale` (one rounding), then `after`. Uses locals `t.c` and `t.w`.
 */
function emit16(t: Temps, codes: Code, signed: boolean, scale: number, after: After, off: number): Code {
  const [lo8, hi8, lo16, hi16] = signed ? [extendLowS8, extendHighS8, extendLowS16, extendHighS16] : [extendLowU8, extendHighU8, extendLowU16, extendHighU16];
  const value = (lanes: Code): Code => {
    const product = f32x4Mul(f32x4ConvertS(lanes), get(scale));
    if (after === undefined) return product;
    return "sub" in after ? f32x4Sub(product, get(after.sub)) : f32x4Add(product, get(after.add));
  };
  return [
    ...set(t.c, codes),
    ...set(t.w, lo8(get(t.c))),
    ...store(get(DST), value(lo16(get(t.w))), off),
    ...store(get(DST), value(hi16(get(t.w))), off + 16),
    ...set(t.w, hi8(get(t.c))),
    ...store(get(DST), value(lo16(get(t.w))), off + 32),
    ...store(get(DST), value(hi16(get(t.w))), off + 48),
  ];
}

interface Temps {
  readonly c: number;
  readonly w: number;
}

/**
 * The kernels' loop over `blocks` blocks: `body`, then src and dst advanced by one block. Tested at
 * its end (repeatWhile) so that the constants stay out of the loop.
 */
function blockLoop(body: Code[], srcStep: number, dstStep: number): Code {
  return repeatWhile(BLOCKS, [
    ...body.flat(),
    ...set(SRC, i32Add(get(SRC), i32(srcStep))),
    ...set(DST, i32Add(get(DST), i32(dstStep))),
    ...set(BLOCKS, i32Sub(get(BLOCKS), i32(1))),
  ]);
}

/**
 * Bytes 4q .. 4q + 3 of `v`, each in the low byte of a 32-bit lane (the rest zero): one
 * i8x16.swizzle whose indices are a v128.const, so that V8 emits a lone pshufb (indices it cannot
 * see cost a saturating add first), where widening by extends costs six instructions per 16 bytes.
 */
const bytesToLanes = (v: Code, q: number): Code =>
  swizzle(v, v128Const(Array.from({ length: 16 }, (_, i) => (i & 3 ? 0x80 : 4 * q + (i >> 2)))));

/** Local `v` (16-bit lanes) shifted left by n (right for negative n). */
const shift16 = (v: Code, n: number): Code => (n > 0 ? i16x8Shl(v, n) : n < 0 ? i16x8ShrU(v, -n) : v);

/** The low nibbles (false) or high nibbles (true) of the bytes of `v`. */
const nibbles = (k: Kernel, v: Code, high: boolean): Code => and(high ? i16x8ShrU(v, 4) : v, k.c(0x0f0f0f0f));

const temps = (k: Kernel): Temps => ({ c: k.v(), w: k.v() });

/** Q4_K and Q5_K: eight groups of 32, fr(fr(d * scale) * q) - fr(dmin * min); Q5_K's fifth bits from qh. */
function qk(five: boolean): (k: Kernel) => Code {
  return (k) => {
    const [D, M, S, P, Q, W, DL0, DL1, ML0, ML1, L0, L1, QH0, QH1, DL, ML, DH, MH, X, Y] = Array.from({ length: 20 }, () => k.v());
    const ql = five ? 48 : 16;
    // get_scale_min_k4 for all eight j at once: bytes 0..7 the scales, 8..15 the mins. The block's
    // first 16 bytes are d, dmin and the 12 scale bytes: 32-bit words 1..3 the scales.
    const scales: Code[] = [
      set(S, load(get(SRC), 0)),
      set(W, halfLanes(k, swizzle(get(S), v128Const([0, 1, 0x80, 0x80, 2, 3, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80])))),
      set(D, splatLane(W, 0)),
      set(M, splatLane(W, 1)),
      set(P, shuffle(get(S), get(S), [4, 5, 6, 7, 12, 13, 14, 15, 8, 9, 10, 11, 12, 13, 14, 15])),
      set(Q, shuffle(get(S), get(S), [4, 5, 6, 7, 4, 5, 6, 7, 4, 5, 6, 7, 8, 9, 10, 11])),
      set(S, or(or(and(get(P), k.c(0x3f3f3f3f, 0x0f0f0f0f, 0x3f3f3f3f, 0)), and(i16x8ShrU(get(P), 4), k.c(0, 0, 0, 0x0f0f0f0f))),
        and(i16x8ShrU(get(Q), 2), k.c(0, 0x30303030, 0, 0x30303030)))),
      set(DL0, f32x4Mul(get(D), f32x4ConvertS(bytesToLanes(get(S), 0)))),
      set(DL1, f32x4Mul(get(D), f32x4ConvertS(bytesToLanes(get(S), 1)))),
      set(ML0, f32x4Mul(get(M), f32x4ConvertS(bytesToLanes(get(S), 2)))),
      set(ML1, f32x4Mul(get(M), f32x4ConvertS(bytesToLanes(get(S), 3)))),
    ];
    if (five) scales.push(set(QH0, load(get(SRC), 16)), set(QH1, load(get(SRC), 32)));
    // Bit b of each qh byte, as 0x10.
    const fifth = (qh: number, b: number): Code => and(shift16(get(qh), 4 - b), k.c(bytes4(0x10)));
    const value = (lanes: Code, dl: number, ml: number): Code => f32x4Sub(f32x4Mul(f32x4ConvertS(lanes), get(dl)), get(ml));
    const body: Code[] = [...scales];
    for (let p = 0; p < 4; p++) {
      // Groups j = 2p (low nibbles) and 2p + 1 (high nibbles) of the same 32 bytes, decoded side by side.
      const [j0, j1] = [2 * p, 2 * p + 1];
      body.push(set(L0, load(get(SRC), ql + 32 * p)), set(L1, load(get(SRC), ql + 32 * p + 16)));
      const dl = j0 < 4 ? DL0 : DL1, ml = j0 < 4 ? ML0 : ML1;
      body.push(set(DL, splatLane(dl, j0 & 3)), set(ML, splatLane(ml, j0 & 3)), set(DH, splatLane(dl, j1 & 3)), set(MH, splatLane(ml, j1 & 3)));
      for (const [h, L, QH] of [[0, L0, QH0], [1, L1, QH1]]) {
        const out = (j: number, q: number): number => 4 * (32 * j + 16 * h + 4 * q);
        if (five) {
          // Five-bit codes in bytes first, then each four bytes spread to 32-bit lanes.
          body.push(set(X, or(nibbles(k, get(L), false), fifth(QH, j0))), set(Y, or(nibbles(k, get(L), true), fifth(QH, j1))));
          for (let q = 0; q < 4; q++) {
            body.push(store(get(DST), value(bytesToLanes(get(X), q), DL, ML), out(j0, q)), store(get(DST), value(bytesToLanes(get(Y), q), DH, MH), out(j1, q)));
          }
        } else {
          // Four bytes spread to 32-bit lanes hold both nibbles: & 15 is group j0's code, >> 4 group j1's.
          for (let q = 0; q < 4; q++) {
            body.push(set(X, bytesToLanes(get(L), q)));
            body.push(store(get(DST), value(and(get(X), k.c(15)), DL, ML), out(j0, q)), store(get(DST), value(i32x4ShrU(get(X), 4), DH, MH), out(j1, q)));
          }
        }
      }
    }
    return blockLoop(body, five ? 176 : 144, 1024);
  };
}

/** Q6_K: fr(d * scale) * (q - 32), q of 4 low bits from ql and 2 high bits from qh. */
function q6K(k: Kernel): Code {
  const t = temps(k);
  const [D, S, W, QA, QB, QH, DL] = Array.from({ length: 7 }, () => k.v());
  const DS = [k.v(), k.v(), k.v(), k.v()];
  const body: Code[] = [
    set(D, f32x4Splat(half(loadU16(get(SRC), 208)))),
    set(S, load(get(SRC), 192)),
    set(W, extendLowS8(get(S))),
    set(DS[0], f32x4Mul(get(D), f32x4ConvertS(extendLowS16(get(W))))),
    set(DS[1], f32x4Mul(get(D), f32x4ConvertS(extendHighS16(get(W))))),
    set(W, extendHighS8(get(S))),
    set(DS[2], f32x4Mul(get(D), f32x4ConvertS(extendLowS16(get(W))))),
    set(DS[3], f32x4Mul(get(D), f32x4ConvertS(extendHighS16(get(W))))),
  ];
  const high2 = k.c(bytes4(0x30));
  for (let n = 0; n < 2; n++) {
    for (let c = 0; c < 2; c++) {
      body.push(set(QA, load(get(SRC), 64 * n + 16 * c)), set(QB, load(get(SRC), 64 * n + 32 + 16 * c)), set(QH, load(get(SRC), 128 + 32 * n + 16 * c)));
      const codes = [
        or(nibbles(k, get(QA), false), and(i16x8Shl(get(QH), 4), high2)),
        or(nibbles(k, get(QB), false), and(i16x8Shl(get(QH), 2), high2)),
        or(nibbles(k, get(QA), true), and(get(QH), high2)),
        or(nibbles(k, get(QB), true), and(i16x8ShrU(get(QH), 2), high2)),
      ];
      codes.forEach((q, kk) => {
        const is = 8 * n + c + 2 * kk;
        body.push(set(DL, splatLane(DS[is >> 2], is & 3)));
        body.push(emit16(t, i8x16Sub(q, k.c(bytes4(32))), true, DL, undefined, 4 * (128 * n + 32 * kk + 16 * c)));
      });
    }
  }
  return blockLoop(body, 210, 1024);
}

/** Q3_K: fr(d * (scale - 32)) * (q - (hmask bit ? 0 : 4)), sixteen 6-bit scales from 12 bytes. */
function q3K(k: Kernel): Code {
  const t = temps(k);
  const [D, L, T, X, Y, S, W, HM0, HM1, Q0, Q1, DL] = Array.from({ length: 12 }, () => k.v());
  const DS = [k.v(), k.v(), k.v(), k.v()];
  const body: Code[] = [
    set(D, f32x4Splat(half(loadU16(get(SRC), 108)))),
    // Words a0, a1, tmp: scale k's low 4 bits are byte k of [a0, a1, a0 >> 4, a1 >> 4] (nibbles),
    // its high 2 bits bits 0..1 of byte k of [tmp, tmp >> 2, tmp >> 4, tmp >> 6].
    set(L, load(get(SRC), 96)),
    set(X, and(shuffle(get(L), i32x4ShrU(get(L), 4), [0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23]), k.c(0x0f0f0f0f))),
    set(T, shuffle(get(L), get(L), [8, 9, 10, 11, 8, 9, 10, 11, 8, 9, 10, 11, 8, 9, 10, 11])),
    set(Y, shuffle(
      shuffle(get(T), i32x4ShrU(get(T), 2), [0, 1, 2, 3, 16, 17, 18, 19, 0, 1, 2, 3, 0, 1, 2, 3]),
      shuffle(i32x4ShrU(get(T), 4), i32x4ShrU(get(T), 6), [0, 1, 2, 3, 16, 17, 18, 19, 0, 1, 2, 3, 0, 1, 2, 3]),
      [0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23],
    )),
    set(S, i8x16Sub(or(get(X), i32x4Shl(and(get(Y), k.c(0x03030303)), 4)), k.c(bytes4(32)))),
    set(W, extendLowS8(get(S))),
    set(DS[0], f32x4Mul(get(D), f32x4ConvertS(extendLowS16(get(W))))),
    set(DS[1], f32x4Mul(get(D), f32x4ConvertS(extendHighS16(get(W))))),
    set(W, extendHighS8(get(S))),
    set(DS[2], f32x4Mul(get(D), f32x4ConvertS(extendLowS16(get(W))))),
    set(DS[3], f32x4Mul(get(D), f32x4ConvertS(extendHighS16(get(W))))),
    set(HM0, load(get(SRC), 0)),
    set(HM1, load(get(SRC), 16)),
  ];
  let is = 0;
  for (let n = 0; n < 2; n++) {
    body.push(set(Q0, load(get(SRC), 32 + 32 * n)), set(Q1, load(get(SRC), 48 + 32 * n)));
    for (let s = 0; s < 4; s++) {
      const bit = 4 * n + s; // the hmask bit m = 1 << bit
      for (const [h, Q, HM] of [[0, Q0, HM0], [1, Q1, HM1]]) {
        body.push(set(DL, splatLane(DS[is >> 2], is & 3)));
        is++;
        const low = and(shift16(get(Q), -2 * s), k.c(bytes4(3)));
        const third = and(shift16(get(HM), 2 - bit), k.c(bytes4(4)));
        body.push(emit16(t, i8x16Sub(or(low, third), k.c(bytes4(4))), true, DL, undefined, 4 * (128 * n + 32 * s + 16 * h)));
      }
    }
  }
  return blockLoop(body, 110, 1024);
}

/** Q2_K: fr(fr(d * (sc & 15)) * q) - fr(dmin * (sc >> 4)), q 2 bits. */
function q2K(k: Kernel): Code {
  const t = temps(k);
  const [D, M, S, W, Q0, Q1, DL, ML] = Array.from({ length: 8 }, () => k.v());
  const DS = [k.v(), k.v(), k.v(), k.v()];
  const MS = [k.v(), k.v(), k.v(), k.v()];
  const body: Code[] = [
    set(D, f32x4Splat(half(loadU16(get(SRC), 80)))),
    set(M, f32x4Splat(half(loadU16(get(SRC), 82)))),
    set(S, load(get(SRC), 0)),
  ];
  for (const [V, F, high] of [[DS, D, false], [MS, M, true]] as const) {
    body.push(
      set(W, extendLowU8(nibbles(k, get(S), high))),
      set(V[0], f32x4Mul(get(F), f32x4ConvertS(extendLowU16(get(W))))),
      set(V[1], f32x4Mul(get(F), f32x4ConvertS(extendHighU16(get(W))))),
      set(W, extendHighU8(nibbles(k, get(S), high))),
      set(V[2], f32x4Mul(get(F), f32x4ConvertS(extendLowU16(get(W))))),
      set(V[3], f32x4Mul(get(F), f32x4ConvertS(extendHighU16(get(W))))),
    );
  }
  let is = 0;
  for (let n = 0; n < 2; n++) {
    body.push(set(Q0, load(get(SRC), 16 + 32 * n)), set(Q1, load(get(SRC), 32 + 32 * n)));
    for (let s = 0; s < 4; s++) {
      for (const [h, Q] of [[0, Q0], [1, Q1]]) {
        body.push(set(DL, splatLane(DS[is >> 2], is & 3)), set(ML, splatLane(MS[is >> 2], is & 3)));
        is++;
        body.push(emit16(t, and(shift16(get(Q), -2 * s), k.c(bytes4(3))), false, DL, { sub: ML }, 4 * (128 * n + 32 * s + 16 * h)));
      }
    }
  }
  return blockLoop(body, 84, 1024);
}

/** Q8_0: q * d. */
function q80(k: Kernel): Code {
  const [D, W] = [k.v(), k.v()];
  const body: Code[] = [set(D, halfLanes(k, i32x4Splat(loadU16(get(SRC), 0))))];
  // Eight codes at a time widened to 16 bits by the load itself (one pmovsxbw from memory).
  for (let e = 0; e < 32; e += 8) {
    body.push(
      set(W, load8x8S(get(SRC), 2 + e)),
      store(get(DST), f32x4Mul(f32x4ConvertS(extendLowS16(get(W))), get(D)), 4 * e),
      store(get(DST), f32x4Mul(f32x4ConvertS(extendHighS16(get(W))), get(D)), 4 * e + 16),
    );
  }
  return blockLoop(body, 34, 128);
}

/** Q4_0 (q - 8) * d and Q4_1 fr(q * d) + m: element j the low nibble of byte j, j + 16 its high one. */
function q4(withMin: boolean): (k: Kernel) => Code {
  return (k) => {
    const t = temps(k);
    const [D, M, L] = [k.v(), k.v(), k.v()];
    const body: Code[] = [set(D, f32x4Splat(half(loadU16(get(SRC), 0))))];
    if (withMin) body.push(set(M, f32x4Splat(half(loadU16(get(SRC), 2)))));
    body.push(set(L, load(get(SRC), withMin ? 4 : 2)));
    for (const high of [false, true]) {
      const q = nibbles(k, get(L), high);
      body.push(withMin ? emit16(t, q, false, D, { add: M }, high ? 64 : 0) : emit16(t, i8x16Sub(q, k.c(bytes4(8))), true, D, undefined, high ? 64 : 0));
    }
    return blockLoop(body, withMin ? 20 : 18, 128);
  };
}

/** Q5_0 (q - 16) * d and Q5_1 fr(q * d) + m: the fifth bit of element j is bit j of the word qh. */
function q5(withMin: boolean): (k: Kernel) => Code {
  return (k) => {
    const t = temps(k);
    const [D, M, L, QH] = [k.v(), k.v(), k.v(), k.v()];
    const bits = k.c(0x08040201, 0x80402010, 0x08040201, 0x80402010);
    const qhAt = withMin ? 4 : 2;
    const body: Code[] = [set(D, f32x4Splat(half(loadU16(get(SRC), 0))))];
    if (withMin) body.push(set(M, f32x4Splat(half(loadU16(get(SRC), 2)))));
    body.push(set(L, load(get(SRC), qhAt + 4)), set(QH, load32Splat(get(SRC), qhAt)));
    for (const high of [false, true]) {
      // Byte j of the 16 holds qh's byte (j >> 3) (+ 2 for the high half); its bit (j & 7) as 0x10.
      const b = high ? 2 : 0;
      const spread = shuffle(get(QH), get(QH), [b, b, b, b, b, b, b, b, b + 1, b + 1, b + 1, b + 1, b + 1, b + 1, b + 1, b + 1]);
      const fifth = and(i8x16Eq(and(spread, bits), bits), k.c(bytes4(0x10)));
      const q = or(nibbles(k, get(L), high), fifth);
      body.push(withMin ? emit16(t, q, false, D, { add: M }, high ? 64 : 0) : emit16(t, i8x16Sub(q, k.c(bytes4(16))), true, D, undefined, high ? 64 : 0));
    }
    return blockLoop(body, withMin ? 24 : 22, 128);
  };
}

/** IQ4_NL: d * level[q]; MXFP4: 2 * E2M1(q) * 2^(e - 128). Both nibbles as Q4_0's. */
function levels4(mx: boolean): (k: Kernel) => Code {
  return (k) => {
    const t = temps(k);
    const [D, L] = [k.v(), k.v()];
    const lut = table16(k, mx ? GGML_FP4_DOUBLED : IQ4_NL_LEVELS);
    // ggml_e8m0_to_fp32_half: e = 0 and 1 are the subnormals 2^-128 (bits 0x00200000) and 2^-127.
    const e = get(A);
    const scale = mx
      ? [...set(A, loadU8(get(SRC), 0)), ...f32OfI32Bits(pick(i32Shl(i32(0x00200000), e), i32Shl(i32Sub(e, i32(1)), i32(23)), i32LtU(e, i32(2))))]
      : half(loadU16(get(SRC), 0));
    const body: Code[] = [set(D, f32x4Splat(scale)), set(L, load(get(SRC), mx ? 1 : 2))];
    for (const high of [false, true]) body.push(emit16(t, swizzle(lut, nibbles(k, get(L), high)), true, D, undefined, high ? 64 : 0));
    return blockLoop(body, mx ? 17 : 18, 128);
  };
}

/** NVFP4: four groups of 16, each 2 * E2M1(q) * ggml_ue4m3_to_fp32 of its scale byte. */
function nvfp4(k: Kernel): Code {
  const t = temps(k);
  const [D, L, LO, HI] = [k.v(), k.v(), k.v(), k.v()];
  const lut = table16(k, GGML_FP4_DOUBLED);
  // Bit 7 is not read, except that 0x7F (and 0) is zero (0xFF is 240); exponent 0 is man * 2^-10; else (8 + man) * 2^(exp - 11).
  const x = get(A);
  const ue4m3 = (at: number): Code => [
    ...set(A, loadU8(get(SRC), at)),
    ...f32OfI32Bits(pick(
      i32(0),
      pick(
        i32OfF32Bits(f32Mul(f32ConvertS(i32And(x, i32(7))), f32Bits(0x3a800000))),
        i32Add(i32And(i32Shl(x, i32(20)), i32(0x07f00000)), i32(0x3b800000)),
        i32Eqz(i32And(x, i32(0x78))),
      ),
      i32Eq(x, i32(0x7f)),
    )),
  ];
  const body: Code[] = [];
  for (let pair = 0; pair < 2; pair++) {
    body.push(set(L, load(get(SRC), 4 + 16 * pair)), set(LO, nibbles(k, get(L), false)), set(HI, nibbles(k, get(L), true)));
    for (let g = 0; g < 2; g++) {
      const sub = 2 * pair + g;
      const lanes = [0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23].map((b) => b + 8 * g);
      body.push(set(D, f32x4Splat(ue4m3(sub))), emit16(t, swizzle(lut, shuffle(get(LO), get(HI), lanes)), true, D, undefined, 64 * sub));
    }
  }
  return blockLoop(body, 36, 256);
}

/** TQ2_0: (q - 1) * d, four 2-bit codes per byte in runs of 32 bytes. */
function tq20(k: Kernel): Code {
  const t = temps(k);
  const D = k.v();
  const Q = [k.v(), k.v(), k.v(), k.v()];
  const body: Code[] = [set(D, f32x4Splat(half(loadU16(get(SRC), 64))))];
  for (let i = 0; i < 4; i++) body.push(set(Q[i], load(get(SRC), 16 * i)));
  for (let j = 0; j < 2; j++) {
    for (let s = 0; s < 4; s++) {
      for (let h = 0; h < 2; h++) {
        const q = and(shift16(get(Q[2 * j + h]), -2 * s), k.c(bytes4(3)));
        body.push(emit16(t, i8x16Sub(q, k.c(bytes4(1))), true, D, undefined, 4 * (128 * j + 32 * s + 16 * h)));
      }
    }
  }
  return blockLoop(body, 66, 1024);
}

/** IQ4_XS: fr(d * (ls - 32)) * level[q], eight 6-bit scales ls (low 4 bits in scales_l, high 2 in scales_h). */
function iq4xs(k: Kernel): Code {
  const t = temps(k);
  const [D, L, DL] = [k.v(), k.v(), k.v()];
  const lut = table16(k, IQ4_NL_LEVELS);
  const body: Code[] = [set(D, f32x4Splat(half(loadU16(get(SRC), 0))))];
  for (let ib = 0; ib < 8; ib++) {
    const low = i32And(i32ShrU(loadU8(get(SRC), 4 + (ib >> 1)), i32(4 * (ib & 1))), i32(15));
    const high = i32Shl(i32And(i32ShrU(loadU16(get(SRC), 2), i32(2 * ib)), i32(3)), i32(4));
    body.push(
      set(DL, f32x4Mul(get(D), f32x4Splat(f32ConvertS(i32Sub(i32Or(low, high), i32(32)))))),
      set(L, load(get(SRC), 8 + 16 * ib)),
      emit16(t, swizzle(lut, nibbles(k, get(L), false)), true, DL, undefined, 128 * ib),
      emit16(t, swizzle(lut, nibbles(k, get(L), true)), true, DL, undefined, 128 * ib + 64),
    );
  }
  return blockLoop(body, 136, 1024);
}

/**
 * TQ1_0: (digit - 1) * d, a byte's base-3 digit n being ((b * 3^n mod 256) * 3 >> 8), in 16-bit lanes
 * (b * 81 < 2^15). 32 bytes of five digits, 16 more of five, 4 of four.
 */
function tq10(k: Kernel): Code {
  const [D, Q, W, T] = [k.v(), k.v(), k.v(), k.v()];
  const digit = (w: Code, pow3: number): Code => i16x8Sub(i16x8ShrU(i16x8Mul(and(i16x8Mul(w, k.c(pow3 * 0x10001)), k.c(0x00ff00ff)), k.c(0x00030003)), 8), k.c(0x00010001));
  const value = (lanes: Code): Code => f32x4Mul(f32x4ConvertS(lanes), get(D));
  // Eight digits (16-bit lanes of T) -> 8 float32 at dst + off; with `four`, only the first four.
  const emit8 = (off: number, four = false): Code[] => [
    store(get(DST), value(extendLowS16(get(T))), off),
    ...(four ? [] : [store(get(DST), value(extendHighS16(get(T))), off + 16)]),
  ];
  const body: Code[] = [set(D, f32x4Splat(half(loadU16(get(SRC), 52))))];
  const runs: [at: number, bytes: number, first: number][] = [[0, 16, 0], [16, 16, 16], [32, 16, 160]];
  for (const [at, , first] of runs) {
    const width = first === 160 ? 16 : 32;
    body.push(set(Q, load(get(SRC), at)));
    for (const hi of [false, true]) {
      body.push(set(W, (hi ? extendHighU8 : extendLowU8)(get(Q))));
      for (let n = 0, pow3 = 1; n < 5; n++, pow3 *= 3) body.push(set(T, digit(get(W), pow3)), ...emit8(4 * (first + width * n + (hi ? 8 : 0))));
    }
  }
  body.push(set(W, extendLowU8(load32Splat(get(SRC), 48))));
  for (let n = 0, pow3 = 1; n < 4; n++, pow3 *= 3) body.push(set(T, digit(get(W), pow3)), ...emit8(4 * (240 + 4 * n), true));
  return blockLoop(body, 54, 1024);
}

/**
 * Where the private memory keeps the IQ grids, in its second page: iq1s_grid (8 signed bytes per
 * point), iq2xxs / iq2xs / iq2s (8 bytes), iq3xxs / iq3s (4 bytes) and ksigns_iq2xs.
 */
const IQ1S_GRID = 2 * PAGE;
const IQ2XXS_GRID = IQ1S_GRID + 2048 * 8;
const IQ2XS_GRID = IQ2XXS_GRID + 256 * 8;
const IQ2S_GRID = IQ2XS_GRID + 512 * 8;
const IQ3XXS_GRID = IQ2S_GRID + 1024 * 8;
const IQ3S_GRID = IQ3XXS_GRID + 256 * 4;
const KSIGNS = IQ3S_GRID + 512 * 4;

/** The sign mask of lanes whose bit (1, 2, 4, 8 or, high, 16 ... 128) is set in the splat local `s`: 0x80000000 there. */
function signBits(k: Kernel, s: number, high: boolean): Code {
  const bits = high ? k.c(16, 32, 64, 128) : k.c(1, 2, 4, 8);
  return and(i32x4Eq(and(get(s), bits), bits), k.c(0x80000000));
}

/**
 * The IQ2 and IQ3 grids: per 8 elements fr(db * grid[j]) negated where sign bit j is set (the sign
 * flipped by xor: exact, as the reference's factor of -1). Only in the private memory.
 */
function iqGrid(name: "IQ2_XXS" | "IQ2_XS" | "IQ2_S" | "IQ3_XXS" | "IQ3_S"): (k: Kernel) => Code {
  return (k) => {
    const [D, DB0, DB1, W, S] = [k.v(), k.v(), k.v(), k.v(), k.v()];
    const value = (lanes: Code, db: number): Code => f32x4Mul(f32x4ConvertS(lanes), get(db));
    // 8 elements of an 8-byte point (an i32 expression) with sign byte `signs`, scale local `db`, at dst + off.
    const point8 = (grid: number, point: Code, signs: Code, db: number, off: number): Code[] => [
      set(W, load8x8U(i32Shl(point, i32(3)), grid)),
      set(S, i32x4Splat(signs)),
      store(get(DST), xor(value(extendLowU16(get(W)), db), signBits(k, S, false)), off),
      store(get(DST), xor(value(extendHighU16(get(W)), db), signBits(k, S, true)), off + 16),
    ];
    // 4 + 4 elements of two 4-byte points.
    const points4 = (grid: number, p1: Code, p2: Code, signs: Code, db: number, off: number): Code[] => [
      set(S, i32x4Splat(signs)),
      store(get(DST), xor(value(extendLowU16(extendLowU8(load32Zero(i32Shl(p1, i32(2)), grid))), db), signBits(k, S, false)), off),
      store(get(DST), xor(value(extendLowU16(extendLowU8(load32Zero(i32Shl(p2, i32(2)), grid))), db), signBits(k, S, true)), off + 16),
    ];
    const ksign = (i: Code): Code => loadU8(i, KSIGNS);
    // fr(fr(d * (0.5 + n)) * f) for a 4-bit n (an i32 expression): 0.5 + n as (2n + 1) * 0.5, exact.
    const halfStep = (n: Code, f: number): Code =>
      f32x4Mul(f32x4Mul(get(D), f32x4Splat(f32Mul(f32ConvertS(i32Add(i32Shl(n, i32(1)), i32(1))), f32Bits(0x3f000000)))), k.c(f));
    const body: Code[] = [set(D, f32x4Splat(half(loadU16(get(SRC), 0))))];
    for (let ib = 0; ib < 8; ib++) {
      const out = (l: number): number => 4 * (32 * ib + 8 * l);
      if (name === "IQ2_XXS" || name === "IQ3_XXS") {
        const xxs2 = name === "IQ2_XXS";
        const word = xxs2 ? 2 + 8 * ib + 4 : 66 + 4 * ib;
        body.push(set(B, loadI32(get(SRC), word)), set(DB0, halfStep(i32ShrU(get(B), i32(28)), xxs2 ? 0x3e800000 : 0x3f000000)));
        for (let l = 0; l < 4; l++) {
          const signs = ksign(i32And(i32ShrU(get(B), i32(7 * l)), i32(127)));
          if (xxs2) body.push(...point8(IQ2XXS_GRID, loadU8(get(SRC), 2 + 8 * ib + l), signs, DB0, out(l)));
          else body.push(...points4(IQ3XXS_GRID, loadU8(get(SRC), 2 + 8 * ib + 2 * l), loadU8(get(SRC), 3 + 8 * ib + 2 * l), signs, DB0, out(l)));
        }
      } else if (name === "IQ2_XS" || name === "IQ2_S") {
        const sc = (): Code => loadU8(get(SRC), (name === "IQ2_XS" ? 66 : 74) + ib);
        body.push(set(DB0, halfStep(i32And(sc(), i32(15)), 0x3e800000)), set(DB1, halfStep(i32ShrU(sc(), i32(4)), 0x3e800000)));
        if (name === "IQ2_S") body.push(set(B, loadU8(get(SRC), 66 + ib)));
        for (let l = 0; l < 4; l++) {
          const db = l < 2 ? DB0 : DB1;
          if (name === "IQ2_XS") {
            const q = (): Code => loadU16(get(SRC), 2 + 2 * (4 * ib + l));
            body.push(...point8(IQ2XS_GRID, i32And(q(), i32(511)), ksign(i32ShrU(q(), i32(9))), db, out(l)));
          } else {
            const point = i32Or(loadU8(get(SRC), 2 + 4 * ib + l), i32And(i32Shl(get(B), i32(8 - 2 * l)), i32(0x300)));
            body.push(...point8(IQ2S_GRID, point, loadU8(get(SRC), 34 + 4 * ib + l), db, out(l)));
          }
        }
      } else {
        // IQ3_S: scales per pair of groups of 32, fr(d * (1 + 2 * s)); a ninth index bit per point from qh.
        const pair = ib >> 1, h = ib & 1;
        const sc = (): Code => loadU8(get(SRC), 106 + pair);
        const s4 = h === 0 ? i32And(sc(), i32(15)) : i32ShrU(sc(), i32(4));
        body.push(set(DB0, f32x4Mul(get(D), f32x4Splat(f32ConvertS(i32Add(i32Shl(s4, i32(1)), i32(1)))))));
        body.push(set(B, loadU8(get(SRC), 66 + 2 * pair + h)));
        const qs = 2 + 16 * pair + 8 * h, sg = 74 + 8 * pair + 4 * h;
        for (let l = 0; l < 4; l++) {
          const p1 = i32Or(loadU8(get(SRC), qs + 2 * l), i32And(i32Shl(get(B), i32(8 - 2 * l)), i32(256)));
          const p2 = i32Or(loadU8(get(SRC), qs + 2 * l + 1), i32And(i32Shl(get(B), i32(7 - 2 * l)), i32(256)));
          body.push(...points4(IQ3S_GRID, p1, p2, loadU8(get(SRC), sg + l), DB0, out(l)));
        }
      }
    }
    const size = { IQ2_XXS: 66, IQ2_XS: 74, IQ2_S: 82, IQ3_XXS: 98, IQ3_S: 110 }[name];
    return blockLoop(body, size, 1024);
  };
}

/**
 * IQ1_S and IQ1_M: per 8 elements fr(d * (2 * s + 1)) * (grid[j] + delta), delta +-0.125, grid
 * points of 11 bits. Only in the private memory, which holds the grid.
 */
function iq1(m: boolean): (k: Kernel) => Code {
  return (k) => {
    const [D, DL, DELTA, W] = [k.v(), k.v(), k.v(), k.v()];
    const value = (lanes: Code): Code => f32x4Mul(get(DL), f32x4Add(f32x4ConvertS(lanes), get(DELTA)));
    // Eight grid values of point `point` (an i32 expression) -> dst + off.
    const point8 = (point: Code, off: number): Code[] => [
      set(W, load8x8S(i32Shl(point, i32(3)), IQ1S_GRID)),
      store(get(DST), value(extendLowS16(get(W))), off),
      store(get(DST), value(extendHighS16(get(W))), off + 16),
    ];
    // The float32 of 2 * s + 1 for a 3-bit s (an i32 expression), times the block's scale.
    const scaled = (s: Code): Code => f32x4Mul(get(D), f32x4Splat(f32ConvertS(i32Add(i32Shl(i32And(s, i32(7)), i32(1)), i32(1)))));
    // +-0.125: 0x3E000000 with the sign bit (bit 15 of `sign`, an i32 expression, moved to bit 31).
    const delta = (sign: Code): Code => f32x4Splat(f32OfI32Bits(i32Or(i32(0x3e000000), i32Shl(i32And(sign, i32(0x8000)), i32(16)))));
    const body: Code[] = [];
    if (!m) {
      body.push(set(D, f32x4Splat(half(loadU16(get(SRC), 0)))));
      for (let ib = 0; ib < 8; ib++) {
        const qh = loadU16(get(SRC), 34 + 2 * ib);
        body.push(set(DL, scaled(i32ShrU(qh, i32(12)))), set(DELTA, delta(qh)));
        for (let l = 0; l < 4; l++) {
          body.push(...point8(i32Or(loadU8(get(SRC), 2 + 4 * ib + l), i32Shl(i32And(i32ShrU(qh, i32(3 * l)), i32(7)), i32(8))), 4 * (32 * ib + 8 * l)));
        }
      }
      return blockLoop(body, 50, 1024);
    }
    // The block's binary16 scale is spread over the top nibbles of the four scale words.
    const sc = (i: number): Code => loadU16(get(SRC), 48 + 2 * i);
    body.push(set(D, f32x4Splat(half(i32Or(i32Or(i32ShrU(sc(0), i32(12)), i32And(i32ShrU(sc(1), i32(8)), i32(0xf0))),
      i32Or(i32And(i32ShrU(sc(2), i32(4)), i32(0xf00)), i32And(sc(3), i32(0xf000))))))));
    for (let ib = 0; ib < 8; ib++) {
      const w = (): Code => i32ShrU(sc(ib >> 1), i32(6 * (ib & 1)));
      for (let l = 0; l < 4; l++) {
        // Point l: 8 bits from qs, 3 from the low (even l) or high (odd l) nibble of its qh byte, whose fourth bit is the delta's sign.
        const h = (): Code => i32ShrU(loadU8(get(SRC), 32 + 2 * ib + (l >> 1)), i32(4 * (l & 1)));
        if (l === 0) body.push(set(DL, scaled(w())));
        if (l === 2) body.push(set(DL, scaled(i32ShrU(w(), i32(3)))));
        body.push(set(DELTA, delta(i32Shl(h(), i32(12)))));
        body.push(...point8(i32Or(loadU8(get(SRC), 4 * ib + l), i32And(i32Shl(h(), i32(8)), i32(0x700))), 4 * (32 * ib + 8 * l)));
      }
    }
    return blockLoop(body, 56, 1024);
  };
}

/** Q2_0: (q - 1) * d, element 4b + k in bits 2k of byte b. */
function q20(k: Kernel): Code {
  const t = temps(k);
  const [D, L, A0, A1, B0, B1] = Array.from({ length: 6 }, () => k.v());
  const C = [k.v(), k.v(), k.v(), k.v()];
  const bytes = (first: number): number[] => Array.from({ length: 16 }, (_, i) => (i & 1 ? 16 : 0) + first + (i >> 1));
  const halves = (first: number): number[] => Array.from({ length: 16 }, (_, i) => ((i >> 1) & 1 ? 16 : 0) + 2 * (first + (i >> 2)) + (i & 1));
  const body: Code[] = [set(D, f32x4Splat(half(loadU16(get(SRC), 0)))), set(L, load(get(SRC), 2))];
  for (let s = 0; s < 4; s++) body.push(set(C[s], and(shift16(get(L), -2 * s), k.c(bytes4(3)))));
  // Interleave the four digit planes back into element order: bytes of (0, 1) and (2, 3), then their pairs.
  body.push(
    set(A0, shuffle(get(C[0]), get(C[1]), bytes(0))), set(A1, shuffle(get(C[0]), get(C[1]), bytes(8))),
    set(B0, shuffle(get(C[2]), get(C[3]), bytes(0))), set(B1, shuffle(get(C[2]), get(C[3]), bytes(8))),
  );
  const ordered = [shuffle(get(A0), get(B0), halves(0)), shuffle(get(A0), get(B0), halves(4)), shuffle(get(A1), get(B1), halves(0)), shuffle(get(A1), get(B1), halves(4))];
  ordered.forEach((q, i) => body.push(emit16(t, i8x16Sub(q, k.c(bytes4(1))), true, D, undefined, 64 * i)));
  return blockLoop(body, 18, 256);
}

const BUILDERS: Partial<Record<GgmlTypeName, (k: Kernel) => Code>> = {
  Q4_0: q4(false), Q4_1: q4(true), Q5_0: q5(false), Q5_1: q5(true), Q8_0: q80,
  Q2_K: q2K, Q3_K: q3K, Q4_K: qk(false), Q5_K: qk(true), Q6_K: q6K,
  IQ1_S: iq1(false), IQ1_M: iq1(true), Q2_0: q20,
  IQ2_XXS: iqGrid("IQ2_XXS"), IQ2_XS: iqGrid("IQ2_XS"), IQ2_S: iqGrid("IQ2_S"), IQ3_XXS: iqGrid("IQ3_XXS"), IQ3_S: iqGrid("IQ3_S"),
  IQ4_NL: levels4(false), IQ4_XS: iq4xs, MXFP4: levels4(true), NVFP4: nvfp4, TQ1_0: tq10, TQ2_0: tq20,
};

/** The types whose kernels read a table that only the private memory holds. */
const PRIVATE_ONLY: ReadonlySet<GgmlTypeName> = new Set(["IQ1_S", "IQ1_M", "IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ3_XXS", "IQ3_S"]);

/** The GGML types with a SIMD kernel. */
export const GGML_SIMD_TYPES: readonly GgmlTypeName[] = Object.freeze(Object.keys(BUILDERS) as GgmlTypeName[]);

/** The module's bytes, for a memory of `pages` pages imported as env.memory. */
export function ggmlModule(pages: number): Uint8Array {
  const funcs = Object.entries(BUILDERS).map(([name, build]) => {
    const k = new Kernel();
    const body = build!(k);
    return k.func(name, body);
  });
  return moduleBytes(funcs, pages, undefined, "plain");
}

type KernelFn = (src: number, dst: number, blocks: number, zero: number) => void;

interface Loaded {
  readonly memory: WasmMemory;
  readonly kernels: Partial<Record<GgmlTypeName, KernelFn>>;
  bytes: Uint8Array;
  f32: Float32Array;
}

interface MemoryApi extends WasmApi {
  Memory: new (d: { initial: number; maximum: number }) => WasmMemory;
}

/**
 * Bytes of one chunk's float32 output when streaming: 16384 values, in L2 with its blocks (a chunk
 * of 4096 paid its calls and copies' set-up four times as often: 10-50% of the time on arrays).
 */
const OUT_BYTES = 65536;
/**
 * Where the blocks go (at most 16384 values' worth: 17408 bytes of Q8_0, the largest per value) and
 * the decoded float32, each placed within its region's STAGGER_SLACK by `staggered`.
 */
const IN = 0;
const OUT = 24576;
/** The streaming regions (two pages), then a page for the grids. */
const PRIVATE_PAGES = 3;

let enabled = true;
let privateLoaded: Loaded | null | undefined;
const onArenas = new WeakMap<WasmMemory, Loaded | null>();
const compiled = new Map<number, object | null>();

function instantiate(memory: WasmMemory): Loaded | null {
  try {
    const w = (globalThis as { WebAssembly?: MemoryApi }).WebAssembly;
    if (!w) return null;
    const pages = memory.buffer.byteLength / PAGE;
    let module = compiled.get(pages);
    if (module === undefined) {
      const code = ggmlModule(pages);
      module = w.validate(code) ? new w.Module(code) : null;
      compiled.set(pages, module);
    }
    if (module === null) return null;
    const e = new w.Instance(module, { env: { memory } }).exports;
    const kernels = Object.fromEntries(GGML_SIMD_TYPES.map((n) => [n, e[n] as KernelFn]));
    return { memory, kernels, bytes: new Uint8Array(memory.buffer), f32: new Float32Array(memory.buffer) };
  } catch {
    return null; // e.g. a Content-Security-Policy without 'wasm-unsafe-eval'
  }
}

function privateInstance(): Loaded | null {
  if (privateLoaded === undefined) {
    privateLoaded = null;
    try {
      const w = (globalThis as { WebAssembly?: MemoryApi }).WebAssembly;
      if (w) privateLoaded = instantiate(new w.Memory({ initial: PRIVATE_PAGES, maximum: PRIVATE_PAGES }));
      if (privateLoaded) {
        const g = iqGrids();
        const m = privateLoaded.bytes;
        m.set(new Uint8Array(g.iq1s.buffer), IQ1S_GRID);
        m.set(g.iq2xxs, IQ2XXS_GRID);
        m.set(g.iq2xs, IQ2XS_GRID);
        m.set(g.iq2s, IQ2S_GRID);
        m.set(g.iq3xxs, IQ3XXS_GRID);
        m.set(g.iq3s, IQ3S_GRID);
        m.set(g.signs, KSIGNS);
      }
    } catch {
      privateLoaded = null;
    }
  }
  return privateLoaded;
}

/** The kernels on the arena memory both arrays live in, or undefined when they do not share one. */
function arenaInstance(src: Uint8Array, out: Float32Array): Loaded | undefined {
  if (src.buffer !== out.buffer) return undefined;
  const memory = residentMemoryOf(src.buffer);
  if (!memory) return undefined;
  let l = onArenas.get(memory);
  if (l === undefined) {
    l = instantiate(memory);
    onArenas.set(memory, l);
  }
  if (!l) return undefined;
  if (l.bytes.buffer !== memory.buffer) {
    // An arena's reset detached the views: renew them.
    l.bytes = new Uint8Array(memory.buffer);
    l.f32 = new Float32Array(memory.buffer);
  }
  return l;
}

/**
 * For tests and benchmarks: false makes every GGML SIMD kernel decline, so the reference decoders run.
 * @example useGgmlSimd(false); dequantizeGgml("Q4_K", bytes); useGgmlSimd(true);
 */
export function useGgmlSimd(on: boolean): void {
  enabled = on;
}

/** Whether the GGML SIMD kernels are available here (instantiates the module on first call). */
export function ggmlSimdAvailable(): boolean {
  return privateInstance() !== null;
}

/**
 * Decodes `blocks` blocks of `t` from byte `srcAt` of `src` into `out` from element `outAt` as the
 * reference would and returns true, or returns false, having written nothing (no kernel for the
 * type, no WebAssembly SIMD, or switched off).
 */
export function dequantizeSimd(t: GgmlType, src: Uint8Array, srcAt: number, out: Float32Array, outAt: number, blocks: number): boolean {
  if (!enabled || blocks <= 0) return false;
  const arena = PRIVATE_ONLY.has(t.name) ? undefined : arenaInstance(src, out);
  const l = arena ?? privateInstance();
  const kernel = l?.kernels[t.name];
  if (!l || !kernel) return false;
  if (arena) {
    // Addresses past 2^31 reach the i32 parameters as negative numbers, which WebAssembly reads unsigned.
    kernel(src.byteOffset + srcAt, out.byteOffset + 4 * outAt, blocks, 0);
    return true;
  }
  const per = Math.max(1, Math.floor(OUT_BYTES / 4 / t.blockSize));
  const { bytes, f32 } = l;
  for (let b = 0; b < blocks; b += per) {
    const n = Math.min(per, blocks - b);
    const from = srcAt + b * t.typeSize;
    const to = outAt + b * t.blockSize;
    const inAt = staggered(IN, src.byteOffset + from);
    const outBytes = staggered(OUT, out.byteOffset + 4 * to);
    bytes.set(src.subarray(from, from + n * t.typeSize), inAt);
    kernel(inAt, outBytes, n, 0);
    out.set(f32.subarray(outBytes / 4, outBytes / 4 + n * t.blockSize), to);
  }
  return true;
}
