/**
 * WebAssembly SIMD fast paths of QuantizeLinear and DequantizeLinear, and the block kernels of the
 * checkpoint quantizers (checkpoint.ts), each giving exactly the bytes of the reference kernels
 * (kernels.ts, and checkpoint.ts' scalar code), or false, having written nothing, where they do
 * not apply (then the caller runs the reference). One module, one definition per rule:
 *
 * - quantize float32 -> int8 / uint8 / int4 / uint4 (float32 or e8m0 scales, the division in
 *   float32): per lane q = x / s (f32x4.div: IEEE's correctly rounded division, subnormals kept),
 *   clamped to [min - zp, max - zp] by pmax / pmin (a NaN lane becomes min - zp: the reference's
 *   NaN -> min), then rounded half to even and made an integer in one step by adding 1.5 * 2^23
 *   (|q| < 2^22, so the float32 sum's rounding is q's rounding to an integer, and its low bits are
 *   that integer: subtracting the bits of 1.5 * 2^23 - zp gives the code with the zero point
 *   added). Clamping before rounding is exact because the bounds are integers. No truncation
 *   instruction, so no relaxed SIMD is needed (trunc_sat is a long sequence on x86-64).
 *   4-bit codes are packed two a byte, element 0 in the low nibble.
 * - quantize float32 -> float8e4m3fn / float4e2m1 (float32 or e8m0 scales): q = x / s (or, for the
 *   FP8 checkpoint rule, x * s), plus the zero point (+0: -0 becomes +0 as in the reference's IEEE
 *   sum; -0 for the checkpoints, which keep -0), then Cast's float32 encoding: normals by integer
 *   round to nearest even on the bits (rebias, + half - 1 + the kept lsb, shift), subnormals by one
 *   float add whose ulp is the format's subnormal step, the magnitude clamped to the largest code
 *   (saturate; for e4m3fn without saturate to 0x7F, its NaN), NaN lanes to the format's NaN code
 *   with the sign of x's NaN, else of a parameter (the scale's NaN for QuantizeLinear; x86's
 *   negative default NaN for the FP8 checkpoint's Inf * 0). MX QuantizeLinear with e8m0 scales and
 *   float4e2m1 elements and the MXFP4 checkpoint's element rule are the same kernel (q_f4).
 * - dequantize int8 / uint8 / int4 / uint4 / float8e4m3fn / float4e2m1 -> float32 (finite float32
 *   or e8m0 scales): the element decoded exactly (integers minus the zero point, small; minifloats
 *   by shift and rebias, subnormals as m * 2^(emin - m)), times the scale by f32x4.mul, the exact
 *   product rounded once as the reference rounds it; an e4m3fn NaN gives 0x7FC00000 with its sign.
 * - amax32: the largest |x| of each 32 float32 (NaN if the block holds one), by integer max on the
 *   magnitude bits.
 *
 * Applies to layouts whose elements come in runs sharing one scale: per-tensor, per-axis (runs of
 * the product of the dimensions after the axis) and blocked along the last axis (runs of the
 * block size), when runs average at least 16 elements (4-bit types: runs start on a byte). Each
 * kernel call takes a table of 16-byte records, one per run (scale, zero point, two more
 * parameters, built once per call for every scale group), so a chunk of short equal runs (blocks
 * of 32) is one call, not one call per block (which cost 4-5x on blocked paths).
 * Ordinary arrays are streamed through a private memory in chunks (copy in, convert, copy out).
 * When the input and output live in one arena (src/arena.ts), the kernels are instantiated on the
 * arena's memory and run in place: whole groups where the tensors are, each run's last partial
 * group through a scratch area in the memory's last page (never writing past the output).
 *
 * Browser-safe; built from source at run time like ../wasm (no generated file).
 */
import type { DType, Storage } from "../../dtype/table.js";
import { u8View } from "../fast/views.js";
import {
  and, extendHighS16, extendHighS8, extendHighU16, extendHighU8, extendLowS16, extendLowS8, extendLowU16, extendLowU8,
  f32x4Add, f32x4ConvertS, f32x4Div, f32x4Mul, f32x4Ne, f32x4Pmax, f32x4Pmin, f32x4Sub, get, i16x8ShrU, i32, i32x4Add,
  i32x4Eq, i32x4ExtractLane, i32x4LtS, i32x4MaxS, i32x4MinS, i32x4Shl, i32x4ShrU, i32x4Sub, i8x16Shl, i8x16ShrS, i8x16ShrU,
  anyTrue, i32Add, i32Eqz, i32Sub, ifElse, load, load32Splat, moduleBytes, whileNot, narrowS, narrowS8, narrowU, narrowU8, or, select, set, shuffle, store, storeI32, xor, type Code, type Func,
} from "../wasm/encoder.js";
import type { WasmApi } from "../wasm/index.js";
import { residentMemoryOf, type WasmMemory } from "../wasm/resident.js";
import type { DequantizeArgs, QuantizeArgs } from "./kernels.js";
import type { QuantLayout } from "./layout.js";

const PAGE = 65536;
/** Elements per chunk when streaming (a multiple of 32): 128 KiB of float32 in or out. */
const CHUNK = 32768;
const IN = 0;
/** Slack after each region for a last group read or written past a run's end. */
const SLACK = 256;
const OUT = 4 * CHUNK + SLACK;
const PRIVATE_PAGES = Math.ceil((OUT + 4 * CHUNK + SLACK) / PAGE) + 1;
/**
 * Offsets in the memory's last page (an arena's is the cast kernels' too: their table takes the
 * first KiB and their constants the last KiB, ../wasm/kernels.ts): this module's constants, the
 * scratch for runs' last partial groups, and the table of per-block records.
 */
const CONSTANTS_AT = 2048;
const TAIL_IN_AT = 4096;
const TAIL_OUT_AT = 4096 + 256;
const TABLE_AT = 8192;
/** Records the table holds (16 bytes each, ending 1 KiB before the page's end). */
const TABLE_RECORDS = 3072;

