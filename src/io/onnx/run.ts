/**
 * Runs the graph of a decoded ONNX model, for graphs made of the operators tensorcast implements:
 * Cast, CastLike, Reshape, BitCast, Constant, QuantizeLinear, DequantizeLinear and
 * DynamicQuantizeLinear, and the float32 operators of DynamicQuantizeLinear's function body
 * (run-function-body.ts) for the official `_expanded` cases. Nodes run in file order, which ONNX requires to be
 * topological; a value used before it is computed is an error, not a silent undefined.
 */
import { describe as describeValue } from "../../args.js";
import { TensorcastError } from "../../errors.js";
import { dtype, type DType } from "../../dtype/table.js";
import type { RoundMode } from "../../dtype/minifloat.js";
import { cast, castLike, type CastOptions } from "../../ops/cast.js";
import { reshape, type ReshapeOptions } from "../../ops/reshape.js";
import { bitcast } from "../../ops/bitcast.js";
import { dequantizeLinear, dynamicQuantizeLinear, quantizeLinear, type QuantizeOptions } from "../../ops/quantize.js";
import { expectTensor, type Tensor } from "../../tensor.js";
import { checkModel } from "./model-check.js";
import { FUNCTION_BODY_KERNELS } from "./run-function-body.js";
import { opsetVersion, type OnnxAttribute, type OnnxModel, type OnnxNode } from "./model.js";

/**
 * An operator the runner knows, given the node, its inputs and the model's default-domain opset;
 * it returns its output, or its outputs in order.
 */
type Kernel = (node: OnnxNode, inputs: readonly (Tensor | undefined)[], opset: number) => Tensor | readonly Tensor[];

const KERNELS = new Map<string, Kernel>([
  ["Cast", (node, [x], opset) => cast(required(node, x, 0), castTo(node, opset), castOptions(node, opset, ["to"]))],
  ["CastLike", (node, [x, like], opset) =>
    castLike(required(node, x, 0), required(node, like, 1), castOptions(node, opset, []))],
  ["Reshape", (node, [x, shape], opset) =>
    reshape(required(node, x, 0), reshapeShape(node, shape, opset), reshapeOptions(node, opset))],
  ["BitCast", (node, [x], opset) => bitcast(required(node, x, 0), bitcastTo(node), { semantics: "onnx", opset })],
  ["Constant", (node) => constantValue(node)],
  ["QuantizeLinear", (node, [x, scale, zeroPoint], opset) =>
    quantizeLinear(required(node, x, 0), required(node, scale, 1), zeroPoint, quantizeOptions(node, opset))],
  ["DequantizeLinear", (node, [x, scale, zeroPoint], opset) =>
    dequantizeLinear(required(node, x, 0), required(node, scale, 1), zeroPoint, quantizeOptions(node, opset))],
  ["DynamicQuantizeLinear", (node, [x], opset) => {
    noAttributes(node);
    const r = dynamicQuantizeLinear(required(node, x, 0), { opset });
    return [r.y, r.scale, r.zeroPoint];
  }],
  ...FUNCTION_BODY_KERNELS,
]);

/**
 * Runs `model` on `inputs` (in the order of the graph's non-initializer inputs, or by name) and
 * returns the graph's outputs in order.
 * @throws TensorcastError NOT_IMPLEMENTED for operators outside the list above, INVALID_DATA for a
 *         graph that uses a value before computing it, and every error of the operators themselves.
 */
