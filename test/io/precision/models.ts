/**
 * Float32 test models for the precision pass, built with the project's encodeModel (and, for the
 * If model's branches, spliced in as GRAPH attributes with the test protobuf writer W), with
 * deterministic weights and inputs.
 */
import { encodeModel } from "../../../src/io/onnx/encode.js";
import type { OnnxAttribute, OnnxModel, OnnxNode, ValueInfo } from "../../../src/io/onnx/model.js";
import { Tensor } from "../../../src/tensor.js";
import { Rng } from "../../support/rng.js";
import { W } from "../../support/protobuf.js";

export interface Feed {
  name: string;
  type: "float32" | "int64" | "bool";
  dims: number[];
  values: number[];
}

export interface TestModel {
  name: string;
  bytes: Uint8Array;
  feeds: Feed[];
  /** Largest |converted - float32| allowed per output element, per target, relative to max(1, |float32|). */
  tolerance: { float16: number; bfloat16: number; weights8: number };
}

const F = 1;
const I64 = 7;

/** Uniform floats in [-scale, scale). */
function floats(rng: Rng, n: number, scale: number): number[] {
  return Array.from({ length: n }, () => (rng.u32() / 2 ** 32 * 2 - 1) * scale);
}

function init(name: string, shape: number[], values: number[], type: "float32" | "int64" = "float32") {
  return { name, tensor: type === "int64" ? Tensor.fromValues(values.map(BigInt), "int64", shape) : Tensor.fromValues(values, "float32", shape) };
}

function node(opType: string, inputs: string[], outputs: string[], attributes: OnnxAttribute[] = [], name = ""): OnnxNode {
  return { name: name || `${opType}_${outputs[0]}`, opType, domain: "", inputs, outputs, attributes };
}

const ints = (name: string, v: number[]): OnnxAttribute => ({ name, type: "INTS", value: v.map(BigInt) });
const int = (name: string, v: number): OnnxAttribute => ({ name, type: "INT", value: BigInt(v) });
const flt = (name: string, v: number): OnnxAttribute => ({ name, type: "FLOAT", value: v });
const vi = (name: string, elemType: number, shape?: (number | string)[]): ValueInfo => ({ name, elemType, shape });

function model(name: string, opset: number, nodes: OnnxNode[], initializers: ReturnType<typeof init>[], inputs: ValueInfo[], outputs: ValueInfo[]): Uint8Array {
  const m: OnnxModel = { irVersion: 8, opsetImports: [{ domain: "", version: opset }], graph: { name, nodes, initializers, inputs, outputs } };
  return encodeModel(m, { producerName: "tensorcast-test" });
}

/** x[2,8] -> Gemm(8x16) -> Relu -> MatMul(16x4) -> Add -> Sigmoid. */
export function mlp(): TestModel {
  const rng = new Rng(11);
  const bytes = model("mlp", 13, [
    node("Gemm", ["x", "w1", "b1"], ["h1"], [int("transB", 1)]),
    node("Relu", ["h1"], ["r1"]),
    node("MatMul", ["r1", "w2"], ["h2"]),
    node("Add", ["h2", "b2"], ["h3"]),
    node("Sigmoid", ["h3"], ["y"]),
  ], [
    init("w1", [16, 8], floats(rng, 128, 0.5)), init("b1", [16], floats(rng, 16, 0.1)),
    init("w2", [16, 4], floats(rng, 64, 0.5)), init("b2", [4], floats(rng, 4, 0.1)),
  ], [vi("x", F, ["batch", 8])], [vi("y", F, ["batch", 4])]);
  return { name: "mlp", bytes, feeds: [{ name: "x", type: "float32", dims: [2, 8], values: floats(rng, 16, 1) }], tolerance: { float16: 5e-3, bfloat16: 3e-2, weights8: 0.1 } };
}