// Parameters (src, dst, blocks, groups per block, table), an i32 counter, then v128 locals: a
// block's four parameters (its record in the table), temporaries, constants.
const SRC = 0;
const DST = 1;
const BLOCKS = 2;
const PER = 3;
const TABLE = 4;
const G = 5;
const S = 6;
const Z = 7;
/** Integer kernels: the clamp bounds; float kernels: the arithmetic NaN's sign and the largest code. */
const LO = 8;
const HI = 9;
const AN = 8;
const MAXC = 9;
const X = 10;
const Q = 11;
const A = 12;
const B = 13;
const C = 14;
/** The float kernels' quotients of one group, four lanes each (up to 8: 32 elements). */
const QS = 15;
const FIRST_CONSTANT = 23;
/** Bytes of one block's record: scale, zero point (or its bits), and two more parameters, 4 bytes each. */
const RECORD = 16;

const SIGN = 0x80000000 | 0;
const ABS = 0x7fffffff;
/** 1.5 * 2^23 as float32 bits: adding it rounds |q| < 2^22 to an integer in the low bits. */
const MAGIC = 0x4b400000;

/** Constants in a data segment, each a 4-lane splat; a function loads those it uses before its loop. */
class Constants {
  private readonly slots = new Map<number, number>();
  constructor(private readonly base: number) {}
  slot(n: number): number {
    let i = this.slots.get(n >>> 0);
    if (i === undefined) {
      i = this.slots.size;
      this.slots.set(n >>> 0, i);
    }
    return i;
  }
  address(n: number): number {
    return this.base + 16 * this.slot(n);
  }
  bytes(): Uint8Array {
    const words = new Uint32Array(4 * this.slots.size);
    for (const [n, i] of this.slots) words.fill(n, 4 * i, 4 * i + 4);
    return new Uint8Array(words.buffer);
  }
}

/** One function's constants, each in a local loaded from the pool before the loop. */
class Locals {
  private readonly index = new Map<number, number>();
  constructor(private readonly pool: Constants) {}
  c = (n: number): Code => {
    let i = this.index.get(n >>> 0);
    if (i === undefined) {
      i = FIRST_CONSTANT + this.index.size;
      this.index.set(n >>> 0, i);
    }
    return get(i);
  };
  func(name: string, body: Code): Func {
    const prologue: Code[] = [];
    for (const [n, i] of this.index) prologue.push(set(i, load(i32(0), this.pool.address(n))));
    return { name, params: 5, i32Locals: 1, v128Locals: FIRST_CONSTANT - S + this.index.size, body: [...prologue.flat(), ...body] };
  }
}

/**
 * Every kernel's loop: `blocks` blocks, each first loading its four parameters (splats of the
 * record at `table`), then `per` groups of `body`, src and dst advanced by their steps.
 */
function loop(body: Code[], srcStep: number, dstStep: number): Code {
  return whileNot(i32Eqz(get(BLOCKS)), [
    ...[S, Z, LO, HI].flatMap((local, i) => set(local, load32Splat(get(TABLE), 4 * i))),
    ...set(G, get(PER)),
    ...whileNot(i32Eqz(get(G)), [
      ...body.flat(),
      ...set(SRC, i32Add(get(SRC), i32(srcStep))),
      ...set(DST, i32Add(get(DST), i32(dstStep))),
      ...set(G, i32Sub(get(G), i32(1))),
    ]),
    ...set(TABLE, i32Add(get(TABLE), i32(RECORD))),
    ...set(BLOCKS, i32Sub(get(BLOCKS), i32(1))),
  ]);
}

/** A minifloat element format the kernels encode and decode (src/dtype's traits, the two needed). */
interface Minifloat {
  readonly bits: 8 | 4;
  readonly man: number;
  readonly bias: number;
  /** The NaN code of a positive NaN (e4m3fn 0x7F; float4e2m1, without NaN, the -0 code 0x8). */
  readonly nanBase: number;
  /** The magnitude code that is NaN (e4m3fn 0x7F), or undefined. */
  readonly nanMag?: number;
}
const E4M3FN: Minifloat = { bits: 8, man: 3, bias: 7, nanBase: 0x7f, nanMag: 0x7f };
const E2M1: Minifloat = { bits: 4, man: 1, bias: 1, nanBase: 0x8 };

/** Bytes b0 | b1 << 8 in 16-bit lanes (local B) -> the byte b0 & 0xF | (b1 & 0xF) << 4. */
const packNibbles = (v: Code, c: Locals["c"]): Code => [...set(B, v), ...or(and(get(B), c(0x000f000f)), and(i16x8ShrU(get(B), 4), c(0x00f000f0)))];

/** Four float32 at src + offset -> their integer codes in i32 lanes (see the module comment). */
function intLanes(offset: number, c: Locals["c"]): Code {
  return i32x4Sub(f32x4Add(f32x4Pmin(get(HI), f32x4Pmax(get(LO), f32x4Div(load(get(SRC), offset), get(S)))), c(MAGIC)), get(Z));
}

/** 16 float32 -> 16 int8 / uint8 per group. */
function quantize8(k: Locals, unsigned: boolean): Code {
  const l = (o: number): Code => intLanes(o, k.c);
  const n16 = unsigned ? narrowU : narrowS;
  return loop([store(get(DST), (unsigned ? narrowU8 : narrowS8)(n16(l(0), l(16)), n16(l(32), l(48))))], 64, 16);
}

/** 32 float32 -> 32 int4 / uint4 (16 bytes) per group: codes already in the 4-bit range. */
function quantize4(k: Locals): Code {
  const l = (o: number): Code => intLanes(o, k.c);
  const bytes = (o: number): Code => narrowS8(narrowS(l(o), l(o + 16)), narrowS(l(o + 32), l(o + 48)));
  return loop([store(get(DST), narrowU8(packNibbles(bytes(0), k.c), packNibbles(bytes(64), k.c)))], 128, 16);
}

