/**
 * WebAssembly SIMD forms of the encoders without a search: F16, BF16 (plain.ts) and, without an
 * importance matrix, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1 (legacy.ts), giving exactly the reference's bytes,
 * or declining (false) where WebAssembly SIMD is absent or `useGgmlQuantizeSimd(false)`.
 *
 * F16 and BF16 are integer operations on each value's bits (NaN payloads kept as the reference
 * keeps them). The block types' per-value work is element-wise; only the block's scan (amax, the
 * signed maximum, min and max) runs in C's order, so four blocks sit in the four lanes (value i of
 * block j in lane j of vector i, by lane shuffles), each lane scanning its block with the
 * reference's comparison and select (a NaN compares false, a tie keeps the earlier value). Each
 * C float operation is one f32x4 operation (no fused multiply-add, no relaxed SIMD); roundf is
 * rebuilt exactly from trunc: |f| - trunc|f| is exact, at least 0.5 adds one. A float to int
 * conversion is x86-64's cvttss2si (NaN and anything outside int32 give 0x80000000), of which an
 * int8_t / uint8_t keeps the low byte.
 *
 * The rows of these types have no per-row state, so the caller passes the whole tensor as one
 * stream of blocks, copied in chunks of CHUNK values; a chunk's last group of four blocks is padded
 * with zeros and only the real blocks' bytes copied out. One small module per type, built on first use.
 *
 * When the values and the output both live in one arena (src/arena.ts), the per-block kernels are
 * instantiated on the arena's memory and encode the whole steps in place, with no copy; only a last
 * part step goes through the private memory, since a step's stores would run past the output's end.
 *
 * Browser-safe; built from source at run time like ../simd.ts (no generated file).
 */
import {
  and, anyTrue, f32x4Abs, f32x4Add, f32x4Div, f32x4Eq, f32x4Ge, f32x4Gt, f32x4Lt, f32x4Mul, f32x4Ne, f32x4Pmax, f32x4Pmin, f32x4Sub, f32x4Trunc,
  get, i16x8Shl, i32, i32Add, i32Eqz, i32Or, i32Shl, i32Sub, i32x4Add, i32x4ExtractLane, i32x4GtS, i32x4MinS, i32x4Shl, i32x4ShrS, i32x4ShrU,
  i8x16Bitmask, ifElse, load, moduleBytes, narrowU, narrowU8, or, select, set, shuffle, store, storeI16, storeI32, truncSatS, whileNot, type Code,
} from "../../kernels/wasm/encoder.js";
import { V128Locals } from "../../kernels/wasm/v128-locals.js";
import { ownInstance } from "../../kernels/wasm/own-instance.js";
import { residentMemoryOf, type WasmMemory } from "../../kernels/wasm/resident.js";
import type { WasmApi } from "../../kernels/wasm/index.js";
import { fp16 } from "./half-simd.js";
import { ggmlQuantizeSimdOn, transpose4 } from "./search-simd.js";


/** Values per kernel call; the output region follows the input's, a region for tables the outputs'. */
export const CHUNK = 16384;
const IN = 0;
const OUT = 4 * CHUNK;
/** Where a kernel's data segment (a table) goes: past the largest output, F16's two bytes a value. */
export const TABLE = OUT + 2 * CHUNK;
const PAGES = 2;
/** Values per kernel step unless a type says otherwise: four blocks of 32. */
const GROUP = 128;

// Parameters (groups, zero), then i32 locals.
const GROUPS = 0;
const ZERO = 1;
/** The i32 locals every kernel has: the input's and the output's address in the step. */
export const P = 2;
export const Q = 3;
const FIRST_I32 = 4;

