/**
 * The bulk of measureConversion's tally in WebAssembly SIMD, for blocks of float32 old and new
 * values. Elements are taken four at a time, two float64 lanes per half, and a run of them
 * ("sub-block") is settled in bulk when every element in it is simple: old value strictly inside
 * the target's range, new value finite, and no relative-error update, i.e. `err > maxRel * |a|`
 * false with the maxRel the scalar loop would hold there. Such elements only add to `changed` and
 * to the largest |new - old|, both independent of order. Any other sub-block is rejected and the
 * caller runs the scalar loop over it, in order, so every statistic (the order-dependent relative
 * error included) is what the scalar loop alone gives: the lanes compute the same IEEE doubles
 * (exact widening, the same subtraction and product), and a sub-block without an update leaves
 * maxRel as it found it, so the next one is tested against the value the scalar loop would hold.
 * New values come as float32 or, for bfloat16 results (the checkpoint conversion's), as the codes
 * themselves, widened in the kernel (a shift), which saves decoding them through castInto.
 */
import {
  and, anyTrue, f64x2Abs, f64x2Gt, f64x2Le, f64x2Lt, f64x2Mul, f64x2Ne, f64x2Pmax, f64x2Sub, get, i32, i32Add, i32Eqz, i32Sub, i32x4Add,
  i32x4Shl, i32x4Sub, ifElse, load, load16x4U, load64Splat, moduleBytes, not, or, promoteLow, set, shuffle, store, storeI32, whileNot, type Code,
} from "../../kernels/wasm/encoder.js";

/** Elements per sub-block: a rejected one costs the scalar loop over this many. */
export const SUB_BLOCK = 1024;
/** Elements per block copied into the module: measureConversion's BLOCK. */
const BLOCK = 1 << 16;
// The module's memory: parameters and accumulators in the first page, then the old and new blocks.
const REL_AT = 0; // f64: the running maxRel
const INNER_AT = 8; // f64: |a| below this is strictly inside the range
const MAX_AT = 16; // f64: Number.MAX_VALUE
const CHANGED_AT = 32; // i32x4: 2 per changed element (each f64 lane's mask is two i32 of -1)
const MAXABS_AT = 48; // f64x2: largest |b - a| of the settled sub-blocks
const REJECTED_AT = 64; // i32: whether the last call was rejected
const ZERO_AT = 80; // 16 zero bytes
const X_AT = 1 << 16; // TALLY_RESERVED
const Y_AT = X_AT + 4 * BLOCK;
const PAGES = (Y_AT + 4 * BLOCK) >>> 16;

// (x, y, groups) then v128 locals.
const XP = 0;
const YP = 1;
const GROUPS = 2;
const REL = 3;
const INNER = 4;
const MAXD = 5;
const CHG = 6;
const MAXA = 7;
const BAD = 8;
const X = 9;
const Y = 10;
const A = 11;
const B = 12;
const M = 13;
const E = 14;

const HIGH = [8, 9, 10, 11, 12, 13, 14, 15, 8, 9, 10, 11, 12, 13, 14, 15];

/** One half (two lanes) of a group: old lanes `a`, new lanes `b`, as float64. */
function half(a: Code, b: Code): Code {
  return [
    ...set(A, a),
    ...set(B, b),
    ...set(M, f64x2Abs(get(A))),
    ...set(E, f64x2Abs(f64x2Sub(get(B), get(A)))),
    // Not simple: |a| not below the inner limit (NaN, infinities included), b not finite, or an
    // element where the scalar loop would raise maxRel.
    ...set(BAD, or(get(BAD), or(not(and(f64x2Lt(get(M), get(INNER)), f64x2Le(f64x2Abs(get(B)), get(MAXD)))), f64x2Gt(get(E), f64x2Mul(get(REL), get(M)))))),
    ...set(CHG, i32x4Sub(get(CHG), f64x2Ne(get(A), get(B)))),
    ...set(MAXA, f64x2Pmax(get(MAXA), get(E))),
  ];
}

/**
 * The kernel: (x, y, groups) over `groups` groups of 4 float32 old values at x and new values at
 * y, float32 or (`bf16`) bfloat16 codes, widened here: a code shifted into the high half of a
 * word is its float32 (a NaN keeps its payload, still a NaN: the tally only asks whether it is one).
 */
