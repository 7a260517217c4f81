/**
 * The tables behind the fast kernels, each built lazily on first use FROM THE REFERENCE PATH
 * (castReference over every code or bucket), so a table is a cache of the reference, never a second
 * definition of a format. Upper bound on memory when every table exists: about 1.7 MiB
 * (float16 decode 256 KiB, at most eleven 2^17-byte encode tables, a few 256-entry tables).
 */
import { packedByteLength } from "../../dtype/packing.js";
import { dtype, type DType, type Storage } from "../../dtype/table.js";
import { castReference, type ResolvedCastOptions } from "../reference.js";
import { i32View, u16View, u32View, u8View } from "./views.js";

const F32 = dtype("float32");
const DEFAULT_OPTS: ResolvedCastOptions = { saturate: true, roundMode: "up" };

/** A zero-filled storage of `count` elements of `t` (numeric types only). */
export function storageFor(t: DType, count: number): Storage {
  if (t.packed) return new Uint8Array(packedByteLength(count, t.bits));
  switch (t.array) {
    case "Float32Array": return new Float32Array(count);
    case "Float64Array": return new Float64Array(count);
    case "Int8Array": return new Int8Array(count);
    case "Uint8Array": return new Uint8Array(count);
    case "Int16Array": return new Int16Array(count);
    case "Uint16Array": return new Uint16Array(count);
    case "Int32Array": return new Int32Array(count);
    case "Uint32Array": return new Uint32Array(count);
    case "BigInt64Array": return new BigInt64Array(count);
    case "BigUint64Array": return new BigUint64Array(count);
    case "Array": throw new Error(`storageFor: ${t.name} is not numeric`);
  }
}

/** Every code 0 .. 2^bits - 1 of a type of 16 bits or fewer, as its storage (packed if it is). */
function allCodes(t: DType): Storage {
  const n = 2 ** t.bits;
  const s = storageFor(t, n);
  if (t.packed) {
    // Element i holds code i: pack 0, 1, 2, ... as one little-endian bit stream.
    const bytes = s as Uint8Array;
    for (let i = 0, bit = 0; i < n; i++, bit += t.bits) {
      const at = bit >>> 3;
      const shift = bit & 7;
      bytes[at] |= (i << shift) & 0xff;
      if (shift + t.bits > 8) bytes[at + 1] |= i >>> (8 - shift);
    }
  } else if (t.bits === 8) u8View(s).forEach((_, i, a) => { a[i] = i; });
  else u16View(s).forEach((_, i, a) => { a[i] = i; });
  return s;
}

const f32Luts = new Map<string, Int32Array>();

/**
 * For a source of 16 bits or fewer whose every value is exact in float32: the float32 bit pattern
 * the reference gives for each code (NaN codes: the canonical quiet NaN with the code's sign).
 */
export function f32BitsLut(from: DType): Int32Array {
  let lut = f32Luts.get(from.name);
  if (!lut) {
    const n = 2 ** from.bits;
    const out = new Float32Array(n);
    castReference(allCodes(from), from, out, F32, n, DEFAULT_OPTS);
    lut = i32View(out);
    f32Luts.set(from.name, lut);
  }
  return lut;
}

/** A 256-entry table, one target element per source code, as unsigned words of the target's width. */
export type ByteLut = Uint8Array | Uint16Array | Int32Array | Uint32Array;
const byteLuts = new Map<string, ByteLut>();

function optionKey(to: DType, opts: ResolvedCastOptions): string {
  // Only float8 targets read `saturate` and only e8m0 reads `roundMode`.
  const saturable = to.format?.overflow === "saturable";
  return `${saturable ? opts.saturate : ""}|${to.name === "float8e8m0" ? opts.roundMode : ""}`;
}

/**
 * For an 8-bit source (not packed) and a non-packed numeric target: the reference's result for each
 * of the 256 codes. 8- and 16-bit targets as Uint8Array / Uint16Array, 32-bit as Int32Array, 64-bit
 * as Uint32Array word pairs (low, high).
 */
