/**
 * Inputs for the castAsync tests in Node and in the browser page (browser-safe: no Node built-ins):
 * random tensors of any numeric type, and the option sets worth trying per target; every code of
 * a type (bytes, or a tensor) and random bit patterns, for the arena and exhaustive tests.
 */
import type { Arena } from "../../src/arena.js";
import type { CastOptions } from "../../src/ops/cast.js";
import type { DType, Storage } from "../../src/dtype/table.js";
import { storageLength, Tensor, TYPED_ARRAYS } from "../../src/tensor.js";
import { Rng } from "./rng.js";

/**
 * A tensor of `size` random elements of `t`: every bit pattern (NaN payloads included), bool 0 / 1,
 * and for float32 / float64 every other element moderate (around the float8 / float16 ranges), on
 * a SharedArrayBuffer when `shared`.
 */
export function randomTensor(t: DType, size: number, seed: number, shared = false): Tensor {
  const rng = new Rng(seed);
  const length = storageLength(t, size);
  const ctor = TYPED_ARRAYS[t.array as Exclude<DType["array"], "Array">];
  const bytes = length * ctor.BYTES_PER_ELEMENT;
  const buffer = shared ? new SharedArrayBuffer(bytes) : new ArrayBuffer(bytes);
  const u8 = new Uint8Array(buffer);
  for (let i = 0; i < bytes; i++) u8[i] = rng.u32() & (t.kind === "bool" ? 1 : 0xff);
  if (t.array === "Float32Array" || t.array === "Float64Array") {
    const f = t.array === "Float32Array" ? new Float32Array(buffer) : new Float64Array(buffer);
    for (let i = 0; i < f.length; i += 2) f[i] = ((rng.u32() / 2 ** 32) * 2 - 1) * 2 ** (rng.below(40) - 20);
  }
  return Tensor.fromStorage(new ctor(buffer, 0, length) as never, t, [size]);
}

/** The option sets worth trying for a target: saturate both ways for small floats, every e8m0 round mode. */
export function optionSets(to: DType): CastOptions[] {
  if (to.name === "float8e8m0") return (["up", "down", "nearest"] as const).flatMap((roundMode) => [{ roundMode }, { roundMode, saturate: false }]);
  if (to.format && to.bits <= 8) return [{}, { saturate: false }];
  return [{}];
}

/** The bytes of a numeric storage, sharing its memory. @example storageBytes(new Uint16Array(2)).length // 4 */
export function storageBytes(a: Storage): Uint8Array {
  const t = a as Exclude<Storage, string[]>;
  return new Uint8Array(t.buffer, t.byteOffset, t.byteLength);
}

/** Every code of an 8- or 16-bit type, in code order, as little-endian bytes. @example everyCodeBytes(8)[255] // 255 */
export function everyCodeBytes(bits: 8 | 16): Uint8Array {
  const codes = bits === 8 ? new Uint8Array(256) : new Uint16Array(65536);
  for (let i = 0; i < codes.length; i++) codes[i] = i;
  return storageBytes(codes);
}

/**
 * A tensor of every code of a type of 16 bits or fewer, in code order; packed types low bits first,
 * packed here bit by bit (independent of src/dtype/packing.ts, which the tests check).
 * @example everyCodeTensor(dtype("int4")).bytes() // 8 bytes: 0x10, 0x32, ... 0xfe
 */
export function everyCodeTensor(t: DType): Tensor {
  const n = 2 ** t.bits;
  const bytes = new Uint8Array(Math.ceil((n * t.bits) / 8));
  if (t.bits === 8 || t.bits === 16) bytes.set(everyCodeBytes(t.bits));
  else {
    for (let c = 0; c < n; c++) {
      for (let b = 0; b < t.bits; b++) if ((c >> b) & 1) bytes[(c * t.bits + b) >> 3] |= 1 << ((c * t.bits + b) & 7);
    }
  }
  return Tensor.fromBytes(bytes, t, [n]);
}

/**
 * `n` elements of `t` as random bit patterns; for float32 and float64 half of them with exponents
 * where the narrowing casts round (rather than overflow or flush).
 * @example randomPatterns(dtype("float32"), 1024, new Rng(1)).length // 4096
 */
export function randomPatterns(t: DType, n: number, rng: Rng): Uint8Array {
  const words = new Uint32Array(Math.ceil((n * t.bits) / 32));
  for (let i = 0; i < words.length; i++) words[i] = rng.u32();
  if (t.name === "float32") {
    for (let i = 0; i < n; i += 2) words[i] = (words[i]! & 0x807fffff) | ((96 + rng.below(64)) << 23);
  } else if (t.name === "float64") {
    for (let i = 1; i < 2 * n; i += 4) words[i] = (words[i]! & 0x800fffff) | ((1023 - 160 + rng.below(300)) << 20);
  }
  return new Uint8Array(words.buffer, 0, (n * t.bits) / 8);
}

/**
 * A view of `n` elements of `t`, `before` elements into a fresh tensor of `arena` with room for
 * `after` more (a view a user made, at any offset), every byte of it `fill` (else zero). `start`
 * and `end` are the view's byte range in `whole`.
 * @example const o = arenaView(arena, dtype("float16"), 10, 65, 63, 0xa5); castInto(x, o.view); writtenOutside(o, 0xa5) // undefined
 */
export function arenaView(arena: Arena, t: DType, n: number, before: number, after = before, fill?: number): { view: Tensor; whole: Uint8Array; start: number; end: number } {
  const per = t.bits / 8;
  const whole = arena.zeros("uint8", [(n + before + after) * per]).data as Uint8Array;
  if (fill !== undefined) whole.fill(fill);
  const view = new TYPED_ARRAYS[t.array as keyof typeof TYPED_ARRAYS](whole.buffer, whole.byteOffset + before * per, n);
  return { view: Tensor.fromStorage(view as never, t, [n]), whole, start: before * per, end: (before + n) * per };
}

/** The first byte around an arenaView that is no longer `fill`, as an offset from the view's start (negative before it), or undefined. */
export function writtenOutside(v: { whole: Uint8Array; start: number; end: number }, fill: number): number | undefined {
  for (let i = 0; i < v.whole.length; i++) if ((i < v.start || i >= v.end) && v.whole[i] !== fill) return i - v.start;
  return undefined;
}
