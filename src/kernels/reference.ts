/**
 * The generic conversion path: the reference for every numeric cast. It works in blocks: the source
 * block is decoded to exact values, then the values are encoded into the target. Every faster kernel
 * must give the same bytes.
 *
 * The exact intermediate of an element is one of:
 * - "value": a float64 holding the exact source value (every type except the 64-bit integers). A
 *   NaN is written through the word view as a canonical quiet NaN with the source's sign, and its
 *   sign is read back through the word view, never through a JS number.
 * - "words": the two 32-bit halves of a 64-bit integer (int64, uint64 sources).
 */
import { encodeE8M0, encodeFloat, nanCode, type RoundMode } from "../dtype/minifloat.js";
import { packCodes, unpackCodes } from "../dtype/packing.js";
import type { DType, Storage } from "../dtype/table.js";
import { decodeTableWords } from "./tables.js";

export interface ResolvedCastOptions {
  readonly saturate: boolean;
  readonly roundMode: RoundMode;
}

/** Elements per block; a multiple of 8 so packed 2-, 4- and 6-bit blocks start on a byte. */
const BLOCK = 4096;
const TWO32 = 4294967296;
const TWO31 = 2147483648;
const TWO63 = 9223372036854775808;

interface Block {
  readonly values: Float64Array;
  /** The same memory as `values`, two words (low, high) per element. */
  readonly words: Uint32Array;
  /** Unpacked codes of packed types. */
  readonly codes: Uint8Array;
}

let sharedBlock: Block | undefined;
function block(): Block {
  if (!sharedBlock) {
    const values = new Float64Array(BLOCK);
    sharedBlock = { values, words: new Uint32Array(values.buffer), codes: new Uint8Array(BLOCK) };
  }
  return sharedBlock;
}

function wordsOf(a: Storage): Uint32Array {
  const t = a as Exclude<Storage, string[]>;
  return new Uint32Array(t.buffer, t.byteOffset, t.byteLength >>> 2);
}

/**
 * Casts `count` elements of `src` (type `from`) into the zeroed storage `dst` (type `to`).
 * Neither type may be string or complex; the caller has checked the operator's rules.
 */
export function castReference(
  src: Storage, from: DType, dst: Storage, to: DType, count: number, opts: ResolvedCastOptions,
): void {
  const b = block();
  const srcWords = from.array === "Float32Array" || from.array === "Float64Array" || from.bits === 64 ? wordsOf(src) : undefined;
  const dstWords = to.array === "Float32Array" || to.array === "Float64Array" || to.bits === 64 ? wordsOf(dst) : undefined;
  const wide = from.bits === 64 && from.kind !== "float";
  for (let start = 0; start < count; start += BLOCK) {
    const n = Math.min(BLOCK, count - start);
    decodeBlock(src, srcWords, from, start, n, b);
    encodeBlock(dst, dstWords, to, from, wide, start, n, b, opts);
  }
}

function decodeBlock(src: Storage, srcWords: Uint32Array | undefined, from: DType, start: number, n: number, b: Block): void {
  const { values, words, codes } = b;
  if (from.bits === 64 && srcWords) {
    // float64 keeps its bits (NaN payloads included); int64/uint64 stay as words.
    for (let j = 0, i = 2 * start; j < 2 * n; j++, i++) words[j] = srcWords[i];
    return;
  }
  if (from.array === "Float32Array" && srcWords) {
    const a = src as Float32Array;
    for (let j = 0; j < n; j++) {
      const x = a[start + j];
      if (x === x) values[j] = x;
      else {
        words[2 * j] = 0;
        words[2 * j + 1] = (srcWords[start + j] & 0x80000000) | 0x7ff80000;
      }
    }
    return;
  }
  if (from.format) {
    const table = decodeTableWords(from);
    let c: Uint8Array | Uint16Array = src as Uint8Array | Uint16Array;
    let offset = start;
    if (from.packed) {
      unpackCodes(src as Uint8Array, from.bits, start, n, codes);
      c = codes;
      offset = 0;
    }
    for (let j = 0; j < n; j++) {
      const k = 2 * c[offset + j];
      words[2 * j] = table[k];
      words[2 * j + 1] = table[k + 1];
    }
    return;
  }
  if (from.packed) {
    unpackCodes(src as Uint8Array, from.bits, start, n, codes);
    const half = from.kind === "int" ? 2 ** (from.bits - 1) : Infinity;
    const span = 2 ** from.bits;
    for (let j = 0; j < n; j++) values[j] = codes[j] >= half ? codes[j] - span : codes[j];
    return;
  }
  const a = src as Int8Array | Uint8Array | Int16Array | Uint16Array | Int32Array | Uint32Array;
  if (from.kind === "bool") for (let j = 0; j < n; j++) values[j] = a[start + j] !== 0 ? 1 : 0;
  else for (let j = 0; j < n; j++) values[j] = a[start + j];
}

/** The int32 a float converts to on x86-64 (cvttsd2si): truncation, INT_MIN when out of range or NaN. */
export function floatToInt32(x: number): number {
  return x > -2147483649 && x < TWO31 ? x | 0 : -2147483648;
}

/** The uint32 scheme of onnx.md 2.2: values from 2^31 up are shifted into int32 range and back. */
export function floatToUint32(x: number): number {
  return x >= TWO31 ? (floatToInt32(x - TWO31) ^ 0x80000000) >>> 0 : floatToInt32(x) >>> 0;
}

/** Writes the x86-64 int64 conversion of `x` as words at `out[at]`, `out[at + 1]`. */
export function floatToInt64Words(x: number, out: Uint32Array, at: number): void {
  const t = Math.trunc(x);
  if (t >= -TWO63 && t < TWO63) {
    const hi = Math.floor(t / TWO32);
    out[at] = t - hi * TWO32;
    out[at + 1] = hi;
  } else {
    out[at] = 0;
    out[at + 1] = 0x80000000;
  }
}

