/**
 * WebAssembly SIMD forms of the K-quants' per-sub-block scale searches in search.ts (make_qkx2 /
 * make_qkx3, make_qx_quants, make_q3_quants), giving exactly the reference's scales, minimums and
 * codes, or declining (false) where WebAssembly SIMD is absent or `useGgmlQuantizeSimd(false)`.
 *
 * A search's float sums run in C's order over the values of one sub-block, so the values of a
 * sub-block are never spread over lanes: the four 32-bit lanes hold four sub-blocks, each lane
 * running its own search with the reference's operations (one C float operation = one f32x4
 * operation, no fused multiply-add, no relaxed SIMD, division and sqrt correctly rounded), and
 * where the reference branches on a lane's values the kernel computes both sides and selects per
 * lane with the reference's comparison (a strict `<` or `>` keeps the earlier candidate on a tie,
 * a NaN compares false). nearest_int is the reference's: add 1.5 * 2^23, keep the low 23 bits of
 * the sum minus 2^22. Lanes whose search the reference ends early (an all-zero or constant
 * sub-block) run the search anyway and take the early answer at the end; a lane whose candidates
 * all fail keeps its first codes, which are recomputed at the end from the best candidate's
 * iscale and minimum rather than copied at each improvement.
 *
 * After a search, the same values give the codes recomputed from the stored scales (element-wise,
 * so any lanes will do) and, for Q3_K and Q6_K, their packing. The caller copies a chunk of up to
 * 16 super-blocks in, in its order; the kernels transpose each run of four sub-blocks (value i of
 * sub-block j to float 4 * i + j of the run) with lane shuffles, and the codes back. The make_qkx
 * and make_q3 kernels, whose steps wait on each other, run two runs side by side (two independent
 * chains); make_qx's candidates are independent, and one run at a time keeps it as fast.
 *
 * One small module per search (with its recomputation and packing), built on first use: a module
 * of all of them took a few hundred milliseconds to assemble.
 *
 * Browser-safe; built from source at run time like ../simd.ts (no generated file).
 */
import {
  and, andNot, anyTrue, f32ConvertS, f32x4Abs, f32x4Add, f32x4ConvertS, f32x4Div, f32x4Eq, f32x4Gt, f32x4Le, f32x4Lt, f32x4Mul,
  f32x4Ne, f32x4Neg, f32x4Splat, f32x4Sqrt, f32x4Sub, get, i32, i32Add, i32And, i32Eqz, i32GeU, i32GtS, i32Or, i32Shl, i32Sub, i32x4Add, i32x4MaxS, i32x4MinS, i32x4Ne,
  i16x8Shl, i16x8ShrU, i32ShrU, i32x4Shl, i32x4ShrS, i32x4ShrU, i32x4Splat, i32x4Sub, ifElse, load, loadI32, moduleBytes, narrowU, narrowU8, or, pick, select, set, shuffle, store, storeI32, whileNot, type Code, type Func,
} from "../../kernels/wasm/encoder.js";
import { V128Locals } from "../../kernels/wasm/v128-locals.js";
import { ownInstance } from "../../kernels/wasm/own-instance.js";
import { f32OfHalf, fp16 } from "./half-simd.js";
import type { WasmMemory } from "../../kernels/wasm/resident.js";

const fr = Math.fround;

/** Values per kernel call: 16 sub-blocks of 256, within the regions below. */
export const SEARCH_CHUNK = 4096;
// Three pages: the values and weights transposed, codes (transposed, i32 per value), per-run
// results, a run's scratch; then the values, weights and codes (bytes) in the caller's order.
const X = 0;
const W = 16384;
const L = 32768;
const OUT = 49152;
/** Per run: scale, minimum (negated, as ggml returns it), sum of weights, and sigma2 (an input). */
const OUT_STRIDE = 64;
const AUX = 61440;
const IN_X = 65536;
const IN_W = 81920;
const CODES = 98304;
/** The packed codes of each super-block, where the type has a packing kernel. */
const PACKED = 102400;
/** Q3_K's whole blocks (110 bytes each), where its kernels make them (their last store runs 2 bytes past). */
const BLOCKS = 106496;
/**
 * make_q3's later passes: per run its sums and lanes (STATE, OUT_STRIDE per run); the compact
 * region's sums and moving lanes (CS), each lane's sub-block (CO, an i32 each), values and codes.
 */
const STATE = 110592;
const CS = 114688;
const CO = 118784;
const CX = 122880;
const CL = 139264;
const PAGES = 3;

// Parameters (runs, zero), then i32 locals (V .. NR: make_q3's compact passes).
const RUNS = 0;
const ZERO = 1;
const P = 2;
const Q = 3;
const IS = 4;
const V = 5;
const K = 6;
const K2 = 7;
const SA = 8;
const SS = 9;
const DA = 10;
const DS = 11;
const NR = 12;
const FIRST_V128 = 13;

/** A kernel's v128 locals and constants (built from `zero` before the loop), and its function. */
class Kernel extends V128Locals {
  constructor() {
    super(FIRST_V128, ZERO);
  }
  func(name: string, body: Code[]): Func {
    return { name, params: 2, i32Locals: FIRST_V128 - 2, v128Locals: this.count, body: [...this.prologue().flat(), ...body.flat()] };
  }
}

/** ggml's nearest_int in each lane (an f32x4 expression to i32x4). */
const nearest = (k: Kernel, v: Code): Code => i32x4Sub(and(f32x4Add(v, k.c(0x4b400000)), k.c(0x007fffff)), k.c(0x00400000));
/** The reference's clamp(l, lo, hi) on i32x4. */
const clamp = (k: Kernel, l: Code, lo: number, hi: number): Code => i32x4MaxS(i32x4MinS(l, k.c(hi)), k.c(lo));
const xAt = (i: number): Code => load(get(P), X + 16 * i);
const wAt = (i: number): Code => load(get(P), W + 16 * i);
const out = (slot: number): Code => load(get(Q), OUT + 16 * slot);
const setOut = (slot: number, v: Code): Code => store(get(Q), v, OUT + 16 * slot);
/** `a` where the lanes of `mask` are set, else `b`. */
const where = (mask: number, a: Code, b: Code): Code => select(a, b, get(mask));

/** Lanes (of 32 bits) of a ++ b as a byte shuffle. */
const lanes32 = (a: Code, b: Code, l: readonly number[]): Code => shuffle(a, b, l.flatMap((x) => [4 * x, 4 * x + 1, 4 * x + 2, 4 * x + 3]));

/** The 4 x 4 transpose of the 32-bit lanes of `rows` (expressions) into locals `to`, through locals `t`. */
export function transpose4(rows: readonly Code[], t: readonly number[], to: readonly number[]): Code[] {
  return [
    set(t[0], lanes32(rows[0], rows[1], [0, 4, 1, 5])),
    set(t[1], lanes32(rows[0], rows[1], [2, 6, 3, 7])),
    set(t[2], lanes32(rows[2], rows[3], [0, 4, 1, 5])),
    set(t[3], lanes32(rows[2], rows[3], [2, 6, 3, 7])),
    set(to[0], lanes32(get(t[0]), get(t[2]), [0, 1, 4, 5])),
    set(to[1], lanes32(get(t[0]), get(t[2]), [2, 3, 6, 7])),
    set(to[2], lanes32(get(t[1]), get(t[3]), [0, 1, 4, 5])),
    set(to[3], lanes32(get(t[1]), get(t[3]), [2, 3, 6, 7])),
  ];
}

