/**
 * float16 conversions through the platform's own `Float16Array` (Node 24, current browsers), for
 * float32 / float64 -> float16 and float16 -> float32 / float64, with the contract of fastCast: the
 * bytes of castReference, or false (nothing written) when the platform has no Float16Array (Node
 * 20) or the pair is not one of these four. convert() uses them only for the pairs where they
 * measured faster than its other kernels (see there); tests call them directly.
 *
 * `TypedArray.prototype.set` between element types converts as ECMAScript says: to float16 with one
 * rounding to nearest, ties to even, of the exact source value (float64 sources too: never through
 * float32), and from float16 exactly. Only NaN is left to the implementation: any NaN bit pattern
 * may be written. The reference defines it (a quiet NaN carrying the source's sign, payload
 * dropped: f16 0x7E00, f32 0x7FC00000, f64 0x7FF8000000000000, sign bit kept). V8 (Chromium 156)
 * writes exactly that into a Float16Array, but from one keeps the payload (0x7C01 -> 0x7FC02000),
 * and other engines may do either differently. So each block is converted by one `set`, then its
 * NaNs are rewritten while the block is still in cache. The block (16 Ki elements: at most 128 KiB
 * on the wide side) stays in L2.
 *
 * Browser-safe: declares the slice of the Float16Array API it uses, since TypeScript's ES2022 lib
 * does not have it.
 */
import type { DType, Storage } from "../../dtype/table.js";
import { u32View } from "../fast/views.js";

/** The slice of a Float16Array this module uses. */
interface Float16ArrayLike {
  readonly length: number;
  readonly [index: number]: number;
  set(source: ArrayLike<number>, offset?: number): void;
  subarray(begin: number, end: number): Float16ArrayLike;
}

type Float16ArrayConstructor = new (buffer: ArrayBufferLike, byteOffset: number, length: number) => Float16ArrayLike;

/** The platform's Float16Array, or undefined (Node 20, older browsers). */
const F16 = (globalThis as { Float16Array?: Float16ArrayConstructor }).Float16Array;

/** Elements per block: one `set`, then the NaN fix-up of the same elements while they are in cache. */
export const NATIVE_BLOCK = 16384;

/** Whether the platform has `Float16Array` (then nativeFloat16Cast covers its four pairs). */
export function nativeFloat16Available(): boolean {
  return F16 !== undefined;
}

function f16Of(a: Uint16Array, count: number): Float16ArrayLike {
  return new F16!(a.buffer, a.byteOffset, count);
}

/**
 * Casts `count` elements of `src` (type `from`) into `dst` (type `to`) through Float16Array as
 * castReference would, and returns true; or returns false, having written nothing, when there is no
 * Float16Array here or the pair is not float32 / float64 -> float16 or float16 -> float32 / float64.
 * `opts` of castReference do not matter to these pairs (float16 has Inf: saturate applies to float8).
 *
 * @example if (!nativeFloat16Cast(x.data, x.dtype, out, to, x.size)) castReference(...);
 */
export function nativeFloat16Cast(src: Storage, from: DType, dst: Storage, to: DType, count: number): boolean {
  if (F16 === undefined) return false;
  if (to.name === "float16") {
    if (from.name === "float32") f32ToF16(src as Float32Array, dst as Uint16Array, count);
    else if (from.name === "float64") f64ToF16(src as Float64Array, dst as Uint16Array, count);
    else return false;
    return true;
  }
  if (from.name === "float16") {
    if (to.name === "float32") f16ToF32(src as Uint16Array, dst as Float32Array, count);
    else if (to.name === "float64") f16ToF64(src as Uint16Array, dst as Float64Array, count);
    else return false;
    return true;
  }
  return false;
}

// The kernels below take the block size so the benchmark (bench/browser-f16-page.ts) can vary it;
// callers use NATIVE_BLOCK. Each requires Float16Array (nativeFloat16Available()).

/** float32 -> float16: set, then every NaN code (|h| > 0x7C00) becomes 0x7E00 with the source's sign. */
export function f32ToF16(src: Float32Array, dst: Uint16Array, count: number, block = NATIVE_BLOCK): void {
  toF16(src, 1, dst, count, block);
}

/** float64 -> float16: as f32ToF16, the sign from the source's high word. */
export function f64ToF16(src: Float64Array, dst: Uint16Array, count: number, block = NATIVE_BLOCK): void {
  toF16(src, 2, dst, count, block);
}

/** float16 -> float32: set, then every NaN source code gives 0x7FC00000 with its sign (no payload). */
export function f16ToF32(src: Uint16Array, dst: Float32Array, count: number, block = NATIVE_BLOCK): void {
  fromF16(src, dst, 1, 0x7fc00000, count, block);
}

