/**
 * A tiny WebAssembly binary encoder: just the opcodes the SIMD cast kernels use, as expression
 * builders that return byte arrays (operands first, then the opcode: the stack machine's order).
 * Everything is built at run time from this source, so nothing generated is committed and every
 * bundle (browser or Node) carries it. Browser-safe: no Node built-ins, no DOM types.
 */

export type Code = readonly number[];

/** Unsigned LEB128. */
export function uleb(n: number): number[] {
  const out: number[] = [];
  do {
    let b = n & 0x7f;
    n >>>= 7;
    if (n !== 0) b |= 0x80;
    out.push(b);
  } while (n !== 0);
  return out;
}

/** Signed LEB128 of an int32. */
export function sleb(n: number): number[] {
  n |= 0;
  const out: number[] = [];
  for (;;) {
    const b = n & 0x7f;
    n >>= 7;
    if ((n === 0 && (b & 0x40) === 0) || (n === -1 && (b & 0x40) !== 0)) {
      out.push(b);
      return out;
    }
    out.push(b | 0x80);
  }
}

function cat(...parts: Code[]): number[] {
  const out: number[] = [];
  for (const p of parts) for (const b of p) out.push(b);
  return out;
}

/** A name (UTF-8 of ASCII) with its length. */
function name(s: string): number[] {
  const bytes: number[] = [];
  for (let i = 0; i < s.length; i++) bytes.push(s.charCodeAt(i) & 0x7f);
  return cat(uleb(bytes.length), bytes);
}

function vec(items: Code[]): number[] {
  return cat(uleb(items.length), ...items);
}

function section(id: number, body: Code): number[] {
  return cat([id], uleb(body.length), body);
}

export const I32 = 0x7f;
export const V128 = 0x7b;

// ---- scalar instructions ----------------------------------------------------------------------
export const get = (i: number): Code => [0x20, ...uleb(i)];
export const set = (i: number, v: Code): Code => cat(v, [0x21], uleb(i));
export const i32 = (n: number): Code => [0x41, ...sleb(n)];
export const i32Add = (a: Code, b: Code): Code => cat(a, b, [0x6a]);
export const i32Sub = (a: Code, b: Code): Code => cat(a, b, [0x6b]);
export const i32Eqz = (a: Code): Code => cat(a, [0x45]);
/** i32.lt_u: 1 when a < b as unsigned numbers. */
export const i32LtU = (a: Code, b: Code): Code => cat(a, b, [0x49]);
export const i32Shl = (a: Code, b: Code): Code => cat(a, b, [0x74]);
/** i32.load8_u of the byte at `addr` + `offset`. */
export const loadU8 = (addr: Code, offset = 0): Code => cat(addr, [0x2d, 0], uleb(offset));
/** i32.load of the 4 bytes at `addr` + `offset` (alignment hint 4). */
export const loadI32 = (addr: Code, offset = 0): Code => cat(addr, [0x28, 2], uleb(offset));
/** i32.store of `v` at `addr` + `offset` (alignment hint 4). */
export const storeI32 = (addr: Code, v: Code, offset = 0): Code => cat(addr, v, [0x36, 2], uleb(offset));

/** `block { loop { if (cond) break; body; continue } }`: a while loop, cond tested first. */
export function whileNot(cond: Code, body: Code): Code {
  return cat([0x02, 0x40, 0x03, 0x40], cond, [0x0d, 1], body, [0x0c, 0, 0x0b, 0x0b]);
}

/**
 * `if (count) { loop { body; if (count) continue } }`: a loop that tests at its end, entered only
 * when the i32 local `count` is not zero (`body` decrements it). Unlike whileNot, its body
 * dominates the loop's exit, which is what lets V8's TurboFan hoist loop-invariant values (the
 * constants a kernel builds before its loop) out of the loop instead of rebuilding them on every
 * iteration.
 */
export function repeatWhile(count: number, body: Code): Code {
  return cat(get(count), [0x04, 0x40, 0x03, 0x40], body, get(count), [0x0d, 0, 0x0b, 0x0b]);
}

/** `if (cond) { then } else { otherwise }`, no result. */
export function ifElse(cond: Code, then: Code, otherwise: Code): Code {
  return cat(cond, [0x04, 0x40], then, [0x05], otherwise, [0x0b]);
}

// ---- SIMD (0xFD prefix) -----------------------------------------------------------------------
const simd = (op: number): number[] => [0xfd, ...uleb(op)];
const unary = (op: number) => (a: Code): Code => cat(a, simd(op));
const binary = (op: number) => (a: Code, b: Code): Code => cat(a, b, simd(op));

