/**
 * The bulk of measureConversion's tally in WebAssembly SIMD, for blocks of float32 old values a
 * and new values b. A run of elements ("sub-block") is settled in bulk when every element in it
 * is simple: a strictly inside the target's range, b finite, and no relative-error update, i.e.
 * `err > maxRel * |a|` false with the maxRel the scalar loop would hold there. Such elements only
 * add to `changed` and to the largest |b - a|, both independent of order. Any other sub-block is
 * rejected and the caller runs the scalar loop over it, in order, so every statistic (the
 * order-dependent relative error included) is what the scalar loop alone gives; a sub-block
 * without an update leaves maxRel as it found it, so the next one is tested against the value the
 * scalar loop would hold. New values come as float32 or, for bfloat16 results (the checkpoint
 * conversion's), as the codes themselves, widened in the kernel (a shift).
 *
 * The test runs on float32 lanes, four elements per instruction (it ran on float64 lanes, two at
 * a time, at about twice the instructions per element). It is exact where it can be and
 * conservative where it cannot: it settles a sub-block only if the float64 test, which is the
 * scalar loop's, would settle it too, and then gives the same numbers. Per element, with
 * e = fl32(|b - a|) (the float32 subtraction, correctly rounded) and mu = min(|a|, |b|):
 * - `|a| < inner` (a double) is `|a| < ceil32(inner)`, the least float32 >= inner: no float32
 *   lies in [inner, ceil32(inner)), so for float32 |a| the two agree (NaN and Inf included).
 * - `e <= mu` makes e exact, and fails for a b that is NaN or infinite (a being finite). Both a
 *   and b are multiples of ulp(mu) (subnormals included), so is d = |b - a|; if d > mu then
 *   d >= next32(mu), which fl32 (monotone) keeps: e > mu. So e <= mu means d <= mu: a and b of
 *   one sign (opposite signs give d = |a| + |b| >= 2 mu, or both zero) within a factor 2, where
 *   Sterbenz's lemma makes b - a exact (WebAssembly does not flush subnormals). An infinite or
 *   NaN b gives an infinite or NaN e, never <= mu. Elements failing this while the float64 test
 *   would pass (b rounded to zero from a nonzero a, or a zero a and a nonzero b) are rejected.
 *   With e exact, the float64 difference is e too, so the float64 test is `e > fl64(maxRel * |a|)`.
 * - No update: `e <= Lc`, with L = fl32(rho * |a|), rho the largest float32 <= maxRel * (1 -
 *   2^-20) (float64 product), and Lc = L when L >= 2^-126 (a normal float32), else 0. Lc = 0
 *   settles only e = 0, which never updates. L = +Inf means rho * |a| > 3.4e38 >= e, so maxRel *
 *   |a| > e, which fl64 keeps. A normal L is at most rho * |a| * (1 + 2^-24) <= maxRel * |a| *
 *   (1 - 2^-20)(1 + 2^-53)(1 + 2^-24) < maxRel * |a| * (1 - 2^-53) <= fl64(maxRel * |a|) (the
 *   product is at least L >= 2^-126: a normal double), so e <= L leaves no update. Elements the
 *   float64 test would settle are rejected when e is within about 2^-20 of maxRel * |a| or the
 *   product is below 2^-126: only more sub-blocks for the exact scalar loop.
 * - Changed is `a != b` in float32 as in float64 (widening is exact), and for a settled sub-block
 *   the largest e is exact, so widened it is the float64 maximum.
 */
import {
  allTrue, and, f32x4Abs, f32x4Ge, f32x4Le, f32x4Lt, f32x4Mul, f32x4Ne, f32x4Pmax, f32x4Pmin, f32x4Sub, get, i32, i32Add, i32Eqz,
  i32Sub, i32x4Add, i32x4Shl, i32x4Sub, ifElse, load, load16x4U, load32Splat, moduleBytes, not, set, store, storeI32, whileNot, type Code,
} from "../../kernels/wasm/encoder.js";

/** Elements per sub-block: a rejected one costs the scalar loop over this many. */
export const SUB_BLOCK = 1024;
// The module's memory: parameters and accumulators in the first page, then the old and new blocks.
const RHO_AT = 0; // f32: rho, from the running maxRel (see the module comment)
const INNER_AT = 4; // f32: ceil32(inner): |a| below this is strictly inside the range
const MIN_NORMAL_AT = 12; // f32: 2^-126
const CHANGED_AT = 32; // i32x4: changed elements of the settled sub-blocks, per lane
const MAXABS_AT = 48; // f32x4: largest |b - a| of the settled sub-blocks, per lane
const REJECTED_AT = 64; // i32: whether the last call was rejected
const ZERO_AT = 80; // 16 zero bytes

