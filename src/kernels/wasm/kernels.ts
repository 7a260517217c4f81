/**
 * The WebAssembly SIMD cast kernels, as code for encoder.ts. Each kernel is
 * `(src, dst, groups) -> ()`: it converts `groups` groups of 8 elements (16 for float32 -> int8)
 * from byte address `src` to byte address `dst` of the module's memory, 4 lanes at a time,
 * branch-free (compare masks, bitselect and shuffles), giving exactly the bits of castReference
 * (and of the scalar kernels in ../fast):
 *
 * - float32 -> float16: normals by integer round to nearest even on the bits (rebias, + 0xFFF + the
 *   kept lsb, >> 13; a carry steps into the next binade; clamped to Inf); |x| < 2^-14 by one float
 *   add, |x| + 0.5, whose float32 rounding (ulp 2^-24) is the float16 subnormal rounding, then minus
 *   the bits of 0.5; NaN to 0x7E00; the sign copied.
 * - float16 -> float32: a block of 64 codes (the tail: a group of 8) without a subnormal (zeros
 *   allowed) as two 16-bit halves per float32, computed 8 lanes at a time and interleaved; otherwise in 32-bit lanes:
 *   normals by shift and rebias; subnormals m * 2^-24 as (2^-14 * (1 + m / 1024)) - 2^-14, exact;
 *   Inf; NaN to 0x7FC00000; the sign copied.
 * - float32 -> bfloat16: + 0x7FFF + the kept lsb, >> 16 (overflow carries into Inf); NaN to 0x7FC0
 *   with the sign.
 * - float32 -> int8 / uint8 (16 elements per group): the x86-64 int32 (i32x4.trunc_sat_f32x4_s,
 *   whose saturated lanes, |x| >= 2^31, and NaN lanes are set to INT_MIN by masking with
 *   |x| < 2^31: INT_MIN's low byte is 0), then the low byte of each lane (and 0xFF, then two
 *   unsigned narrowings, which keep values 0..255 as they are).
 * - float64 -> float32 (f32x4.demote_f64x2_zero: round to nearest even, overflow to Inf,
 *   subnormals kept); NaN lanes to 0x7FC00000 with the source's sign (the sign of a NaN that
 *   WebAssembly produces is not specified, so it is taken from the source's high word).
 * - int64 -> int32: the low words, by i8x16.shuffle.
 * - bfloat16 -> float32: each code as the high half of a word (sign-extended, shifted left by 16);
 *   NaN to 0x7FC00000 with the sign.
 */
import {
  and, andNot, anyTrue, demoteZero, extendHighS16, extendLowS16, f32x4Abs, f32x4Add, f32x4Lt, f32x4Ne, f32x4Sub, get,
  i16x8Add, i16x8Eq, i16x8GtS, i16x8LtU, i16x8Shl, i16x8ShrU, i16x8Sub, i32, i32Add, i32Eqz, i32LtU, i32Sub, ifElse, i32x4Add, i32x4GtS, i32x4LtS, i32x4MinS, i32x4Shl, i32x4ShrU, i32x4Sub,
  load, loadI32, loadU8, moduleBytes, narrowU, narrowU8, or, select, set, shuffle, store, storeI32, i32Shl, relaxedTruncS, truncSatS, whileNot, type Code,
  type Func,
} from "./encoder.js";

// Parameters and locals: (src, dst, groups), then v128 locals: X, A, R, T, then one per constant.
const SRC = 0;
const DST = 1;
const GROUPS = 2;
const X = 3;
const A = 4;
const R = 5;
const T = 6;
const FIRST_CONSTANT = 7;

/**
 * The constants of the module: each 4-lane splat once, 16 bytes apart in a data segment at `base`.
 * A function loads the ones it uses into locals before its loop. (Set from v128.const, the locals
 * are constant-folded by V8's optimiser, which then rebuilds every constant inside the loop, three
 * instructions each; loaded from memory, they stay in registers or one load away.)
 */