/** x[1,2,8,8] -> Conv 3x3 -> BatchNormalization -> Relu -> MaxPool -> Flatten -> Gemm. */
export function cnn(): TestModel {
  const rng = new Rng(12);
  const bytes = model("cnn", 13, [
    node("Conv", ["x", "k", "kb"], ["c"], [ints("kernel_shape", [3, 3]), ints("pads", [1, 1, 1, 1])]),
    node("BatchNormalization", ["c", "scale", "bias", "mean", "var"], ["bn"], [flt("epsilon", 1e-5)]),
    node("Relu", ["bn"], ["r"]),
    node("MaxPool", ["r"], ["p"], [ints("kernel_shape", [2, 2]), ints("strides", [2, 2])]),
    node("Flatten", ["p"], ["f"]),
    node("Gemm", ["f", "fw", "fb"], ["y"], [int("transB", 1)]),
  ], [
    init("k", [4, 2, 3, 3], floats(rng, 72, 0.4)), init("kb", [4], floats(rng, 4, 0.1)),
    init("scale", [4], floats(rng, 4, 0.2).map((v) => 1 + v)), init("bias", [4], floats(rng, 4, 0.1)),
    init("mean", [4], floats(rng, 4, 0.1)), init("var", [4], floats(rng, 4, 0.2).map((v) => 1 + v)),
    init("fw", [3, 64], floats(rng, 192, 0.2)), init("fb", [3], floats(rng, 3, 0.1)),
  ], [vi("x", F, [1, 2, 8, 8])], [vi("y", F, [1, 3])]);
  return { name: "cnn", bytes, feeds: [{ name: "x", type: "float32", dims: [1, 2, 8, 8], values: floats(rng, 128, 1) }], tolerance: { float16: 1e-2, bfloat16: 6e-2, weights8: 0.25 } };
}

/**
 * One transformer block over token ids[1,4]: Gather embedding, LayerNormalization (or its
 * decomposition with ReduceMean / Sub / Pow / Sqrt / Div), Q K V MatMuls, Reshape / Transpose to
 * 2 heads, scores, a padding mask by Equal on the integer ids and Where, Softmax, Erf GELU MLP,
 * residual Adds.
 */
export function transformer(decomposedNorm = false): TestModel {
  const rng = new Rng(decomposedNorm ? 14 : 13);
  const d = 8;
  const heads = 2;
  const vocab = 10;
  const nodes: OnnxNode[] = [node("Gather", ["emb", "ids"], ["e"])];
  if (decomposedNorm) {
    nodes.push(
      node("ReduceMean", ["e"], ["mu"], [ints("axes", [-1])]),
      node("Sub", ["e", "mu"], ["xc"]),
      node("Pow", ["xc", "two"], ["sq"]),
      node("ReduceMean", ["sq"], ["var"], [ints("axes", [-1])]),
      node("Add", ["var", "eps"], ["vare"]),
      node("Sqrt", ["vare"], ["sd"]),
      node("Div", ["xc", "sd"], ["xn"]),
      node("Mul", ["xn", "gamma"], ["xg"]),
      node("Add", ["xg", "beta"], ["ln"]),
    );
  } else {
    nodes.push(node("LayerNormalization", ["e", "gamma", "beta"], ["ln"], [int("axis", -1), flt("epsilon", 1e-5)]));
  }
  const split = (x: string): OnnxNode[] => [
    node("Reshape", [x, "shape4"], [`${x}_r`]),
    node("Transpose", [`${x}_r`], [`${x}_t`], [ints("perm", [0, 2, 1, 3])]),
  ];
  nodes.push(
    node("MatMul", ["ln", "wq"], ["q"]), node("MatMul", ["ln", "wk"], ["k"]), node("MatMul", ["ln", "wv"], ["v"]),
    ...split("q"), ...split("k"), ...split("v"),
    node("Transpose", ["k_t"], ["kT"], [ints("perm", [0, 1, 3, 2])]),
    node("MatMul", ["q_t", "kT"], ["s0"]),
    node("Mul", ["s0", "scale"], ["s1"]),
    node("Equal", ["ids", "pad"], ["ispad"]),
    node("Unsqueeze", ["ispad", "axes12"], ["mask"]),
    node("Where", ["mask", "neg", "s1"], ["s2"]),
    node("Softmax", ["s2"], ["a"], [int("axis", -1)]),
    node("MatMul", ["a", "v_t"], ["o0"]),
    node("Transpose", ["o0"], ["o1"], [ints("perm", [0, 2, 1, 3])]),
    node("Reshape", ["o1", "shape3"], ["o2"]),
    node("MatMul", ["o2", "wo"], ["o3"]),
    node("Add", ["o3", "e"], ["res1"]),
    node("MatMul", ["res1", "w1"], ["f1"]),
    node("Div", ["f1", "sqrt2"], ["f2"]),
    node("Erf", ["f2"], ["f3"]),
    node("Add", ["f3", "one"], ["f4"]),
    node("Mul", ["f1", "f4"], ["f5"]),
    node("Mul", ["f5", "half"], ["gelu"]),
    node("MatMul", ["gelu", "w2"], ["f6"]),
    node("Add", ["f6", "res1"], ["y"]),
  );
  const scalar = (name: string, v: number) => init(name, [], [v]);
  const bytes = model(decomposedNorm ? "transformer_decomposed" : "transformer", 17, nodes, [
    init("emb", [vocab, d], floats(rng, vocab * d, 1)),
    init("gamma", [d], floats(rng, d, 0.2).map((v) => 1 + v)), init("beta", [d], floats(rng, d, 0.1)),
    scalar("two", 2), scalar("eps", 1e-5),
    init("wq", [d, d], floats(rng, d * d, 0.4)), init("wk", [d, d], floats(rng, d * d, 0.4)), init("wv", [d, d], floats(rng, d * d, 0.4)),
    init("wo", [d, d], floats(rng, d * d, 0.4)), init("w1", [d, 2 * d], floats(rng, 2 * d * d, 0.4)), init("w2", [2 * d, d], floats(rng, 2 * d * d, 0.4)),
    init("shape4", [4], [1, 4, heads, d / heads], "int64"), init("shape3", [3], [1, 4, d], "int64"),
    init("axes12", [2], [1, 2], "int64"), init("pad", [], [0], "int64"),
    scalar("scale", 1 / Math.sqrt(d / heads)), scalar("neg", -1e4), scalar("sqrt2", Math.SQRT2), scalar("one", 1), scalar("half", 0.5),
  ], [vi("ids", I64, [1, 4])], [vi("y", F, [1, 4, d])]);
  return {
    name: decomposedNorm ? "transformer_decomposed" : "transformer", bytes,
    feeds: [{ name: "ids", type: "int64", dims: [1, 4], values: [3, 7, 1, 0] }],
    tolerance: { float16: 2e-2, bfloat16: 0.15, weights8: 0.5 },
  };
}

