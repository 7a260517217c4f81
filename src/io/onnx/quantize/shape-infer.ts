/**
 * The value_info onnxruntime's dynamic quantizer writes: before quantizing it runs onnx's shape
 * inference on the float model (quant_utils.save_and_reload_model_with_shape_infer), which adds a
 * ValueInfoProto for every node output of the main graph that is not a graph output, in node
 * order, with its element type and shape; the branches of an If get theirs the same way, the
 * values of the graphs around them known (onnx infers the branches too; a Loop's body, whose
 * inputs change per iteration, is not done here). This is that inference for the operators whose rule is
 * short and certain (element-wise, MatMul, Gemm, Gather, Conv, Flatten, Transpose, Cast, ...); a
 * node of any other operator, or one whose inputs are not all known, gets no entry, and neither
 * does anything computed from it: an entry is written only when onnx would write the same one.
 * Dimensions follow onnx: a number, or a symbol (dim_param) carried through. Where onnx cannot
 * tell a size (a symbolic spatial size in Conv, a product with a symbol in Flatten) it invents a
 * symbol (unk__1, unk__2, ...) numbered across the whole graph, which cannot be matched without
 * inferring every node: such an entry, and what is computed from it, is left out.
 */
import { PbMessage } from "../precision/pb.js";
import { insertOrdered } from "./edit.js";
import { bodiesOf } from "../precision/graph.js";

/** A dimension: a size, a symbol, or unknown. */
type Dim = { readonly value: number } | { readonly param: string } | { readonly unknown: true };
interface Known {
  readonly elem: number;
  readonly shape: readonly Dim[];
}

const UNKNOWN: Dim = { unknown: true };
const isValue = (d: Dim): d is { value: number } => "value" in d;
const isParam = (d: Dim): d is { param: string } => "param" in d;

/** Operators whose output 0 has input 0's type and shape. */
const SAME_AS_INPUT = new Set([
  "Relu", "LeakyRelu", "Sigmoid", "Tanh", "Abs", "Neg", "Exp", "Log", "Sqrt", "Erf", "Identity", "Softmax", "LogSoftmax",
  "Softplus", "Softsign", "Elu", "Selu", "HardSigmoid", "HardSwish", "Reciprocal", "Floor", "Ceil", "Round", "Sin", "Cos",
  "Gelu", "Dropout", "LayerNormalization", "BatchNormalization", "InstanceNormalization", "Clip", "Sign",
]);
/** Element-wise operators with multidirectional broadcasting; the result has input 0's type. */
const BROADCAST = new Set(["Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Sum", "Mean", "PRelu"]);

/** Reads a TypeProto.tensor_type into a Known, or undefined when its type or shape is missing. */
function readValueInfo(v: PbMessage): Known | undefined {
  const tensor = v.sub(2, "TypeProto")?.sub(1, "TypeProto.Tensor");
  if (!tensor || !tensor.has(1) || !tensor.has(2)) return undefined;
  const shape = tensor.sub(2, "TensorShapeProto")!.subs(1, "TensorShapeProto.Dimension").map((d): Dim =>
    d.has(1) ? { value: d.int(1) } : d.has(2) ? { param: d.string(2) } : UNKNOWN);
  return { elem: tensor.int(1), shape };
}

/** A ValueInfoProto as onnx's shape inference writes it. */
function valueInfo(name: string, k: Known): PbMessage {
  const shape = new PbMessage([], "TensorShapeProto");
  for (const d of k.shape) {
    const dim = new PbMessage([], "TensorShapeProto.Dimension");
    if (isValue(d)) dim.addVarint(1, d.value);
    else if (isParam(d)) dim.addString(2, d.param);
    shape.addMessage(1, dim);
  }
  const tensor = new PbMessage([], "TypeProto.Tensor").addVarint(1, k.elem).addMessage(2, shape);
  const type = new PbMessage([], "TypeProto").addMessage(1, tensor);
  return new PbMessage([], "ValueInfoProto").addString(1, name).addMessage(2, type);
}

function attributes(node: PbMessage): Map<string, PbMessage> {
  return new Map(node.subs(5, "AttributeProto").map((a) => [a.string(1), a]));
}
const intOf = (a: PbMessage | undefined, fallback: number): number => (a ? Number(a.varint(3) ?? fallback) : fallback);
const intsOf = (a: PbMessage | undefined): number[] | undefined => (a ? a.varints(8).map(Number) : undefined);