class ConstantPool {
  private readonly slots = new Map<number, number>();
  constructor(readonly base: number) {}
  slot(n: number): number {
    let i = this.slots.get(n);
    if (i === undefined) {
      i = this.slots.size;
      this.slots.set(n, i);
    }
    return i;
  }
  /** The data segment's bytes: every constant as four little-endian 32-bit lanes. */
  bytes(): Uint8Array {
    const words = new Uint32Array(4 * this.slots.size);
    for (const [n, i] of this.slots) words.fill(n >>> 0, 4 * i, 4 * i + 4);
    return new Uint8Array(words.buffer);
  }
}

/** The constants one function uses, each in a local loaded from the pool before the loop. */
class Constants {
  private readonly index = new Map<number, number>();
  constructor(private readonly pool: ConstantPool) {}
  c = (n: number): Code => {
    let i = this.index.get(n);
    if (i === undefined) {
      i = FIRST_CONSTANT + this.index.size;
      this.index.set(n, i);
    }
    return get(i);
  };
  get count(): number {
    return this.index.size;
  }
  prologue(): Code {
    return [...this.index].flatMap(([n, i]) => set(i, load(i32(0), this.pool.base + 16 * this.pool.slot(n))));
  }
}

/** float32 bits in local X -> float16 bits in i32 lanes (uses local A). */
function f16Of(c: Constants["c"]): Code {
  const x = get(X);
  const a = get(A);
  // |x| >= 2^-14: rebias and round away 13 bits (ties to even); from 65520 on this reaches 0x7C00
  // or more, clamped to Inf (NaN included, fixed below). Meaningless below 2^-14.
  const normal = i32x4MinS(i32x4ShrU(i32x4Add(i32x4Sub(a, c(0x37fff001)), and(i32x4ShrU(a, 13), c(1))), 13), c(0x7c00));
  // |x| < 2^-14: the float32 sum |x| + 0.5 rounds |x| to a multiple of 2^-24, to nearest even.
  const small = i32x4Sub(f32x4Add(a, c(0x3f000000)), c(0x3f000000));
  const magnitude = select(small, normal, i32x4LtS(a, c(0x38800000)));
  const quiet = and(i32x4GtS(a, c(0x7f800000)), c(0x0200)); // NaN: 0x7C00 | 0x0200
  return [...set(A, and(x, c(0x7fffffff))), ...or(or(magnitude, quiet), and(i32x4ShrU(x, 16), c(0x8000)))];
}

/** float16 bits, sign-extended into the i32 lanes of local X -> float32 bits (uses locals A, T). */
function f32OfHalf(c: Constants["c"]): Code {
  const x = get(X);
  const a = get(A);
  const normal = get(T);
  // Subnormals m * 2^-24 as (2^-14 * (1 + m / 1024)) - 2^-14: exact, and no subnormal operand
  // (multiplying one by 2^112 would be shorter, but costs a microcode assist per vector on x86).
  const small = f32x4Sub(i32x4Add(normal, c(0x00800000)), c(0x38800000));
  const finite = select(small, normal, i32x4LtS(a, c(0x400)));
  const big = or(c(0x7f800000), and(i32x4GtS(a, c(0x7c00)), c(0x00400000)));
  const magnitude = select(big, finite, i32x4GtS(a, c(0x7bff)));
  return [
    ...set(A, and(x, c(0x7fff))),
    ...set(T, i32x4Add(i32x4Shl(a, 13), c(0x38000000))), // exponent rebiased: right for normals
    ...or(magnitude, and(x, c(0x80000000 | 0))),
  ];
}

/** float32 bits in local X -> bfloat16 bits in i32 lanes (uses local A for the top half). */
function bf16Of(c: Constants["c"]): Code {
  const x = get(X);
  const top = get(A);
  const rounded = i32x4ShrU(i32x4Add(i32x4Add(x, c(0x7fff)), and(top, c(1))), 16);
  const nan = and(or(top, c(0x7fc0)), c(0xffc0));
  return [...set(A, i32x4ShrU(x, 16)), ...select(nan, rounded, i32x4GtS(and(x, c(0x7fffffff)), c(0x7f800000)))];
}

/**
 * The kernels' loop over `groups` groups: `body`, then src and dst advanced by their steps. For
 * every kernel of the signature (src, dst, groups) -> () with its parameters as locals 0, 1, 2.
 */