/** A run's n values of its four sub-blocks (from region `from`, in order) into region `to`, transposed. */
function transposeIn(k: Kernel, n: number, from: number, to: number, shift = 0): Code[] {
  from += shift;
  to += shift;
  const t = [k.v(), k.v(), k.v(), k.v()];
  const c = [k.v(), k.v(), k.v(), k.v()];
  const code: Code[] = [];
  for (let q = 0; q < n / 4; q++) {
    code.push(...transpose4([0, 1, 2, 3].map((j) => load(get(P), from + 4 * (n * j + 4 * q))), t, c));
    for (let r = 0; r < 4; r++) code.push(store(get(P), get(c[r]), to + 16 * (4 * q + r)));
  }
  return code;
}

/** A run's codes (transposed i32 in L, each in 0..255) as bytes in order at CODES. */
function codesOut(k: Kernel, n: number): Code[] {
  const t = [k.v(), k.v(), k.v(), k.v()];
  const R = Array.from({ length: 4 }, () => [k.v(), k.v(), k.v(), k.v()]);
  const at = i32ShrU(get(P), i32(2));
  const code: Code[] = [];
  for (let q0 = 0; q0 < n / 4; q0 += 4) {
    for (let qq = 0; qq < 4; qq++) code.push(...transpose4([0, 1, 2, 3].map((r) => load(get(P), L + 16 * (4 * (q0 + qq) + r))), t, R[qq]));
    for (let j = 0; j < 4; j++) {
      const bytes = narrowU8(narrowU(get(R[0][j]), get(R[1][j])), narrowU(get(R[2][j]), get(R[3][j])));
      code.push(store(at, bytes, CODES + n * j + 4 * q0));
    }
  }
  return code;
}

/** The loop over `runs` runs of four sub-blocks of n values, `per` runs (an even count with 2) at a time. */
function runLoop(n: number, body: Code[], per = 1): Code {
  return [
    ...set(P, i32(0)),
    ...set(Q, i32(0)),
    ...whileNot(i32Eqz(get(RUNS)), [
      ...body.flat(),
      ...set(P, i32Add(get(P), i32(16 * n * per))),
      ...set(Q, i32Add(get(Q), i32(OUT_STRIDE * per))),
      ...set(RUNS, i32Sub(get(RUNS), i32(per))),
    ]),
  ];
}

/** Code in sequence. */
const seq = (...parts: Code[]): Code => parts.flat();

/** Statement lists of equal length, one per run, interleaved statement by statement. */
function zip(lists: readonly Code[][]): Code[] {
  const out: Code[] = [];
  for (let i = 0; i < lists[0].length; i++) for (const l of lists) out.push(l[i]);
  return out;
}

/**
 * How a kernel gets its weights: `avx` fr(sqrt(sum x^2 / n) + |x|) (Q4_K, Q5_K), `abs` |x| (Q2_K),
 * `imatrix` fr(qw * sqrt(sigma2 + x^2)) from the qw the caller put in the weights region and the
 * run's sigma2, with their sum written out (Q2_K .. Q5_K with an importance matrix), `given` the
 * weights as the caller put them (Q6_K with one), `x2` x^2 (make_qx_quants's rmse_type 1 without).
 */
type Weights = "avx" | "abs" | "imatrix" | "given" | "x2";

/**
 * Code that transposes run r's values (and the caller's weights) in, then fills its weights region
 * (`given`, `x2`: nothing more).
 */
function weightsOf(k: Kernel, n: number, mode: Weights, r = 0): Code[] {
  const at = 16 * n * r;
  const x = (i: number): Code => load(get(P), X + at + 16 * i);
  const w = (i: number): Code => load(get(P), W + at + 16 * i);
  const code: Code[] = [...transposeIn(k, n, IN_X, X, at)];
  if (mode === "imatrix" || mode === "given") code.push(...transposeIn(k, n, IN_W, W, at));
  if (mode === "avx") {
    const [S, AV] = [k.v(), k.v()];
    for (let i = 0; i < n; i++) code.push(set(S, f32x4Add(i === 0 ? k.c(0) : get(S), f32x4Mul(x(i), x(i)))));
    code.push(set(AV, f32x4Sqrt(f32x4Div(get(S), k.f(n)))));
    for (let i = 0; i < n; i++) code.push(store(get(P), f32x4Add(get(AV), f32x4Abs(x(i))), W + at + 16 * i));
  } else if (mode === "abs") {
    for (let i = 0; i < n; i++) code.push(store(get(P), f32x4Abs(x(i)), W + at + 16 * i));
  } else if (mode === "imatrix") {
    const [SIG, SW, WI] = [k.v(), k.v(), k.v()];
    code.push(set(SIG, load(get(Q), OUT + OUT_STRIDE * r + 48)));
    for (let i = 0; i < n; i++) {
      code.push(set(WI, f32x4Mul(w(i), f32x4Sqrt(f32x4Add(get(SIG), f32x4Mul(x(i), x(i)))))), store(get(P), get(WI), W + at + 16 * i));
      code.push(set(SW, f32x4Add(i === 0 ? k.c(0) : get(SW), get(WI))));
    }
    code.push(store(get(Q), get(SW), OUT + OUT_STRIDE * r + 32));
  }
  return code;
}

/** make_qkx2_quants (`x2`) or make_qkx3_quants with weights, codes in [0, nmax]: scale, -min and codes out. */
interface QkxParams {
  readonly n: number;
  readonly nmax: number;
  readonly rmin: number;
  readonly rdelta: number;
  readonly nstep: number;
  readonly mad: boolean;
  readonly x2: boolean;
  readonly weights: Weights;
}

/**
 * Each candidate's grid starts from the minimum the last improvement left, so the candidates form
 * one chain (sums, then the error with the new scale and minimum, then the comparison): two runs go
 * side by side, their statements interleaved, to give the processor two independent chains.
 */
