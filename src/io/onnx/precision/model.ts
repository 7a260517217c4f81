/**
 * `convertModelPrecision`: a float32 ONNX model in float16 / bfloat16 (the whole graph, graph.ts),
 * or with its float32 weights stored in a smaller type and cast back where they are read
 * (weights only: any float target, and the only mode for float8, int4 and float4 targets).
 */
import { expectBytes, expectObject, expectOptions } from "../../../args.js";
import { checkGraphs } from "../graph-check.js";
import { TensorcastError } from "../../../errors.js";
import { dtype, type DType, type DTypeLike } from "../../../dtype/table.js";
import { validateMessage } from "../validate.js";
import { bodiesOf, convertGraphPrecision, DEFAULT_BLOCKED_OPS, nodeOf, type KeptNode } from "./graph.js";
import { PbMessage, utf8Bytes } from "./pb.js";
import type { ConvertedTensor, ExternalTensorHook } from "./tensors.js";
import { storeWeights, unshadow } from "./weights.js";

export { DEFAULT_BLOCKED_OPS, type KeptNode } from "./graph.js";
export type { ConvertedTensor, ExternalTensorHook } from "./tensors.js";

/**
 * What `convertModelPrecision` does; only `to` is required.
 * @example { to: "float16", keepIoTypes: true, blockOps: [...DEFAULT_BLOCKED_OPS, "Softmax"] }
 */
export interface PrecisionOptions {
  /** float16 or bfloat16 for the whole graph; with `weightsOnly` any float, int4 or uint4 type. */
  to: DTypeLike;
  /** Store the float32 initializers as `to` with a Cast back to float32 after each; the graph computes as before. Implied for targets other than float16 and bfloat16. */
  weightsOnly?: boolean;
  /** Whole graph: keep float32 graph inputs and outputs (Casts at the boundary). */
  keepIoTypes?: boolean;
  /** Whole graph: operators kept in float32 (default DEFAULT_BLOCKED_OPS). */
  blockOps?: readonly string[];
  /** float8 targets: out-of-range values become +/-max (default true) or NaN / Inf. */
  saturate?: boolean;
  /** Converts the tensors whose data is external (see TensorCastOptions.external); without it they are refused. */
  external?: ExternalTensorHook;
}

/**
 * The converted model and what was done to it.
 * @example const r = convertModelPrecision(bytes, { to: "float8e4m3fn" }); [r.mode, r.opsetAfter]  // ["weights", 19]
 */
export interface PrecisionResult {
  /** The converted ModelProto. */
  bytes: Uint8Array;
  mode: "graph" | "weights";
  tensors: ConvertedTensor[];
  /** Whole graph: nodes left in float32. */
  kept: KeptNode[];
  castsInserted: number;
  /** Whole graph: the outputs of the Casts it inserted from float16 to float32 (before nodes kept in float32). */
  widenedHalf?: string[];
  /** The default domain's opset before and after (raised for weights stored as float8 / int4 / float4). */
  opsetBefore: number;
  opsetAfter: number;
}

/** The Cast version that first reads each storage type, and the IR version that first has it. */
const STORAGE_NEEDS: Partial<Record<string, { opset: number; ir: number }>> = {
  bfloat16: { opset: 13, ir: 4 },
  float8e4m3fn: { opset: 19, ir: 9 },
  float8e4m3fnuz: { opset: 19, ir: 9 },
  float8e5m2: { opset: 19, ir: 9 },
  float8e5m2fnuz: { opset: 19, ir: 9 },
  int4: { opset: 21, ir: 10 },
  uint4: { opset: 21, ir: 10 },
  float4e2m1: { opset: 23, ir: 11 },
};

/**
 * Reduce operators whose `axes` became an input at opset 18; raising a model past 17 moves the
 * attribute into an int64 initializer. Every other operator used at opset 13..17 keeps its meaning
 * at 19..23 (later versions only add types or optional inputs and attributes).
 */
const AXES_TO_INPUT_AT_18 = new Set([
  "ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceMax", "ReduceMean", "ReduceMin", "ReduceProd", "ReduceSumSquare",
]);

/**
 * Whether a conversion to `to` stores the weights only (cast back to float32 where read) rather
 * than converting the graph: when asked, and for every target but float16 and bfloat16, which are
 * the only types a graph computes in. `keepIoTypes` and `blockOps` mean nothing then.
 * @example storesWeightsOnly(dtype("float8e4m3fn")) // true
 */
export function storesWeightsOnly(to: DType, weightsOnly = false): boolean {
  return weightsOnly || (to.name !== "float16" && to.name !== "bfloat16");
}

/**
 * Converts a serialized float32 ModelProto. Fields the pass does not touch are written back as
 * they were read.
 *
 * @example convertModelPrecision(bytes, { to: "float16" }).kept  // [] for an MLP
 * @throws TensorcastError INVALID_DATA for a malformed model; UNSUPPORTED_TYPE for a target the
 *         mode cannot use; NOT_IMPLEMENTED for external data without `external`, or an opset
 *         below 13 that must be raised.
 */
