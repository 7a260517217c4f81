/**
 * `quantizeModel`: the model variants transformers.js and onnxruntime-web load (model_q4.onnx,
 * model_fp16.onnx, ...), made in memory with no Node built-ins, each as onnxruntime 1.30's Python
 * quantizers write it (the modes' files hold the rules and where they come from).
 */
import { TensorcastError } from "../../../errors.js";
import { describe, expectBytes, expectObject, expectOptions } from "../../../args.js";
import { validateMessage } from "../validate.js";
import { PbMessage } from "../precision/pb.js";
import { bodiesOf } from "../precision/graph.js";
import { convertModelPrecision, type KeptNode } from "../precision/model.js";
import { matMulWeightPass, nBitsRule } from "./matmul-nbits.js";
import { bnb4Rule } from "./matmul-bnb4.js";
import { matMulNBitsToFloat16 } from "./q4f16.js";
import { dynamicPass } from "./dynamic.js";
import type { LeftFloat, QuantizeReport } from "./report.js";
import { IN_MEMORY, type QuantizeStorage } from "./storage.js";
import type { ExternalTensorHook } from "../precision/tensors.js";

export type { LeftFloat } from "./report.js";

/** The variants, named as transformers.js' dtype names them (q8's file is model_quantized.onnx). */
export const QUANTIZE_MODES = ["fp16", "q8", "int8", "uint8", "q4", "q4f16", "bnb4"] as const;
export type QuantizeMode = (typeof QUANTIZE_MODES)[number];

/**
 * What `quantizeModel` makes; only `mode` is required.
 * @example { mode: "q4", blockSize: 128, symmetric: false }
 */
export interface QuantizeOptions {
  mode: QuantizeMode;
  /** q4 / q4f16: rows per block; bnb4: elements per block; a power of two of at least 16 (default 32, bnb4 64). */
  blockSize?: number;
  /** q4 / q4f16: no zero points (default true; false is `--asymmetric`). */
  symmetric?: boolean;
  /** q4 / q4f16: MatMulNBits' accuracy_level, 0..4 (default 0: not written). */
  accuracyLevel?: number;
  /** bnb4: "nf4" (default) or "fp4". */
  quantType?: "nf4" | "fp4";
  /** int8 / uint8 / q8: one scale per output channel of each weight (default false: per tensor). */
  perChannel?: boolean;
  /** Quantize a model that already holds quantized operators. */
  forceRequantize?: boolean;
}

/**
 * The quantized model and what was done.
 * @example quantizeModel(bytes, { mode: "q4" }).quantized  // 3 for three MatMuls
 */
export interface QuantizeResult {
  /** The ModelProto written. */
  bytes: Uint8Array;
  mode: QuantizeMode;
  /** Nodes replaced by quantized forms (fp16: tensors converted). */
  quantized: number;
  /** Candidate nodes left float, with the reason. */
  left: LeftFloat[];
}

/** Operators that mark a model as quantized already. */
const QUANTIZED_OPS = new Set([
  "MatMulNBits", "MatMulBnb4", "QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear", "MatMulInteger", "ConvInteger",
  "QLinearMatMul", "QLinearConv", "DynamicQuantizeMatMul", "GatherBlockQuantized",
]);

/**
 * Makes one variant of a serialized float32 ModelProto.
 *
 * @example quantizeModel(bytes, { mode: "q4" }).bytes  // model_q4.onnx, byte for byte as onnxruntime writes it
 * @throws TensorcastError INVALID_ATTRIBUTE for a bad option (a block size that is not a power of
 *         two of at least 16); INVALID_DATA for a malformed model or one already quantized
 *         (unless `forceRequantize`); NOT_IMPLEMENTED for a mode not made yet.
 */
export function quantizeModel(bytes: Uint8Array, opts: QuantizeOptions): QuantizeResult {
  return quantizeModelWith(bytes, opts, IN_MEMORY);
}

/**
 * quantizeModel with the weights and the new tensors reached through `storage` (see storage.ts):
 * the Node streamed quantizer's entry.
 * @example quantizeModelWith(skeleton, { mode: "q4" }, streamedStorage).bytes  // the skeleton, quantized
 */