/** The quotient (plus the zero) of the four float32 at src + offset. */
const quotient = (multiply: boolean, offset: number, x: Code = load(get(SRC), offset)): Code =>
  f32x4Add((multiply ? f32x4Mul : f32x4Div)(x, get(S)), get(Z));

/** The minifloat codes of the non-NaN float32 lanes of local q, in i32 lanes (uses A). */
function codeOf(f: Minifloat, q: number, c: Locals["c"]): Code {
  const drop = 23 - f.man;
  const emin = 1 - f.bias;
  const normal = i32x4Sub(i32x4ShrU(i32x4Add(i32x4Add(get(A), c((1 << (drop - 1)) - 1)), and(i32x4ShrU(get(A), drop), c(1))), drop), c((127 - f.bias) << f.man));
  const subnormalStep = (127 + emin - f.man + 23) << 23; // a float32 whose ulp is the format's smallest subnormal
  const subnormal = i32x4Sub(f32x4Add(get(A), c(subnormalStep)), c(subnormalStep));
  const magnitude = i32x4MinS(select(subnormal, normal, i32x4LtS(get(A), c((127 + emin) << 23))), f.nanMag === undefined ? c((1 << (f.bits - 1)) - 1) : get(MAXC));
  return [...set(A, and(get(q), c(ABS))), ...or(magnitude, i32x4ShrU(and(get(q), c(SIGN)), 32 - f.bits))];
}

/** Four float32 at src + offset -> their minifloat codes in i32 lanes, NaN lanes included. */
function floatLanes(f: Minifloat, multiply: boolean, offset: number, c: Locals["c"]): Code {
  const nanCode = xor(c(f.nanBase), i32x4ShrU(and(select(get(X), get(AN), f32x4Ne(get(X), get(X))), c(SIGN)), 32 - f.bits));
  return [
    ...set(X, load(get(SRC), offset)),
    ...set(Q, quotient(multiply, offset, get(X))),
    ...select(nanCode, codeOf(f, Q, c), f32x4Ne(get(Q), get(Q))),
  ];
}

/**
 * 16 float32 -> 16 float8 codes, or 32 float32 -> 32 float4 codes (16 bytes), per group. The
 * group's quotients are computed first; only a group with a NaN quotient takes the lanes' NaN
 * codes (about a third of the operations), the others encode straight from the quotients.
 */
function quantizeFloat(k: Locals, f: Minifloat, multiply: boolean): Code {
  const sets = f.bits === 8 ? 4 : 8;
  const quotients = Array.from({ length: sets }, (_, i) => set(QS + i, quotient(multiply, 16 * i)));
  let anyNaN = f32x4Ne(get(QS), get(QS));
  for (let i = 1; i < sets; i++) anyNaN = or(anyNaN, f32x4Ne(get(QS + i), get(QS + i)));
  const narrow = (lane: (i: number) => Code, first: number): Code =>
    narrowU8(narrowU(lane(first), lane(first + 1)), narrowU(lane(first + 2), lane(first + 3)));
  const group = (lane: (i: number) => Code): Code =>
    f.bits === 8 ? store(get(DST), narrow(lane, 0)) : store(get(DST), narrowU8(packNibbles(narrow(lane, 0), k.c), packNibbles(narrow(lane, 4), k.c)));
  const fast = group((i) => codeOf(f, QS + i, k.c));
  const slow = group((i) => floatLanes(f, multiply, 16 * i, k.c));
  return loop([...quotients, ifElse(anyTrue(anyNaN), slow, fast)], 16 * sets, 16);
}

const INTERLEAVE_LOW = [0, 1, 2, 3, 4, 5, 6, 7].flatMap((i) => [i, 16 + i]);
const INTERLEAVE_HIGH = INTERLEAVE_LOW.map((i) => i + 8);

/** The 32 nibbles of the 16 bytes at src as bytes in element order: 0..15 in local `first`, 16..31 in `second` (uses C). */
function nibbles(signed: boolean, c: Locals["c"], first: number, second: number): Code[] {
  const lo = signed ? i8x16ShrS(i8x16Shl(get(C), 4), 4) : and(get(C), c(0x0f0f0f0f));
  const hi = signed ? i8x16ShrS(get(C), 4) : i8x16ShrU(get(C), 4);
  return [
    set(C, load(get(SRC), 0)), set(first, lo), set(C, hi),
    set(second, shuffle(get(first), get(C), INTERLEAVE_HIGH)), set(first, shuffle(get(first), get(C), INTERLEAVE_LOW)),
  ];
}

/** 16 integer bytes in `bytes` (a local) -> 16 float32 at dst + offset: (x - zp) * s, zp as float32 in Z. */
function dequantizeIntBytes(bytes: number, signed: boolean, offset: number): Code[] {
  const four = (half: Code, high: boolean): Code => f32x4Mul(f32x4Sub(f32x4ConvertS((high ? extendHighS16 : extendLowS16)(half)), get(Z)), get(S));
  return [
    set(Q, (signed ? extendLowS8 : extendLowU8)(get(bytes))),
    store(get(DST), four(get(Q), false), offset),
    store(get(DST), four(get(Q), true), offset + 16),
    set(Q, (signed ? extendHighS8 : extendHighU8)(get(bytes))),
    store(get(DST), four(get(Q), false), offset + 32),
    store(get(DST), four(get(Q), true), offset + 48),
  ];
}

/** Four minifloat codes in the i32 lanes of local X -> float32 value times the scale. */
function decodeLanes(f: Minifloat, c: Locals["c"]): Code {
  const emin = 1 - f.bias;
  const normal = i32x4Add(i32x4Shl(get(A), 23 - f.man), c((127 - f.bias) << 23));
  const subnormal = f32x4Mul(f32x4ConvertS(get(A)), c((127 + emin - f.man) << 23));
  const value = or(select(subnormal, normal, i32x4LtS(get(A), c(1 << f.man))), i32x4Shl(and(get(X), c(1 << (f.bits - 1))), 32 - f.bits));
  const y = f32x4Mul(value, get(S));
  const out = f.nanMag === undefined ? y : select(or(c(0x7fc00000), i32x4Shl(and(get(X), c(1 << (f.bits - 1))), 32 - f.bits)), y, i32x4Eq(get(A), c(f.nanMag)));
  return [...set(A, and(get(X), c((1 << (f.bits - 1)) - 1))), ...out];
}