function qkxKernel(k: Kernel, p: QkxParams): Code {
  const { n, nmax } = p;
  const IF = k.v();
  const errTerm = (diff: Code): Code => (p.mad ? f32x4Abs(diff) : f32x4Mul(diff, diff));
  const one = (r: number): { pre: Code[]; candidate: Code[]; post: Code[] } => {
    const [MIN, MAX, SUMW, SUMX, DONE, MIN0, ISC, SCALE, BEST, BISC, BMIN, LF, DIFF, SL, SL2, SXL, WL, D, TS, TM, POS, ERR, TAKE] =
      Array.from({ length: 23 }, () => k.v());
    const at = 16 * n * r;
    const x = (i: number): Code => load(get(P), X + at + 16 * i);
    const w = (i: number): Code => load(get(P), W + at + 16 * i);
    const aux = AUX + at;
    const codesAt = (i: number, iscale: number, min: number): Code =>
      clamp(k, nearest(k, f32x4Mul(get(iscale), f32x4Sub(x(i), get(min)))), 0, nmax);
    const pre: Code[] = [...weightsOf(k, n, p.weights, r)];
    pre.push(set(MIN, x(0)), set(MAX, x(0)), set(SUMW, w(0)), set(SUMX, f32x4Mul(w(0), x(0))));
    for (let i = 1; i < n; i++) {
      pre.push(
        set(MIN, select(x(i), get(MIN), f32x4Lt(x(i), get(MIN)))),
        set(MAX, select(x(i), get(MAX), f32x4Gt(x(i), get(MAX)))),
        set(SUMW, f32x4Add(get(SUMW), w(i))),
        set(SUMX, f32x4Add(get(SUMX), f32x4Mul(w(i), x(i)))),
      );
    }
    pre.push(
      set(MIN, select(k.c(0), get(MIN), f32x4Gt(get(MIN), k.c(0)))),
      set(DONE, p.x2 ? f32x4Eq(get(MAX), get(MIN)) : f32x4Le(get(MAX), get(MIN))),
      set(MIN0, get(MIN)),
      set(ISC, f32x4Div(k.f(nmax), f32x4Sub(get(MAX), get(MIN)))),
      set(SCALE, f32x4Div(k.f(1), get(ISC))),
      set(BEST, k.c(0)),
    );
    for (let i = 0; i < n; i++) {
      pre.push(
        set(LF, f32x4ConvertS(codesAt(i, ISC, MIN))),
        set(DIFF, f32x4Sub(f32x4Add(f32x4Mul(get(SCALE), get(LF)), get(MIN)), x(i))),
        set(BEST, f32x4Add(get(BEST), f32x4Mul(w(i), errTerm(get(DIFF))))),
      );
    }
    pre.push(set(BISC, get(ISC)), set(BMIN, get(MIN)));
    // Candidate is (its float in IF): codes and sums, the least-squares scale and minimum, the error.
    const candidate: Code[] = [
      set(ISC, f32x4Div(f32x4Add(f32x4Add(k.f(p.rmin), f32x4Mul(k.f(p.rdelta), get(IF))), k.f(nmax)), f32x4Sub(get(MAX), get(MIN)))),
    ];
    for (let i = 0; i < n; i++) {
      candidate.push(
        set(LF, f32x4ConvertS(codesAt(i, ISC, MIN))),
        store(i32(0), get(LF), aux + 16 * i),
        set(WL, f32x4Mul(w(i), get(LF))),
        set(SL, f32x4Add(i === 0 ? k.c(0) : get(SL), get(WL))),
        set(SL2, f32x4Add(i === 0 ? k.c(0) : get(SL2), f32x4Mul(get(WL), get(LF)))),
        set(SXL, f32x4Add(i === 0 ? k.c(0) : get(SXL), f32x4Mul(get(WL), x(i)))),
      );
    }
    candidate.push(
      set(D, f32x4Sub(f32x4Mul(get(SUMW), get(SL2)), f32x4Mul(get(SL), get(SL)))),
      set(TS, f32x4Div(f32x4Sub(f32x4Mul(get(SUMW), get(SXL)), f32x4Mul(get(SUMX), get(SL))), get(D))),
      set(TM, f32x4Div(f32x4Sub(f32x4Mul(get(SL2), get(SUMX)), f32x4Mul(get(SL), get(SXL))), get(D))),
      set(POS, f32x4Gt(get(TM), k.c(0))),
      set(TM, where(POS, k.c(0), get(TM))),
      set(TS, where(POS, f32x4Div(get(SXL), get(SL2)), get(TS))),
    );
    for (let i = 0; i < n; i++) {
      const diff = f32x4Sub(f32x4Add(f32x4Mul(get(TS), load(i32(0), aux + 16 * i)), get(TM)), x(i));
      candidate.push(set(ERR, f32x4Add(i === 0 ? k.c(0) : get(ERR), f32x4Mul(w(i), errTerm(diff)))));
    }
    candidate.push(
      set(TAKE, and(f32x4Gt(get(D), k.c(0)), f32x4Lt(get(ERR), get(BEST)))),
      set(BEST, where(TAKE, get(ERR), get(BEST))),
      set(SCALE, where(TAKE, get(TS), get(SCALE))),
      set(BISC, where(TAKE, get(ISC), get(BISC))),
      set(BMIN, where(TAKE, get(MIN), get(BMIN))),
      set(MIN, where(TAKE, get(TM), get(MIN))),
    );
    const post: Code[] = [];
    for (let i = 0; i < n; i++) post.push(store(get(P), where(DONE, k.c(0), codesAt(i, BISC, BMIN)), L + at + 16 * i));
    post.push(
      store(get(Q), where(DONE, k.c(0), get(SCALE)), OUT + OUT_STRIDE * r),
      store(get(Q), f32x4Neg(where(DONE, get(MIN0), get(MIN))), OUT + OUT_STRIDE * r + 16),
    );
    return { pre, candidate, post };
  };
  const runs = [one(0), one(1)];
  // The candidates is = 0 .. nstep.
  const body: Code[] = [
    ...zip(runs.map((r) => r.pre)),
    set(IS, i32(0)),
    whileNot(i32GtS(get(IS), i32(p.nstep)), [
      ...set(IF, f32x4Splat(f32ConvertS(get(IS)))),
      ...zip(runs.map((r) => r.candidate)).flat(),
      ...set(IS, i32Add(get(IS), i32(1))),
    ]),
    ...zip(runs.map((r) => r.post)),
  ];
  return runLoop(n, body, 2);
}

/** The first value of largest magnitude (max) and that magnitude (amax), as make_qx/q3_quants find them. */
function maxAbs(k: Kernel, n: number, MAX: number, AMAX: number): Code[] {
  const [AX, GT] = [k.v(), k.v()];
  const code: Code[] = [set(MAX, k.c(0)), set(AMAX, k.c(0))];
  for (let i = 0; i < n; i++) {
    code.push(
      set(AX, f32x4Abs(xAt(i))),
      set(GT, f32x4Gt(get(AX), get(AMAX))),
      set(AMAX, where(GT, get(AX), get(AMAX))),
      set(MAX, where(GT, xAt(i), get(MAX))),
    );
  }
  return code;
}

/** GROUP_MAX_EPS (1e-15 as float32). */
const EPS = fr(1e-15);