/** Constant nodes (a `value` tensor and a `value_floats` list) feeding Mul / Add, and a ConstantOfShape. */
export function constants(): TestModel {
  const tensor: OnnxAttribute = { name: "value", type: "TENSOR", value: Tensor.fromValues([0.5, -1.25, 2, 3.5], "float32", [4]) };
  const bytes = model("constants", 13, [
    node("Constant", [], ["c1"], [tensor]),
    node("Constant", [], ["c2"], [{ name: "value_floats", type: "FLOATS", value: [0.25, 0.75, -0.5, 1] }]),
    node("Shape", ["x"], ["sh"]),
    node("ConstantOfShape", ["sh"], ["z"], [{ name: "value", type: "TENSOR", value: Tensor.fromValues([0.125], "float32", [1]) }]),
    node("Mul", ["x", "c1"], ["m"]),
    node("Add", ["m", "c2"], ["a"]),
    node("Add", ["a", "z"], ["y"]),
  ], [], [vi("x", F, [2, 4])], [vi("y", F, [2, 4])]);
  return { name: "constants", bytes, feeds: [{ name: "x", type: "float32", dims: [2, 4], values: [1, 2, 3, 4, -1, -2, -3, -4] }], tolerance: { float16: 4e-3, bfloat16: 3e-2, weights8: 4e-3 } };
}

/**
 * If on a bool input: the then branch multiplies x by an initializer of the outer graph, the else
 * branch adds an initializer of its own; both read x from the enclosing scope.
 */
export function ifModel(): TestModel {
  const branch = (name: string, nodes: OnnxNode[], inits: ReturnType<typeof init>[]): Uint8Array => {
    const bytes = model(name, 13, nodes, inits, [], [vi(`${name}_out`, F, [2, 3])]);
    return graphOf(bytes);
  };
  const thenG = branch("then", [node("Mul", ["x", "w"], ["then_out"])], []);
  const elseG = branch("else", [node("Add", ["x", "bias_e"], ["else_out"])], [init("bias_e", [3], [0.5, -0.5, 1.5])]);
  const outer = model("if_model", 13, [
    node("Relu", ["x0"], ["x"]),
    node("If", ["cond"], ["r"], [], "if_node"),
    node("Mul", ["r", "two"], ["y"]),
  ], [init("w", [3], [1.5, -2, 0.25]), init("two", [], [2])], [vi("x0", F, [2, 3]), vi("cond", 9, [])], [vi("y", F, [2, 3])]);
  const bytes = addGraphAttributes(outer, "if_node", [["then_branch", thenG], ["else_branch", elseG]]);
  return {
    name: "if", bytes,
    feeds: [{ name: "x0", type: "float32", dims: [2, 3], values: [1, 2, 3, -1, 4, 0.5] }, { name: "cond", type: "bool", dims: [], values: [1] }],
    tolerance: { float16: 4e-3, bfloat16: 3e-2, weights8: 0.1 },
  };
}

