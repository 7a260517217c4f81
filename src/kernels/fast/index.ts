/**
 * Fast kernels: whole-array loops specialised per pair class, each giving exactly the bytes of
 * castReference (test/kernels/fast.test.ts checks every pair `fastCast` accepts, exhaustively for
 * sources of 16 bits or fewer). Single-threaded, synchronous, no allocation per element (a few
 * typed-array views per call; tables built once, lazily, from the reference). Browser-safe.
 *
 * Pair classes:
 * - float32 -> anything numeric: integer rounding on the bits (float16, bfloat16, e8m0), a 2^17
 *   bucket table (float8, float4, float6), the x86-64 rule on values (integers), packed writes.
 * - 8-bit sources (bool, int8, uint8, float8, e8m0) -> any non-packed target: a 256-entry table.
 * - float16, bfloat16, int16, uint16, float4e2m1, int4, uint4, and 8-bit sources to packed targets:
 *   every value is exact in float32, so decode to float32 bits (a table, a shift, or a store) and
 *   encode from there, in blocks of 4096 through a 16 KiB scratch.
 * - float64 -> float32, narrower integers, bool; int64 / uint64 and int32 / uint32 -> integers,
 *   float32, float64, bool, on 32-bit word views (no BigInt); all of them -> float16, bfloat16,
 *   float8, float6 and float4 through float32 rounded to odd (one rounding in all), in blocks.
 */
import type { DType, Storage } from "../../dtype/table.js";
import type { ResolvedCastOptions } from "../reference.js";
import * as dec from "./decode.js";
import * as enc from "./encode.js";
import { byteLut, encodeTable, f32BitsLut, type ByteLut } from "./tables.js";
import { f32View, i32View, u16View, u32View, u8View } from "./views.js";
import * as wide from "./wide.js";

/**
 * Encodes the first `n` float32 elements of `si` / `sf` (bits and values views of the same memory)
 * into target elements [d0, d0 + n). `d0` is 0 or a multiple of BLOCK.
 */
type Encoder = (si: Int32Array, sf: Float32Array, d0: number, n: number) => void;
/** Decodes source elements [s0, s0 + n) to float32 into the first `n` elements of the views. */
type Decoder = (s0: number, n: number, outBits: Int32Array, outValues: Float32Array) => void;

/** Elements per block of the two-step (decode, encode) path: a multiple of 8 for packed types. */
const BLOCK = 4096;
let scratchBits: Int32Array | undefined;
let scratchValues: Float32Array | undefined;

const E8M0_BUMP = { up: 0x7fffff, nearest: 0x400000, down: 0 } as const;

function isNumeric(t: DType): boolean {
  return t.kind !== "string" && t.kind !== "complex";
}

/**
 * Casts `count` elements of `src` (type `from`) into the zero-filled storage `dst` (type `to`), as
 * castReference would, and returns true; or returns false, having written nothing, when no fast
 * kernel covers the pair (then call castReference). Same conventions as castReference: neither type
 * is string or complex, and the caller has checked the operator's rules.
 *
 * @example if (!fastCast(x.data, x.dtype, out, to, x.size, opts)) castReference(x.data, x.dtype, out, to, x.size, opts);
 */