/** make_qx_quants with rmse_type 1: codes l + nmax, l in [-nmax, nmax - 1]; scale and codes out. */
function qxKernel(k: Kernel, n: number, nmax: number, weights: Weights): Code {
  const [MAX, AMAX, ZEROS, ISC, SLX, SL2, LF, SCALE, BEST, BISC, TAKE, IF] = Array.from({ length: 12 }, () => k.v());
  // Each candidate's sums take fr(w * x) and w of every value: both once per run, into AUX and W.
  const wx = (i: number): Code => load(i32(0), AUX + 16 * i);
  const codesAt = (i: number, iscale: number): Code => clamp(k, nearest(k, f32x4Mul(get(iscale), xAt(i))), -nmax, nmax - 1);
  const sums = (): Code[] => {
    const code: Code[] = [];
    for (let i = 0; i < n; i++) {
      code.push(
        set(LF, f32x4ConvertS(codesAt(i, ISC))),
        set(SLX, f32x4Add(i === 0 ? k.c(0) : get(SLX), f32x4Mul(wx(i), get(LF)))),
        set(SL2, f32x4Add(i === 0 ? k.c(0) : get(SL2), f32x4Mul(f32x4Mul(wAt(i), get(LF)), get(LF)))),
      );
    }
    return code;
  };
  const body: Code[] = [...weightsOf(k, n, weights), ...maxAbs(k, n, MAX, AMAX)];
  for (let i = 0; i < n; i++) {
    if (weights === "x2") body.push(store(get(P), f32x4Mul(xAt(i), xAt(i)), W + 16 * i));
    body.push(store(i32(0), f32x4Mul(wAt(i), xAt(i)), AUX + 16 * i));
  }
  body.push(
    set(ZEROS, f32x4Lt(get(AMAX), k.f(EPS))),
    set(ISC, f32x4Div(k.f(-nmax), get(MAX))),
    ...sums(),
    set(SCALE, where(ZEROS, k.c(0), select(f32x4Div(get(SLX), get(SL2)), k.c(0), f32x4Ne(get(SL2), k.c(0))))),
    set(BEST, f32x4Mul(get(SCALE), get(SLX))),
    set(BISC, get(ISC)),
  );
  // The candidates is = -9 .. 9 but 0.
  const candidate: Code[] = [
    set(IF, f32x4Splat(f32ConvertS(get(IS)))),
    set(ISC, f32x4Div(f32x4Neg(f32x4Add(k.f(nmax), f32x4Mul(k.f(fr(0.1)), get(IF)))), get(MAX))),
    ...sums(),
    set(TAKE, and(f32x4Gt(get(SL2), k.c(0)), f32x4Gt(f32x4Mul(get(SLX), get(SLX)), f32x4Mul(get(BEST), get(SL2))))),
    set(SCALE, where(TAKE, f32x4Div(get(SLX), get(SL2)), get(SCALE))),
    set(BEST, where(TAKE, f32x4Mul(get(SCALE), get(SLX)), get(BEST))),
    set(BISC, where(TAKE, get(ISC), get(BISC))),
  ];
  body.push(
    set(IS, i32(-9)),
    whileNot(i32GtS(get(IS), i32(9)), [
      ...ifElse(i32Eqz(get(IS)), [], candidate.flat()),
      ...set(IS, i32Add(get(IS), i32(1))),
    ]),
  );
  for (let i = 0; i < n; i++) body.push(store(get(P), where(ZEROS, k.c(0), i32x4Add(codesAt(i, BISC), k.c(nmax))), L + 16 * i));
  body.push(setOut(0, where(ZEROS, k.c(0), get(SCALE))));
  return runLoop(n, body);
}

/**
 * make_q3_quants with do_rmse (weights x^2): codes l + nmax; scale and codes out. Each value's step
 * waits on the sums the last one left (a division among them), so two runs go side by side, their
 * statements interleaved, to give the processor two independent chains.
 *
 * Most sub-blocks move no code in their first pass (which ends their passes), so the passes after
 * it run only on the sub-blocks still moving codes: the first pass runs on every run in place, then
 * the sub-blocks whose pass moved a code (and that are not all but zero) are copied, lane by lane,
 * to the compact region (values, codes, sums and where each came from) and run there, four to a
 * run, padded with inert lanes (values 0 and sumlx 0: no code moves); after each pass the compact
 * region keeps only the sub-blocks that moved a code, the others' codes and sums going back to their
 * own run, until none is left or the fifth pass. Each sub-block thus runs the passes ggml runs on it
 * (a pass that moves nothing ends them), and its lanes' operations are the same in either region.
 */
