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
 * Browser-safe; built from source at run time like ../simd.ts (no generated file).
 */
import {
  and, f32x4Abs, f32x4Add, f32x4Div, f32x4Ge, f32x4Gt, f32x4Lt, f32x4Mul, f32x4Ne, f32x4Sub, f32x4Trunc, get, i16x8Shl, i32, i32Add,
  i32Eqz, i32Or, i32Shl, i32Sub, i32x4Add, i32x4ExtractLane, i32x4GtS, i32x4MinS, i32x4Shl, i32x4ShrS, i32x4ShrU, i32x4Splat, i8x16Bitmask,
  load, moduleBytes, narrowU, narrowU8, or, select, set, shuffle, store, storeI16, storeI32, truncSatS, whileNot, type Code,
} from "../../kernels/wasm/encoder.js";
import { V128Locals } from "../../kernels/wasm/v128-locals.js";
import { ownInstance } from "../../kernels/wasm/own-instance.js";
import type { WasmMemory } from "../../kernels/wasm/resident.js";
import { fp16 } from "./half-simd.js";
import { ggmlQuantizeSimdOn, transpose4 } from "./search-simd.js";


/** Values per kernel call; the output region follows the input's. */
const CHUNK = 16384;
const IN = 0;
const OUT = 4 * CHUNK;
const PAGES = 2;
/** Values per kernel step: four blocks of 32. */
const GROUP = 128;

// Parameters (groups, zero), then i32 locals.
const GROUPS = 0;
const ZERO = 1;
const P = 2;
const Q = 3;
const FIRST_V128 = 4;