/** A kernel's v128 locals and constants (built from `zero` before the loop), its extra i32 locals, and its module. */
export class Kernel extends V128Locals {
  /** `i32s`: how many i32 locals the kernel needs beyond P and Q, numbered from 4 (see `scalar`). */
  /** `importPages`: the module imports a memory of that many pages (an arena's) instead of its own. */
  constructor(private readonly i32s = 0, private readonly importPages?: number) {
    super(FIRST_I32 + i32s, ZERO);
  }
  /** The index of extra i32 local `i` (0 .. i32s - 1). */
  scalar(i: number): number {
    if (i >= this.i32s) throw new Error(`Kernel: i32 local ${i} of ${this.i32s}`);
    return FIRST_I32 + i;
  }
  /**
   * The kernel: per step of `step` values, `body`, then P on by 4 * step bytes and Q by `outBytes`;
   * `table`, where given, is written at TABLE when the module is instantiated.
   */
  bytes(body: Code[], outBytes: number, step = GROUP, table?: Uint8Array): Uint8Array {
    // P and Q are parameters: the chunk regions of the kernel's own memory, or places in an arena.
    const loop = [
      ...whileNot(i32Eqz(get(GROUPS)), [
        ...body.flat(),
        ...set(P, i32Add(get(P), i32(4 * step))),
        ...set(Q, i32Add(get(Q), i32(outBytes))),
        ...set(GROUPS, i32Sub(get(GROUPS), i32(1))),
      ]),
    ];
    const func = { name: "encode", params: 4, i32Locals: this.i32s, v128Locals: this.count, body: [...this.prologue().flat(), ...loop] };
    if (this.importPages === undefined) return moduleBytes([func], PAGES, table && { offset: TABLE, bytes: table });
    // A table would be written over the arena's own bytes.
    if (table) throw new Error("Kernel: a kernel with a table runs in its own memory only");
    return moduleBytes([func], this.importPages, undefined, "plain");
  }
}

/** bf16OfBits (../scalars.ts) of each lane's binary32 bits. */
function bf16(k: Kernel, u: Code): Code {
  const hi = i32x4ShrU(u, 16);
  const nan = i32x4GtS(and(u, k.c(0x7fffffff)), k.c(0x7f800000));
  return select(or(hi, k.c(64)), i32x4ShrU(i32x4Add(u, i32x4Add(k.c(0x7fff), and(hi, k.c(1)))), 16), nan);
}

/** cvttss2si of each lane of `f` given |f| as `mag`: truncation, NaN and |f| >= 2^31 to 0x80000000. */
const cvtt = (k: Kernel, f: Code, mag: Code): Code => select(truncSatS(f), k.c(0x80000000), f32x4Lt(mag, k.f(2147483648)));

/** (int)roundf(f) as cvttss2si of it: half away from zero. */
function roundAwayInt(k: Kernel, f: number): Code[] {
  const [A, R] = [k.v(), k.v()];
  return [
    set(A, f32x4Abs(get(f))),
    set(R, f32x4Trunc(get(A))),
    set(R, f32x4Add(get(R), and(f32x4Ge(f32x4Sub(get(A), get(R)), k.f(0.5)), k.f(1)))),
    set(f, cvtt(k, or(get(R), and(get(f), k.c(0x80000000))), get(R))),
  ];
}

/** Vector i of block j of the step, blocks of `block` values. */
export const xOf = (j: number, i: number, block = 32): Code => load(get(P), IN + 4 * block * j + 16 * i);
/** Lane j of v in every lane. */
export const lane = (v: Code, j: number): Code => shuffle(v, v, Array.from({ length: 16 }, (_, b) => 4 * j + (b & 3)));
/** Sixteen i32 lanes (each 0..255) of four vectors as bytes. */
export const bytesOf = (v: readonly Code[]): Code => narrowU8(narrowU(v[0], v[1]), narrowU(v[2], v[3]));

/**
 * The four blocks' scan in lanes: `step(t)` for each of the `block` transposed vectors (value i of
 * the four blocks of `block` values, in order i = 0 .. block - 1).
 */
export function scan(k: Kernel, step: (t: Code) => Code[], block = 32): Code[] {
  const t = [k.v(), k.v(), k.v(), k.v()];
  const c = [k.v(), k.v(), k.v(), k.v()];
  const code: Code[] = [];
  for (let q = 0; q < block / 4; q++) {
    code.push(...transpose4([0, 1, 2, 3].map((j) => xOf(j, q, block)), t, c));
    for (let r = 0; r < 4; r++) code.push(...step(get(c[r])));
  }
  return code;
}