function q3Kernel(k: Kernel, n: number, nmax: number): Code {
  /**
   * One pass over run r of the pair at P: values from region xAt, codes in region lAt, the weights
   * `given` (W and AUX) or recomputed; the sums in locals SLX, SL2, the lanes that moved a code into CH.
   */
  const passOf = (r: number, xAt: number, lAt: number, given: boolean, SLX: number, SL2: number, CH: number): Code[] => {
    const [XI, LI, LF, NL, NF, WX, WI, S1, S2, TAKE] = Array.from({ length: 10 }, () => k.v());
    const at = 16 * n * r;
    const pass: Code[] = [];
    for (let i = 0; i < n; i++) {
      pass.push(
        set(XI, load(get(P), xAt + at + 16 * i)),
        // The weights x^2 and fr(w * x): precomputed for the runs in place, else recomputed (the same operations).
        set(WI, given ? load(get(P), W + at + 16 * i) : f32x4Mul(get(XI), get(XI))),
        set(WX, given ? load(i32(0), AUX + at + 16 * i) : f32x4Mul(get(WI), get(XI))),
        set(LI, load(get(P), lAt + at + 16 * i)),
        set(LF, f32x4ConvertS(get(LI))),
        set(S1, f32x4Sub(get(SLX), f32x4Mul(get(WX), get(LF)))),
        set(S2, f32x4Sub(get(SL2), f32x4Mul(f32x4Mul(get(WI), get(LF)), get(LF)))),
        set(NL, clamp(k, nearest(k, f32x4Div(f32x4Mul(get(XI), get(S2)), get(S1))), -nmax, nmax - 1)),
        set(TAKE, and(f32x4Gt(get(S1), k.c(0)), i32x4Ne(get(NL), get(LI)))),
        set(NF, f32x4ConvertS(get(NL))),
        set(S1, f32x4Add(get(S1), f32x4Mul(get(WX), get(NF)))),
        set(S2, f32x4Add(get(S2), f32x4Mul(f32x4Mul(get(WI), get(NF)), get(NF)))),
        set(TAKE, and(get(TAKE), and(f32x4Gt(get(S2), k.c(0)),
          f32x4Gt(f32x4Mul(f32x4Mul(get(S1), get(S1)), get(SL2)), f32x4Mul(f32x4Mul(get(SLX), get(SLX)), get(S2)))))),
        store(get(P), where(TAKE, get(NL), get(LI)), lAt + at + 16 * i),
        set(SLX, where(TAKE, get(S1), get(SLX))),
        set(SL2, where(TAKE, get(S2), get(SL2))),
        set(CH, i === 0 ? get(TAKE) : or(get(CH), get(TAKE))),
      );
    }
    return pass;
  };
  // The first pass, in place: per run its sums, zero lanes and moving lanes into STATE.
  const first = (r: number): { pre: Code[]; pass: Code[]; post: Code[] } => {
    const [MAX, AMAX, AX, GT, ZEROS, ISC, SLX, SL2, LI, LF, CH] = Array.from({ length: 11 }, () => k.v());
    const at = 16 * n * r;
    const x = (i: number): Code => load(get(P), X + at + 16 * i);
    const w = (i: number): Code => load(get(P), W + at + 16 * i);
    const wx = (i: number): Code => load(i32(0), AUX + at + 16 * i);
    const pre: Code[] = [...transposeIn(k, n, IN_X, X, at), set(MAX, k.c(0)), set(AMAX, k.c(0))];
    for (let i = 0; i < n; i++) {
      pre.push(
        set(AX, f32x4Abs(x(i))),
        set(GT, f32x4Gt(get(AX), get(AMAX))),
        set(AMAX, where(GT, get(AX), get(AMAX))),
        set(MAX, where(GT, x(i), get(MAX))),
        store(get(P), f32x4Mul(x(i), x(i)), W + at + 16 * i),
        store(i32(0), f32x4Mul(w(i), x(i)), AUX + at + 16 * i),
      );
    }
    pre.push(set(ZEROS, f32x4Lt(get(AMAX), k.f(EPS))), set(ISC, f32x4Div(k.f(-nmax), get(MAX))));
    for (let i = 0; i < n; i++) {
      pre.push(
        set(LI, clamp(k, nearest(k, f32x4Mul(get(ISC), x(i))), -nmax, nmax - 1)),
        store(get(P), get(LI), L + at + 16 * i),
        set(LF, f32x4ConvertS(get(LI))),
        set(SLX, f32x4Add(i === 0 ? k.c(0) : get(SLX), f32x4Mul(wx(i), get(LF)))),
        set(SL2, f32x4Add(i === 0 ? k.c(0) : get(SL2), f32x4Mul(f32x4Mul(w(i), get(LF)), get(LF)))),
      );
    }
    const post: Code[] = [
      store(get(Q), get(SLX), STATE + OUT_STRIDE * r),
      store(get(Q), get(SL2), STATE + OUT_STRIDE * r + 16),
      store(get(Q), get(ZEROS), STATE + OUT_STRIDE * r + 32),
      store(get(Q), andNot(get(CH), get(ZEROS)), STATE + OUT_STRIDE * r + 48),
    ];
    return { pre, pass: passOf(r, X, L, true, SLX, SL2, CH), post };
  };
  // A later pass on a compact pair: its sums in and out of CS, its moving lanes at CS + 32.
  const later = (r: number): Code[] => {
    const [SLX, SL2, CH] = [k.v(), k.v(), k.v()];
    return [
      set(SLX, load(get(Q), CS + OUT_STRIDE * r)),
      set(SL2, load(get(Q), CS + OUT_STRIDE * r + 16)),
      ...passOf(r, CX, CL, false, SLX, SL2, CH),
      store(get(Q), get(SLX), CS + OUT_STRIDE * r),
      store(get(Q), get(SL2), CS + OUT_STRIDE * r + 16),
      store(get(Q), get(CH), CS + OUT_STRIDE * r + 32),
    ];
  };
  const runs = [first(0), first(1)];
  const pairs = [later(0), later(1)];
  /** Byte offsets of sub-block `v`'s lane: in a region of runs of n values, and in one of OUT_STRIDE per run. */
  const laneAt = (v: Code): Code => i32Or(i32Shl(i32ShrU(v, i32(2)), i32(8)), i32Shl(i32And(v, i32(3)), i32(2)));
  const stateAt = (v: Code): Code => i32Or(i32Shl(i32ShrU(v, i32(2)), i32(6)), i32Shl(i32And(v, i32(3)), i32(2)));
  const copy = (from: number, to: number, count: number): Code =>
    seq(...Array.from({ length: count }, (_, i) => storeI32(get(DA), loadI32(get(SA), from + 16 * i), to + 16 * i)));
  const copyState = (from: number, to: number): Code => seq(...[0, 16].map((o) => storeI32(get(DS), loadI32(get(SS), from + o), to + o)));
  const addresses = (src: Code, dst: Code): Code => seq(set(SA, laneAt(src)), set(SS, stateAt(src)), set(DA, laneAt(dst)), set(DS, stateAt(dst)));
  /** Lane K2 of the compact region takes the sub-block at SA / SS (of regions x, l, s) that came from `origin`. */
  const keep = (x: number, l: number, s: number, origin: Code): Code => seq(
    copy(x, CX, n), copy(l, CL, n), copyState(s, CS),
    storeI32(i32Shl(get(K2), i32(2)), origin, CO),
    set(K2, i32Add(get(K2), i32(1))),
  );
  /** Lanes K .. the end of K's pair made inert. */
  const pad = seq(
    set(V, get(K)),
    whileNot(i32Eqz(i32And(get(V), i32(7))), seq(
      set(DA, laneAt(get(V))),
      set(DS, stateAt(get(V))),
      ...Array.from({ length: n }, (_, i) => storeI32(get(DA), i32(0), CX + 16 * i)),
      storeI32(get(DS), i32(0), CS),
      set(V, i32Add(get(V), i32(1))),
    )),
  );
  const origin = loadI32(i32Shl(get(V), i32(2)), CO);
  const body = seq(
    set(NR, get(RUNS)),
    runLoop(n, [...zip(runs.map((r) => r.pre)), ...zip(runs.map((r) => r.pass)), ...zip(runs.map((r) => r.post))], 2),
    // The moving sub-blocks to the compact region.
    set(K2, i32(0)),
    set(V, i32(0)),
    whileNot(i32GeU(get(V), i32Shl(get(NR), i32(2))), seq(
      set(SS, stateAt(get(V))),
      ifElse(i32Eqz(loadI32(get(SS), STATE + 48)), [], seq(addresses(get(V), get(K2)), keep(X, L, STATE, get(V)))),
      set(V, i32Add(get(V), i32(1))),
    )),
    set(K, get(K2)),
    set(IS, i32(4)),
    whileNot(i32Eqz(get(K)), seq(
      pad,
      set(RUNS, i32Shl(i32ShrU(i32Add(get(K), i32(7)), i32(3)), i32(1))),
      runLoop(n, zip(pairs), 2),
      set(IS, i32Sub(get(IS), i32(1))),
      // Those that moved a code stay (but after the fifth pass); the others go back.
      set(K2, i32(0)),
      set(V, i32(0)),
      whileNot(i32GeU(get(V), get(K)), seq(
        ifElse(i32And(i32GtS(get(IS), i32(0)), i32Eqz(i32Eqz(loadI32(stateAt(get(V)), CS + 32)))),
          seq(addresses(get(V), get(K2)), keep(CX, CL, CS, origin)),
          seq(addresses(get(V), origin), copy(CL, L, n), copyState(CS, STATE))),
        set(V, i32Add(get(V), i32(1))),
      )),
      set(K, get(K2)),
    )),
  );
  // Every run's codes and scale from its state.
  const [SLX, SL2, ZEROS] = [k.v(), k.v(), k.v()];
  const post: Code[] = [set(SLX, load(get(Q), STATE)), set(SL2, load(get(Q), STATE + 16)), set(ZEROS, load(get(Q), STATE + 32))];
  for (let i = 0; i < n; i++) post.push(store(get(P), where(ZEROS, k.c(0), i32x4Add(load(get(P), L + 16 * i), k.c(nmax))), L + 16 * i));
  post.push(store(get(Q), where(ZEROS, k.c(0), select(f32x4Div(get(SLX), get(SL2)), k.c(0), f32x4Gt(get(SL2), k.c(0)))), OUT));
  return seq(body, set(RUNS, get(NR)), runLoop(n, post));
}

