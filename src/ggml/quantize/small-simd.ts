/**
 * WebAssembly SIMD forms of small.ts's encoders (TQ1_0, TQ2_0, MXFP4), giving exactly the
 * reference's bytes, or declining (false) where WebAssembly SIMD is absent or
 * `useGgmlQuantizeSimd(false)`. Built on blocks-simd.ts's Kernel and chunk driver; four blocks a step.
 *
 * TQ1_0 / TQ2_0: amax's `MAX(amax, |v|)` keeps a NaN only until the next value, so its scan runs in
 * C's order, four blocks in four lanes. lroundf(x * id) + 1 matters only modulo 256 (TQ1_0 keeps a
 * uint8_t of q * 3 + xi, TQ2_0 two bits): x + copysign(0.49999997, x) truncated is roundf(x) for
 * every float32 below 2^31 (checked over all of them); at and past 2^31 (and for NaN, whose
 * lroundf is LONG_MIN) the true value is a multiple of 256, so those lanes are 0.
 *
 * MXFP4: amax (`if (amax < |v|)`, which no NaN enters) is the same in any order. e comes from a
 * table of floorLog2f per binade (the float32 bits from which log2f rounds up to the next
 * integer). best_index_mxfp4's scan over the 16 levels ties to the first; for |x| below 16 d
 * (every value of a block with finite amax, d being 2^(floor(log2 amax) - 3); or below d / 2 where
 * e wrapped past 255) the errors of neighbouring levels k - 1, k compare as |x| does with their
 * midpoint, exactly (Sterbenz between the two levels; above them the two errors are d apart and
 * round apart; a level that overflows to Inf never wins, nor does its midpoint, Inf too, count),
 * and a negative level wins only with its positive twin's error tying later, so the
 * index is the count of midpoints below |x|, plus 8 for a negative x off level 0. A step whose
 * blocks have an infinite amax (then e = 0 and |x| / d is unbounded) runs C's scan as written.
 *
 * Browser-safe; built from source at run time.
 */
import {
  and, anyTrue, f32x4Abs, f32x4Add, f32x4Eq, f32x4Gt, f32x4Lt, f32x4Mul, f32x4Pmax, f32x4Sub, get, i32, i32Add, i32And, i32Clz, i32GeU, i32Shl,
  i32ShrU, i32Sub, i32x4Add, i32x4ExtractLane, i32x4Mul, i32x4Shl, i32x4ShrS, i32x4ShrU, i32x4Splat, i32x4Sub, ifElse, loadI32, or, pick, select,
  set, store, storeI16, storeI32, storeU8, truncSatS, type Code,
} from "../../kernels/wasm/encoder.js";
import { GGML_FP4_DOUBLED } from "../levels.js";
import { fp16 } from "./half-simd.js";
import { bytesOf, encodeWithKernel, inverse, Kernel, lane, packQ4, Q, scan, TABLE, xOf, type BlockKernel } from "./blocks-simd.js";
import { floorLog2f } from "./rounding.js";
import { transpose4 } from "./search-simd.js";

/**
 * roundf(F) as an int32 modulo 256 (exact below 2^31 in magnitude, else 0), F a local:
 * 0x3effffff is 0.5 - 2^-25, the float just below a half.
 */
function roundLow(k: Kernel, F: number): Code {
  const g = f32x4Add(get(F), or(and(get(F), k.c(0x80000000)), k.c(0x3effffff)));
  return and(truncSatS(g), f32x4Lt(g, k.f(2147483648)));
}

/** The ternary blocks' shared head: amax in order, d = amax as fp16 at `dAt`, id = 1 / d; then `block(j, IDJ)` per block. */
function ternary(k: Kernel, size: number, dAt: number, block: (j: number, idj: number) => Code[]): Uint8Array {
  const [AMAX, ID, H, IDJ] = [k.v(), k.v(), k.v(), k.v()];
  const body: Code[] = [set(AMAX, k.c(0))];
  // MAX(amax, a) is amax > a ? amax : a, which is pmax(a, amax).
  body.push(...scan(k, (t) => [set(AMAX, f32x4Pmax(f32x4Abs(t), get(AMAX)))], 256));
  body.push(set(ID, inverse(k, get(AMAX))), set(H, get(AMAX)), ...fp16(k, H));
  for (let j = 0; j < 4; j++) {
    body.push(storeI16(get(Q), i32x4ExtractLane(get(H), j), size * j + dAt), set(IDJ, lane(get(ID), j)), ...block(j, IDJ));
  }
  return k.bytes(body, 4 * size, 1024);
}

function tq2_0(k: Kernel): Uint8Array {
  const [F, R] = [k.v(), k.v()];
  const B = Array.from({ length: 8 }, () => k.v());
  return ternary(k, 66, 64, (j, idj) => {
    const code: Code[] = [];
    for (let h = 0; h < 2; h++) {
      for (let w = 0; w < 8; w++) {
        for (let n = 0; n < 4; n++) {
          code.push(set(F, f32x4Mul(xOf(j, 32 * h + 8 * n + w, 256), get(idj))), set(R, roundLow(k, F)));
          const c = and(i32x4Add(get(R), k.c(1)), k.c(3));
          code.push(set(B[w], n === 0 ? c : or(get(B[w]), i32x4Shl(c, 2 * n))));
        }
      }
      code.push(store(get(Q), bytesOf(B.slice(0, 4).map(get)), 66 * j + 32 * h), store(get(Q), bytesOf(B.slice(4).map(get)), 66 * j + 32 * h + 16));
    }
    return code;
  });
}

