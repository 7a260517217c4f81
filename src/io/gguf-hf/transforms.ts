/**
 * What llama.cpp's converter did to a tensor's values, undone: the rotary interleave of Llama's
 * Q and K rows, and Gemma's norm weights, which llama.cpp stores with the +1 that transformers
 * adds at run time folded in.
 */
import { TensorcastError } from "../../errors.js";

export type TensorTransform =
  | { readonly kind: "identity" }
  /**
   * llama.cpp's `permute` interleaves each head's two rotary halves (row i of the first half and
   * row i of the second become rows 2i and 2i+1); this puts them back. `heads` is the number of
   * heads the rows hold: the query heads for Q, the key-value heads for K.
   */
  | { readonly kind: "unpermute-rotary"; readonly heads: number }
  /** Adds `delta` to every value in float32 (Gemma's norms: -1). */
  | { readonly kind: "offset"; readonly delta: number };

export const IDENTITY: TensorTransform = { kind: "identity" };

/**
 * The values of the transformers tensor from the GGUF tensor's dequantized float32 values
 * (row-major `shape`). Identity returns `values` itself; the others return a new array.
 *
 * Each output element is one input element moved, or `fround(x + delta)`: float32 addition, as
 * numpy's `weights - 1` on a float32 array (NaN stays NaN, +-Inf stays +-Inf).
 */
export function applyTransform(t: TensorTransform, shape: readonly number[], values: Float32Array): Float32Array {
  const n = shape.reduce((a, b) => a * b, 1);
  if (values.length !== n) {
    throw new TensorcastError("SHAPE_MISMATCH", `tensor of shape [${shape.join(", ")}] has ${values.length} values; ${n} expected`);
  }
  switch (t.kind) {
    case "identity":
      return values;
    case "offset": {
      const out = new Float32Array(n);
      for (let i = 0; i < n; i++) out[i] = values[i]! + t.delta;
      return out;
    }
    case "unpermute-rotary": {
      const rows = shape[0] ?? 1;
      const half = rotaryHalf(rows, t.heads, shape);
      const rowLen = shape.length > 1 ? n / rows : 1;
      const out = new Float32Array(n);
      // in row (h, i, j) of (heads, half, 2) goes to out row (h, j, i) of (heads, 2, half)
      for (let h = 0; h < t.heads; h++) {
        const base = h * 2 * half;
        for (let i = 0; i < half; i++) {
          for (let j = 0; j < 2; j++) {
            const src = (base + i * 2 + j) * rowLen;
            out.set(values.subarray(src, src + rowLen), (base + j * half + i) * rowLen);
          }
        }
      }
      return out;
    }
  }
}

/** Rows per rotary half of a head, or INVALID_DATA when the rows do not split into heads of two halves. */
export function rotaryHalf(rows: number, heads: number, shape: readonly number[]): number {
  if (!(Number.isInteger(heads) && heads > 0) || rows % (2 * heads) !== 0) {
    throw new TensorcastError(
      "INVALID_DATA",
      `a Q/K tensor of shape [${shape.join(", ")}] does not split into ${heads} heads of two rotary halves`,
    );
  }
  return rows / (2 * heads);
}