/** 16 minifloat codes, one a byte, in `bytes` (a local) -> 16 float32 at dst + offset. */
function dequantizeFloatBytes(bytes: number, f: Minifloat, offset: number, c: Locals["c"]): Code[] {
  const quarter = (half: (v: Code) => Code, which: (v: Code) => Code, at: number): Code[] => [
    set(X, which(half(get(bytes)))), store(get(DST), decodeLanes(f, c), offset + at),
  ];
  return [
    ...quarter(extendLowU8, extendLowU16, 0), ...quarter(extendLowU8, extendHighU16, 16),
    ...quarter(extendHighU8, extendLowU16, 32), ...quarter(extendHighU8, extendHighU16, 48),
  ];
}

/** 32 float32 -> the largest magnitude (float32 bits; NaN if any lane is NaN) at dst, per group. */
function absMax32(k: Locals): Code {
  const m = (o: number): Code => and(load(get(SRC), o), k.c(ABS));
  let acc = m(0);
  for (let o = 16; o < 128; o += 16) acc = i32x4MaxS(acc, m(o));
  const swapHalves = [8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7];
  const swapWords = [4, 5, 6, 7, 0, 1, 2, 3, 12, 13, 14, 15, 8, 9, 10, 11];
  return loop([
    set(X, acc),
    set(X, i32x4MaxS(get(X), shuffle(get(X), get(X), swapHalves))),
    set(X, i32x4MaxS(get(X), shuffle(get(X), get(X), swapWords))),
    storeI32(get(DST), i32x4ExtractLane(get(X), 0)),
  ], 128, 4);
}

export const KERNEL_NAMES = [
  "q_i8", "q_u8", "q_4", "q_f8", "q_f8_mul", "q_f4", "dq_i8", "dq_u8", "dq_i4", "dq_u4", "dq_f8", "dq_f4", "amax32",
] as const;
export type KernelName = (typeof KERNEL_NAMES)[number];
export type Kernel = (src: number, dst: number, blocks: number, groupsPerBlock: number, table: number) => void;

/**
 * The module's bytes for a memory of `pages` pages (imported as env.memory: a private one, an
 * arena's, or with `memory` "shared" a shared one, ./pipeline.ts'). Its parameters, constants and
 * scratch live in the last page.
 * @example new WebAssembly.Module(quantModule(4))
 */
export function quantModule(pages = PRIVATE_PAGES, memory: "plain" | "shared" = "plain"): Uint8Array {
  const last = (pages - 1) * PAGE;
  const pool = new Constants(last + CONSTANTS_AT);
  const build = (name: KernelName, body: (k: Locals) => Code): Func => {
    const k = new Locals(pool);
    return k.func(name, body(k));
  };
  const intDq = (signed: boolean) => (): Code => loop([set(C, load(get(SRC), 0)), ...dequantizeIntBytes(C, signed, 0)], 16, 64);
  const int4Dq = (signed: boolean) => (k: Locals): Code =>
    loop([...nibbles(signed, k.c, A, B), ...dequantizeIntBytes(A, signed, 0), ...dequantizeIntBytes(B, signed, 64)], 16, 128);
  const funcs: Func[] = [
    build("q_i8", (k) => quantize8(k, false)),
    build("q_u8", (k) => quantize8(k, true)),
    build("q_4", (k) => quantize4(k)),
    build("q_f8", (k) => quantizeFloat(k, E4M3FN, false)),
    build("q_f8_mul", (k) => quantizeFloat(k, E4M3FN, true)),
    build("q_f4", (k) => quantizeFloat(k, E2M1, false)),
    build("dq_i8", intDq(true)),
    build("dq_u8", intDq(false)),
    build("dq_i4", int4Dq(true)),
    build("dq_u4", int4Dq(false)),
    build("dq_f8", (k) => loop([set(C, load(get(SRC), 0)), ...dequantizeFloatBytes(C, E4M3FN, 0, k.c)], 16, 64)),
    build("dq_f4", (k) => loop([...nibbles(false, k.c, Q, B), ...dequantizeFloatBytes(Q, E2M1, 0, k.c), ...dequantizeFloatBytes(B, E2M1, 64, k.c)], 16, 128)),
    build("amax32", absMax32),
  ];
  const data = pool.bytes();
  if (CONSTANTS_AT + data.length > TAIL_IN_AT) throw new Error(`quant kernels: ${data.length} bytes of constants`);
  return moduleBytes(funcs, pages, { offset: last + CONSTANTS_AT, bytes: data }, memory);
}

interface MemoryApi extends WasmApi {
  Memory: new (d: { initial: number; maximum: number }) => WasmMemory;
}

/** The kernels on one memory, with views of it (renewed when an arena's reset detaches them). */
export interface Loaded {
  readonly memory: WasmMemory;
  /** The address of the memory's last page. */
  readonly last: number;
  readonly kernels: Record<KernelName, Kernel>;
  buffer: ArrayBufferLike;
  bytes: Uint8Array;
  f32: Float32Array;
  i32: Int32Array;
}

let enabled = true;
let privateLoaded: Loaded | null | undefined;
const onArenas = new WeakMap<WasmMemory, Loaded | null>();
const compiled = new Map<number, object>();

function api(): MemoryApi | undefined {
  return (globalThis as { WebAssembly?: MemoryApi }).WebAssembly;
}