/** Q5 packing of block codes (two vectors of 16 bytes, values 0..15 and 16..31) at Q + at: qh then qs. */
function packQ5(k: Kernel, lo: number, hi: number, at: number): Code[] {
  const bits = (v: number): Code => i8x16Bitmask(i16x8Shl(get(v), 3));
  return [
    storeI32(get(Q), i32Or(bits(lo), i32Shl(bits(hi), i32(16))), at),
    store(get(Q), or(and(get(lo), k.c(0x0f0f0f0f)), i16x8Shl(and(get(hi), k.c(0x0f0f0f0f)), 4)), at + 4),
  ];
}

/** Q4 packing: the low nibble of each of values 0..15 with value j + 16's above it (its low byte kept). */
export const packQ4 = (k: Kernel, c: readonly number[]): Code =>
  bytesOf([0, 1, 2, 3].map((i) => and(or(get(c[i]), i32x4Shl(get(c[i + 4]), 4)), k.c(0xff))));

/** The low byte of an i32, sign-extended (a C int8_t). */
const int8 = (v: Code): Code => i32x4ShrS(i32x4Shl(v, 24), 24);

/** The reference's id: 1 / d where d is not zero, else 0. */
export const inverse = (k: Kernel, d: Code): Code => select(f32x4Div(k.f(1), d), k.c(0), f32x4Ne(d, k.c(0)));

function q8_0(k: Kernel): Uint8Array {
  const [AMAX, A, D, ID, H, IDJ, F] = [k.v(), k.v(), k.v(), k.v(), k.v(), k.v(), k.v()];
  const codes = Array.from({ length: 8 }, () => k.v());
  const body: Code[] = [set(AMAX, k.c(0))];
  body.push(...scan(k, (t) => [set(A, f32x4Abs(t)), set(AMAX, select(get(AMAX), get(A), f32x4Gt(get(AMAX), get(A))))]));
  body.push(set(D, f32x4Div(get(AMAX), k.f(127))), set(ID, inverse(k, get(D))), set(H, get(D)), ...fp16(k, H));
  for (let j = 0; j < 4; j++) {
    body.push(storeI16(get(Q), i32x4ExtractLane(get(H), j), 34 * j), set(IDJ, lane(get(ID), j)));
    for (let i = 0; i < 8; i++) body.push(set(F, f32x4Mul(xOf(j, i), get(IDJ))), ...roundAwayInt(k, F), set(codes[i], and(get(F), k.c(0xff))));
    body.push(store(get(Q), bytesOf(codes.slice(0, 4).map(get)), 34 * j + 2), store(get(Q), bytesOf(codes.slice(4).map(get)), 34 * j + 18));
  }
  return k.bytes(body, 4 * 34);
}

/** Q4_0 (nmax 8, 4 bits) and Q5_0 (nmax 16, 5 bits). */
function qx_0(k: Kernel, bits: 4 | 5): Uint8Array {
  const nmax = bits === 4 ? 8 : 16;
  const size = bits === 4 ? 18 : 22;
  const [AMAX, MAX, A, GT, D, ID, H, IDJ, F, LO, HI] = Array.from({ length: 11 }, () => k.v());
  const codes = Array.from({ length: 8 }, () => k.v());
  const body: Code[] = [set(AMAX, k.c(0)), set(MAX, k.c(0))];
  body.push(...scan(k, (t) => [
    set(A, f32x4Abs(t)),
    set(GT, f32x4Lt(get(AMAX), get(A))),
    set(AMAX, select(get(A), get(AMAX), get(GT))),
    set(MAX, select(t, get(MAX), get(GT))),
  ]));
  body.push(set(D, f32x4Div(get(MAX), k.f(-nmax))), set(ID, inverse(k, get(D))), set(H, get(D)), ...fp16(k, H));
  for (let j = 0; j < 4; j++) {
    body.push(storeI16(get(Q), i32x4ExtractLane(get(H), j), size * j), set(IDJ, lane(get(ID), j)));
    for (let i = 0; i < 8; i++) {
      body.push(
        set(F, f32x4Add(f32x4Mul(xOf(j, i), get(IDJ)), k.f(nmax + 0.5))),
        set(codes[i], i32x4MinS(k.c(2 * nmax - 1), int8(cvtt(k, get(F), f32x4Abs(get(F)))))),
      );
    }
    if (bits === 4) body.push(store(get(Q), packQ4(k, codes), size * j + 2));
    else {
      body.push(set(LO, bytesOf(codes.slice(0, 4).map((c) => and(get(c), k.c(0xff))))), set(HI, bytesOf(codes.slice(4).map((c) => and(get(c), k.c(0xff))))));
      body.push(...packQ5(k, LO, HI, size * j + 2));
    }
  }
  return k.bytes(body, 4 * size);
}

