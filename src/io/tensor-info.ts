/**
 * What a tensor file's header says of one tensor, whatever the format, and how many bytes its
 * elements take in the raw layout the readers hand out.
 */
import { TensorcastError } from "../errors.js";
import type { DType } from "../dtype/table.js";
import { packedByteLength } from "../dtype/packing.js";

/** A tensor's description, as a header gives it. */
export interface TensorInfo {
  readonly name: string;
  readonly dtype: DType;
  readonly shape: readonly number[];
  /** Number of elements: the product of the shape. */
  readonly size: number;
  /** Bytes of its data in the raw layout (see `rawByteLength`). */
  readonly byteLength: number;
}

/**
 * Bytes that `size` elements of `t` take in the raw layout: packed for sub-byte types, pairs for
 * complex. Strings have no raw layout.
 * @throws TensorcastError UNSUPPORTED_TYPE for strings.
 */
export function rawByteLength(t: DType, size: number): number {
  if (t.kind === "string") throw new TensorcastError("UNSUPPORTED_TYPE", "string tensors have no raw byte layout");
  if (t.packed) return packedByteLength(size, t.bits);
  return (size * t.bits) / 8;
}