/**
 * The recomputation of every code from its sub-block's stored scale dl and minimum ml (run slots 0
 * and 1): clamp(nearest_int(fr(fr(x + ml) / dl)), lo, hi) + offset (without ml: fr(x / dl)),
 * keeping the search's code where dl == 0. Element-wise, so lanes need no care for order.
 */
function requantKernel(k: Kernel, n: number, lo: number, hi: number, offset: number, withMin: boolean): Code {
  const [DL, ML, Z] = [k.v(), k.v(), k.v()];
  const body: Code[] = [set(DL, out(0)), set(ML, out(1)), set(Z, f32x4Eq(get(DL), k.c(0)))];
  for (let i = 0; i < n; i++) {
    const v = withMin ? f32x4Add(xAt(i), get(ML)) : xAt(i);
    const code = i32x4Add(clamp(k, nearest(k, f32x4Div(v, get(DL))), lo, hi), k.c(offset));
    body.push(store(get(P), where(Z, load(get(P), L + 16 * i), code), L + 16 * i));
  }
  body.push(...codesOut(k, n));
  return runLoop(n, body);
}

/**
 * The packing of `blocks` super-blocks' codes (bytes in order at CODES) into their blocks' code
 * bytes (from `base`, `stride` bytes per block), with byte-lane masks and 16-bit shifts that move no bit
 * across a byte: Q3_K's hmask (bit 2 of code j as bit j / 32 of byte j % 32) then its 2-bit planes;
 * Q6_K's low nibbles (elements l and l + 64 per byte) and high 2-bit pairs.
 */
function packKernel(k: Kernel, type: "Q3_K" | "Q6_K", base = PACKED, stride: number = PACK_BYTES[type]): Code {
  const [A, B, C, D, H] = [k.v(), k.v(), k.v(), k.v(), k.v()];
  const code = (i: number): Code => load(get(P), CODES + i);
  const body: Code[] = [];
  if (type === "Q3_K") {
    for (let h = 0; h < 32; h += 16) {
      body.push(set(H, k.c(0)));
      for (let g = 0; g < 8; g++) body.push(set(H, or(get(H), i16x8Shl(i16x8ShrU(and(code(32 * g + h), k.c(0x04040404)), 2), g))));
      body.push(store(get(Q), get(H), base + h));
    }
    for (let j = 0; j < 256; j += 128) {
      for (let h = 0; h < 32; h += 16) {
        const plane = (i: number, sh: number): Code => i16x8Shl(and(code(j + 32 * i + h), k.c(0x03030303)), sh);
        body.push(store(get(Q), or(or(plane(0, 0), plane(1, 2)), or(plane(2, 4), plane(3, 6))), base + 32 + j / 4 + h));
      }
    }
  } else {
    for (let j = 0, ql = 0, qh = 128; j < 256; j += 128, ql += 64, qh += 32) {
      for (let h = 0; h < 32; h += 16) {
        body.push(set(A, code(j + h)), set(B, code(j + h + 32)), set(C, code(j + h + 64)), set(D, code(j + h + 96)));
        const low = (v: number): Code => and(get(v), k.c(0x0f0f0f0f));
        const high = (v: number, sh: number): Code => i16x8Shl(and(i16x8ShrU(get(v), 4), k.c(0x03030303)), sh);
        body.push(
          store(get(Q), or(low(A), i16x8Shl(low(C), 4)), base + ql + h),
          store(get(Q), or(low(B), i16x8Shl(low(D), 4)), base + ql + 32 + h),
          store(get(Q), or(or(high(A, 0), high(B, 2)), or(high(C, 4), high(D, 6))), base + qh + h),
        );
      }
    }
  }
  return [
    ...set(P, i32(0)),
    ...set(Q, i32(0)),
    ...whileNot(i32Eqz(get(RUNS)), [
      ...body.flat(),
      ...set(P, i32Add(get(P), i32(256))),
      ...set(Q, i32Add(get(Q), i32(stride))),
      ...set(RUNS, i32Sub(get(RUNS), i32(1))),
    ]),
  ];
}

/**
 * quantize_row_q3_K_ref's super-block scales from the sixteen scales the search left (run slot 0),
 * four super-blocks in the four lanes (sub-block 4r + j of super-block b from lane j of run 4b + r,
 * by lane shuffles): the first scale of largest magnitude, iscale = -32 / it, each scale's
 * nearest_int(iscale * scale) as an int8_t clamped to [-32, 31] and biased by 32 (all 0, and d = 0,
 * where that scale is 0), packed with d = fp16(1 / iscale) into bytes 96..109 of each block at BLOCKS
 * (one 16-byte store, the packing after it overwrites the 2 bytes past); then each sub-block's
 * stored scale halfValues[d] * (l - 32) into its run's slot 0, for the recomputation. `RUNS` counts
 * groups of four super-blocks; lanes past the chunk's last block compute garbage nobody reads.
 */
function q3ScalesKernel(k: Kernel): Code {
  const S = Array.from({ length: 16 }, () => k.v());
  const t = [k.v(), k.v(), k.v(), k.v()];
  const R = [k.v(), k.v(), k.v(), k.v()];
  const [MAX, AMAX, AX, GT, NZ, ISC, D, HF] = Array.from({ length: 8 }, () => k.v());
  const body: Code[] = [];
  for (let r = 0; r < 4; r++) body.push(...transpose4([0, 1, 2, 3].map((b) => load(get(P), OUT + OUT_STRIDE * (4 * b + r))), t, S.slice(4 * r, 4 * r + 4)));
  body.push(set(MAX, k.c(0)), set(AMAX, k.c(0)));
  for (let j = 0; j < 16; j++) {
    body.push(
      set(AX, f32x4Abs(get(S[j]))),
      set(GT, f32x4Gt(get(AX), get(AMAX))),
      set(AMAX, where(GT, get(AX), get(AMAX))),
      set(MAX, where(GT, get(S[j]), get(MAX))),
    );
  }
  body.push(set(NZ, f32x4Ne(get(MAX), k.c(0))), set(ISC, f32x4Div(k.f(-32), get(MAX))));
  for (let j = 0; j < 16; j++) {
    const l = i32x4ShrS(i32x4Shl(nearest(k, f32x4Mul(get(ISC), get(S[j]))), 24), 24);
    body.push(set(S[j], where(NZ, i32x4Add(clamp(k, l, -32, 31), k.c(32)), k.c(0))));
  }
  body.push(set(D, f32x4Div(k.f(1), get(ISC))), ...fp16(k, D), set(D, where(NZ, get(D), k.c(0))));
  // Bytes 0..7: the low nibbles of scales j and j + 8; 8..11: the high 2 bits of j, j + 4, j + 8, j + 12.
  const byteAt = (b: number): Code => (b < 8
    ? or(and(get(S[b]), k.c(0xf)), i32x4Shl(and(get(S[b + 8]), k.c(0xf)), 4))
    : [0, 1, 2, 3].map((q) => i32x4Shl(i32x4ShrU(get(S[4 * q + b - 8]), 4), 2 * q)).reduce((a, c) => or(a, c)));
  const word = (w: number): Code => [0, 1, 2, 3].map((i) => i32x4Shl(byteAt(4 * w + i), 8 * i)).reduce((a, c) => or(a, c));
  body.push(...transpose4([word(0), word(1), word(2), get(D)], t, R));
  for (let b = 0; b < 4; b++) body.push(store(get(Q), get(R[b]), BLOCKS + 110 * b + 96));
  body.push(set(HF, get(D)), ...f32OfHalf(k, HF));
  for (let j = 0; j < 16; j++) body.push(set(S[j], f32x4Mul(get(HF), f32x4ConvertS(i32x4Sub(get(S[j]), k.c(32))))));
  for (let r = 0; r < 4; r++) {
    body.push(...transpose4(S.slice(4 * r, 4 * r + 4).map((v) => get(v)), t, R));
    for (let b = 0; b < 4; b++) body.push(store(get(P), get(R[b]), OUT + OUT_STRIDE * (4 * b + r)));
  }
  return [
    ...set(P, i32(0)),
    ...set(Q, i32(0)),
    ...whileNot(i32Eqz(get(RUNS)), [
      ...body.flat(),
      ...set(P, i32Add(get(P), i32(16 * OUT_STRIDE))),
      ...set(Q, i32Add(get(Q), i32(4 * 110))),
      ...set(RUNS, i32Sub(get(RUNS), i32(1))),
    ]),
  ];
}