/**
 * Loop, 3 iterations, carrying v: v <- v * w + b, with w from the outer graph and b an
 * initializer of the body.
 */
export function loopModel(): TestModel {
  const body = graphOf(model("body", 13, [
    node("Identity", ["cond_in"], ["cond_out"]),
    node("Mul", ["v_in", "w"], ["m"]),
    node("Add", ["m", "b"], ["v_out"]),
  ], [init("b", [3], [0.25, -0.5, 1])], [vi("iter", I64, []), vi("cond_in", 9, []), vi("v_in", F, [3])], [vi("cond_out", 9, []), vi("v_out", F, [3])]));
  const outer = model("loop_model", 13, [
    node("Loop", ["M", "", "x"], ["v_final"], [], "loop_node"),
    node("Relu", ["v_final"], ["y"]),
  ], [init("M", [], [3], "int64"), init("w", [3], [1.5, -0.75, 0.5])], [vi("x", F, [3])], [vi("y", F, [3])]);
  return {
    name: "loop", bytes: addGraphAttributes(outer, "loop_node", [["body", body]]),
    feeds: [{ name: "x", type: "float32", dims: [3], values: [1, -2, 3] }],
    tolerance: { float16: 4e-3, bfloat16: 3e-2, weights8: 0.1 },
  };
}

/**
 * Float32 initializers in every kind of body: an If whose branches each hold one (the then branch
 * also reads the outer `w`), then a Loop (2 iterations) whose body holds one and nests an If whose
 * then branch holds another. The outer graph defines values named like the stored copies a weights-
 * only conversion would make (`bt__float16`, `bl__float8e4m3fn`, `bn__int4`), so the conversion
 * must pick other names. `weights` maps every float32 initializer before the model is built (the
 * tests build the float32 reference on cast-back weights with it). If, Loop and Scan allow bfloat16
 * values from opset 16.
 * @example subgraphWeights((t) => cast(cast(t, "int4"), "float32")).bytes  // the float32 model on int4-rounded weights
 */