export function loop(body: Code[], srcStep: number, dstStep: number): Code {
  return whileNot(i32Eqz(get(GROUPS)), [
    ...body.flat(),
    ...set(SRC, i32Add(get(SRC), i32(srcStep))),
    ...set(DST, i32Add(get(DST), i32(dstStep))),
    ...set(GROUPS, i32Sub(get(GROUPS), i32(1))),
  ]);
}

function func(name: string, constants: Constants, loopCode: Code): Func {
  return { name, params: 3, i32Locals: 0, v128Locals: FIRST_CONSTANT - X + constants.count, body: [...constants.prologue(), ...loopCode] };
}

/** 8 float32 (32 bytes) -> 8 16-bit codes (16 bytes) per group. */
function narrowing(pool: ConstantPool, name: string, encode: (c: Constants["c"]) => Code): Func {
  const k = new Constants(pool);
  const code = loop([
    set(X, load(get(SRC), 0)),
    set(R, encode(k.c)),
    set(X, load(get(SRC), 16)),
    store(get(DST), narrowU(get(R), encode(k.c))),
  ], 32, 16);
  return func(name, k, code);
}

/** Halfword i of a then halfword i of b, for i from `first` to `first` + 3: four 32-bit words lo | hi << 16. */
const interleave16 = (first: number): number[] =>
  [0, 1, 2, 3].flatMap((i) => [2 * (first + i), 2 * (first + i) + 1, 16 + 2 * (first + i), 17 + 2 * (first + i)]);

/**
 * Groups of 8 codes per block of the float16 -> float32 kernel: 64 codes. The subnormal test is
 * taken once per block, so its branch follows the input's kind rather than each group's luck: on
 * uniformly random codes 22% of groups hold a subnormal and a per-group branch mispredicts often
 * (about 1350 M/s in place against 3600 on weights), while a block of 64 such codes almost always
 * holds one (1 - 0.97^64, about 86%) and a weight block almost never does.
 */
export const F16_BLOCK_GROUPS = 8;

/**
 * 8 float16 (16 bytes) -> 8 float32 (32 bytes) per group. Without a subnormal among the eight
 * (zeros are fine), each float32 is built as two 16-bit halves, eight lanes at a time: the high half
 * (a >> 3) + 0x3800 (the rebiased exponent and the top 7 fraction bits; + 0x3800 more for Inf and
 * NaN, 0 for zero), the low half a << 13, every NaN first made 0x7E00 (giving 0x7FC0, 0x0000),
 * then the halves interleaved. That is
 * about half the instructions of the 32-bit-lane decoding, which the group takes otherwise.
 * Whole blocks of F16_BLOCK_GROUPS groups choose between the two once, by OR-ing every group's
 * subnormal mask; the groups after the last whole block choose one group at a time.
 */
