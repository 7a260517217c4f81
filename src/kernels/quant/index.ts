/**
 * Quantization's arithmetic, once: the scale layout (per-tensor, per-axis, blocked), the exact
 * QuantizeLinear / DequantizeLinear kernels, and the scale-selection rules. The operators
 * (src/ops/quantize.ts) and the model and checkpoint quantizers build on these.
 */
export {
  type QuantLayout, tensorLayout, axisLayout, blockLayout, blockedScaleShape, scaleIndices, scaleIndexOf,
} from "./layout.js";
export {
  type PrecisionName, precisionRounder, roundHalfEven, decodeExact, encodeExact, subStorage,
} from "./arithmetic.js";
export {
  CHUNK, type ScaledArgs, type QuantizeArgs, type DequantizeArgs, type Operands, decodeOperands, quantizeLinearKernel, dequantizeLinearKernel,
} from "./kernels.js";
export {
  groupMinMax, groupAbsMax, type DynamicParams, dynamicQuantizeParams, rangeParams, symmetricScale, mxScaleCode, mxElementEmax, e8m0Value,
} from "./scales.js";
