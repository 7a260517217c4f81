/**
 * The bnb4 variant, as onnxruntime's MatMulBnb4Quantizer makes it: B (a 2-D float32 [K, N]) is
 * transposed to [N, K], flattened and quantized in blocks (src/kernels/quant/bnb4.ts) into
 * `B_Bnb4` (1-D uint8, ceil(K * N / 2) bytes) and `B_absmax` (1-D float32, one per block); the
 * MatMul becomes com.microsoft MatMulBnb4 with K, N, block_size and quant_type (the graph edits
 * are matMulWeightPass's).
 */
import { BNB4_QUANT_TYPE, quantizeBnb4, type Bnb4Type } from "../../../kernels/quant/bnb4.js";
import { float32Bytes, intAttribute } from "./edit.js";
import type { WeightRule } from "./matmul-nbits.js";

/** MatMulBnb4Quantizer's rule for blocks of `blockSize` of type `type`. */
export function bnb4Rule(blockSize: number, type: Bnb4Type): WeightRule {
  return {
    opType: "MatMulBnb4",
    nameSuffix: "_Bnb4",
    acceptsFloat16: false,
    quantize(t, b, store) {
      const [k, n] = t.shape;
      const w = t.data as Float32Array;
      const transposed = transpose(w, k, n);
      const q = quantizeBnb4(transposed, blockSize, type);
      return {
        tensors: [store(`${b}_Bnb4`, 2, [q.packed.length], q.packed), store(`${b}_absmax`, 1, [q.absmax.length], float32Bytes(q.absmax))],
        attributes: [intAttribute("K", k), intAttribute("N", n), intAttribute("block_size", blockSize), intAttribute("quant_type", BNB4_QUANT_TYPE[type])],
      };
    },
  };
}

/** Tiles of TILE x TILE: a whole-row transpose wrote every element a row of K floats apart, a cache miss each (7 s of 11 on 512 MiB). */
const TILE = 64;

/** The row-major [k, n] `w` as row-major [n, k]. */
function transpose(w: Float32Array, k: number, n: number): Float32Array {
  const out = new Float32Array(k * n);
  for (let r0 = 0; r0 < k; r0 += TILE) {
    const r1 = Math.min(r0 + TILE, k);
    for (let c0 = 0; c0 < n; c0 += TILE) {
      const c1 = Math.min(c0 + TILE, n);
      for (let r = r0; r < r1; r++) for (let c = c0; c < c1; c++) out[c * k + r] = w[r * n + c];
    }
  }
  return out;
}