/**
 * Q4_1 (4 bits) and Q5_1 (5 bits).
 *
 * The scan: `if (v < min) min = v` is f32x4.pmin(min, v) (and max's pmax), which a NaN never
 * enters, so each block's min and max are the same in any order (equal floats have equal bits) but
 * for the sign of a zero, which C takes from the block's first zero: each block folds its own
 * vectors lane by lane, four lanes then merge; where a block's min or max is a zero, the step takes
 * the exact scan in order (four blocks in four lanes) instead.
 *
 * The codes: id is kept only where 1 / d is finite (an infinite id makes every code of C's 0: NaN
 * or Inf to cvttss2si's 0x80000000, whose low byte is 0, and id = 0 does too). Then (x - min) * id
 * is NaN or in [0, nmax * (1 + 2^-20)], so + 0.5 truncated is at most nmax, as C's conversion and
 * cap give it: pmax(0, f) sends NaN to 0, trunc and + 2^23 leave the code in the low bits.
 */
function qx_1(k: Kernel, bits: 4 | 5): Uint8Array {
  const nmax = (1 << bits) - 1;
  const size = bits === 4 ? 20 : 24;
  const [MIN, MAX, D, ID, H, M, IDJ, MJ, T, LO, HI] = Array.from({ length: 11 }, () => k.v());
  const lows = [k.v(), k.v(), k.v(), k.v()];
  const highs = [k.v(), k.v(), k.v(), k.v()];
  const t = [k.v(), k.v(), k.v(), k.v()];
  const c = [k.v(), k.v(), k.v(), k.v()];
  const codes = Array.from({ length: 8 }, () => k.v());
  const flt = 3.4028234663852886e38;
  const body: Code[] = [];
  for (let j = 0; j < 4; j++) body.push(set(lows[j], k.f(flt)), set(highs[j], k.f(-flt)));
  for (let i = 0; i < 8; i++) {
    for (let j = 0; j < 4; j++) {
      body.push(set(T, xOf(j, i)), set(lows[j], f32x4Pmin(get(lows[j]), get(T))), set(highs[j], f32x4Pmax(get(highs[j]), get(T))));
    }
  }
  const merge = (v: number[], to: number, op: (a: Code, b: Code) => Code): Code[] => [
    ...transpose4(v.map(get), t, c),
    set(to, op(op(get(c[0]), get(c[1])), op(get(c[2]), get(c[3])))),
  ];
  body.push(...merge(lows, MIN, f32x4Pmin), ...merge(highs, MAX, f32x4Pmax));
  const exact = [
    set(MIN, k.f(flt)), set(MAX, k.f(-flt)),
    ...scan(k, (v) => [set(MIN, f32x4Pmin(get(MIN), v)), set(MAX, f32x4Pmax(get(MAX), v))]),
  ];
  body.push(ifElse(anyTrue(or(f32x4Eq(get(MIN), k.c(0)), f32x4Eq(get(MAX), k.c(0)))), exact.flat(), []));
  body.push(
    set(D, f32x4Div(f32x4Sub(get(MAX), get(MIN)), k.f(nmax))),
    set(ID, f32x4Div(k.f(1), get(D))),
    set(ID, and(get(ID), f32x4Lt(f32x4Abs(get(ID)), k.f(Infinity)))),
    set(H, get(D)), ...fp16(k, H), set(M, get(MIN)), ...fp16(k, M),
  );
  for (let j = 0; j < 4; j++) {
    body.push(
      storeI16(get(Q), i32x4ExtractLane(get(H), j), size * j),
      storeI16(get(Q), i32x4ExtractLane(get(M), j), size * j + 2),
      set(IDJ, lane(get(ID), j)),
      set(MJ, lane(get(MIN), j)),
    );
    for (let i = 0; i < 8; i++) {
      const f = f32x4Pmax(k.c(0), f32x4Add(f32x4Mul(f32x4Sub(xOf(j, i), get(MJ)), get(IDJ)), k.f(0.5)));
      body.push(set(codes[i], f32x4Add(f32x4Trunc(f), k.f(8388608))));
    }
    if (bits === 4) body.push(store(get(Q), packQ4(k, codes), size * j + 4));
    else {
      const low = (v: number): Code => and(get(v), k.c(0xff));
      body.push(set(LO, bytesOf(codes.slice(0, 4).map(low))), set(HI, bytesOf(codes.slice(4).map(low))), ...packQ5(k, LO, HI, size * j + 4));
    }
  }
  return k.bytes(body, 4 * size);
}