export function quantizeModelWith(bytes: Uint8Array, opts: QuantizeOptions, storage: QuantizeStorage): QuantizeResult {
  expectBytes(bytes, "quantizeModel's input");
  expectObject(opts, "quantizeModel's options", "INVALID_ATTRIBUTE");
  const isBool = (v: unknown): boolean => typeof v === "boolean";
  const isInt = (v: unknown): boolean => typeof v === "number" && Number.isInteger(v);
  expectOptions(opts, "quantizeModel", {
    mode: (v) => (QUANTIZE_MODES as readonly unknown[]).includes(v), blockSize: isInt, symmetric: isBool, accuracyLevel: isInt, perChannel: isBool, quantType: (v) => v === "nf4" || v === "fp4", forceRequantize: isBool,
  }, { mode: `one of ${QUANTIZE_MODES.join(", ")}`, blockSize: "an integer", symmetric: "a boolean", accuracyLevel: "an integer", perChannel: "a boolean", quantType: "\"nf4\" or \"fp4\"", forceRequantize: "a boolean" });
  const blockSize = opts.blockSize ?? 32;
  if (blockSize < 16 || (blockSize & (blockSize - 1)) !== 0 || blockSize > 1 << 30) {
    throw new TensorcastError("INVALID_ATTRIBUTE", `blockSize must be a power of two of at least 16 (16, 32, 64, 128, ...), got ${describe(opts.blockSize)}`);
  }
  const accuracyLevel = opts.accuracyLevel ?? 0;
  if (accuracyLevel < 0 || accuracyLevel > 4) {
    throw new TensorcastError("INVALID_ATTRIBUTE", `accuracyLevel must be 0, 1, 2, 3 or 4 (MatMulNBits' accuracy_level), got ${describe(opts.accuracyLevel)}`);
  }
  validateMessage("ModelProto", bytes);
  const mode = opts.mode;
  if (mode === "fp16") {
    let streamed = 0;
    const external: ExternalTensorHook | undefined = storage.external && ((...a) => (streamed++, storage.external!(...a)));
    const r = convertModelPrecision(bytes, { to: "float16", keepIoTypes: true, external });
    return { bytes: r.bytes, mode, quantized: r.tensors.length + streamed, left: keptFloat32(r.kept) };
  }
  const model = PbMessage.parse(bytes, "ModelProto");
  const graph = model.sub(7, "GraphProto");
  if (!graph) throw new TensorcastError("INVALID_DATA", "ModelProto has no graph");
  if (!opts.forceRequantize) {
    const op = findQuantizedOp(graph);
    if (op) throw new TensorcastError("INVALID_DATA", `the model is quantized already (it holds ${op}); pass forceRequantize (--force-requantize) to quantize it again`);
  }
  const report: QuantizeReport = { quantized: 0, left: [] };
  if (mode === "q4" || mode === "q4f16") {
    matMulWeightPass(model, graph, nBitsRule({ blockSize, symmetric: opts.symmetric ?? true, accuracyLevel }), report, storage);
  } else if (mode === "bnb4") {
    matMulWeightPass(model, graph, bnb4Rule(opts.blockSize ?? 64, opts.quantType ?? "nf4"), report, storage);
  } else if (mode === "int8" || mode === "uint8" || mode === "q8") {
    const weightType = mode === "q8" ? (hasOp(graph, Q8_UINT8_OPS) ? "uint8" : "int8") : mode;
    dynamicPass(model, graph, { weightType, perChannel: opts.perChannel === true }, report, storage);
  } else {
    throw new TensorcastError("NOT_IMPLEMENTED", `quantizeModel: mode ${mode} is not implemented yet`);
  }
  let out = model.encode(bytes.length + 4096);
  if (mode === "q4f16") {
    const half = convertModelPrecision(out, { to: "float16", keepIoTypes: true, external: storage.external });
    out = matMulNBitsToFloat16(half.bytes, half.opsetAfter, storage.readExternal, half.widenedHalf).bytes;
    // matMulNBitsToFloat16 makes every MatMulNBits the precision pass kept compute in float16.
    report.left.push(...keptFloat32(half.kept.filter((k) => k.opType !== "MatMulNBits")));
  }
  return { bytes: out, mode, quantized: report.quantized, left: report.left };
}

/**
 * The nodes the float16 pass keeps in float32 (the block list, other domains, types an operator
 * does not allow in float16), as the summary's nodes left float: fp16 and q4f16 list them as the
 * other modes list what they do not quantize.
 */
function keptFloat32(kept: readonly KeptNode[]): LeftFloat[] {
  return kept.map((k) => ({
    node: k.name || `(${k.opType} in graph ${k.graph})`,
    opType: k.opType,
    reason: `kept in float32: ${k.reason}`,
  }));
}

/**
 * q8 stores uint8 weights when the model holds one of these: onnxruntime-web's kernels for them
 * take uint8 only (transformers.js' scripts/quantize.py makes the same choice).
 */
const Q8_UINT8_OPS = new Set(["Conv", "GroupQueryAttention", "MultiHeadAttention"]);

function findQuantizedOp(g: PbMessage): string | undefined {
  return hasOp(g, QUANTIZED_OPS);
}

/** The first operator of `ops` in `g` or its bodies. */
function hasOp(g: PbMessage, ops: ReadonlySet<string>): string | undefined {
  for (const n of g.subs(1, "NodeProto")) {
    if (ops.has(n.string(4))) return n.string(4);
    for (const b of bodiesOf(n)) {
      const op = hasOp(b, ops);
      if (op) return op;
    }
  }
  return undefined;
}