function instantiate(memory: WasmMemory, pages: number, shared = false): Loaded | null {
  try {
    const w = api();
    if (!w) return null;
    const key = shared ? -pages : pages;
    let module = compiled.get(key);
    if (!module) {
      const code = quantModule(pages, shared ? "shared" : "plain");
      if (!w.validate(code)) return null;
      module = new w.Module(code);
      compiled.set(key, module);
    }
    const e = new w.Instance(module, { env: { memory } }).exports;
    const kernels = Object.fromEntries(KERNEL_NAMES.map((n) => [n, e[n] as Kernel])) as Record<KernelName, Kernel>;
    const l: Loaded = { memory, last: (pages - 1) * PAGE, kernels, buffer: memory.buffer, bytes: new Uint8Array(0), f32: new Float32Array(0), i32: new Int32Array(0) };
    return views(l);
  } catch {
    return null; // e.g. a Content-Security-Policy without 'wasm-unsafe-eval'
  }
}

function views(l: Loaded): Loaded {
  l.buffer = l.memory.buffer;
  l.bytes = new Uint8Array(l.buffer);
  l.f32 = new Float32Array(l.buffer);
  l.i32 = new Int32Array(l.buffer);
  return l;
}

/**
 * The kernels instantiated on a shared memory of `pages` pages (./pipeline.ts: each thread has its
 * own instance on the one memory), or null without WebAssembly SIMD or shared memory.
 */
export function sharedInstance(memory: WasmMemory, pages: number): Loaded | null {
  return instantiate(memory, pages, true);
}

function privateInstance(): Loaded | null {
  if (privateLoaded === undefined) {
    privateLoaded = null;
    try {
      const w = api();
      if (w) privateLoaded = instantiate(new w.Memory({ initial: PRIVATE_PAGES, maximum: PRIVATE_PAGES }), PRIVATE_PAGES);
    } catch {
      privateLoaded = null;
    }
  }
  return privateLoaded;
}

/** The kernels on the arena memory both storages live in, or undefined when they do not share one. */
function arenaInstance(x: Storage, y: Storage): Loaded | undefined {
  const xb = (x as Uint8Array).buffer;
  if (xb !== (y as Uint8Array).buffer) return undefined;
  const memory = residentMemoryOf(xb);
  if (!memory) return undefined;
  let l = onArenas.get(memory);
  if (l === undefined) {
    l = instantiate(memory, memory.buffer.byteLength / PAGE);
    onArenas.set(memory, l);
  }
  if (!l) return undefined;
  return l.buffer === memory.buffer ? l : views(l);
}

/**
 * For tests and benchmarks: false makes every fast path decline, so the reference runs.
 * @example useQuantSimd(false); quantizeLinear(x, s); useQuantSimd(true);
 */
export function useQuantSimd(on: boolean): void {
  enabled = on;
}

/** Whether the SIMD fast paths are available here (instantiates the module on first call). */
export function quantSimdAvailable(): boolean {
  return privateInstance() !== null;
}

/**
 * Whether the kernels would run in place for these two storages (both in one arena, WebAssembly
 * SIMD available): for tests and benchmarks.
 * @example quantSimdInPlace(xa.data, out.data) // true for two tensors of one arena
 */
export function quantSimdInPlace(x: Storage, y: Storage): boolean {
  return arenaInstance(x, y) !== undefined;
}

/** What one kernel call does: its elements per group, bits per element in and out, and each scale group's record. */
export interface Job {
  readonly kernel: KernelName;
  readonly group: number;
  readonly inBits: number;
  readonly outBits: number;
  /** The record of every scale group, four 32-bit words each (see `records`). */
  readonly records: Int32Array;
}

let recordWords = new Int32Array(4096);
/**
 * Room for `groups` records, reused from call to call (a fresh array per call would cost its page
 * faults): write the words through the Int32Array, float parameters through the Float32Array.
 */
function records(groups: number): { i32: Int32Array; f32: Float32Array } {
  if (recordWords.length < 4 * groups) recordWords = new Int32Array(Math.max(4 * groups, 2 * recordWords.length));
  const i32 = recordWords.subarray(0, 4 * groups);
  return { i32, f32: new Float32Array(i32.buffer, 0, 4 * groups) };
}

/** Whether the layout has runs of one scale averaging 16 elements (4-bit: each starting on a byte). */
function runsFit(l: QuantLayout, packed: boolean): boolean {
  if (l.strideInner !== 0 && l.inner > 1) return false;
  const runs = l.strideOuter === 0 && l.strideBlock === 0 ? 1 : l.outer * Math.ceil(l.axisLength / l.blockSize);
  if (l.count < 16 * runs) return false;
  return !packed || runs === 1 || ((l.blockSize * l.inner) % 2 === 0 && (l.axisLength * l.inner) % 2 === 0);
}

/**
 * The length every run shares when runs are of one length, a multiple of `group` and at most
 * CHUNK (a blocked layout without a partial last block, or per axis with short rows): then a
 * chunk's runs go to the kernel in one call, a record each. Else 0.
 */
export function uniformRun(l: QuantLayout, group: number): number {
  if (l.strideOuter === 0 && l.strideBlock === 0) return 0;
  if (l.axisLength % l.blockSize !== 0 || l.strideBlock !== 1 || (l.strideOuter !== 0 && l.strideOuter !== l.axisLength / l.blockSize)) return 0;
  const length = l.blockSize * l.inner;
  return length % group === 0 && length <= CHUNK ? length : 0;
}

/**
 * Copies the records of runs r0 .. r0 + k - 1 of a layout whose runs are uniform into the table
 * at byte address `at`. Runs take the scale groups in order, cyclically: blocked along the last
 * axis, run r is group r; per axis, group r mod axisLength (the groups repeat for each outer index).
 */
export function tableOfRuns(words: Int32Array, layout: QuantLayout, recs: Int32Array, r0: number, k: number, at: number): void {
  const groups = layout.scaleCount;
  let word = at >>> 2;
  for (let r = r0; r < r0 + k;) {
    const g = r % groups;
    const take = Math.min(groups - g, r0 + k - r);
    words.set(recs.subarray(4 * g, 4 * (g + take)), word);
    word += 4 * take;
    r += take;
  }
}