export function subgraphWeights(weights: (t: Tensor<"float32">) => Tensor<"float32"> = (t) => t, opset = 13): TestModel {
  const rng = new Rng(15);
  const w = (name: string, n: number) => ({ name, tensor: weights(Tensor.fromValues(floats(rng, n, 4), "float32", [n])) });
  const v23 = (name: string) => vi(name, F, [2, 3]);
  const branch = (name: string, nodes: OnnxNode[], inits: ReturnType<typeof init>[]): Uint8Array =>
    graphOf(model(name, opset, nodes, inits, [], [v23(`${name}_out`)]));
  const thenG = branch("then", [node("Mul", ["bt__float16", "bt"], ["t1"]), node("Mul", ["t1", "w"], ["then_out"])], [w("bt", 3)]);
  const elseG = branch("else", [node("Add", ["x", "be"], ["else_out"])], [w("be", 3)]);
  const innerThen = branch("inner_then", [node("Add", ["a", "bn"], ["inner_then_out"])], [w("bn", 3)]);
  const innerElse = branch("inner_else", [node("Neg", ["a"], ["inner_else_out"])], []);
  const body = graphOf(addGraphAttributes(model("body", opset, [
    node("Identity", ["cond_in"], ["cond_out"]),
    node("Mul", ["v_in", "w"], ["m"]),
    node("Add", ["m", "bl"], ["a"]),
    node("If", ["cond_in"], ["v_out"], [], "inner_if"),
  ], [w("bl", 3)], [vi("iter", I64, []), vi("cond_in", 9, []), v23("v_in")], [vi("cond_out", 9, []), v23("v_out")]),
  "inner_if", [["then_branch", innerThen], ["else_branch", innerElse]]));
  const outer = model("subgraph_weights", opset, [
    node("Relu", ["x0"], ["x"]),
    node("Identity", ["x"], ["bt__float16"]),
    node("Identity", ["x"], ["bl__float8e4m3fn"]),
    node("Identity", ["x"], ["bn__int4"]),
    node("If", ["cond"], ["r"], [], "if_node"),
    node("Add", ["r", "bl__float8e4m3fn"], ["r2"]),
    node("Add", ["r2", "bn__int4"], ["r3"]),
    node("Loop", ["M", "", "r3"], ["v_final"], [], "loop_node"),
    node("Mul", ["v_final", "two"], ["y"]),
  ], [w("w", 3), init("M", [], [2], "int64"), { name: "two", tensor: weights(Tensor.fromValues([2], "float32", [])) }],
  [vi("x0", F, [2, 3]), vi("cond", 9, [])], [vi("y", F, [2, 3])]);
  const withIf = addGraphAttributes(outer, "if_node", [["then_branch", thenG], ["else_branch", elseG]]);
  const feeds = (c: number): Feed[] => [{ name: "x0", type: "float32", dims: [2, 3], values: [1, 2, 3, -1, 4, 0.5] }, { name: "cond", type: "bool", dims: [], values: [c] }];
  return {
    name: "subgraph_weights", bytes: addGraphAttributes(withIf, "loop_node", [["body", body]]), feeds: feeds(1),
    // Two Loop iterations multiply by w (|w| up to 4) twice: float16's rounding grows to about 1e-2.
    tolerance: { float16: 2e-2, bfloat16: 0.1, weights8: 0.5 },
  };
}

/** The GraphProto bytes of a serialized ModelProto (field 7). */
function graphOf(modelBytes: Uint8Array): Uint8Array {
  let at = 0;
  const varint = (): number => {
    let v = 0;
    for (let shift = 0; ; shift += 7) {
      const b = modelBytes[at++];
      v += (b & 0x7f) * 2 ** shift;
      if (b < 0x80) return v;
    }
  };
  while (at < modelBytes.length) {
    const tag = varint();
    if ((tag & 7) === 2) {
      const n = varint();
      if (tag >> 3 === 7) return modelBytes.slice(at, at + n);
      at += n;
    } else varint();
  }
  throw new Error("no graph");
}

/** Appends GRAPH attributes to the node named `nodeName` of a serialized model (rebuilding the graph with W). */
function addGraphAttributes(modelBytes: Uint8Array, nodeName: string, attrs: [string, Uint8Array][]): Uint8Array {
  const fields = splitFields(modelBytes);
  const out = new W();
  for (const f of fields) {
    if (f.no !== 7) {
      out.append(f.raw);
      continue;
    }
    const graph = new W();
    for (const g of splitFields(f.body!)) {
      if (g.no === 1 && splitFields(g.body!).some((n) => n.no === 3 && new TextDecoder().decode(n.body) === nodeName)) {
        const n = new W().append(g.body!);
        for (const [name, body] of attrs) n.len(5, new W().len(1, name).len(6, body).int(20, 5));
        graph.len(1, n);
      } else graph.append(g.raw);
    }
    out.len(7, graph);
  }
  return out.bytes();
}

function splitFields(bytes: Uint8Array): { no: number; raw: Uint8Array; body?: Uint8Array }[] {
  const out: { no: number; raw: Uint8Array; body?: Uint8Array }[] = [];
  let at = 0;
  const varint = (): number => {
    let v = 0;
    for (let shift = 0; ; shift += 7) {
      const b = bytes[at++];
      v += (b & 0x7f) * 2 ** shift;
      if (b < 0x80) return v;
    }
  };
  while (at < bytes.length) {
    const start = at;
    const tag = varint();
    const wire = tag & 7;
    let body: Uint8Array | undefined;
    if (wire === 2) {
      const n = varint();
      body = bytes.subarray(at, at + n);
      at += n;
    } else if (wire === 0) varint();
    else at += wire === 5 ? 4 : 8;
    out.push({ no: tag >> 3, raw: bytes.subarray(start, at), body });
  }
  return out;
}

/** Every test model. */
export function allModels(): TestModel[] {
  return [mlp(), cnn(), transformer(false), transformer(true), constants(), ifModel(), loopModel()];
}
