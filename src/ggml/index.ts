/**
 * GGML's tensor types: the table (types.ts), one reference decoder per type (dequantize.ts) and the
 * WebAssembly SIMD decoders that run before them where a type has one (simd.ts).
 * This module only re-exports.
 */
export {
  GGML_TYPES, REMOVED_GGML_TYPES, GGML_TYPE_COUNT, QK_K, ggmlType, ggmlTypeOfId, ggmlRowBytes,
  type GgmlType, type GgmlTypeName, type GgmlField, type GgmlFieldKind,
} from "./types.js";
export { dequantizeGgml, dequantizeBlocks, canDequantize, IQ4_NL_LEVELS, GGML_FP4_DOUBLED } from "./dequantize.js";
export { quantizeRows, quantizeRowsInto, canQuantize, quantizableTypes } from "./quantize/index.js";