/** Bytes of packed codes per super-block, and where they start in the block. */
const PACK_BYTES = { Q3_K: 96, Q6_K: 192 } as const;

/** The searches the K-quants run, by name. */
const KERNELS = {
  // quantize_row_q4_K_ref / q5_K / q2_K: make_qkx2_quants.
  Q4_K: (k: Kernel) => qkxKernel(k, { n: 32, nmax: 15, rmin: -1, rdelta: fr(0.1), nstep: 20, mad: false, x2: true, weights: "avx" }),
  Q5_K: (k: Kernel) => qkxKernel(k, { n: 32, nmax: 31, rmin: -0.5, rdelta: fr(0.1), nstep: 15, mad: false, x2: true, weights: "avx" }),
  Q2_K: (k: Kernel) => qkxKernel(k, { n: 16, nmax: 3, rmin: -0.5, rdelta: fr(0.1), nstep: 15, mad: true, x2: true, weights: "abs" }),
  // The _impl forms with an importance matrix: make_qkx3_quants.
  Q4_K_IM: (k: Kernel) => qkxKernel(k, { n: 32, nmax: 15, rmin: fr(-0.9), rdelta: fr(0.05), nstep: 36, mad: false, x2: false, weights: "imatrix" }),
  Q5_K_IM: (k: Kernel) => qkxKernel(k, { n: 32, nmax: 31, rmin: fr(-0.9), rdelta: fr(0.05), nstep: 36, mad: false, x2: false, weights: "imatrix" }),
  Q2_K_IM: (k: Kernel) => qkxKernel(k, { n: 16, nmax: 3, rmin: fr(-0.9), rdelta: fr(0.05), nstep: 36, mad: false, x2: false, weights: "imatrix" }),
  // make_qx_quants: Q6_K (nmax 32, weights x^2 or the importance matrix), Q3_K with one (nmax 4).
  Q6_K: (k: Kernel) => qxKernel(k, 16, 32, "x2"),
  Q6_K_IM: (k: Kernel) => qxKernel(k, 16, 32, "given"),
  Q3_K_IM: (k: Kernel) => qxKernel(k, 16, 4, "imatrix"),
  // make_q3_quants: Q3_K without.
  Q3_K: (k: Kernel) => q3Kernel(k, 16, 4),
  // Each K-quant's recomputation of the codes.
  R_Q2_K: (k: Kernel) => requantKernel(k, 16, 0, 3, 0, true),
  R_Q3_K: (k: Kernel) => requantKernel(k, 16, -4, 3, 4, false),
  R_Q4_K: (k: Kernel) => requantKernel(k, 32, 0, 15, 0, true),
  R_Q5_K: (k: Kernel) => requantKernel(k, 32, 0, 31, 0, true),
  R_Q6_K: (k: Kernel) => requantKernel(k, 16, -32, 31, 32, false),
  P_Q3_K: (k: Kernel) => packKernel(k, "Q3_K"),
  P_Q6_K: (k: Kernel) => packKernel(k, "Q6_K"),
  // Q3_K's whole blocks without importance weights: the super-block scales, the packing in place.
  S_Q3_K: (k: Kernel) => q3ScalesKernel(k),
  B_Q3_K: (k: Kernel) => packKernel(k, "Q3_K", BLOCKS, 110),
} as const;

type KernelName = keyof typeof KERNELS;
export type SearchName = Exclude<KernelName, `R_${string}` | `P_${string}` | `S_${string}` | `B_${string}`>;

/** Values per sub-block of each search. */
const SUB: Record<SearchName, number> = { Q4_K: 32, Q5_K: 32, Q2_K: 16, Q4_K_IM: 32, Q5_K_IM: 32, Q2_K_IM: 16, Q6_K: 16, Q6_K_IM: 16, Q3_K_IM: 16, Q3_K: 16 };
/** The recomputation that follows each search. */
const REQUANT: Record<SearchName, KernelName> = {
  Q4_K: "R_Q4_K", Q5_K: "R_Q5_K", Q2_K: "R_Q2_K", Q4_K_IM: "R_Q4_K", Q5_K_IM: "R_Q5_K", Q2_K_IM: "R_Q2_K", Q6_K: "R_Q6_K", Q6_K_IM: "R_Q6_K", Q3_K_IM: "R_Q3_K", Q3_K: "R_Q3_K",
};

/** The packing kernel of each search's type, where it has one. */
const PACK: Partial<Record<SearchName, KernelName>> = { Q3_K: "P_Q3_K", Q3_K_IM: "P_Q3_K", Q6_K: "P_Q6_K", Q6_K_IM: "P_Q6_K" };
/** The searches whose module also makes whole blocks: the super-block scales and the packing into BLOCKS. */
const WHOLE: Partial<Record<SearchName, readonly [KernelName, KernelName]>> = { Q3_K: ["S_Q3_K", "B_Q3_K"] };

/** The bytes of a module of search `name`, the recomputation and the packing that follow it (exported as "search", "requant", "pack"). */
export function searchModule(name: SearchName): Uint8Array {
  const pack = PACK[name];
  const whole = WHOLE[name];
  const list: [string, KernelName][] = [
    ["search", name], ["requant", REQUANT[name]], ...(pack ? [["pack", pack] as [string, KernelName]] : []),
    ...(whole ? [["scales", whole[0]], ["blocks", whole[1]]] as [string, KernelName][] : []),
  ];
  const funcs = list.map(([as, kernel]) => {
    const k = new Kernel();
    const body = KERNELS[kernel](k);
    return k.func(as, [body]);
  });
  return moduleBytes(funcs, PAGES);
}