/** Calls `each(p, length, g)` for the runs of elements sharing scale g in [start, start + n), in order. */
export function forRuns(l: QuantLayout, start: number, n: number, each: (p: number, length: number, g: number) => void): void {
  const end = start + n;
  if (l.strideOuter === 0 && l.strideBlock === 0) {
    if (n > 0) each(start, n, 0);
    return;
  }
  let p = start;
  while (p < end) {
    const k = p % l.inner;
    const rest = (p - k) / l.inner;
    const j = rest % l.axisLength;
    const o = (rest - j) / l.axisLength;
    const inBlock = j % l.blockSize;
    const length = Math.min((Math.min(l.blockSize - inBlock, l.axisLength - j)) * l.inner - k, end - p);
    each(p, length, o * l.strideOuter + ((j - inBlock) / l.blockSize) * l.strideBlock);
    p += length;
  }
}

/**
 * A second thread for large streamed jobs (./pipeline.ts), installed by a platform that can start
 * one (tensorcast/node): `run` returns false, having written nothing, for jobs it does not take.
 */
export interface StreamHelper {
  run(job: Job, x: Storage, y: Storage, layout: QuantLayout): boolean;
}
let streamHelper: StreamHelper | undefined;

/**
 * Installs (or with undefined removes) the helper that streams large jobs on ordinary arrays
 * through a second thread; returns the one it replaces.
 * @example setQuantStreamHelper(undefined) // every job streamed on the calling thread
 */
export function setQuantStreamHelper(helper: StreamHelper | undefined): StreamHelper | undefined {
  const before = streamHelper;
  streamHelper = helper;
  return before;
}

/**
 * Runs `job` over the layout's elements of x into y: in place on an arena both live in, else
 * streamed (by the helper's two threads when one is installed and takes the job).
 */
function run(job: Job, x: Storage, y: Storage, layout: QuantLayout): boolean {
  const arena = arenaInstance(x, y);
  if (arena) {
    inPlace(arena, job, x, y, layout);
    return true;
  }
  if (streamHelper?.run(job, x, y, layout)) return true;
  const w = privateInstance();
  if (!w) return false;
  streamed(w, job, x, y, layout);
  return true;
}

function inPlace(l: Loaded, job: Job, x: Storage, y: Storage, layout: QuantLayout): void {
  const kernel = l.kernels[job.kernel];
  const xAt = (x as Uint8Array).byteOffset;
  const yAt = (y as Uint8Array).byteOffset;
  const { group, inBits, outBits } = job;
  const table = l.last + TABLE_AT;
  // Offsets past 2^31 reach the i32 parameters as negative numbers; addresses are read unsigned.
  const uniform = uniformRun(layout, group);
  if (uniform > 0) {
    const runs = layout.count / uniform;
    for (let r0 = 0; r0 < runs; r0 += TABLE_RECORDS) {
      const k = Math.min(TABLE_RECORDS, runs - r0);
      tableOfRuns(l.i32, layout, job.records, r0, k, table);
      const p = r0 * uniform;
      kernel(xAt + (p * inBits) / 8, yAt + (p * outBits) / 8, k, uniform / group, table);
    }
    return;
  }
  const tailIn = l.last + TAIL_IN_AT;
  const tailOut = l.last + TAIL_OUT_AT;
  const mem = l.bytes;
  forRuns(layout, 0, layout.count, (p, length, g) => {
    l.i32.set(job.records.subarray(4 * g, 4 * g + 4), table >>> 2);
    const whole = Math.floor(length / group);
    if (whole > 0) kernel(xAt + (p * inBits) / 8, yAt + (p * outBits) / 8, 1, whole, table);
    const rest = length - whole * group;
    if (rest === 0) return;
    // The run's last partial group through the scratch: a whole group here would write past it.
    const first = p + whole * group;
    const from = xAt + (first * inBits) / 8;
    mem.copyWithin(tailIn, from, from + Math.ceil((rest * inBits) / 8));
    kernel(tailIn, tailOut, 1, 1, table);
    const outBytes = Math.ceil((rest * outBits) / 8);
    const to = yAt + (first * outBits) / 8;
    mem.copyWithin(to, tailOut, tailOut + outBytes);
    // An odd count's last byte: its high nibble is no element (the reference leaves it 0).
    if (outBits === 4 && rest % 2 === 1) mem[to + outBytes - 1] &= 0x0f;
  });
}

/** Elements per streamed chunk of at most `max`: a whole number of runs when they are of one length. */
export function chunkLength(uniform: number, max: number): number {
  return uniform > 0 ? Math.floor(max / uniform) * uniform : max;
}

/**
 * Copies the codes of elements [start, start + n) from `from` (a chunk's output in a module's
 * memory) into `dst`; an odd 4-bit count's last high nibble is no element, and is left 0 as the
 * reference leaves it (the kernel wrote a stale lane's code there).
 */
export function copyCodesOut(dst: Uint8Array, from: Uint8Array, start: number, n: number, outBits: number): void {
  const bytes = Math.ceil((n * outBits) / 8);
  const to = (start * outBits) / 8;
  dst.set(from.subarray(0, bytes), to);
  if (outBits === 4 && n % 2 === 1) dst[to + bytes - 1] &= 0x0f;
}