function f16ToF32(pool: ConstantPool): Func {
  const k = new Constants(pool);
  const c = k.c;
  const half = (n: number): Code => c(((n << 16) | n) >>> 0);
  const a = get(A);
  const hi = get(T);
  // Lanes whose code, sign dropped, lies in 1..0x3FF: the subnormals.
  const subnormals = (codes: Code): Code => i16x8LtU(i16x8Sub(codes, half(1)), half(0x3ff));
  // Group j of the block (bytes 16j of src, 32j of dst): its codes in R, their magnitudes in A.
  const read = (j: number): Code[] => [set(R, load(get(SRC), 16 * j)), set(A, and(get(R), half(0x7fff)))];
  const fast = (j: number): Code[] => [
    // Every NaN as 0x7E00 first: it then decodes like any code, to 0x7FC0 | 0x0000.
    set(A, select(half(0x7e00), a, i16x8GtS(a, half(0x7c00)))),
    set(T, i16x8Add(i16x8ShrU(a, 3), half(0x3800))),
    set(T, i16x8Add(hi, and(i16x8GtS(a, half(0x7bff)), half(0x3800)))),
    set(T, andNot(hi, i16x8Eq(a, half(0)))),
    set(X, i16x8Shl(a, 13)),
    set(T, or(hi, and(get(R), half(0x8000)))),
    store(get(DST), shuffle(get(X), hi, interleave16(0)), 32 * j),
    store(get(DST), shuffle(get(X), hi, interleave16(4)), 32 * j + 16),
  ];
  const slow = (j: number): Code[] => [
    set(X, extendLowS16(get(R))),
    store(get(DST), f32OfHalf(c), 32 * j),
    set(X, extendHighS16(get(R))),
    store(get(DST), f32OfHalf(c), 32 * j + 16),
  ];
  const block = Array.from({ length: F16_BLOCK_GROUPS }, (_, j) => j);
  const anyInBlock: Code = [
    ...set(T, subnormals(and(load(get(SRC), 0), half(0x7fff)))),
    ...block.slice(1).flatMap((j) => set(T, or(get(T), subnormals(and(load(get(SRC), 16 * j), half(0x7fff)))))),
    ...anyTrue(get(T)),
  ];
  const blocks = whileNot(i32LtU(get(GROUPS), i32(F16_BLOCK_GROUPS)), [
    ...ifElse(anyInBlock, block.flatMap((j) => [...read(j), ...slow(j)]).flat(), block.flatMap((j) => [...read(j), ...fast(j)]).flat()),
    ...set(SRC, i32Add(get(SRC), i32(16 * F16_BLOCK_GROUPS))),
    ...set(DST, i32Add(get(DST), i32(32 * F16_BLOCK_GROUPS))),
    ...set(GROUPS, i32Sub(get(GROUPS), i32(F16_BLOCK_GROUPS))),
  ]);
  const groups = loop([...read(0), ifElse(anyTrue(subnormals(a)), slow(0).flat(), fast(0).flat())], 16, 32);
  return func("f16_f32", k, [...blocks, ...groups]);
}

/** Bytes 0..7 of a then bytes 0..7 of b. */
const LOW_HALVES = [0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23];
/** The low (or, with 4, the high) 32-bit word of each of the four 64-bit lanes of a ++ b. */
const words64 = (high: number): number[] => [0, 8, 16, 24].flatMap((b) => [0, 1, 2, 3].map((i) => b + high + i));

/** 16 float32 (64 bytes) -> 16 bytes per group. */
function f32ToInt8(pool: ConstantPool, relaxed: boolean): Func {
  const k = new Constants(pool);
  // The low byte of the x86-64 int32 of the float32 at src + offset (INT_MIN, low byte 0, for
  // |x| >= 2^31 and NaN), in an int32 lane, so that the two unsigned narrowings keep it as it is.
  // (Picking the low bytes by i8x16.shuffle instead costs V8 two pshufb, an or and a rebuilt mask
  // per shuffle.)
  const lowByte = (offset: number): Code => [
    ...set(X, load(get(SRC), offset)),
    // The mask (|x| < 2^31, false for NaN) zeroes every lane the truncation does not define
    // exactly, so the relaxed instruction, whose other lanes differ by CPU, gives the same bytes.
    ...and(and((relaxed ? relaxedTruncS : truncSatS)(get(X)), f32x4Lt(f32x4Abs(get(X)), k.c(0x4f000000))), k.c(0xff)),
  ];
  const code = loop([
    set(R, narrowU(lowByte(0), lowByte(16))),
    store(get(DST), narrowU8(get(R), narrowU(lowByte(32), lowByte(48)))),
  ], 64, 16);
  return func("f32_i8", k, code);
}

/** 8 float64 (64 bytes) -> 8 float32 (32 bytes) per group. */
function f64ToF32(pool: ConstantPool): Func {
  const k = new Constants(pool);
  // 4 float64 at src + offset (locals X, A) -> 4 float32 bits.
  const four = (offset: number): Code => [
    ...set(X, load(get(SRC), offset)),
    ...set(A, load(get(SRC), offset + 16)),
    ...set(R, shuffle(demoteZero(get(X)), demoteZero(get(A)), LOW_HALVES)),
    ...select(
      or(and(shuffle(get(X), get(A), words64(4)), k.c(0x80000000 | 0)), k.c(0x7fc00000)),
      get(R),
      f32x4Ne(get(R), get(R)),
    ),
  ];
  const code = loop([
    store(get(DST), four(0), 0),
    store(get(DST), four(32), 16),
  ], 64, 32);
  return func("f64_f32", k, code);
}