function tq1_0(k: Kernel): Uint8Array {
  const [F, R] = [k.v(), k.v()];
  const B = Array.from({ length: 13 }, () => k.v());
  // Each output vector's inputs, the most significant digit first: 8 of elements m + 32 n, 4 of 160 + m + 16 n, then qh's 240 + j + 4 m.
  const digits: number[][] = [
    ...Array.from({ length: 8 }, (_, w) => [0, 1, 2, 3, 4].map((n) => w + 8 * n)),
    ...Array.from({ length: 4 }, (_, w) => [0, 1, 2, 3, 4].map((n) => 40 + w + 4 * n)),
    [60, 61, 62, 63],
  ];
  return ternary(k, 54, 52, (j, idj) => {
    const code: Code[] = [];
    digits.forEach((vs, b) => {
      vs.forEach((v, n) => {
        code.push(set(F, f32x4Mul(xOf(j, v, 256), get(idj))), set(R, roundLow(k, F)));
        code.push(set(B[b], n === 0 ? get(R) : i32x4Add(i32x4Add(i32x4Add(get(B[b]), get(B[b])), get(B[b])), get(R))));
      });
      // The + 1 of each digit, summed: 121 = 81 + 27 + 9 + 3 + 1 for five, 40 for four; qh's q then * 3.
      let q = i32x4Add(get(B[b]), k.c(vs.length === 5 ? 121 : 40));
      if (vs.length === 4) q = i32x4Mul(q, k.c(3));
      code.push(set(B[b], and(q, k.c(0xff))));
      // ceil(q * 256 / 243) = q + floor((13 q + 242) / 243), the latter (56108 q + 1044472) >> 20 for every q < 256.
      code.push(set(B[b], and(i32x4Add(get(B[b]), i32x4ShrU(i32x4Add(i32x4Mul(get(B[b]), k.c(56108)), k.c(1044472)), 20)), k.c(0xff))));
    });
    code.push(
      store(get(Q), bytesOf(B.slice(0, 4).map(get)), 54 * j),
      store(get(Q), bytesOf(B.slice(4, 8).map(get)), 54 * j + 16),
      store(get(Q), bytesOf(B.slice(8, 12).map(get)), 54 * j + 32),
      storeI32(get(Q), i32x4ExtractLane(bytesOf([12, 12, 12, 12].map((b) => get(B[b]))), 0), 54 * j + 48),
    );
    return code;
  });
}

/** floorLog2f's binades, E = -149 .. 127 at index E + 149: the least bits whose floorLog2f is E + 1 (0xFFFFFFFF: none). */
function log2Table(): Uint8Array {
  const f = new Float32Array(1);
  const u = new Uint32Array(f.buffer);
  const floorOf = (b: number): number => {
    u[0] = b;
    return floorLog2f(f[0]);
  };
  const table = new Uint32Array(278).fill(0xffffffff);
  for (let e = -149; e <= 127; e++) {
    const lo = e >= -126 ? (e + 127) * 2 ** 23 : 2 ** (e + 149);
    const hi = e >= -126 ? lo + 2 ** 23 : 2 * lo;
    let b = hi;
    while (b > lo && floorOf(b - 1) === e + 1) b--;
    if (b < hi) table[e + 149] = b;
  }
  return new Uint8Array(table.buffer);
}

/** The levels of best_index_mxfp4's first half, in its order (GGML_FP4_DOUBLED's 0 .. 7). */
const POSITIVE = GGML_FP4_DOUBLED.slice(0, 8);

