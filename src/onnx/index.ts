/**
 * tensorcast/onnx: whole ONNX models converted in memory, with no Node built-ins (browsers, Bun,
 * Deno): the graph computing in float16 / bfloat16, or its weights stored as float8 / int4 /
 * float4 and cast back where they are read. A subpath of its own because the precision pass and
 * its operator schema table add about 9.8 kB gzipped, which pages that only cast tensors should
 * not carry. From Node, `convertModelFile` in tensorcast/node does the same file to file.
 *
 * @example
 * import { convertModelPrecision } from "tensorcast/onnx";
 * convertModelPrecision(bytes, { to: "float8e4m3fn" }).opsetAfter  // 19 for an opset-13 model
 */
export {
  convertModelPrecision, DEFAULT_BLOCKED_OPS,
  type PrecisionOptions, type PrecisionResult, type KeptNode, type ConvertedTensor,
} from "../io/onnx/precision/model.js";
export {
  quantizeModel, QUANTIZE_MODES, type QuantizeMode, type QuantizeOptions, type QuantizeResult, type LeftFloat,
} from "../io/onnx/quantize/model.js";