/**
 * onnx's multidirectional broadcast of dimension lists (multidirectionalBroadcastShapeInference):
 * a size other than 1 wins; else one symbolic (or unknown) dimension is carried; else 1. Two or
 * more symbolic dimensions: onnx versions differ (an empty dimension, or the symbol when they all
 * agree), so this gives undefined and the caller writes nothing.
 */
function broadcast(shapes: readonly (readonly Dim[])[]): Dim[] | undefined {
  const rank = Math.max(0, ...shapes.map((s) => s.length));
  const out: Dim[] = [];
  for (let i = 0; i < rank; i++) {
    let value = 1;
    const symbolic: Dim[] = [];
    for (const s of shapes) {
      const j = i - (rank - s.length);
      if (j < 0) continue;
      const d = s[j];
      if (isValue(d)) {
        if (d.value !== 1) {
          if (value !== 1 && value !== d.value) return undefined; // onnx fails: incompatible
          value = d.value;
        }
      } else symbolic.push(d);
    }
    if (value !== 1 || symbolic.length === 0) out.push({ value });
    else if (symbolic.length === 1) out.push(symbolic[0]);
    else return undefined;
  }
  return out;
}

function matMul(a: readonly Dim[], b: readonly Dim[]): Dim[] | undefined {
  if (a.length === 0 || b.length === 0) return undefined;
  const a2 = a.length === 1 ? [{ value: 1 }, a[0]] : a;
  const b2 = b.length === 1 ? [b[0], { value: 1 }] : b;
  const batch = broadcast([a2.slice(0, -2), b2.slice(0, -2)]);
  if (!batch) return undefined;
  const out = [...batch];
  if (a.length !== 1) out.push(a2[a2.length - 2]);
  if (b.length !== 1) out.push(b2[b2.length - 1]);
  return out;
}

function conv(x: readonly Dim[], w: readonly Dim[], attr: Map<string, PbMessage>): Dim[] | undefined {
  const spatial = x.length - 2;
  if (spatial < 1 || w.length !== x.length) return undefined;
  const autoPad = attr.get("auto_pad")?.string(4) ?? "NOTSET";
  const kernel = intsOf(attr.get("kernel_shape")) ?? w.slice(2).map((d) => (isValue(d) ? d.value : NaN));
  const strides = intsOf(attr.get("strides")) ?? new Array(spatial).fill(1);
  const dilations = intsOf(attr.get("dilations")) ?? new Array(spatial).fill(1);
  const pads = intsOf(attr.get("pads")) ?? new Array(2 * spatial).fill(0);
  const out: Dim[] = [x[0], w[0]];
  for (let i = 0; i < spatial; i++) {
    const d = x[2 + i];
    if (!isValue(d) || Number.isNaN(kernel[i])) {
      out.push(UNKNOWN);
      continue;
    }
    const effective = dilations[i] * (kernel[i] - 1) + 1;
    if (autoPad === "SAME_UPPER" || autoPad === "SAME_LOWER") out.push({ value: Math.ceil(d.value / strides[i]) });
    else if (autoPad === "VALID") out.push({ value: Math.floor((d.value - effective) / strides[i]) + 1 });
    else if (autoPad === "NOTSET") out.push({ value: Math.floor((d.value + pads[i] + pads[i + spatial] - effective) / strides[i]) + 1 });
    else return undefined;
  }
  return out;
}

/** The product of dimensions, unknown unless all are sizes. */
function product(ds: readonly Dim[]): Dim {
  let p = 1;
  for (const d of ds) {
    if (!isValue(d)) return UNKNOWN;
    p *= d.value;
  }
  return { value: p };
}