export function fastCast(
  src: Storage, from: DType, dst: Storage, to: DType, count: number, opts: ResolvedCastOptions,
): boolean {
  if (from === to || !isNumeric(from) || !isNumeric(to)) return false;

  if (from.name === "float32") {
    const encode = encoderFor(dst, to, opts);
    if (!encode) return false;
    encode(i32View(src), f32View(src), 0, count);
    return true;
  }

  if (from.bits === 8 && !from.packed && !to.packed) {
    byteTable(u8View(src), dst, byteLut(from, to, opts), to.bits, count);
    return true;
  }

  if (from.bits >= 32) {
    if (wideCast(src, from, dst, to, count)) return true;
    // To a float narrower than float32 (not e8m0, whose saturate=false "down" mode sees past the
    // float32 range): float32 rounded to odd, then the float32 encoder, still one rounding.
    if (!to.format || to.bits > 16 || to.name === "float8e8m0") return false;
    const decode = oddDecoderFor(src, from);
    const encode = decode && encoderFor(dst, to, opts);
    if (!decode || !encode) return false;
    inBlocks(count, decode, encode);
    return true;
  }

  const decode = decoderFor(src, from);
  if (!decode) return false;
  if (to.name === "float32") {
    decode(0, count, i32View(dst), f32View(dst));
    return true;
  }
  // bool -> e8m0 is the one cast where a source's kind, not only its value, decides the result.
  if (from.kind === "bool" && to.name === "float8e8m0") return false;
  const encode = encoderFor(dst, to, opts);
  if (!encode) return false;
  inBlocks(count, decode, encode);
  return true;
}

/** Decodes and encodes `count` elements in blocks of BLOCK through the float32 scratch. */
function inBlocks(count: number, decode: Decoder, encode: Encoder): void {
  if (!scratchBits) {
    scratchBits = new Int32Array(BLOCK);
    scratchValues = new Float32Array(scratchBits.buffer);
  }
  const bits = scratchBits;
  const values = scratchValues!;
  for (let start = 0; start < count; start += BLOCK) {
    const n = Math.min(BLOCK, count - start);
    decode(start, n, bits, values);
    encode(bits, values, start, n);
  }
}

/** The round-to-odd float32 decoder of a float64, int64 / uint64 or int32 / uint32 source. */
function oddDecoderFor(src: Storage, from: DType): Decoder | undefined {
  switch (from.name) {
    case "float64": {
      const s = src as Float64Array;
      const words = u32View(src);
      return (s0, n, bits, values) => wide.f64ToOddF32(s0 === 0 ? s : s.subarray(s0), from32(words, s0, 2), bits, values, n);
    }
    case "int64": case "uint64": {
      const words = u32View(src);
      const signed = from.kind === "int";
      return (s0, n, bits, values) => wide.wideToOddF32(from32(words, s0, 2), signed, bits, values, n);
    }
    case "int32": case "uint32": {
      const s = src as Int32Array | Uint32Array;
      return (s0, n, bits, values) => wide.int32ToOddF32(s0 === 0 ? s : s.subarray(s0), bits, values, n);
    }
    default:
      return undefined;
  }
}

function byteTable(src: Uint8Array, dst: Storage, lut: ByteLut, bits: number, count: number): void {
  switch (bits) {
    case 8: dec.byteLut8(src, u8View(dst), count, lut as Uint8Array); break;
    case 16: dec.byteLut16(src, u16View(dst), count, lut as Uint16Array); break;
    case 32: dec.byteLut32(src, i32View(dst), count, lut as Int32Array); break;
    default: dec.byteLut64(src, u32View(dst), count, lut as Uint32Array);
  }
}

/** A byte view from element `at` on (`bits` per element; `at * bits` is a multiple of 8). */
function from8(view: Uint8Array, at: number, bits: number): Uint8Array {
  return at === 0 ? view : view.subarray((at * bits) >>> 3);
}
/** A 16-bit view from element `at` on. */
function from16(view: Uint16Array, at: number): Uint16Array {
  return at === 0 ? view : view.subarray(at);
}
/** A 32-bit view from element `at` on, `perElement` words per element. */
function from32<T extends Int32Array | Uint32Array>(view: T, at: number, perElement = 1): T {
  return at === 0 ? view : (view.subarray(at * perElement) as T);
}