function mxfp4(k: Kernel): Uint8Array {
  const [BITS, T, E, DB] = [0, 1, 2, 3].map((i) => k.scalar(i));
  const [AMAX, X, A, C1, BEST, ERR, LT] = Array.from({ length: 7 }, () => k.v());
  const DJ = [k.v(), k.v(), k.v(), k.v()];
  const acc = [k.v(), k.v(), k.v(), k.v()];
  const [t, c] = [[k.v(), k.v(), k.v(), k.v()], [k.v(), k.v(), k.v(), k.v()]];
  const M = POSITIVE.slice(1).map(() => k.v());
  const levels = GGML_FP4_DOUBLED.map(() => k.v());
  const codes = Array.from({ length: 8 }, () => k.v());
  const abs = (j: number, i: number): Code => f32x4Abs(xOf(j, i));
  const body: Code[] = [];
  // Each block's amax by lanes (two chains of four), then the four blocks' lanes merged.
  for (let j = 0; j < 4; j++) {
    const chain = (from: number): Code => f32x4Pmax(f32x4Pmax(f32x4Pmax(f32x4Pmax(k.c(0), abs(j, from)), abs(j, from + 1)), abs(j, from + 2)), abs(j, from + 3));
    body.push(set(acc[j], f32x4Pmax(chain(0), chain(4))));
  }
  body.push(...transpose4(acc.map(get), t, c), set(AMAX, f32x4Pmax(f32x4Pmax(get(c[0]), get(c[1])), f32x4Pmax(get(c[2]), get(c[3])))));
  for (let j = 0; j < 4; j++) {
    body.push(
      set(BITS, i32x4ExtractLane(get(AMAX), j)),
      // floor(log2(amax)) + 149 before the table's correction: from the exponent, or for a subnormal the top bit.
      set(T, pick(i32Add(i32ShrU(get(BITS), i32(23)), i32(22)), i32Sub(i32(31), i32Clz(get(BITS))), i32GeU(get(BITS), i32(0x800000)))),
      // (uint8_t)(floor - 2 + 127); the table is read in bounds even for amax 0 or Inf, whose e is 0.
      set(E, i32And(i32Add(i32Sub(get(T), i32(24)), i32GeU(get(BITS), loadI32(i32Shl(i32And(get(T), i32(511)), i32(2)), TABLE))), i32(0xff))),
      set(E, pick(i32(0), get(E), i32GeU(i32Sub(get(BITS), i32(1)), i32(0x7f7fffff)))),
      storeU8(get(Q), get(E), 17 * j),
      // GGML_E8M0_TO_FP32_HALF: 2^(e - 128), subnormal for e < 2.
      set(DB, pick(i32Shl(i32Sub(get(E), i32(1)), i32(23)), i32Shl(i32(0x200000), get(E)), i32GeU(get(E), i32(2)))),
      set(DJ[j], i32x4Splat(get(DB))),
    );
  }
  const fast: Code[] = [];
  const slow: Code[] = [];
  for (let j = 0; j < 4; j++) {
    // Each midpoint as half of one level plus half of the next, so that it is Inf past a level that is (8 d and 12 d at e = 253).
    const half = (l: number): Code => f32x4Mul(f32x4Mul(k.f(l), get(DJ[j])), k.f(0.5));
    POSITIVE.slice(1).forEach((l, i) => fast.push(set(M[i], f32x4Add(half(POSITIVE[i]), half(l)))));
    for (let i = 0; i < 8; i++) {
      fast.push(set(X, xOf(j, i)), set(A, f32x4Abs(get(X))), set(C1, f32x4Gt(get(A), get(M[0]))));
      const g = (m: number): Code => f32x4Gt(get(A), get(M[m]));
      const count = i32x4Add(i32x4Add(i32x4Add(get(C1), g(1)), i32x4Add(g(2), g(3))), i32x4Add(i32x4Add(g(4), g(5)), g(6)));
      fast.push(set(codes[i], or(i32x4Sub(k.c(0), count), and(and(i32x4ShrS(get(X), 31), get(C1)), k.c(8)))));
    }
    fast.push(store(get(Q), packQ4(k, codes), 17 * j + 1));
    // best_index_mxfp4 as C writes it.
    GGML_FP4_DOUBLED.forEach((v, l) => slow.push(set(levels[l], f32x4Mul(k.f(v), get(DJ[j])))));
    for (let i = 0; i < 8; i++) {
      slow.push(set(X, xOf(j, i)), set(BEST, f32x4Abs(f32x4Sub(get(levels[0]), get(X)))), set(codes[i], k.c(0)));
      for (let l = 1; l < 16; l++) {
        slow.push(
          set(ERR, f32x4Abs(f32x4Sub(get(levels[l]), get(X)))),
          set(LT, f32x4Lt(get(ERR), get(BEST))),
          set(BEST, select(get(ERR), get(BEST), get(LT))),
          set(codes[i], select(k.c(l), get(codes[i]), get(LT))),
        );
      }
    }
    slow.push(store(get(Q), packQ4(k, codes), 17 * j + 1));
  }
  body.push(ifElse(anyTrue(f32x4Eq(get(AMAX), k.f(Infinity))), slow.flat(), fast.flat()));
  return k.bytes(body, 4 * 17, 128, log2Table());
}

const TYPES = {
  TQ1_0: { build: tq1_0, block: 256, bytes: 54, step: 1024 },
  TQ2_0: { build: tq2_0, block: 256, bytes: 66, step: 1024 },
  MXFP4: { build: mxfp4, block: 32, bytes: 17, scalars: 4 },
} as const satisfies Record<string, BlockKernel>;

export type SmallTypeName = keyof typeof TYPES;

/** The module of `type`'s kernel (exported as "encode"). */
export function smallModule(type: SmallTypeName): Uint8Array {
  const t: BlockKernel = TYPES[type];
  return t.build(new Kernel(t.scalars));
}

/**
 * Encodes the n values of x from `s` (whole blocks) into y from byte `o` as small.ts's encoder of
 * `type` does, and returns true; or returns false, having written nothing.
 */
export function encodeSmallSimd(type: SmallTypeName, x: Float32Array, s: number, n: number, y: Uint8Array, o: number): boolean {
  return encodeWithKernel(TYPES[type], x, s, n, y, o);
}