/** v128.load from `addr` + `offset` bytes (alignment hint 16). */
export const load = (addr: Code, offset = 0): Code => cat(addr, simd(0x00), [4], uleb(offset));
/** v128.store of `v` at `addr` + `offset`. */
export const store = (addr: Code, v: Code, offset = 0): Code => cat(addr, v, simd(0x0b), [4], uleb(offset));
export const and = binary(0x4e);
/** a & ~b. */
export const andNot = binary(0x4f);
/** v128.any_true: i32 1 when any bit is set. */
export const anyTrue = unary(0x53);
export const i16x8Eq = binary(0x2d);
export const i16x8LtU = binary(0x30);
export const i16x8GtS = binary(0x31);
export const i16x8Shl = (a: Code, n: number): Code => cat(a, i32(n), simd(0x8b));
export const i16x8ShrU = (a: Code, n: number): Code => cat(a, i32(n), simd(0x8d));
export const i16x8Add = binary(0x8e);
export const i16x8Sub = binary(0x91);
export const or = binary(0x50);
/** (a & mask) | (b & ~mask). */
export const select = (a: Code, b: Code, mask: Code): Code => cat(a, b, mask, simd(0x52));
export const i32x4LtS = binary(0x39);
export const i32x4GtS = binary(0x3b);
export const i32x4Shl = (a: Code, n: number): Code => cat(a, i32(n), simd(0xab));
export const i32x4ShrU = (a: Code, n: number): Code => cat(a, i32(n), simd(0xad));
export const i32x4Add = binary(0xae);
export const i32x4Sub = binary(0xb1);
export const i32x4MinS = binary(0xb6);
export const f32x4Add = binary(0xe4);
export const f32x4Sub = binary(0xe5);
/** Two i32x4 to one i16x8, saturating to [0, 0xFFFF] (lanes of `a` first). */
export const narrowU = binary(0x86);
/** Two i16x8 to one i8x16, saturating to [0, 0xFF] (lanes of `a` first). */
export const narrowU8 = binary(0x66);
export const extendLowS16 = unary(0xa7);
/** v128.const of 16 bytes. */
export function v128Const(bytes: readonly number[]): Code {
  if (bytes.length !== 16) throw new Error("v128Const: 16 bytes");
  return cat(simd(0x0c), bytes.map((b) => b & 0xff));
}
/** i8x16.shuffle: byte i of the result is byte lanes[i] of the 32 bytes a ++ b. */
export function shuffle(a: Code, b: Code, lanes: readonly number[]): Code {
  if (lanes.length !== 16 || lanes.some((l) => l < 0 || l > 31)) throw new Error("shuffle: 16 lanes in 0..31");
  return cat(a, b, simd(0x0d), lanes);
}
export const f32x4Abs = unary(0xe0);
export const f32x4Lt = binary(0x43);
export const f32x4Ne = binary(0x42);
/** i32x4.trunc_sat_f32x4_s: truncation, saturating to [INT_MIN, INT_MAX], NaN to 0. */
export const truncSatS = unary(0xf8);
/**
 * i32x4.relaxed_trunc_f32x4_s (relaxed SIMD): exact for lanes in int32's range, engine- and
 * CPU-dependent for the others (NaN, out of range), which callers must mask; x86-64 V8 lowers it to
 * one cvttps2dq where trunc_sat takes a sequence that fixes NaN and saturation.
 */
export const relaxedTruncS = unary(0x101);
/** f32x4.demote_f64x2_zero: two float64 to float32 (round to nearest even) in lanes 0, 1; lanes 2, 3 zero. */
export const demoteZero = unary(0x5e);
export const extendHighS16 = unary(0xa8);
export const f32x4Le = binary(0x45);
export const f32x4Ge = binary(0x46);
export const f32x4Mul = binary(0xe6);
/** f32x4.pmin: b where b < a, else a (one minps; unlike f32x4.min, no NaN or -0 handling). */
export const f32x4Pmin = binary(0xea);
/** f32x4.pmax: b where a < b, else a. */
export const f32x4Pmax = binary(0xeb);
/** i32x4.all_true: i32 1 when every lane is nonzero. */
export const allTrue = unary(0xa3);
/** v128.load32_splat: the 4 bytes at `addr` + `offset` in all four 32-bit lanes (alignment hint 4). */
export const load32Splat = (addr: Code, offset = 0): Code => cat(addr, simd(0x09), [2], uleb(offset));
/** v128.not. */
export const not = unary(0x4d);
/** f32x4.div: IEEE division, correctly rounded (no flush of subnormals in WebAssembly). */
export const f32x4Div = binary(0xe7);
/** f32x4.nearest: round to an integer, ties to even. */
export const f32x4Nearest = unary(0x6a);
/** f32x4.convert_i32x4_s: each signed lane to float32 (exact below 2^24). */
export const f32x4ConvertS = unary(0xfa);
/** Two i32x4 to one i16x8, saturating to [-32768, 32767] (lanes of `a` first). */
export const narrowS = binary(0x85);
/** Two i16x8 to one i8x16, saturating to [-128, 127] (lanes of `a` first). */
export const narrowS8 = binary(0x65);
/** i16x8.extend_low_i8x16_s / _u and the high halves: bytes 0..7 (8..15) widened to 16 bits. */
export const extendLowS8 = unary(0x87);
export const extendHighS8 = unary(0x88);
export const extendLowU8 = unary(0x89);
export const extendHighU8 = unary(0x8a);
/** i32x4.extend_low_i16x8_u / high: halfwords 0..3 (4..7) zero-extended to 32 bits. */
export const extendLowU16 = unary(0xa9);
export const extendHighU16 = unary(0xaa);
/** v128.load16x4_u: four 16-bit values at `addr` + `offset` zero-extended to i32x4 (alignment hint 8). */
export const load16x4U = (addr: Code, offset = 0): Code => cat(addr, simd(0x04), [3], uleb(offset));