export function runModel(model: OnnxModel, inputs: readonly Tensor[] | Readonly<Record<string, Tensor>>): Tensor[] {
  checkModel(model);
  if (typeof inputs !== "object" || inputs === null) {
    throw new TensorcastError("INVALID_DATA", `runModel's inputs must be an array of Tensors or an object of named Tensors, got ${describeValue(inputs)}`);
  }
  for (const [key, t] of Object.entries(inputs)) expectTensor(t, `runModel's input ${describeValue(key)}`);
  const g = model.graph;
  const opset = opsetVersion(model, "");
  if (opset === undefined) throw new TensorcastError("INVALID_DATA", "the model imports no default-domain (ai.onnx) opset");
  const values = new Map<string, Tensor>();
  for (const init of g.initializers) values.set(init.name, init.tensor);
  const fed = g.inputs.filter((v) => !values.has(v.name));
  if (Array.isArray(inputs)) {
    if (inputs.length !== fed.length) {
      throw new TensorcastError(
        "SHAPE_MISMATCH",
        `the graph has ${fed.length} inputs (${fed.map((v) => v.name).join(", ")}), got ${inputs.length} tensors`,
      );
    }
    fed.forEach((v, k) => values.set(v.name, inputs[k]));
  } else {
    const byName = inputs as Readonly<Record<string, Tensor>>;
    for (const v of fed) {
      const x = byName[v.name];
      if (!x) throw new TensorcastError("INVALID_DATA", `graph input "${v.name}" was not given`);
      values.set(v.name, x);
    }
  }
  for (const node of g.nodes) {
    if (node.domain !== "" && node.domain !== "ai.onnx") {
      throw new TensorcastError("NOT_IMPLEMENTED", `node ${describe(node)} is in domain "${node.domain}"; only ai.onnx operators run`);
    }
    const kernel = KERNELS.get(node.opType);
    if (!kernel) {
      throw new TensorcastError(
        "NOT_IMPLEMENTED",
        `operator ${node.opType} (${describe(node)}) is not implemented; the runner knows ${[...KERNELS.keys()].join(", ")}`,
      );
    }
    const args = node.inputs.map((name) => {
      if (name === "") return undefined;
      const x = values.get(name);
      if (!x) throw new TensorcastError("INVALID_DATA", `node ${describe(node)} uses "${name}" before any node computes it`);
      return x;
    });
    const result = kernel(node, args, opset);
    const outputs = Array.isArray(result) ? result : [result as Tensor];
    // An output named "" is one the graph does not use (ONNX's optional outputs).
    node.outputs.forEach((name, k) => name !== "" && k < outputs.length && values.set(name, outputs[k]));
  }
  return g.outputs.map((v) => {
    const y = values.get(v.name);
    if (!y) throw new TensorcastError("INVALID_DATA", `graph output "${v.name}" is never computed`);
    return y;
  });
}

function describe(node: OnnxNode): string {
  return node.name ? `"${node.name}"` : `${node.opType} -> ${node.outputs.join(", ")}`;
}

function required(node: OnnxNode, x: Tensor | undefined, index: number): Tensor {
  if (!x) throw new TensorcastError("INVALID_DATA", `${node.opType} ${describe(node)} is missing its input ${index}`);
  return x;
}

/** Cast's `to`: a STRING type name in Cast-1..5, an INT TensorProto.DataType from Cast-6 on. */
function castTo(node: OnnxNode, opset: number): DType | string {
  const to = node.attributes.find((a) => a.name === "to");
  if (!to) throw new TensorcastError("INVALID_ATTRIBUTE", `Cast ${describe(node)} has no \`to\` attribute`);
  if (opset < 6) {
    if (to.type !== "STRING") throw new TensorcastError("INVALID_ATTRIBUTE", `Cast-1 takes \`to\` as a STRING type name, got ${to.type}`);
    return to.value;
  }
  if (to.type !== "INT") throw new TensorcastError("INVALID_ATTRIBUTE", `Cast-6 and later take \`to\` as an INT, got ${to.type}`);
  return dtype(Number(to.value));
}

/** saturate (INT 0 or 1) and round_mode (STRING); any other attribute is an error. */
function castOptions(node: OnnxNode, opset: number, skip: readonly string[]): CastOptions {
  const opts: CastOptions = { opset };
  for (const a of node.attributes) {
    if (skip.includes(a.name)) continue;
    if (a.name === "saturate") {
      const v = intAttribute(node, a);
      // Only 0 and 1 mean anything; onnxruntime silently accepts other values.
      if (v !== 0n && v !== 1n) throw new TensorcastError("INVALID_ATTRIBUTE", `${node.opType} saturate must be 0 or 1, got ${v}`);
      opts.saturate = v === 1n;
    } else if (a.name === "round_mode") {
      if (a.type !== "STRING") throw new TensorcastError("INVALID_ATTRIBUTE", `${node.opType} round_mode must be a STRING, got ${a.type}`);
      opts.roundMode = a.value as RoundMode; // cast() names the allowed values when it is anything else
    } else {
      throw new TensorcastError("INVALID_ATTRIBUTE", `${node.opType} has no attribute ${a.name}`);
    }
  }
  return opts;
}

function intAttribute(node: OnnxNode, a: OnnxAttribute): bigint {
  if (a.type !== "INT") throw new TensorcastError("INVALID_ATTRIBUTE", `${node.opType} ${a.name} must be an INT, got ${a.type}`);
  return a.value;
}