/** float16 -> float64: set, then every NaN source code gives 0x7FF8000000000000 with its sign. */
export function f16ToF64(src: Uint16Array, dst: Float64Array, count: number, block = NATIVE_BLOCK): void {
  fromF16(src, dst, 2, 0x7ff80000, count, block);
}

/**
 * The NaN fix-ups look for NaN codes four at a time, through a word view of the float16 side: both
 * halves of a word `w` are tested at once, `((w & 0x7FFF7FFF) + 0x03FF03FF) & 0x80008000` being
 * non-zero exactly when a half's magnitude exceeds 0x7C00 (Inf); no carry crosses halves, as
 * 0x7FFF + 0x03FF < 0x10000. Only a group with a NaN is then looked at code by code. In Chromium
 * 156 (bench/browser-f16.ts, ordinary values) the kernels ran 1.2-1.3x faster than with a fix-up
 * testing every code: float64 -> float16 141 against 116 M elements/s, float16 -> float64 207
 * against 158. The word view starts at the first element on a 4-byte boundary, `lead` (0 or 1)
 * elements in.
 */
function wordsOf16(a: Uint16Array, count: number): { lead: number; pairs: Uint32Array } {
  const lead = (a.byteOffset >>> 1) & 1;
  const pairs = new Uint32Array(a.buffer, a.byteOffset + 2 * lead, Math.max(0, count - lead) >>> 1);
  return { lead, pairs };
}

/** Room for the groups nanGroups can find in one block. */
function groupScratch(block: number): Int32Array {
  return new Int32Array((block >>> 2) + 8);
}

/**
 * Writes to `out` the first index of every group of at most 4 elements of codes[start, end) that
 * holds a NaN code (a group may reach past `end`: the caller stops there), and returns how many.
 */
function nanGroups(codes: Uint16Array, pairs: Uint32Array, lead: number, start: number, end: number, out: Int32Array): number {
  let n = 0;
  let i = start;
  if (i < end && ((i - lead) & 1) !== 0) {
    if ((codes[i] & 0x7fff) > 0x7c00) out[n++] = i;
    i++;
  }
  let k = (i - lead) >>> 1;
  for (const kEnd = k + 2 * ((end - i) >>> 2); k < kEnd; k += 2) {
    if (((((pairs[k] & 0x7fff7fff) + 0x03ff03ff) | ((pairs[k + 1] & 0x7fff7fff) + 0x03ff03ff)) & 0x80008000) !== 0) out[n++] = lead + 2 * k;
  }
  for (i = lead + 2 * k; i < end; i++) if ((codes[i] & 0x7fff) > 0x7c00) out[n++] = i;
  return n;
}

/** float32 (stride 1) or float64 (stride 2) -> float16, one block at a time. */
function toF16(src: Float32Array | Float64Array, stride: number, dst: Uint16Array, count: number, block: number): void {
  if (count === 0) return;
  const h = f16Of(dst, count);
  const s = u32View(src);
  const { lead, pairs } = wordsOf16(dst, count);
  const groups = groupScratch(Math.min(block, count));
  for (let start = 0; start < count; start += block) {
    const end = Math.min(start + block, count);
    h.set(src.subarray(start, end), start);
    const n = nanGroups(dst, pairs, lead, start, end, groups);
    for (let g = 0; g < n; g++) {
      for (let i = groups[g], last = Math.min(i + 4, end); i < last; i++) {
        // A NaN becomes 0x7E00 with the sign of the source (its high word's top bit).
        if ((dst[i] & 0x7fff) > 0x7c00) dst[i] = 0x7e00 | ((s[stride * i + stride - 1] >>> 16) & 0x8000);
      }
    }
  }
}

/** float16 -> float32 (stride 1) or float64 (stride 2), one block at a time; `nan` is the NaN's high word. */
function fromF16(src: Uint16Array, dst: Float32Array | Float64Array, stride: number, nan: number, count: number, block: number): void {
  if (count === 0) return;
  const h = f16Of(src, count);
  const d = u32View(dst);
  const { lead, pairs } = wordsOf16(src, count);
  const groups = groupScratch(Math.min(block, count));
  for (let start = 0; start < count; start += block) {
    const end = Math.min(start + block, count);
    dst.set(h.subarray(start, end), start);
    const n = nanGroups(src, pairs, lead, start, end, groups);
    for (let g = 0; g < n; g++) {
      for (let i = groups[g], last = Math.min(i + 4, end); i < last; i++) {
        const c = src[i];
        if ((c & 0x7fff) > 0x7c00) {
          if (stride === 2) d[2 * i] = 0;
          d[stride * i + stride - 1] = nan | ((c & 0x8000) << 16);
        }
      }
    }
  }
}