/** F16 / BF16: 128 values (32 vectors in, 16 out) a step. */
function half(k: Kernel, brain: boolean): Uint8Array {
  const [U, V] = [k.v(), k.v()];
  const body: Code[] = [];
  for (let i = 0; i < 16; i++) {
    if (brain) body.push(store(get(Q), narrowU(bf16(k, load(get(P), IN + 32 * i)), bf16(k, load(get(P), IN + 32 * i + 16))), 16 * i));
    else body.push(set(U, load(get(P), IN + 32 * i)), ...fp16(k, U), set(V, load(get(P), IN + 32 * i + 16)), ...fp16(k, V), store(get(Q), narrowU(get(U), get(V)), 16 * i));
  }
  return k.bytes(body, 2 * GROUP);
}

/**
 * A block type's kernel: its builder, its output bytes per `block` values, and its values per step
 * (GROUP unless given; a multiple of `block` dividing CHUNK).
 */
export interface BlockKernel {
  readonly build: (k: Kernel) => Uint8Array;
  readonly block: number;
  readonly bytes: number;
  readonly step?: number;
  /** The i32 locals it needs beyond P and Q. */
  readonly scalars?: number;
}

const TYPES = {
  F16: { build: (k: Kernel) => half(k, false), block: 32, bytes: 64 },
  BF16: { build: (k: Kernel) => half(k, true), block: 32, bytes: 64 },
  Q8_0: { build: q8_0, block: 32, bytes: 34 },
  Q4_0: { build: (k: Kernel) => qx_0(k, 4), block: 32, bytes: 18 },
  Q5_0: { build: (k: Kernel) => qx_0(k, 5), block: 32, bytes: 22 },
  Q4_1: { build: (k: Kernel) => qx_1(k, 4), block: 32, bytes: 20 },
  Q5_1: { build: (k: Kernel) => qx_1(k, 5), block: 32, bytes: 24 },
} as const satisfies Record<string, BlockKernel>;

export type BlockTypeName = keyof typeof TYPES;

/** The module of `type`'s kernel (exported as "encode"). */
export function blockModule(type: BlockTypeName): Uint8Array {
  return TYPES[type].build(new Kernel((TYPES[type] as BlockKernel).scalars));
}

interface Loaded {
  readonly encode: (groups: number, zero: number, p: number, q: number) => void;
  readonly u32: Uint32Array;
  readonly u8: Uint8Array;
}

const loaded = new Map<BlockKernel, Loaded | null>();

function instance(kernel: BlockKernel): Loaded | null {
  let l = loaded.get(kernel);
  if (l === undefined) {
    const e = ownInstance(() => kernel.build(new Kernel(kernel.scalars)));
    const memory = e?.memory as WasmMemory | undefined;
    l = e && memory ? { encode: e.encode as Loaded["encode"], u32: new Uint32Array(memory.buffer), u8: new Uint8Array(memory.buffer) } : null;
    loaded.set(kernel, l);
  }
  return l;
}

