/**
 * Inputs for the castAsync tests in Node and in the browser page (browser-safe: no Node built-ins):
 * random tensors of any numeric type, and the option sets worth trying per target.
 */
import type { CastOptions } from "../../src/ops/cast.js";
import type { DType } from "../../src/dtype/table.js";
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