/** The float32 encoder of a target, or undefined when there is none (or its table failed its check). */
function encoderFor(dst: Storage, to: DType, opts: ResolvedCastOptions): Encoder | undefined {
  switch (to.name) {
    case "float16": {
      const out = dst as Uint16Array;
      return (si, _sf, d0, n) => enc.f32ToF16(si, from16(out, d0), n);
    }
    case "bfloat16": {
      const out = dst as Uint16Array;
      return (si, _sf, d0, n) => enc.f32ToBf16(si, from16(out, d0), n);
    }
    case "float8e4m3fn": case "float8e4m3fnuz": case "float8e5m2": case "float8e5m2fnuz": {
      const table = encodeTable(to, opts);
      if (!table) return undefined;
      const out = dst as Uint8Array;
      return (si, _sf, d0, n) => enc.f32ByTable(si, from8(out, d0, 8), n, table);
    }
    case "float4e2m1": {
      const table = encodeTable(to, opts);
      if (!table) return undefined;
      const out = dst as Uint8Array;
      return (si, _sf, d0, n) => enc.f32ByTable4(si, from8(out, d0, 4), n, table);
    }
    case "float6e2m3": case "float6e3m2": {
      const table = encodeTable(to, opts);
      if (!table) return undefined;
      const out = dst as Uint8Array;
      return (si, _sf, d0, n) => enc.f32ByTable6(si, from8(out, d0, 6), n, table);
    }
    case "float8e8m0": {
      const out = dst as Uint8Array;
      const low = opts.saturate ? 0x00 : 0xff;
      const high = opts.saturate ? 0xfe : 0xff;
      const bump = E8M0_BUMP[opts.roundMode];
      return (si, _sf, d0, n) => enc.f32ToE8M0(si, from8(out, d0, 8), n, low, high, bump);
    }
    case "int8": case "uint8": {
      const out = u8View(dst);
      return (_si, sf, d0, n) => enc.f32ToInt8(sf, from8(out, d0, 8), n);
    }
    case "int16": case "uint16": {
      const out = u16View(dst);
      return (_si, sf, d0, n) => enc.f32ToInt16(sf, from16(out, d0), n);
    }
    case "int32": {
      const out = dst as Int32Array;
      return (_si, sf, d0, n) => enc.f32ToInt32(sf, from32(out, d0), n);
    }
    case "uint32": {
      const out = dst as Uint32Array;
      return (_si, sf, d0, n) => enc.f32ToUint32(sf, from32(out, d0), n);
    }
    case "int64": {
      const out = u32View(dst);
      return (_si, sf, d0, n) => enc.f32ToInt64(sf, from32(out, d0, 2), n);
    }
    case "uint64": {
      const out = u32View(dst);
      return (_si, sf, d0, n) => enc.f32ToUint64(sf, from32(out, d0, 2), n);
    }
    case "int4": case "uint4": {
      const out = dst as Uint8Array;
      return (_si, sf, d0, n) => enc.f32ToInt4(sf, from8(out, d0, 4), n);
    }
    case "int2": case "uint2": {
      const out = dst as Uint8Array;
      return (_si, sf, d0, n) => enc.f32ToInt2(sf, from8(out, d0, 2), n);
    }
    case "bool": {
      const out = dst as Uint8Array;
      return (si, _sf, d0, n) => enc.f32ToBool(si, from8(out, d0, 8), n);
    }
    case "float64": {
      const out = dst as Float64Array;
      const words = u32View(dst);
      return (si, sf, d0, n) => enc.f32ToF64(si, sf, d0 === 0 ? out : out.subarray(d0), from32(words, d0, 2), n);
    }
    default:
      return undefined;
  }
}