/**
 * Runs `kernel` (built and instantiated on first use) over the n values of x from `s` (whole
 * blocks, or any count where the kernel takes one value at a time) into y from byte `o`, and
 * returns true; or returns false, having written nothing.
 */
export function encodeWithKernel(kernel: BlockKernel, x: Float32Array, s: number, n: number, y: Uint8Array, o: number): boolean {
  if (!ggmlQuantizeSimdOn()) return false;
  const l = instance(kernel);
  if (!l) return false;
  const { block, bytes: per } = kernel;
  const step = kernel.step ?? GROUP;
  // The input's bits, not its values: reading a NaN through a JS number may quiet it.
  const bits = new Uint32Array(x.buffer, x.byteOffset, x.length);
  for (let done = 0; done < n; done += CHUNK) {
    const count = Math.min(CHUNK, n - done);
    l.u32.set(bits.subarray(s + done, s + done + count), IN / 4);
    const steps = Math.ceil(count / step);
    if (steps * step > count) l.u32.fill(0, IN / 4 + count, IN / 4 + steps * step);
    l.encode(steps, 0, IN, OUT);
    const bytes = (count * per) / block;
    y.set(l.u8.subarray(OUT, OUT + bytes), o + (done * per) / block);
  }
  return true;
}

/**
 * Encodes the n values of x from `s` (whole blocks; any count for F16 and BF16) into y from byte
 * `o` as the reference encoder of `type` does without an importance matrix, and returns true; or
 * returns false, having written nothing.
 */
export function encodeBlocksSimd(type: BlockTypeName, x: Float32Array, s: number, n: number, y: Uint8Array, o: number): boolean {
  if (!ggmlQuantizeSimdOn()) return false;
  const kernel: BlockKernel = TYPES[type];
  const memory = x.buffer === y.buffer ? residentMemoryOf(x.buffer) : undefined;
  const arena = memory && arenaKernel(kernel, memory);
  if (arena) {
    const step = kernel.step ?? GROUP;
    const steps = Math.floor(n / step);
    // Addresses past 2^31 reach the i32 parameters as negative numbers, which WebAssembly reads unsigned.
    if (steps > 0) arena(steps, 0, x.byteOffset + 4 * s, y.byteOffset + o);
    const done = steps * step;
    s += done;
    o += (done * kernel.bytes) / kernel.block;
    n -= done;
    if (n === 0) return true;
  }
  return encodeWithKernel(kernel, x, s, n, y, o);
}

type Encode = Loaded["encode"];
const onArenas = new WeakMap<WasmMemory, Map<BlockKernel, Encode | null>>();
/** Compiled arena modules by kernel and page count (an arena's memory never grows). */
const arenaModules = new Map<BlockKernel, Map<number, object | null>>();

/**
 * `kernel` instantiated on the arena memory `memory`, encoding in place (null where it cannot be
 * built there): the per-block kernels of TYPES, none of which has a table.
 */
function arenaKernel(kernel: BlockKernel, memory: WasmMemory): Encode | null {
  let byKernel = onArenas.get(memory);
  if (byKernel === undefined) onArenas.set(memory, (byKernel = new Map()));
  let l = byKernel.get(kernel);
  if (l === undefined) {
    l = null;
    try {
      const w = (globalThis as { WebAssembly?: WasmApi }).WebAssembly;
      const pages = memory.buffer.byteLength / 65536;
      let byPages = arenaModules.get(kernel);
      if (byPages === undefined) arenaModules.set(kernel, (byPages = new Map()));
      let module = byPages.get(pages);
      if (module === undefined && w) {
        const code = kernel.build(new Kernel(kernel.scalars, pages));
        module = w.validate(code) ? new w.Module(code) : null;
        byPages.set(pages, module);
      }
      if (w && module) l = new w.Instance(module, { env: { memory } }).exports.encode as Encode;
    } catch {
      l = null; // e.g. a Content-Security-Policy without 'wasm-unsafe-eval'
    }
    byKernel.set(kernel, l);
  }
  return l;
}