/** A kernel's v128 locals and constants (built from `zero` before the loop), and its module. */
class Kernel extends V128Locals {
  constructor() {
    super(FIRST_V128, ZERO);
  }
  /** The kernel: per group of GROUP values, `body`, then P on by 4 * GROUP bytes and Q by `outBytes`. */
  bytes(body: Code[], outBytes: number): Uint8Array {
    const loop = [
      ...set(P, i32(IN)),
      ...set(Q, i32(OUT)),
      ...whileNot(i32Eqz(get(GROUPS)), [
        ...body.flat(),
        ...set(P, i32Add(get(P), i32(4 * GROUP))),
        ...set(Q, i32Add(get(Q), i32(outBytes))),
        ...set(GROUPS, i32Sub(get(GROUPS), i32(1))),
      ]),
    ];
    return moduleBytes([{ name: "encode", params: 2, i32Locals: 2, v128Locals: this.count, body: [...this.prologue().flat(), ...loop] }], PAGES);
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

/** Vector i of block j of the group. */
const xOf = (j: number, i: number): Code => load(get(P), IN + 128 * j + 16 * i);
/** Lane j of v in every lane. */
const lane = (v: Code, j: number): Code => shuffle(v, v, Array.from({ length: 16 }, (_, b) => 4 * j + (b & 3)));
/** Sixteen i32 lanes (each 0..255) of four vectors as bytes. */
const bytesOf = (v: readonly Code[]): Code => narrowU8(narrowU(v[0], v[1]), narrowU(v[2], v[3]));

/**
 * The four blocks' scan in lanes: `step(t)` for each of the 32 transposed vectors (value i of the
 * four blocks, in order i = 0 .. 31).
 */
function scan(k: Kernel, step: (t: Code) => Code[]): Code[] {
  const t = [k.v(), k.v(), k.v(), k.v()];
  const c = [k.v(), k.v(), k.v(), k.v()];
  const code: Code[] = [];
  for (let q = 0; q < 8; q++) {
    code.push(...transpose4([0, 1, 2, 3].map((j) => xOf(j, q)), t, c));
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
const packQ4 = (k: Kernel, c: readonly number[]): Code =>
  bytesOf([0, 1, 2, 3].map((i) => and(or(get(c[i]), i32x4Shl(get(c[i + 4]), 4)), k.c(0xff))));

/** The low byte of an i32, sign-extended (a C int8_t). */
const int8 = (v: Code): Code => i32x4ShrS(i32x4Shl(v, 24), 24);

/** The reference's id: 1 / d where d is not zero, else 0. */
const inverse = (k: Kernel, d: Code): Code => select(f32x4Div(k.f(1), d), k.c(0), f32x4Ne(d, k.c(0)));

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

/** Q4_1 (4 bits) and Q5_1 (5 bits). */
function qx_1(k: Kernel, bits: 4 | 5): Uint8Array {
  const nmax = (1 << bits) - 1;
  const size = bits === 4 ? 20 : 24;
  const [MIN, MAX, D, ID, H, M, IDJ, MJ, F, LO, HI] = Array.from({ length: 11 }, () => k.v());
  const codes = Array.from({ length: 8 }, () => k.v());
  const body: Code[] = [set(MIN, k.f(3.4028234663852886e38)), set(MAX, k.f(-3.4028234663852886e38))];
  body.push(...scan(k, (t) => [set(MIN, select(t, get(MIN), f32x4Lt(t, get(MIN)))), set(MAX, select(t, get(MAX), f32x4Gt(t, get(MAX))))]));
  body.push(
    set(D, f32x4Div(f32x4Sub(get(MAX), get(MIN)), k.f(nmax))), set(ID, inverse(k, get(D))),
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
      body.push(set(F, f32x4Add(f32x4Mul(f32x4Sub(xOf(j, i), get(MJ)), get(IDJ)), k.f(0.5))));
      const c = cvtt(k, get(F), f32x4Abs(get(F)));
      body.push(set(codes[i], bits === 4 ? i32x4MinS(k.c(15), int8(c)) : and(c, k.c(0xff))));
    }
    if (bits === 4) body.push(store(get(Q), packQ4(k, codes), size * j + 4));
    else body.push(set(LO, bytesOf(codes.slice(0, 4).map(get))), set(HI, bytesOf(codes.slice(4).map(get))), ...packQ5(k, LO, HI, size * j + 4));
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

/** Each type's kernel and its output bytes per 32 values. */
const TYPES = {
  F16: { build: (k: Kernel) => half(k, false), bytes: 64 },
  BF16: { build: (k: Kernel) => half(k, true), bytes: 64 },
  Q8_0: { build: q8_0, bytes: 34 },
  Q4_0: { build: (k: Kernel) => qx_0(k, 4), bytes: 18 },
  Q5_0: { build: (k: Kernel) => qx_0(k, 5), bytes: 22 },
  Q4_1: { build: (k: Kernel) => qx_1(k, 4), bytes: 20 },
  Q5_1: { build: (k: Kernel) => qx_1(k, 5), bytes: 24 },
} as const;

export type BlockTypeName = keyof typeof TYPES;

/** The module of `type`'s kernel (exported as "encode"). */
export function blockModule(type: BlockTypeName): Uint8Array {
  return TYPES[type].build(new Kernel());
}

interface Loaded {
  readonly encode: (groups: number, zero: number) => void;
  readonly u32: Uint32Array;
  readonly u8: Uint8Array;
}

const loaded = new Map<BlockTypeName, Loaded | null>();

function instance(type: BlockTypeName): Loaded | null {
  let l = loaded.get(type);
  if (l === undefined) {
    const e = ownInstance(() => blockModule(type));
    const memory = e?.memory as WasmMemory | undefined;
    l = e && memory ? { encode: e.encode as Loaded["encode"], u32: new Uint32Array(memory.buffer), u8: new Uint8Array(memory.buffer) } : null;
    loaded.set(type, l);
  }
  return l;
}

/**
 * Encodes the n values of x from `s` (whole blocks; any count for F16 and BF16) into y from byte
 * `o` as the reference encoder of `type` does without an importance matrix, and returns true; or
 * returns false, having written nothing.
 */
export function encodeBlocksSimd(type: BlockTypeName, x: Float32Array, s: number, n: number, y: Uint8Array, o: number): boolean {
  if (!ggmlQuantizeSimdOn()) return false;
  const l = instance(type);
  if (!l) return false;
  const per = TYPES[type].bytes;
  // The input's bits, not its values: reading a NaN through a JS number may quiet it.
  const bits = new Uint32Array(x.buffer, x.byteOffset, x.length);
  for (let done = 0; done < n; done += CHUNK) {
    const count = Math.min(CHUNK, n - done);
    l.u32.set(bits.subarray(s + done, s + done + count), IN / 4);
    const groups = Math.ceil(count / GROUP);
    if (groups * GROUP > count) l.u32.fill(0, IN / 4 + count, IN / 4 + groups * GROUP);
    l.encode(groups, 0);
    const bytes = (count * per) / 32;
    y.set(l.u8.subarray(OUT, OUT + bytes), o + (done * per) / 32);
  }
  return true;
}