function streamed(l: Loaded, job: Job, x: Storage, y: Storage, layout: QuantLayout): void {
  const kernel = l.kernels[job.kernel];
  const { group, inBits, outBits } = job;
  const src = u8View(x);
  const dst = u8View(y);
  const mem = l.bytes;
  const table = l.last + TABLE_AT;
  const uniform = uniformRun(layout, group);
  const chunk = chunkLength(uniform, CHUNK);
  let last = -1;
  for (let start = 0; start < layout.count; start += chunk) {
    const n = Math.min(chunk, layout.count - start);
    mem.set(src.subarray((start * inBits) / 8, Math.ceil(((start + n) * inBits) / 8)), IN);
    if (uniform > 0) {
      const k = n / uniform;
      tableOfRuns(l.i32, layout, job.records, start / uniform, k, table);
      kernel(IN, OUT, k, uniform / group, table);
    } else {
      forRuns(layout, start, n, (p, length, g) => {
        if (g !== last) {
          l.i32.set(job.records.subarray(4 * g, 4 * g + 4), table >>> 2);
          last = g;
        }
        // A last partial group converts stale lanes: overwritten by the next run, or past the chunk.
        kernel(IN + ((p - start) * inBits) / 8, OUT + ((p - start) * outBits) / 8, 1, Math.ceil(length / group), table);
      });
    }
    copyCodesOut(dst, mem.subarray(OUT), start, n, outBits);
  }
}

/** e8m0 scales decoded, reused from call to call (used before the next call decodes again). */
let decodedScales = new Float32Array(1024);
const E8M0_VALUES = Float32Array.from({ length: 256 }, (_, c) => (c === 0xff ? NaN : 2 ** (c - 127)));

/** Scale values as float32 (float32 scales as they are; e8m0 codes decoded), or undefined for another type. */
function scaleValues(s: Storage, t: DType): Float32Array | undefined {
  if (t.name === "float32") return s as Float32Array;
  if (t.name !== "float8e8m0") return undefined;
  const codes = s as Uint8Array;
  if (decodedScales.length < codes.length) decodedScales = new Float32Array(Math.max(codes.length, 2 * decodedScales.length));
  const v = decodedScales.subarray(0, codes.length);
  for (let i = 0; i < codes.length; i++) v[i] = E8M0_VALUES[codes[i]];
  return v;
}

let zeroScratch = new Int32Array(1024);
/**
 * Every integer zero point as a number (packed 4-bit ones unpacked, element 0 in the low nibble,
 * int4 sign-extended), in an array reused from call to call; undefined without zero points.
 */
function zeroPoints(zp: Storage | undefined, t: DType, count: number): Int32Array | Int8Array | Uint8Array | undefined {
  if (!zp) return undefined;
  if (t.bits === 8) return zp as Int8Array | Uint8Array;
  if (zeroScratch.length < count) zeroScratch = new Int32Array(Math.max(count, 2 * zeroScratch.length));
  const out = zeroScratch;
  const bytes = zp as Uint8Array;
  const signed = t.kind === "int";
  for (let g = 0; g < count; g += 2) {
    const b = bytes[g >> 1];
    // Shifting the nibble to the top of an int32 and back sign-extends it (int4) or not (uint4).
    out[g] = signed ? (b << 28) >> 28 : b & 0xf;
    if (g + 1 < count) out[g + 1] = signed ? (b << 24) >> 28 : (b >> 4) & 0xf;
  }
  return out;
}

/** The raw code of float zero point g (float8: a byte; float4: a nibble, element 0 low). */
function codeAt(zp: Uint8Array, bits: number, g: number): number {
  return bits === 8 ? zp[g] : (zp[g >> 1] >> (4 * (g & 1))) & 0xf;
}

/**
 * "+" when there is no float zero point or every one is +0, "-" when every one is -0 (the sum
 * q + zp is then q itself, or q with -0 made +0), else undefined (the fast paths decline).
 */
function zeroPointSign(zp: Storage | undefined, t: DType, count: number): "+" | "-" | undefined {
  if (!zp) return "+";
  const codes = zp as Uint8Array;
  const first = codeAt(codes, t.bits, 0);
  if (first !== 0 && first !== (t.bits === 8 ? 0x80 : 0x8)) return undefined;
  for (let g = 1; g < count; g++) if (codeAt(codes, t.bits, g) !== first) return undefined;
  return first === 0 ? "+" : "-";
}

const INT_KERNELS: Record<string, KernelName> = { int8: "q_i8", uint8: "q_u8", int4: "q_4", uint4: "q_4" };
const FLOAT_QUANT: Record<string, KernelName> = { float8e4m3fn: "q_f8", float4e2m1: "q_f4" };

/**
 * Float kernels' records: the scale, the zero added (+0 or -0), the sign of a NaN the arithmetic
 * makes (`nanSign`, or with "scale" the sign of a NaN scale: the reference's rule when x is not
 * NaN), the largest magnitude code (e4m3fn: 0x7E saturating, else 0x7F, its NaN).
 */
function floatRecords(scales: Float32Array, zero: number, nanSign: number | "scale", maxCode: number): Int32Array {
  const r = records(scales.length);
  const scaleWords = new Int32Array(scales.buffer, scales.byteOffset, scales.length);
  const fixed = nanSign === "scale" ? 0 : nanSign;
  const fromScale = nanSign === "scale";
  for (let g = 0; g < scales.length; g++) {
    const s = scales[g];
    r.f32[4 * g] = s;
    r.f32[4 * g + 1] = zero;
    r.i32[4 * g + 2] = fromScale && s !== s ? scaleWords[g] & SIGN : fixed;
    r.i32[4 * g + 3] = maxCode;
  }
  return r.i32;
}

/**
 * QuantizeLinear float32 -> int8 / uint8 / int4 / uint4 / float8e4m3fn / float4e2m1 (float32 or
 * float8e8m0 scales, float32 division) by SIMD, bit for bit the reference's; false, nothing
 * written, where it does not apply (float zero points other than +/-0 included).
 * @example quantizeSimd(a) // false: quantizeLinearKernel (which tries this first) runs the reference
 */