const tallyBody = (bf16: boolean): Code => [
  ...set(REL, load64Splat(i32(REL_AT))),
  ...set(INNER, load64Splat(i32(INNER_AT))),
  ...set(MAXD, load64Splat(i32(MAX_AT))),
  ...set(CHG, load(i32(ZERO_AT))),
  ...set(MAXA, load(i32(ZERO_AT))),
  ...set(BAD, load(i32(ZERO_AT))),
  ...whileNot(i32Eqz(get(GROUPS)), [
    ...set(X, load(get(XP))),
    ...set(Y, bf16 ? i32x4Shl(load16x4U(get(YP)), 16) : load(get(YP))),
    ...half(promoteLow(get(X)), promoteLow(get(Y))),
    ...half(promoteLow(shuffle(get(X), get(X), HIGH)), promoteLow(shuffle(get(Y), get(Y), HIGH))),
    ...set(XP, i32Add(get(XP), i32(16))),
    ...set(YP, i32Add(get(YP), i32(bf16 ? 8 : 16))),
    ...set(GROUPS, i32Sub(get(GROUPS), i32(1))),
  ]),
  ...ifElse(anyTrue(get(BAD)), storeI32(i32(REJECTED_AT), i32(1)), [
    ...storeI32(i32(REJECTED_AT), i32(0)),
    ...store(i32(CHANGED_AT), i32x4Add(load(i32(CHANGED_AT)), get(CHG))),
    ...store(i32(MAXABS_AT), f64x2Pmax(load(i32(MAXABS_AT)), get(MAXA))),
  ]),
];

/** The tally functions of one instance, and its parameter page (the first of its memory). */
interface Tallies {
  readonly tally: (x: number, y: number, groups: number) => void;
  readonly tallyBf16: (x: number, y: number, groups: number) => void;
  readonly f64: Float64Array;
  readonly i32: Int32Array;
}

interface Module extends Tallies {
  /** The new values' block as bfloat16 codes (the same bytes as `y`'s first half). */
  readonly codes: Uint16Array;
  /** The blocks of old and new values in the module's memory. */
  readonly x: Float32Array;
  readonly y: Float32Array;
}

interface WasmApi {
  validate(b: Uint8Array): boolean;
  Module: new (b: Uint8Array) => object;
  Instance: new (m: object, i: object) => { exports: Record<string, unknown> };
}

/** A memory as the WebAssembly JS API gives it. */
export interface TallyMemory {
  readonly buffer: ArrayBufferLike;
}

/**
 * The tally functions instantiated on `memory` (imported, `pages` pages, whose first page they
 * take for their parameters and accumulators), or on a memory of their own of PAGES pages
 * (`memory` undefined); null where WebAssembly SIMD is unavailable.
 */
function instantiate(pages: number, memory?: TallyMemory): { tallies: Tallies; buffer: ArrayBufferLike } | null {
  try {
    const api = (globalThis as { WebAssembly?: WasmApi }).WebAssembly;
    const code = moduleBytes([
      { name: "tally", params: 3, i32Locals: 0, v128Locals: 12, body: tallyBody(false) },
      { name: "tally_bf16", params: 3, i32Locals: 0, v128Locals: 12, body: tallyBody(true) },
    ], pages, undefined, memory ? "plain" : undefined);
    if (!api || !api.validate(code)) return null;
    const e = new api.Instance(new api.Module(code), memory ? { env: { memory } } : {}).exports;
    const buffer = (e.memory as TallyMemory).buffer;
    return {
      buffer,
      tallies: {
        tally: e.tally as Tallies["tally"],
        tallyBf16: e.tally_bf16 as Tallies["tally"],
        f64: new Float64Array(buffer, 0, 16),
        i32: new Int32Array(buffer, 0, 32),
      },
    };
  } catch {
    return null; // e.g. CompileError under a Content-Security-Policy
  }
}

let module: Module | null | undefined;

/** The module with its own memory, or null where WebAssembly SIMD is unavailable (the scalar loop then does all). */
function instance(): Module | null {
  if (module !== undefined) return module;
  const made = instantiate(PAGES);
  module = made && {
    ...made.tallies,
    codes: new Uint16Array(made.buffer, Y_AT, BLOCK),
    x: new Float32Array(made.buffer, X_AT, BLOCK),
    y: new Float32Array(made.buffer, Y_AT, BLOCK),
  };
  return module;
}

/** What a run over blocks settled in bulk. */
export interface Settled {
  changed: number;
  maxAbs: number;
}