/** Constant's `value` (a TENSOR); the scalar and list forms are not needed by any test model yet. */
function constantValue(node: OnnxNode): Tensor {
  const value = node.attributes.find((a) => a.name === "value");
  if (node.attributes.length !== 1 || !value) {
    throw new TensorcastError(
      "NOT_IMPLEMENTED",
      `Constant ${describe(node)}: only the \`value\` (TENSOR) form is implemented; got ${node.attributes.map((a) => a.name).join(", ")}`,
    );
  }
  if (value.type !== "TENSOR") throw new TensorcastError("INVALID_ATTRIBUTE", `Constant value must be a TENSOR, got ${value.type}`);
  return value.value;
}

/** Reshape-1..4 take `shape` as an INTS attribute; Reshape-5 on, as the int64 input 1. */
function reshapeShape(node: OnnxNode, shape: Tensor | undefined, opset: number): readonly bigint[] | Tensor {
  if (opset >= 5) return required(node, shape, 1);
  const a = node.attributes.find((b) => b.name === "shape");
  if (!a || a.type !== "INTS") {
    throw new TensorcastError("INVALID_ATTRIBUTE", `Reshape-1 ${describe(node)} needs a \`shape\` INTS attribute`);
  }
  return a.value;
}

/** allowzero (INT 0 or 1); Reshape-1's `shape` and legacy `consumed_inputs`; any other attribute is an error. */
function reshapeOptions(node: OnnxNode, opset: number): ReshapeOptions {
  const opts: ReshapeOptions = { opset };
  for (const a of node.attributes) {
    if (opset < 5 && (a.name === "shape" || a.name === "consumed_inputs")) continue;
    if (a.name !== "allowzero") throw new TensorcastError("INVALID_ATTRIBUTE", `${node.opType} has no attribute ${a.name}`);
    const v = intAttribute(node, a);
    if (v !== 0n && v !== 1n) throw new TensorcastError("INVALID_ATTRIBUTE", `Reshape allowzero must be 0 or 1, got ${v}`);
    opts.allowzero = v === 1n; // reshape() refuses it before Reshape-14, where it does not exist
  }
  return opts;
}

/** BitCast's required `to` (INT TensorProto.DataType); it has no other attribute. */
function bitcastTo(node: OnnxNode): DType {
  for (const a of node.attributes) {
    if (a.name !== "to") throw new TensorcastError("INVALID_ATTRIBUTE", `BitCast has no attribute ${a.name}`);
  }
  const to = node.attributes.find((a) => a.name === "to");
  if (!to) throw new TensorcastError("INVALID_ATTRIBUTE", `BitCast ${describe(node)} has no \`to\` attribute`);
  return dtype(Number(intAttribute(node, to)));
}

/**
 * QuantizeLinear / DequantizeLinear attributes: axis, block_size, saturate (0 or 1), output_dtype
 * and precision (INT TensorProto.DataType; 0 means "not given", the schema's default). Which of
 * them a version has is the operator's check; anything else is an error here.
 */
function quantizeOptions(node: OnnxNode, opset: number): QuantizeOptions {
  const opts: QuantizeOptions = { opset };
  for (const a of node.attributes) {
    const v = intAttribute(node, a);
    if (v < BigInt(Number.MIN_SAFE_INTEGER) || v > BigInt(Number.MAX_SAFE_INTEGER)) {
      throw new TensorcastError("INVALID_ATTRIBUTE", `${node.opType} ${a.name} is out of range: ${v}`);
    }
    const n = Number(v);
    if (a.name === "axis") opts.axis = n;
    else if (a.name === "block_size") opts.blockSize = n;
    else if (a.name === "saturate" && node.opType === "QuantizeLinear") {
      if (n !== 0 && n !== 1) throw new TensorcastError("INVALID_ATTRIBUTE", `${node.opType} saturate must be 0 or 1, got ${v}`);
      opts.saturate = n === 1;
    } else if (a.name === "output_dtype") {
      if (n !== 0) opts.outputDtype = dtype(n);
    } else if (a.name === "precision" && node.opType === "QuantizeLinear") {
      if (n !== 0) opts.precision = dtype(n);
    } else {
      throw new TensorcastError("INVALID_ATTRIBUTE", `${node.opType} has no attribute ${a.name}`);
    }
  }
  return opts;
}

function noAttributes(node: OnnxNode): void {
  if (node.attributes.length > 0) {
    throw new TensorcastError("INVALID_ATTRIBUTE", `${node.opType} has no attributes; got ${node.attributes.map((a) => a.name).join(", ")}`);
  }
}