export function quantizeSimd(a: QuantizeArgs): boolean {
  if (!enabled || a.xType.name !== "float32" || a.precision !== "float32") return false;
  const scales = scaleValues(a.scale, a.scaleType);
  const t = a.yType;
  if (!scales || !runsFit(a.layout, t.bits === 4)) return false;
  const group = t.bits === 4 ? 32 : 16;
  const intKernel = INT_KERNELS[t.name];
  if (intKernel) {
    const min = t.min as number;
    const max = t.max as number;
    const r = records(scales.length);
    const zps = zeroPoints(a.zeroPoint, t, scales.length);
    for (let g = 0; g < scales.length; g++) {
      const zp = zps ? zps[g] : 0;
      r.f32[4 * g] = scales[g];
      r.i32[4 * g + 1] = MAGIC - zp;
      r.f32[4 * g + 2] = min - zp;
      r.f32[4 * g + 3] = max - zp;
    }
    return run({ kernel: intKernel, group, inBits: 32, outBits: t.bits, records: r.i32 }, a.x, a.y, a.layout);
  }
  const floatKernel = FLOAT_QUANT[t.name];
  if (!floatKernel) return false;
  const sign = zeroPointSign(a.zeroPoint, t, a.layout.scaleCount);
  if (!sign) return false;
  const recs = floatRecords(scales, sign === "+" ? 0 : -0, "scale", a.saturate ? 0x7e : 0x7f);
  return run({ kernel: floatKernel, group, inBits: 32, outBits: t.bits, records: recs }, a.x, a.y, a.layout);
}

const DEQUANT_KERNELS: Record<string, KernelName> = {
  int8: "dq_i8", uint8: "dq_u8", int4: "dq_i4", uint4: "dq_u4", float8e4m3fn: "dq_f8", float4e2m1: "dq_f4",
};

/**
 * DequantizeLinear int8 / uint8 / int4 / uint4 / float8e4m3fn / float4e2m1 -> float32 (finite
 * float32 or e8m0 scales) by SIMD, bit for bit the reference's; false, nothing written, where it
 * does not apply (float zero points other than +0 included).
 * @example dequantizeSimd(a) // false: dequantizeLinearKernel (which tries this first) runs the reference
 */
export function dequantizeSimd(a: DequantizeArgs): boolean {
  const t = a.xType;
  const kernel = DEQUANT_KERNELS[t.name];
  if (!enabled || !kernel || a.yType.name !== "float32") return false;
  const scales = scaleValues(a.scale, a.scaleType);
  if (!scales || !runsFit(a.layout, t.bits === 4)) return false;
  for (let g = 0; g < a.layout.scaleCount; g++) if (!Number.isFinite(scales[g])) return false;
  const float = t.kind === "float";
  if (float && zeroPointSign(a.zeroPoint, t, a.layout.scaleCount) !== "+") return false;
  const r = records(scales.length);
  const zps = float ? undefined : zeroPoints(a.zeroPoint, t, scales.length);
  for (let g = 0; g < scales.length; g++) {
    r.f32[4 * g] = scales[g];
    r.f32[4 * g + 1] = zps ? zps[g] : 0;
  }
  return run({ kernel, group: t.bits === 4 ? 32 : 16, inBits: t.bits, outBits: 32, records: r.i32 }, a.x, a.y, a.layout);
}

/**
 * The checkpoint quantizers' scaled cast (checkpoint.ts): each float32 element of `x` times (fp8:
 * the float32 product, saturating to float8e4m3fn) or divided by (mx: to float4e2m1) its group's
 * float32 scale, -0 kept, a NaN with x's sign or, made by the arithmetic, negative (fp8) or
 * positive (mx); the same kernels as QuantizeLinear's. False, nothing written, where it does not apply.
 * @example simdScaledCast(x, rowBandLayout(128, cols, 128), scales, "fp8", weight)
 */
export function simdScaledCast(x: Float32Array, layout: QuantLayout, scales: Float32Array, mode: "fp8" | "mx", y: Uint8Array): boolean {
  const bits = mode === "fp8" ? 8 : 4;
  if (!enabled || !runsFit(layout, bits === 4)) return false;
  const recs = floatRecords(scales, -0, mode === "fp8" ? SIGN : 0, 0x7e);
  return run({ kernel: mode === "fp8" ? "q_f8_mul" : "q_f4", group: bits === 4 ? 32 : 16, inBits: 32, outBits: bits, records: recs }, x, y, layout);
}

let amaxScratch = new Float32Array(0);

/**
 * The largest magnitude of each group of `layout` (NaN for a group holding a NaN; 0 for an
 * all-zero one) into out[0 .. scaleCount): as groupAbsMax(..., true) on float32, by amax32 over
 * each 32 elements. False, nothing written, unless every run of the layout starts and ends on a
 * multiple of 32.
 * @example simdAbsMax(x, blockLayout([rows, cols], 1, 32), amax)
 */
export function simdAbsMax(x: Float32Array, layout: QuantLayout, out: Float64Array): boolean {
  if (!enabled || layout.count % 32 !== 0 || !runsFit(layout, false)) return false;
  let aligned = true;
  forRuns(layout, 0, layout.count, (p, length) => {
    if (p % 32 !== 0 || length % 32 !== 0) aligned = false;
  });
  if (!aligned) return false;
  const w = privateInstance();
  if (!w) return false;
  if (amaxScratch.length < layout.count / 32) amaxScratch = new Float32Array(layout.count / 32);
  const per32 = amaxScratch;
  const src = u8View(x);
  for (let start = 0; start < layout.count; start += CHUNK) {
    const n = Math.min(CHUNK, layout.count - start);
    w.bytes.set(src.subarray(4 * start, 4 * (start + n)), IN);
    w.kernels.amax32(IN, OUT, 1, n / 32, w.last + TABLE_AT);
    per32.set(w.f32.subarray(OUT / 4, OUT / 4 + n / 32), start / 32);
  }
  out.fill(0, 0, layout.scaleCount);
  forRuns(layout, 0, layout.count, (p, length, g) => {
    let m = out[g];
    for (let b = p / 32; b < (p + length) / 32 && m === m; b++) {
      const v = per32[b];
      if (v > m || v !== v) m = v; // a NaN ends the group's search: it stays NaN
    }
    out[g] = m;
  });
  return true;
}