export function byteLut(from: DType, to: DType, opts: ResolvedCastOptions): ByteLut {
  const key = `${from.name}>${to.name}|${optionKey(to, opts)}`;
  let lut = byteLuts.get(key);
  if (!lut) {
    const out = storageFor(to, 256);
    castReference(allCodes(from), from, out, to, 256, opts);
    lut = to.bits === 8 ? u8View(out) : to.bits === 16 ? u16View(out) : to.bits === 32 ? i32View(out) : u32View(out);
    byteLuts.set(key, lut);
  }
  return lut;
}

/** Number of buckets of the float32 encode tables: the top 16 bits, and whether the low 16 are zero. */
export const BUCKETS = 1 << 17;

/** The float32 bit pattern a bucket's table entry is computed from (`low` 0 or any non-zero value). */
export function bucketBits(bucket: number, low: number): number {
  return ((bucket >>> 1) << 16) | ((bucket & 1) === 1 ? low : 0);
}

const encodeTables = new Map<string, Uint8Array | null>();

/**
 * The 2^17-entry float32 -> code table of a float target with at most 6 fraction bits kept at
 * normal precision (float8, float4, float6): entry `bucketOf(bits)` is the code of every float32
 * in that bucket (encode.ts `bucket`: the top 16 bits, and whether the low 16 are non-zero). That holds when the rounding bit lies in the top 16 bits, so that a bucket's
 * code depends only on whether its low 16 bits are zero; the table is built from the reference
 * at low = 1 and verified at low = 0xFFFF (rounding is monotone, which covers everything
 * between). If the check ever fails the table is refused (null) and callers use the reference.
 */
export function encodeTable(to: DType, opts: ResolvedCastOptions): Uint8Array | null {
  const key = `${to.name}|${optionKey(to, opts)}`;
  let table = encodeTables.get(key);
  if (table === undefined) {
    table = buildEncodeTable(to, opts);
    encodeTables.set(key, table);
  }
  return table;
}

function buildEncodeTable(to: DType, opts: ResolvedCastOptions): Uint8Array | null {
  const bits = new Int32Array(BUCKETS);
  for (let b = 0; b < BUCKETS; b++) bits[b] = bucketBits(b, 1);
  const codes = encodeCodes(bits, to, opts);
  // The other end of every non-zero-low bucket.
  const high = new Int32Array(BUCKETS >>> 1);
  for (let h = 0; h < high.length; h++) high[h] = bucketBits(2 * h + 1, 0xffff);
  const check = encodeCodes(high, to, opts);
  for (let h = 0; h < high.length; h++) if (check[h] !== codes[2 * h + 1]) return null;
  return codes;
}

/** The reference's codes for float32 bit patterns, one byte per element (unpacked for packed targets). */
function encodeCodes(bits: Int32Array, to: DType, opts: ResolvedCastOptions): Uint8Array {
  const n = bits.length;
  const out = storageFor(to, n);
  castReference(new Float32Array(bits.buffer), F32, out, to, n, opts);
  if (!to.packed) return out as Uint8Array;
  const codes = new Uint8Array(n);
  const bytes = out as Uint8Array;
  const mask = (1 << to.bits) - 1;
  for (let i = 0, bit = 0; i < n; i++, bit += to.bits) {
    const at = bit >>> 3;
    const shift = bit & 7;
    const next = at + 1 < bytes.length ? bytes[at + 1] << 8 : 0;
    codes[i] = ((bytes[at] | next) >>> shift) & mask;
  }
  return codes;
}

/** Bytes held by every table built so far. */
export function tableBytes(): number {
  let total = 0;
  for (const t of f32Luts.values()) total += t.byteLength;
  for (const t of byteLuts.values()) total += t.byteLength;
  for (const t of encodeTables.values()) total += t ? t.byteLength : 0;
  return total;
}
