/**
 * tensorcast: every ONNX data type, and Cast / CastLike exactly as ONNX defines them.
 * This module only re-exports; each name lives in the file that says what it holds.
 */
export { TensorcastError, type ErrorCode } from "./errors.js";
export {
  dtype, DTYPES,
  type DType, type DTypeName, type DTypeKind, type DTypeLike, type StorageMap, type StorageOf, type Storage,
} from "./dtype/table.js";
export type { FloatFormat, NanEncoding, OverflowRule, RoundMode } from "./dtype/minifloat.js";
// The building blocks below check their arguments here (src/checked.ts); the kernels call them unchecked.
export {
  decodeFloat, encodeFloat, encodeE8M0, nanCode, isNegativeCode, overflowThreshold, roundsPastMax, packedByteLength, isCodedFloat,
  bitFields, elementCode, readElement, formatHex, formatBinary, splitBits, formatError, parseValue,
  storeValue, changedByStoring, roundingError, classifyCast,
} from "./checked.js";
export { Tensor, type ValueOf, type InputOf, type Float16ArrayLike, type Float16ArrayOf } from "./tensor.js";
export { cast, castInto, castLike, type CastOptions } from "./ops/cast.js";
export { createArena, type Arena } from "./arena.js";
export { reshape, reshapeVersion, LATEST_RESHAPE, type ReshapeOptions, type ShapeLike } from "./ops/reshape.js";
export { bitcast, type BitcastOptions, type BitcastSemantics } from "./ops/bitcast.js";
export {
  promoteTypes, convertPromoteTypes, openvinoTypeName, PROMOTE_TYPES, PROMOTION_ERRORS, PROMOTION_ERROR_CODE,
  type PromoteOptions, type ConvertPromoteOptions, type PromotedType, type PromoteTypeLike, type PromoteTypeName, type OvTypeName,
} from "./ops/promote.js";
export type { StringFormat } from "./ops/strings.js";
export {
  CAST_VERSIONS, CASTLIKE_VERSIONS, RESHAPE_VERSIONS, LATEST_OPSET, operatorVersion,
  type OperatorVersion, type OperatorName,
} from "./ops/opsets.js";
export { decodeTensorProto, retag, type NamedTensor, type TensorProtoOptions } from "./io/onnx/tensorproto.js";
export {
  decodeModel, opsetVersion, findAttribute, attributeNumber,
  type OnnxModel, type OnnxGraph, type OnnxNode, type OnnxAttribute, type OpsetImport, type ValueInfo, type ModelOptions,
} from "./io/onnx/model.js";
export { runModel } from "./io/onnx/run.js";
export {
  encodeTensorProto, encodeModel,
  type TensorLayout, type EncodeTensorOptions, type EncodeModelOptions,
} from "./io/onnx/encode.js";
// What a cast does to one typed-in value, as `tensorcast cast` and the playground show it.
export { VALUE_SYNTAX, type InputValue } from "./explain/value.js";
export { formatNumber } from "./explain/format.js";
export type { BitFields, BitField, Element } from "./explain/element.js";
export type { CastFlag } from "./explain/outcome.js";
// Tensors of the runtimes users already hold, duck-typed (neither package is imported).
export {
  fromOrt, toOrt, ORT_TYPES,
  type OrtTypeName, type OrtData, type OrtTensorData, type OrtTensorLike, type OrtTensorConstructor,
} from "./interop/ort.js";
export { fromTfjs, toTfjs, TFJS_DTYPES, type TfjsDType, type TfjsTensorLike, type TfjsData } from "./interop/tfjs.js";
// QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear (the arithmetic itself: src/kernels/quant/).
export {
  quantizeLinear, dequantizeLinear, dynamicQuantizeLinear, quantizeLinearInto, dequantizeLinearInto,
  type QuantizeOptions, type DequantizeOptions, type DynamicQuantizeOptions, type DynamicQuantized,
} from "./ops/quantize.js";
export {
  QUANTIZELINEAR_VERSIONS, DEQUANTIZELINEAR_VERSIONS, DYNAMICQUANTIZELINEAR_VERSIONS, quantizeOperatorVersion,
  type QuantizeOperatorVersion, type QuantizeOperatorName,
} from "./ops/opsets.js";
// GGML's block types (llama.cpp's GGUF tensors), each decoded bit for bit as ggml's C code.
export {
  GGML_TYPES, REMOVED_GGML_TYPES, ggmlType, ggmlTypeOfId, dequantizeGgml,
  type GgmlType, type GgmlTypeName, type GgmlField, type GgmlFieldKind,
} from "./ggml/index.js";