/** The float32 decoder of a source of 16 bits or fewer, or undefined. */
function decoderFor(src: Storage, from: DType): Decoder | undefined {
  switch (from.name) {
    case "float16": {
      const s = src as Uint16Array;
      const lut = f32BitsLut(from);
      return (s0, n, bits) => dec.lut16ToF32(from16(s, s0), bits, n, lut);
    }
    case "bfloat16": {
      const s = src as Uint16Array;
      return (s0, n, bits) => dec.bf16ToF32(from16(s, s0), bits, n);
    }
    case "int16": {
      const s = src as Int16Array;
      return (s0, n, _bits, values) => dec.int16ToF32(s0 === 0 ? s : s.subarray(s0), values, n);
    }
    case "uint16": {
      const s = src as Uint16Array;
      return (s0, n, _bits, values) => dec.uint16ToF32(from16(s, s0), values, n);
    }
    case "float4e2m1": case "int4": case "uint4": {
      const s = src as Uint8Array;
      const lut = f32BitsLut(from);
      return (s0, n, bits) => dec.lut4ToF32(from8(s, s0, 4), bits, n, lut);
    }
    default: {
      if (from.bits !== 8 || from.packed) return undefined;
      const s = u8View(src);
      const lut = f32BitsLut(from);
      return (s0, n, bits) => dec.byteLut32(from8(s, s0, 8), bits, n, lut);
    }
  }
}

/** float64, int64 / uint64, int32 / uint32 sources. */
function wideCast(src: Storage, from: DType, dst: Storage, to: DType, count: number): boolean {
  if (from.name === "float64") {
    const s = src as Float64Array;
    switch (to.name) {
      case "float32": wide.f64ToF32(s, u32View(src), dst as Float32Array, i32View(dst), count); return true;
      case "int8": case "uint8": wide.f64ToInt8(s, u8View(dst), count); return true;
      case "int16": case "uint16": wide.f64ToInt16(s, u16View(dst), count); return true;
      case "int32": wide.f64ToInt32(s, dst as Int32Array, count); return true;
      case "uint32": wide.f64ToUint32(s, dst as Uint32Array, count); return true;
      case "bool": wide.f64ToBool(u32View(src), dst as Uint8Array, count); return true;
      default: return false;
    }
  }
  if (from.bits === 64) {
    const words = u32View(src);
    const signed = from.kind === "int";
    switch (to.name) {
      case "int8": case "uint8": wide.wideToU8(words, u8View(dst), count); return true;
      case "int16": case "uint16": wide.wideToU16(words, u16View(dst), count); return true;
      case "int32": case "uint32": wide.wideToI32(i32View(src), i32View(dst), count); return true;
      case "int64": case "uint64": u32View(dst).set(words.subarray(0, 2 * count)); return true;
      case "bool": wide.wideToBool(words, dst as Uint8Array, count); return true;
      case "float32":
        if (signed) wide.int64ToF32(words, dst as Float32Array, count);
        else wide.uint64ToF32(words, dst as Float32Array, count);
        return true;
      case "float64":
        if (signed) wide.int64ToF64(words, dst as Float64Array, count);
        else wide.uint64ToF64(words, dst as Float64Array, count);
        return true;
      default: return false;
    }
  }
  if (from.name === "int32" || from.name === "uint32") {
    const bits = i32View(src);
    const signed = from.name === "int32";
    switch (to.name) {
      case "int8": case "uint8": wide.narrowTo8(bits, u8View(dst), count); return true;
      case "int16": case "uint16": wide.narrowTo16(bits, u16View(dst), count); return true;
      case "int32": case "uint32": i32View(dst).set(bits.subarray(0, count)); return true;
      case "int64": case "uint64":
        if (signed) wide.int32ToWide(bits, i32View(dst), count);
        else wide.uint32ToWide(bits, i32View(dst), count);
        return true;
      case "bool": wide.int32ToBool(bits, dst as Uint8Array, count); return true;
      case "float32":
        if (signed) wide.int32ToF32(src as Int32Array, dst as Float32Array, count);
        else wide.uint32ToF32(src as Uint32Array, dst as Float32Array, count);
        return true;
      case "float64":
        if (signed) wide.int32ToF64(src as Int32Array, dst as Float64Array, count);
        else wide.uint32ToF64(src as Uint32Array, dst as Float64Array, count);
        return true;
      default: return false;
    }
  }
  return false;
}
