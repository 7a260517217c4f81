/**
 * Quantization's arithmetic, once: the scale layout (per-tensor, per-axis, blocked), the exact
 * QuantizeLinear / DequantizeLinear kernels, and the scale-selection rules. The operators
 * (src/ops/quantize.ts) and the model and checkpoint quantizers build on these.
 */
export {
  type QuantLayout, tensorLayout, axisLayout, blockLayout, blockedScaleShape, scaleIndices, scaleIndexOf, rowBandLayout,
} from "./layout.js";
export {
  type PrecisionName, precisionRounder, roundHalfEven, decodeExact, encodeExact, subStorage,
} from "./arithmetic.js";
export {
  CHUNK, type ScaledArgs, type QuantizeArgs, type DequantizeArgs, type Operands, decodeOperands, quantizeLinearKernel, dequantizeLinearKernel,
} from "./kernels.js";
export {
  groupMinMax, groupAbsMax, type DynamicParams, dynamicQuantizeParams, rangeParams, symmetricScale, mxScaleCode, mxElementEmax, e8m0Value,
  fp8BlockScale, fp8InverseScale, ue8m0InverseScaleCode,
} from "./scales.js";
export {
  type Fp8ScaleFormat, type Fp8Quantized, type Mxfp4Quantized, FP8_MAX, MX_BLOCK, storageOfBytes, transposeMatrices, transposeMatricesInto,
  fp8BlockRefusal, fp8QuantizeBand, fp8BlockQuantize, checkScales, fp8BlockDequantize, mxfp4Refusal, mxfp4Quantize, mxfp4Dequantize, dequantizeBlocks,
} from "./checkpoint.js";
export {
  NV_BLOCK, nvfp4Refusal, nvfp4AbsMax, nvfp4GlobalScale, nvfp4QuantizeRows, nvfp4DequantizeRows,
} from "./nvfp4.js";