// (x, y, groups) then v128 locals.
const XP = 0;
const YP = 1;
const GROUPS = 2;
const RHO = 3;
const INNER = 4;
const MIN_NORMAL = 5;
const CHG = 6;
const MAXA = 7;
const OK = 8;
const X = 9;
const Y = 10;
const M = 11;
const E = 12;
const L = 13;

/**
 * The kernel: (x, y, groups) over `groups` groups of 4 float32 old values at x and new values at
 * y, float32 or (`bf16`) bfloat16 codes, widened here: a code shifted into the high half of a
 * word is its float32 (a NaN keeps its payload, still a NaN: the tally only asks whether it is one).
 */
const tallyBody = (bf16: boolean): Code => [
  ...set(RHO, load32Splat(i32(RHO_AT))),
  ...set(INNER, load32Splat(i32(INNER_AT))),
  ...set(MIN_NORMAL, load32Splat(i32(MIN_NORMAL_AT))),
  ...set(CHG, load(i32(ZERO_AT))),
  ...set(MAXA, get(CHG)),
  ...set(OK, not(get(CHG))),
  // Two groups per turn (the caller's count is even): half the loop's own instructions.
  ...whileNot(i32Eqz(get(GROUPS)), [
    ...group(bf16, 0),
    ...group(bf16, 1),
    ...set(XP, i32Add(get(XP), i32(32))),
    ...set(YP, i32Add(get(YP), i32(bf16 ? 16 : 32))),
    ...set(GROUPS, i32Sub(get(GROUPS), i32(2))),
  ]),
  ...ifElse(allTrue(get(OK)), [
    ...storeI32(i32(REJECTED_AT), i32(0)),
    ...store(i32(CHANGED_AT), i32x4Add(load(i32(CHANGED_AT)), get(CHG))),
    ...store(i32(MAXABS_AT), f32x4Pmax(load(i32(MAXABS_AT)), get(MAXA))),
  ], storeI32(i32(REJECTED_AT), i32(1))),
];

/** Group `k` (of 4 elements) of a turn of the loop. */
const group = (bf16: boolean, k: number): Code => [
  ...set(X, load(get(XP), 16 * k)),
  ...set(Y, bf16 ? i32x4Shl(load16x4U(get(YP), 8 * k), 16) : load(get(YP), 16 * k)),
  ...set(M, f32x4Abs(get(X))),
  ...set(E, f32x4Abs(f32x4Sub(get(Y), get(X)))),
  ...set(L, f32x4Mul(get(RHO), get(M))),
  // Simple (the module comment proves each part): |a| inside the range, e exact (which also
  // rejects a b that is not finite), no update.
  ...set(OK, and(get(OK), and(
    f32x4Lt(get(M), get(INNER)),
    and(f32x4Le(get(E), f32x4Pmin(get(M), f32x4Abs(get(Y)))), f32x4Le(get(E), and(get(L), f32x4Ge(get(L), get(MIN_NORMAL))))),
  ))),
  ...set(CHG, i32x4Sub(get(CHG), f32x4Ne(get(X), get(Y)))),
  ...set(MAXA, f32x4Pmax(get(MAXA), get(E))),
];

/**
 * rho for a running maxRel: the largest float32 <= maxRel * (1 - 2^-20) (module comment).
 * @example rhoOf(2 ** -9) // 0.0019531231373548508 (2^-9 less a few float32 ULPs)
 */
export function rhoOf(maxRel: number): number {
  const r = maxRel * (1 - 2 ** -20);
  F32[0] = r;
  // fround rounded up: one float32 step down (r > 0 here, so the bits step toward zero).
  if (F32[0] > r) U32[0] -= 1;
  return F32[0];
}

/**
 * ceil32(x): the least float32 >= x (+Inf above the largest float32, NaN for NaN).
 * @example ceil32(65520) // 65520; ceil32(0.1) // 0.10000000149011612
 */
export function ceil32(x: number): number {
  F32[0] = x;
  if (F32[0] < x) {
    // Rounded down: one step up, away from zero for a positive value, toward it for a negative one.
    if (F32[0] >= 0) U32[0] += 1;
    else U32[0] -= 1;
  }
  return F32[0];
}

const F32 = new Float32Array(1);
const U32 = new Uint32Array(F32.buffer);

/** The tally functions of one instance, and its parameter page (the first of its memory). */
interface Tallies {
  readonly tally: (x: number, y: number, groups: number) => void;
  readonly tallyBf16: (x: number, y: number, groups: number) => void;
  readonly f32: Float32Array;
  readonly i32: Int32Array;
}

interface WasmApi {
  validate(b: Uint8Array): boolean;
  Module: new (b: Uint8Array) => object;
  Instance: new (m: object, i: object) => { exports: Record<string, unknown> };
}

/** A memory as the WebAssembly JS API gives it. @example tallyOn(kernels.memory as TallyMemory, pages) */
export interface TallyMemory {
  readonly buffer: ArrayBufferLike;
}