export interface Func {
  readonly name: string;
  /** Number of i32 parameters (the only signature used: (i32 x params) -> ()). */
  readonly params: number;
  readonly i32Locals: number;
  readonly v128Locals: number;
  readonly body: Code;
}

/** Bytes an active data segment writes into the memory at instantiation. */
export interface DataSegment {
  readonly offset: number;
  readonly bytes: Uint8Array;
}

/**
 * A module exporting `memory` (`pages` of 64 KiB, not growable by the kernels) and the functions,
 * each of type (i32, ...) -> (), with an optional data segment. With `imported`, the memory is
 * not the module's own but imported as `env.memory`, of exactly `pages` pages: "shared", a shared
 * memory, so that instances on several threads work on one memory; "plain", an ordinary one, so
 * that two modules of one thread (the cast kernels and the statistics) work on the same bytes.
 * @example moduleBytes(funcs, 17, undefined, "shared") // instantiate with { env: { memory } }
 */
export function moduleBytes(funcs: readonly Func[], pages: number, data?: DataSegment, imported?: "shared" | "plain"): Uint8Array {
  const arities = [...new Set(funcs.map((f) => f.params))];
  const types = section(1, vec(arities.map((p) => cat([0x60], vec(Array.from({ length: p }, () => [I32])), [0]))));
  const fnsec = section(3, vec(funcs.map((f) => uleb(arities.indexOf(f.params)))));
  // Limits flag 0x01: minimum and maximum; 0x03: the same, shared (the threads proposal).
  const limits = imported === "shared" ? 0x03 : 0x01;
  const imports = imported ? section(2, vec([cat(name("env"), name("memory"), [0x02, limits], uleb(pages), uleb(pages))])) : [];
  const mem = imported ? [] : section(5, vec([cat([0x01], uleb(pages), uleb(pages))]));
  const exports = section(7, vec([
    cat(name("memory"), [0x02], uleb(0)),
    ...funcs.map((f, i) => cat(name(f.name), [0x00], uleb(i))),
  ]));
  const bodies = funcs.map((f) => {
    const locals: Code[] = [];
    if (f.i32Locals) locals.push(cat(uleb(f.i32Locals), [I32]));
    if (f.v128Locals) locals.push(cat(uleb(f.v128Locals), [V128]));
    const body = cat(vec(locals), f.body, [0x0b]);
    return cat(uleb(body.length), body);
  });
  const code = section(10, vec(bodies));
  // An active segment of memory 0: flags 0, offset (i32.const, end), the bytes.
  const segments = data ? section(11, vec([cat([0x00], i32(data.offset), [0x0b], vec(Array.from(data.bytes, (b) => [b])))])) : [];
  return new Uint8Array(cat([0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00], types, imports, fnsec, mem, exports, code, segments));
}

// ---- more SIMD, for the quantization kernels (../quant/simd.ts) --------------------------------
export const xor = binary(0x51);
export const i32x4Eq = binary(0x37);
export const i32x4MaxS = binary(0xb8);
/** i32x4.extract_lane of lane `lane` (an i32). */
export const i32x4ExtractLane = (a: Code, lane: number): Code => cat(a, simd(0x1b), [lane]);
/** i8x16.shl / shr_s / shr_u by a constant count. */
export const i8x16Shl = (a: Code, n: number): Code => cat(a, i32(n), simd(0x6b));
export const i8x16ShrS = (a: Code, n: number): Code => cat(a, i32(n), simd(0x6c));
export const i8x16ShrU = (a: Code, n: number): Code => cat(a, i32(n), simd(0x6d));