/** Output 0 of `node`, or undefined when this inference does not know it. */
function inferNode(node: PbMessage, known: ReadonlyMap<string, Known>): Known | undefined {
  const domain = node.string(7);
  if (domain !== "" && domain !== "ai.onnx") return undefined;
  const op = node.string(4);
  const inputs = node.strings(1).map((n) => (n === "" ? undefined : known.get(n)));
  const x = inputs[0];
  if (!x) return undefined;
  const attr = attributes(node);
  if (SAME_AS_INPUT.has(op)) return x;
  if (op === "Cast") return attr.has("to") ? { elem: intOf(attr.get("to"), 0), shape: x.shape } : undefined;
  if (BROADCAST.has(op)) {
    if (inputs.some((k) => !k)) return undefined;
    const shape = broadcast(inputs.map((k) => k!.shape));
    return shape ? { elem: x.elem, shape } : undefined;
  }
  if (op === "MatMul") {
    const shape = inputs[1] && matMul(x.shape, inputs[1].shape);
    return shape ? { elem: x.elem, shape } : undefined;
  }
  if (op === "Gemm") {
    const b = inputs[1];
    if (!b || x.shape.length !== 2 || b.shape.length !== 2) return undefined;
    const m = intOf(attr.get("transA"), 0) ? x.shape[1] : x.shape[0];
    const n = intOf(attr.get("transB"), 0) ? b.shape[0] : b.shape[1];
    return { elem: x.elem, shape: [m, n] };
  }
  if (op === "Gather") {
    const indices = inputs[1];
    if (!indices) return undefined;
    const r = x.shape.length;
    let axis = intOf(attr.get("axis"), 0);
    if (axis < 0) axis += r;
    if (axis < 0 || axis >= r) return undefined;
    return { elem: x.elem, shape: [...x.shape.slice(0, axis), ...indices.shape, ...x.shape.slice(axis + 1)] };
  }
  if (op === "Conv") {
    const shape = inputs[1] && conv(x.shape, inputs[1].shape, attr);
    return shape ? { elem: x.elem, shape } : undefined;
  }
  if (op === "Flatten") {
    let axis = intOf(attr.get("axis"), 1);
    if (axis < 0) axis += x.shape.length;
    if (axis < 0 || axis > x.shape.length) return undefined;
    return { elem: x.elem, shape: [product(x.shape.slice(0, axis)), product(x.shape.slice(axis))] };
  }
  if (op === "Transpose") {
    const perm = intsOf(attr.get("perm")) ?? x.shape.map((_, i) => x.shape.length - 1 - i);
    if (perm.length !== x.shape.length || perm.some((p) => p < 0 || p >= x.shape.length)) return undefined;
    return { elem: x.elem, shape: perm.map((p) => x.shape[p]) };
  }
  return undefined;
}

/**
 * Adds to `graph` (the main graph of a float model) the value_info onnx's shape inference would,
 * for the outputs this inference knows (see the file comment); entries already there are kept and
 * not repeated.
 */
export function addInferredValueInfo(graph: PbMessage, outer?: ReadonlyMap<string, Known>): void {
  // A body sees the values of the graphs around it (onnx infers an If's branches with them).
  const known = new Map<string, Known>(outer);
  for (const f of graph.all(5)) {
    // One parse for name, type and dims (initializerHeader would parse the payload again).
    const t = graph.peek(f, "TensorProto");
    known.set(t.string(8), { elem: t.int(2), shape: t.varints(1).map((value) => ({ value: Number(value) })) });
  }
  const declared = new Set<string>();
  for (const no of [11, 13, 12]) {
    for (const v of graph.subs(no, "ValueInfoProto")) {
      const k = readValueInfo(v);
      declared.add(v.string(1));
      if (k) known.set(v.string(1), k);
    }
  }
  const added: PbMessage[] = [];
  for (const f of graph.all(1)) {
    const node = graph.peek(f, "NodeProto");
    if (node.string(4) === "If" && (node.string(7) === "" || node.string(7) === "ai.onnx")) {
      // The branches' own values, inferred where they are (value_info of the branch); an edit must be kept on the node.
      const kept = graph.message(f, "NodeProto");
      for (const body of bodiesOf(kept)) addInferredValueInfo(body, known);
    }
    const out = node.strings(2)[0];
    if (out === undefined || out === "") continue;
    const k = inferNode(node, known);
    if (!k || k.shape.some((d) => !isValue(d) && !isParam(d))) continue;
    if (!known.has(out)) known.set(out, k);
    if (!declared.has(out)) {
      declared.add(out);
      added.push(valueInfo(out, k));
    }
  }
  for (const v of added) insertOrdered(graph, { no: 13, wire: 2, data: new Uint8Array(0), msg: v });
}