/** 8 int64 (64 bytes) -> 8 int32 (32 bytes) per group: the low words. */
function int64ToInt32(pool: ConstantPool): Func {
  const k = new Constants(pool);
  const code = loop([
    store(get(DST), shuffle(load(get(SRC), 0), load(get(SRC), 16), words64(0)), 0),
    store(get(DST), shuffle(load(get(SRC), 32), load(get(SRC), 48), words64(0)), 16),
  ], 64, 32);
  return func("i64_i32", k, code);
}

/** 8 bfloat16 (16 bytes) -> 8 float32 (32 bytes) per group. */
function bf16ToF32(pool: ConstantPool): Func {
  const k = new Constants(pool);
  // Local X: four codes as the high halves of words, by a sign extension shifted up (one pmovsxwd
  // and one pslld; an i8x16.shuffle with a zero vector costs V8 two pshufb, an or and a rebuilt
  // mask) -> float32 bits; NaN to 0x7FC00000 with its sign.
  const quieted = (): Code => select(
    or(and(get(X), k.c(0x80000000 | 0)), k.c(0x7fc00000)),
    get(X),
    i32x4GtS(and(get(X), k.c(0x7fffffff)), k.c(0x7f800000)),
  );
  const code = loop([
    set(R, load(get(SRC), 0)),
    set(X, i32x4Shl(extendLowS16(get(R)), 16)),
    store(get(DST), quieted(), 0),
    set(X, i32x4Shl(extendHighS16(get(R)), 16)),
    store(get(DST), quieted(), 16),
  ], 16, 32);
  return func("bf16_f32", k, code);
}

/** Where `byte_lut32` reads its 256 32-bit entries (1 KiB, written by the caller): the last page's start. */
export function lutAddress(pages: number): number {
  return (pages - 1) * 65536;
}

/**
 * 8 bytes -> 8 32-bit elements per group, each the entry of a 256-entry table (any 8-bit source to
 * float32 / int32 / uint32: the fast path's table, built from the reference). Scalar: SIMD has no
 * gather, and a table load per element is what the JS kernel does, without its bounds checks.
 */
function byteLut32(pool: ConstantPool, lut: number): Func {
  const k = new Constants(pool);
  const entry = (i: number): Code => storeI32(get(DST), loadI32(i32Shl(loadU8(get(SRC), i), i32(2)), lut), 4 * i);
  const code = loop([0, 1, 2, 3, 4, 5, 6, 7].map(entry), 8, 32);
  return func("byte_lut32", k, code);
}

export const KERNELS = ["f32_f16", "f16_f32", "f32_bf16", "f32_i8", "f64_f32", "i64_i32", "bf16_f32", "byte_lut32"] as const;
export type KernelName = (typeof KERNELS)[number];

/** Bytes at the end of the memory that hold the constant pool. */
export const POOL_BYTES = 1024;

/**
 * The whole module: the kernels and an exported memory of `pages` 64 KiB pages. The last page
 * starts with `byte_lut32`'s table (`lutAddress`, written by the caller) and ends with the kernels'
 * constants (POOL_BYTES, a data segment); the pages before it are free for the caller. With
 * `relaxed`, f32_i8 truncates with relaxed SIMD (engines without it do not validate the module).
 * With `shared`, the memory is imported (`env.memory`, shared, `pages` pages): shared arenas.
 * @example new WebAssembly.Module(kernelModule(17, { shared: true }))
 */
export function kernelModule(pages: number, o: { relaxed?: boolean; shared?: boolean } = {}): Uint8Array {
  const pool = new ConstantPool(pages * 65536 - POOL_BYTES);
  const funcs = [
    narrowing(pool, "f32_f16", f16Of),
    f16ToF32(pool),
    narrowing(pool, "f32_bf16", bf16Of),
    f32ToInt8(pool, o.relaxed === true),
    f64ToF32(pool),
    int64ToInt32(pool),
    bf16ToF32(pool),
    byteLut32(pool, lutAddress(pages)),
  ];
  const data = pool.bytes();
  if (data.length > POOL_BYTES) throw new Error(`wasm kernels: ${data.length} bytes of constants, room for ${POOL_BYTES}`);
  return moduleBytes(funcs, pages, { offset: pool.base, bytes: data }, o.shared === true ? "shared" : undefined);
}