/** Whether `a` is the module's own block at `at` (a decoder wrote there): then nothing is copied. */
function inPlace(a: Float32Array, block: Float32Array): boolean {
  return a.buffer === block.buffer && a.byteOffset === block.byteOffset;
}

/**
 * A tally over blocks already in the memory of `w`: `settle(xAt, yAt, bf16, n, ...)` settles what
 * it can of the `n` old values (float32) at byte address xAt and new values (float32, or bfloat16
 * codes with `bf16`) at yAt, as SimdTally.block.
 */
function settler(w: Tallies): {
  begin(inner: number): void;
  settle(xAt: number, yAt: number, bf16: boolean, n: number, maxRel: () => number, scalar: (from: number, to: number) => void): void;
  end(): Settled;
} {
  const settled: Settled = { changed: 0, maxAbs: 0 };
  return {
    begin(inner) {
      w.f64.fill(0);
      w.i32.fill(0);
      w.f64[INNER_AT / 8] = inner;
      w.f64[MAX_AT / 8] = Number.MAX_VALUE;
      settled.changed = 0;
      settled.maxAbs = 0;
    },
    settle(xAt, yAt, bf16, n, maxRel, scalar) {
      const kernel = bf16 ? w.tallyBf16 : w.tally;
      const size = bf16 ? 2 : 4;
      const whole = n - (n % SUB_BLOCK);
      for (let from = 0; from < whole; from += SUB_BLOCK) {
        w.f64[REL_AT / 8] = maxRel();
        kernel(xAt + 4 * from, yAt + size * from, SUB_BLOCK / 4);
        if (w.i32[REJECTED_AT / 4] !== 0) scalar(from, from + SUB_BLOCK);
      }
      if (whole < n) scalar(whole, n);
      // Read out per block: each int32 lane counts up to half a block, far from overflowing.
      const c = CHANGED_AT / 4;
      settled.changed += (w.i32[c] + w.i32[c + 1] + w.i32[c + 2] + w.i32[c + 3]) / 2;
      w.i32.fill(0, c, c + 4);
    },
    end() {
      settled.maxAbs = Math.max(w.f64[MAXABS_AT / 8], w.f64[MAXABS_AT / 8 + 1]);
      return { ...settled };
    },
  };
}

/**
 * The SIMD tally for one measureConversion, or undefined without WebAssembly SIMD.
 * `begin(inner)` starts one; `block(x, y, n, maxRel, scalar)` settles what it can of a block of
 * `n` <= 65536 old values `x` and new values `y`, float32 or bfloat16 codes (each copied into the
 * module unless a decoder already wrote it into `x()` / `y()`), reading the running maxRel from `maxRel()` before each
 * sub-block and calling `scalar(from, to)` for each rejected sub-block and for the tail, in order;
 * `end()` gives the count and the largest |new - old| of the elements it settled.
 * @example
 * const t = simdTally()!;
 * t.begin(3.3895e38);
 * const x = new Float32Array(1024).fill(1.4), y = new Float32Array(1024).fill(1.5);
 * let rel = 0.08; // as if the scalar loop had already seen this
 * t.block(x, y, 1024, () => rel, (from, to) => { rel = 1; }); // not called: 0.1 < 0.08 * 1.4
 * t.end() // { changed: 1024, maxAbs: 0.10000002384185791 }
 */
export function simdTally(): {
  begin(inner: number): void;
  x(): Float32Array;
  y(): Float32Array;
  block(x: Float32Array, y: Float32Array | Uint16Array, n: number, maxRel: () => number, scalar: (from: number, to: number) => void): void;
  end(): Settled;
} | undefined {
  const w = instance();
  if (!w) return undefined;
  const run = settler(w);
  return {
    begin: run.begin,
    x: () => w.x,
    y: () => w.y,
    block(x, y, n, maxRel, scalar) {
      if (!inPlace(x, w.x)) w.x.set(x.subarray(0, n));
      const bf16 = y instanceof Uint16Array;
      if (bf16) w.codes.set(y.subarray(0, n));
      else if (!inPlace(y, w.y)) w.y.set(y.subarray(0, n));
      run.settle(X_AT, Y_AT, bf16, n, maxRel, scalar);
    },
    end: run.end,
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
  return made ? settler(made.tallies) : undefined;
}

/** Bytes at the start of a memory that the tally keeps for its parameters and accumulators. */
export const TALLY_RESERVED = 1 << 16;