// ---- more, for the GGML dequantization kernels (../../ggml/simd.ts) ----------------------------
export const F32 = 0x7d;
export const i32And = (a: Code, b: Code): Code => cat(a, b, [0x71]);
export const i32Or = (a: Code, b: Code): Code => cat(a, b, [0x72]);
export const i32ShrU = (a: Code, b: Code): Code => cat(a, b, [0x76]);
/** i32.ge_u: 1 when a >= b as unsigned numbers. */
export const i32GeU = (a: Code, b: Code): Code => cat(a, b, [0x4f]);
/** The scalar `select`: a when cond is nonzero, else b. */
export const pick = (a: Code, b: Code, cond: Code): Code => cat(a, b, cond, [0x1b]);
/** i32.load16_u of the 2 bytes at `addr` + `offset` (alignment hint 1). */
export const loadU16 = (addr: Code, offset = 0): Code => cat(addr, [0x2f, 0], uleb(offset));
/** f32.const, from the float32 bits. */
export function f32Bits(bits: number): Code {
  return [0x43, bits & 0xff, (bits >>> 8) & 0xff, (bits >>> 16) & 0xff, bits >>> 24];
}
export const f32Mul = (a: Code, b: Code): Code => cat(a, b, [0x94]);
/** f32.convert_i32_s: exact below 2^24. */
export const f32ConvertS = (a: Code): Code => cat(a, [0xb2]);
export const i32OfF32Bits = (a: Code): Code => cat(a, [0xbc]);
export const f32OfI32Bits = (a: Code): Code => cat(a, [0xbe]);
export const i32x4Splat = unary(0x11);
export const f32x4Splat = unary(0x13);
/** i32x4.replace_lane: `a` with lane `lane` set to the i32 `v`. */
export const i32x4ReplaceLane = (a: Code, lane: number, v: Code): Code => cat(a, v, simd(0x1c), [lane]);
export const i8x16Eq = binary(0x23);
export const i8x16Sub = binary(0x71);
export const i16x8Mul = binary(0x95);
/** i8x16.swizzle: byte i of the result is byte s[i] of a (0 where s[i] > 15). */
export const swizzle = binary(0x0e);
export const i32Eq = (a: Code, b: Code): Code => cat(a, b, [0x46]);
/** v128.load8x8_s: eight signed bytes at `addr` + `offset` sign-extended to i16x8 (alignment hint 8). */
export const load8x8S = (addr: Code, offset = 0): Code => cat(addr, simd(0x01), [3], uleb(offset));
/** v128.load8x8_u: eight bytes at `addr` + `offset` zero-extended to i16x8 (alignment hint 8). */
export const load8x8U = (addr: Code, offset = 0): Code => cat(addr, simd(0x02), [3], uleb(offset));
/** v128.load32_zero: the 4 bytes at `addr` + `offset` in lane 0, the other lanes zero (alignment hint 4). */
export const load32Zero = (addr: Code, offset = 0): Code => cat(addr, simd(0x5c), [2], uleb(offset));

// ---- more, for the GGML scale searches (../../ggml/quantize/search-simd.ts) ---------------------
export const f32x4Eq = binary(0x41);
export const f32x4Gt = binary(0x44);
export const f32x4Neg = unary(0xe1);
/** f32x4.sqrt: correctly rounded, as sqrtf. */
export const f32x4Sqrt = unary(0xe3);
export const i32x4Ne = binary(0x38);
/** i32.gt_s: 1 when a > b as signed numbers. */
export const i32GtS = (a: Code, b: Code): Code => cat(a, b, [0x4a]);

// ---- for the per-block quantizers (../../ggml/quantize/blocks-simd.ts) -------------------------
/** f32x4.trunc: toward zero, exact (as truncf). */
export const f32x4Trunc = unary(0x69);
/** i32x4.shr_s by a constant. */
export const i32x4ShrS = (a: Code, n: number): Code => cat(a, i32(n), simd(0xac));
/** i8x16.bitmask: i32 of the top bit of each byte, byte 0 in bit 0. */
export const i8x16Bitmask = unary(0x64);
/** i32.store16 of the low 16 bits of `v` at `addr` + `offset` (alignment hint 2). */
export const storeI16 = (addr: Code, v: Code, offset = 0): Code => cat(addr, v, [0x3b, 1], uleb(offset));

// ---- for the ternary and MXFP4 quantizers (../../ggml/quantize/small-simd.ts) -------------------
/** i32.clz: the count of leading zero bits (32 for 0). */
export const i32Clz = (a: Code): Code => cat(a, [0x67]);
/** i32.store8 of the low byte of `v` at `addr` + `offset`. */
export const storeU8 = (addr: Code, v: Code, offset = 0): Code => cat(addr, v, [0x3a, 0], uleb(offset));
/** i32x4.mul: the low 32 bits of each product. */
export const i32x4Mul = binary(0xb5);