/** An integer |x| < 2^53 as 64-bit two's-complement words. */
function integerToWords(x: number, out: Uint32Array, at: number): void {
  const hi = Math.floor(x / TWO32);
  out[at] = x - hi * TWO32;
  out[at + 1] = hi;
}

const oddScratch = new Float64Array(1);
const oddWords = new Uint32Array(oddScratch.buffer);

/**
 * A 64-bit integer as a float64 rounded to odd: exact when it fits, otherwise whichever neighbour
 * has an odd last bit. Rounding that value once more to a format of 51 or fewer significand bits
 * gives the correctly rounded result, so int64 -> float32 is never double-rounded.
 */
export function wordsToOddDouble(lo: number, hi: number, signed: boolean): number {
  const a = (signed ? hi | 0 : hi >>> 0) * TWO32;
  const s = a + lo;
  const back = s - a;
  const err = a - (s - back) + (lo - back);
  if (err === 0) return s;
  oddScratch[0] = s;
  if ((oddWords[0] & 1) === 1) return s;
  // Step one unit in the last place toward the true value. |s| >= 2^53, so s is normal and non-zero.
  const away = (err > 0) === (s > 0);
  if (away) {
    if (oddWords[0] === 0xffffffff) { oddWords[0] = 0; oddWords[1]++; } else oddWords[0]++;
  } else {
    if (oddWords[0] === 0) { oddWords[0] = 0xffffffff; oddWords[1]--; } else oddWords[0]--;
  }
  return oddScratch[0];
}

/** The float64 nearest a 64-bit integer (one rounding). */
function wordsToDouble(lo: number, hi: number, signed: boolean): number {
  return (signed ? hi | 0 : hi >>> 0) * TWO32 + lo;
}

function encodeBlock(
  dst: Storage, dstWords: Uint32Array | undefined, to: DType, from: DType, wide: boolean,
  start: number, n: number, b: Block, opts: ResolvedCastOptions,
): void {
  const { values, words, codes } = b;
  const signedSource = from.kind === "int";
  const integral = from.kind !== "float";

  if (to.kind === "bool") {
    const out = dst as Uint8Array;
    if (wide) for (let j = 0; j < n; j++) out[start + j] = (words[2 * j] | words[2 * j + 1]) !== 0 ? 1 : 0;
    else for (let j = 0; j < n; j++) out[start + j] = values[j] !== 0 ? 1 : 0; // NaN is true
    return;
  }

  if (to.array === "Float64Array" && dstWords) {
    if (wide) {
      const out = dst as Float64Array;
      for (let j = 0; j < n; j++) out[start + j] = wordsToDouble(words[2 * j], words[2 * j + 1], signedSource);
    } else {
      for (let j = 0, i = 2 * start; j < 2 * n; j++, i++) dstWords[i] = words[j];
    }
    return;
  }

  const f = to.format;
  if (f) {
    const e8m0 = to.name === "float8e8m0";
    const boolSource = from.kind === "bool";
    const out = to.packed ? codes : to.array === "Float32Array" ? dstWords! : (dst as Uint8Array | Uint16Array);
    const offset = to.packed ? 0 : start;
    for (let j = 0; j < n; j++) {
      const x = wide ? wordsToOddDouble(words[2 * j], words[2 * j + 1], signedSource) : values[j];
      let code: number;
      if (x !== x) code = e8m0 ? 0xff : nanCode(f, words[2 * j + 1] >>> 31 === 1);
      else if (e8m0) code = boolSource ? (x === 1 ? 0x7f : 0x00) : encodeE8M0(x, opts.saturate, opts.roundMode);
      else code = encodeFloat(f, x, opts.saturate);
      out[offset + j] = code;
    }
    if (to.packed) packCodes(codes, to.bits, start, n, dst as Uint8Array);
    return;
  }

  if (to.bits === 64 && dstWords) {
    if (wide) {
      for (let j = 0, i = 2 * start; j < 2 * n; j++, i++) dstWords[i] = words[j];
    } else if (integral) {
      for (let j = 0; j < n; j++) integerToWords(values[j], dstWords, 2 * (start + j));
    } else if (to.kind === "int") {
      for (let j = 0; j < n; j++) floatToInt64Words(values[j], dstWords, 2 * (start + j));
    } else {
      for (let j = 0; j < n; j++) {
        const x = values[j];
        const at = 2 * (start + j);
        if (x >= TWO63) {
          floatToInt64Words(x - TWO63, dstWords, at);
          dstWords[at + 1] ^= 0x80000000;
        } else floatToInt64Words(x, dstWords, at);
      }
    }
    return;
  }

  // 32 bits and narrower: compute the int32 (or uint32) result, then keep the low bits. Typed-array
  // stores wrap modulo 2^bits, which is exactly two's-complement truncation.
  const out = to.packed ? codes : (dst as Int8Array | Uint8Array | Int16Array | Uint16Array | Int32Array | Uint32Array);
  const offset = to.packed ? 0 : start;
  if (wide) for (let j = 0; j < n; j++) out[offset + j] = words[2 * j];
  else if (integral) for (let j = 0; j < n; j++) out[offset + j] = values[j] | 0;
  else if (to.name === "uint32") for (let j = 0; j < n; j++) out[offset + j] = floatToUint32(values[j]);
  else for (let j = 0; j < n; j++) out[offset + j] = floatToInt32(values[j]);
  if (to.packed) packCodes(codes, to.bits, start, n, dst as Uint8Array);
}