export function convertModelPrecision(bytes: Uint8Array, opts: PrecisionOptions): PrecisionResult {
  expectBytes(bytes, "convertModelPrecision's input");
  expectObject(opts, "convertModelPrecision's options", "INVALID_ATTRIBUTE");
  const isBool = (v: unknown): boolean => typeof v === "boolean";
  expectOptions(opts, "convertModelPrecision", {
    to: () => true, weightsOnly: isBool, keepIoTypes: isBool, saturate: isBool,
    blockOps: (v) => Array.isArray(v) && v.every((s) => typeof s === "string"), external: (v) => typeof v === "function",
  }, { weightsOnly: "a boolean", keepIoTypes: "a boolean", saturate: "a boolean", blockOps: "an array of operator names", external: "a function" });
  const to = dtype(opts.to);
  const weightsOnly = storesWeightsOnly(to, opts.weightsOnly);
  if (weightsOnly ? !STORAGE_NEEDS[to.name] && to.name !== "float16" : false) {
    throw new TensorcastError(
      "UNSUPPORTED_TYPE",
      `weights cannot be stored as ${to.name}: a Cast must read them back; the types allowed are float16, bfloat16, float8e4m3fn, float8e4m3fnuz, float8e5m2, float8e5m2fnuz, int4, uint4, float4e2m1`,
    );
  }
  validateMessage("ModelProto", bytes);
  const model = PbMessage.parse(bytes, "ModelProto");
  // A model onnx.checker refuses is refused, not converted into one as invalid (or worse).
  checkGraphs(model);
  const opsets = model.subs(8, "OperatorSetIdProto");
  const main = opsets.find((o) => o.string(1) === "" || o.string(1) === "ai.onnx");
  const opsetBefore = main ? Number(main.varint(2) ?? 0n) : 0;
  if (!main) throw new TensorcastError("INVALID_DATA", "the model imports no default-domain opset (opset_import with domain \"\")");
  const saturate = opts.saturate ?? true;
  const result: PrecisionResult = { bytes, mode: weightsOnly ? "weights" : "graph", tensors: [], kept: [], castsInserted: 0, opsetBefore, opsetAfter: opsetBefore };
  const needs = STORAGE_NEEDS[to.name];
  if (needs && opsetBefore < needs.opset) {
    if (!weightsOnly) {
      throw new TensorcastError("NOT_IMPLEMENTED", `converting the graph to ${to.name} needs opset ${needs.opset} or later (Cast to ${to.name}); the model's is ${opsetBefore}`);
    }
    raiseOpset(model, main, opsetBefore, needs.opset);
    result.opsetAfter = needs.opset;
  }
  if (needs) {
    const ir = Number(model.varint(1) ?? 0n);
    if (ir < needs.ir) model.setVarint(1, needs.ir);
  }
  const graph = model.sub(7, "GraphProto");
  if (!graph) throw new TensorcastError("INVALID_DATA", "ModelProto has no graph");
  unshadow(graph);
  if (weightsOnly) {
    result.castsInserted = storeWeights(graph, { to, saturate, external: opts.external }, result.tensors, result.opsetAfter);
  } else {
    const report = convertGraphPrecision(model, result.opsetAfter, {
      to, saturate, external: opts.external, keepIoTypes: opts.keepIoTypes === true, blockOps: new Set(opts.blockOps ?? DEFAULT_BLOCKED_OPS),
    });
    result.tensors = report.tensors;
    result.kept = report.kept;
    result.castsInserted = report.castsInserted;
    result.widenedHalf = report.widenedHalf;
  }
  result.bytes = model.encode(bytes.length + 4096);
  return result;
}

function raiseOpset(model: PbMessage, main: PbMessage, from: number, to: number): void {
  if (from < 13) {
    throw new TensorcastError(
      "NOT_IMPLEMENTED",
      `storing weights in this type needs opset ${to} or later and the model's is ${from}; tensorcast raises opsets from 13 up only ` +
        "(Squeeze, Split, Softmax and others changed meaning at 13): convert the model with onnx.version_converter first",
    );
  }
  if (from < 18) {
    const graph = model.sub(7, "GraphProto");
    if (graph) moveReduceAxes(graph, model);
  }
  main.setVarint(2, to);
}

/** Reduce*-13 `axes` attributes become the int64 `axes` input of Reduce*-18. */
function moveReduceAxes(g: PbMessage, model: PbMessage): void {
  let counter = 0;
  for (const nodeField of g.all(1)) {
    const n = nodeOf(g, nodeField);
    for (const b of bodiesOf(n)) moveReduceAxes(b, model);
    const domain = n.string(7);
    if ((domain !== "" && domain !== "ai.onnx") || !AXES_TO_INPUT_AT_18.has(n.string(4))) continue;
    const attrFields = n.all(5);
    const index = attrFields.findIndex((f) => n.message(f, "AttributeProto").string(1) === "axes");
    if (index < 0) continue;
    nodeField.msg = n;
    const axes = n.message(attrFields[index], "AttributeProto").varints(8);
    const name = `${n.string(3) || n.strings(2)[0]}__axes_${counter++}`;
    const tensor = new PbMessage([], "TensorProto").addVarint(1, axes.length).addVarint(2, 7).addString(8, name);
    const raw = new Uint8Array(8 * axes.length);
    const view = new DataView(raw.buffer);
    axes.forEach((a, k) => view.setBigInt64(8 * k, a, true));
    tensor.fields.push({ no: 9, wire: 2, data: raw });
    g.addMessage(5, tensor);
    n.fields = n.fields.filter((f) => f !== attrFields[index]);
    const inputs = n.strings(1);
    if (inputs.length === 0) throw new TensorcastError("INVALID_DATA", `${n.string(4)} node ${JSON.stringify(n.string(3))} has no input`);
    // The axes input goes second: after the data, before anything else.
    const at = n.fields.findIndex((f) => f.no === 1);
    n.fields.splice(at + 1, 0, { no: 1, wire: 2, data: utf8Bytes(name) });
  }
}