type KernelFn = (runs: number, zero: number) => void;
interface Loaded {
  readonly search: KernelFn;
  readonly requant: KernelFn;
  readonly pack: KernelFn | undefined;
  readonly scales: KernelFn | undefined;
  readonly blocks: KernelFn | undefined;
  readonly f32: Float32Array;
  readonly u8: Uint8Array;
}

let enabled = true;
/** Each search's instance, built on first use (a module of all of them takes long to build). */
const loaded = new Map<SearchName, Loaded | null>();

function instance(name: SearchName): Loaded | null {
  let l = loaded.get(name);
  if (l === undefined) {
    const e = ownInstance(() => searchModule(name));
    const memory = e?.memory as WasmMemory | undefined;
    l = e && memory ? { search: e.search as KernelFn, requant: e.requant as KernelFn, pack: e.pack as KernelFn | undefined, scales: e.scales as KernelFn | undefined, blocks: e.blocks as KernelFn | undefined, f32: new Float32Array(memory.buffer), u8: new Uint8Array(memory.buffer) } : null;
    loaded.set(name, l);
  }
  return l;
}

/**
 * For tests and benchmarks: false makes every search kernel (and blocks-simd.ts's per-block
 * kernels) decline, so the reference encoders run.
 * @example useGgmlQuantizeSimd(false); quantizeRows("Q4_K", rows, 4096); useGgmlQuantizeSimd(true);
 */
export function useGgmlQuantizeSimd(on: boolean): void {
  enabled = on;
}

/** Whether useGgmlQuantizeSimd left the kernels on (blocks-simd.ts follows the same switch). */
export function ggmlQuantizeSimdOn(): boolean {
  return enabled;
}

/** Whether the search kernels are available here (instantiates Q2_K's on first call). */
export function ggmlQuantizeSimdAvailable(): boolean {
  return instance("Q2_K") !== null;
}

/** What a chunk's searches give, per sub-block of the chunk (codes per value, from requantSimd). */
export interface SearchOut {
  readonly scales: Float32Array;
  /** The negated minimums (qkx searches only). */
  readonly mins: Float32Array;
  /** The sums of the weights (imatrix searches only). */
  readonly sw: Float32Array;
  readonly codes: Uint8Array;
}

/**
 * Runs search `name` on the `count` values (a multiple of 256, at most SEARCH_CHUNK; of 64 for the
 * searches of 16 without the make_q3 or make_qkx kernels' two runs at a time) of x from `s`,
 * into `r`, and returns true; or returns false, having done nothing. `qw` from `qo` are the
 * importance weights of the values, `sigma2` the per-super-block sigma2 (the _IM searches but Q6_K's).
 */
export function searchSimd(name: SearchName, x: Float32Array, s: number, count: number, qw: Float32Array | undefined, qo: number,
  sigma2: Float32Array | undefined, r: SearchOut): boolean {
  if (!enabled) return false;
  const l = instance(name);
  if (!l) return false;
  const { f32 } = l;
  const n = SUB[name];
  const runs = count / (4 * n);
  f32.set(x.subarray(s, s + count), IN_X / 4);
  if (qw !== undefined) f32.set(qw.subarray(qo, qo + count), IN_W / 4);
  if (sigma2 !== undefined) {
    for (let g = 0; g < runs; g++) f32.fill(sigma2[(4 * n * g) >> 8], (OUT + OUT_STRIDE * g) / 4 + 12, (OUT + OUT_STRIDE * g) / 4 + 16);
  }
  l.search(runs, 0);
  for (let g = 0; g < runs; g++) {
    const o = (OUT + OUT_STRIDE * g) / 4;
    for (let j = 0; j < 4; j++) {
      r.scales[4 * g + j] = f32[o + j];
      r.mins[4 * g + j] = f32[o + 4 + j];
      r.sw[4 * g + j] = f32[o + 8 + j];
    }
  }
  return true;
}

/** After searchSimd(name, ..., count, ...) returned true, with no other call between: the search's codes, in the values' order. */
export function searchCodesSimd(name: SearchName, count: number, codes: Uint8Array): void {
  const { f32, u8, requant } = instance(name)!;
  const runs = count / (4 * SUB[name]);
  // A stored scale of zero keeps every code the search gave.
  for (let g = 0; g < runs; g++) f32.fill(0, (OUT + OUT_STRIDE * g) / 4, (OUT + OUT_STRIDE * g) / 4 + 4);
  requant(runs, 0);
  codes.set(u8.subarray(CODES, CODES + count));
}

/**
 * After searchSimd(name, ..., count, ...) returned true, with no other call between: each code of
 * the chunk recomputed from its sub-block's stored scale dl[j] and minimum ml[j] (the search's code
 * where dl[j] is 0), into `codes` in the values' order; or, for Q3_K and Q6_K, packed as in their
 * blocks into `packed` (Q3_K's 96 bytes from hmask on, Q6_K's 192 of ql and qh per super-block).
 * Returns the packed bytes per super-block, or 0 where `codes` holds the codes.
 */
export function requantSimd(name: SearchName, count: number, dl: Float32Array, ml: Float32Array, codes: Uint8Array, packed: Uint8Array): number {
  const { f32, u8, requant, pack } = instance(name)!;
  const runs = count / (4 * SUB[name]);
  for (let g = 0; g < runs; g++) {
    const o = (OUT + OUT_STRIDE * g) / 4;
    for (let j = 0; j < 4; j++) {
      f32[o + j] = dl[4 * g + j];
      f32[o + 4 + j] = ml[4 * g + j];
    }
  }
  requant(runs, 0);
  if (pack !== undefined) {
    const bytes = name.startsWith("Q3_K") ? PACK_BYTES.Q3_K : PACK_BYTES.Q6_K;
    pack(count / 256, 0);
    packed.set(u8.subarray(PACKED, PACKED + (count / 256) * bytes));
    return bytes;
  }
  codes.set(u8.subarray(CODES, CODES + count));
  return 0;
}

/**
 * quantize_row_q3_K_ref's blocks of the `count` values (a multiple of 256, at most SEARCH_CHUNK) of
 * x from `s`, all four steps in the kernels (the search, the super-block scales, the recomputation,
 * the packing), into y from `o`; true, or false having done nothing where the kernels decline or
 * `name` has no whole-block kernels.
 */
export function blocksSimd(name: SearchName, x: Float32Array, s: number, count: number, y: Uint8Array, o: number): boolean {
  if (!enabled || WHOLE[name] === undefined) return false;
  const l = instance(name);
  if (!l) return false;
  const blocks = count / 256;
  const runs = count / (4 * SUB[name]);
  l.f32.set(x.subarray(s, s + count), IN_X / 4);
  l.search(runs, 0);
  l.scales!((blocks + 3) >> 2, 0);
  l.requant(runs, 0);
  l.blocks!(blocks, 0);
  y.set(l.u8.subarray(BLOCKS, BLOCKS + 110 * blocks), o);
  return true;
}