/**
 * The tally functions instantiated on `memory` (imported, `pages` pages, whose first page they take
 * for their parameters and accumulators); null where WebAssembly SIMD is unavailable.
 */
function instantiate(pages: number, memory: TallyMemory): Tallies | null {
  try {
    const api = (globalThis as { WebAssembly?: WasmApi }).WebAssembly;
    const code = moduleBytes([
      { name: "tally", params: 3, i32Locals: 0, v128Locals: L - RHO + 1, body: tallyBody(false) },
      { name: "tally_bf16", params: 3, i32Locals: 0, v128Locals: L - RHO + 1, body: tallyBody(true) },
    ], pages, undefined, "plain");
    if (!api || !api.validate(code)) return null;
    const e = new api.Instance(new api.Module(code), { env: { memory } }).exports;
    return {
      tally: e.tally as Tallies["tally"],
      tallyBf16: e.tally_bf16 as Tallies["tally"],
      f32: new Float32Array(memory.buffer, 0, 32),
      i32: new Int32Array(memory.buffer, 0, 32),
    };
  } catch {
    return null; // e.g. CompileError under a Content-Security-Policy
  }
}

/** What a run over blocks settled in bulk. */
export interface Settled {
  changed: number;
  maxAbs: number;
}

/**
 * A tally over blocks already in the memory of `w`: `begin(inner)` starts one; `settle(xAt, yAt,
 * bf16, n, maxRel, scalar)` settles what it can of the `n` old values (float32) at byte address
 * xAt and new values (float32, or bfloat16 codes with `bf16`) at yAt, reading the running maxRel
 * from `maxRel()` before each sub-block and calling `scalar(from, to)` for each rejected
 * sub-block and for the tail, in order; `end()` gives the count and the largest |new - old| of
 * the elements it settled.
 */
function settler(w: Tallies): {
  begin(inner: number): void;
  settle(xAt: number, yAt: number, bf16: boolean, n: number, maxRel: () => number, scalar: (from: number, to: number) => void): void;
  end(): Settled;
} {
  const settled: Settled = { changed: 0, maxAbs: 0 };
  // The maxRel rho was last computed for (-1: none yet).
  let rel = -1;
  return {
    begin(inner) {
      w.f32.fill(0);
      w.i32.fill(0);
      w.f32[INNER_AT / 4] = ceil32(inner);
      w.f32[MIN_NORMAL_AT / 4] = 2 ** -126;
      rel = -1;
      settled.changed = 0;
      settled.maxAbs = 0;
    },
    settle(xAt, yAt, bf16, n, maxRel, scalar) {
      const kernel = bf16 ? w.tallyBf16 : w.tally;
      const size = bf16 ? 2 : 4;
      const whole = n - (n % SUB_BLOCK);
      for (let from = 0; from < whole; from += SUB_BLOCK) {
        const r = maxRel();
        if (r !== rel) {
          rel = r;
          w.f32[RHO_AT / 4] = rhoOf(r);
        }
        kernel(xAt + 4 * from, yAt + size * from, SUB_BLOCK / 4);
        if (w.i32[REJECTED_AT / 4] !== 0) scalar(from, from + SUB_BLOCK);
      }
      if (whole < n) scalar(whole, n);
      // Read out per block: each int32 lane counts up to a quarter of a block, far from overflowing.
      const c = CHANGED_AT / 4;
      settled.changed += w.i32[c] + w.i32[c + 1] + w.i32[c + 2] + w.i32[c + 3];
      w.i32.fill(0, c, c + 4);
    },
    end() {
      const m = MAXABS_AT / 4;
      settled.maxAbs = Math.max(w.f32[m], w.f32[m + 1], w.f32[m + 2], w.f32[m + 3]);
      return { ...settled };
    },
  };
}

/**
 * The tally on a memory another module owns (cast-tally.ts: the cast kernels' own), whose first
 * page it takes for its parameters; `settle` reads the blocks where they are, nothing is copied.
 * Undefined without WebAssembly SIMD.
 * @example
 * const t = tallyOn(kernels.memory, pages)!;
 * t.begin(3.3895e38);
 * t.settle(65536, 327680, true, 1024, () => rel, scalar); // float32 at 64 KiB, bfloat16 codes at 320 KiB
 * t.end() // { changed, maxAbs }
 */
export function tallyOn(memory: TallyMemory, pages: number): ReturnType<typeof settler> | undefined {
  const made = instantiate(pages, memory);
  return made ? settler(made) : undefined;
}

/**
 * Bytes at the start of a memory that the tally keeps for its parameters and accumulators.
 * @example const xAt = TALLY_RESERVED; // the first address free for blocks
 */
export const TALLY_RESERVED = 1 << 16;
