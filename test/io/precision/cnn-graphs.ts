/**
 * Random float32 CNN graphs for hunting onnxruntime's NchwcTransformer crash (bench/nchwc-sweep.ts):
 * chains of the layers that transformer rewrites (Conv with fused activations, residual Add,
 * BatchNormalization, MaxPool / AveragePool / GlobalAveragePool, Concat, Transpose) mixed with the
 * operators the precision pass keeps in float32 by default (Resize, Upsample, RoiAlign, TopK, Max,
 * Min, CumSum, NonMaxSuppression), so that a float16 conversion puts Casts right next to them.
 * Channel counts are multiples of 8 and 16 (AVX-512's NCHWc block is 16) and a few that are not.
 */
import { encodeModel } from "../../../src/io/onnx/encode.js";
import type { OnnxAttribute, OnnxNode } from "../../../src/io/onnx/model.js";
import type { NamedTensor } from "../../../src/io/onnx/tensorproto.js";
import { Tensor } from "../../../src/tensor.js";
import { Rng } from "../../support/rng.js";
import type { RunFeed } from "./ort-run.js";

/**
 * A vision-transformer front end (ViT / CLIP): patch-embedding Conv (kernel = stride = P, with or
 * without bias), Reshape to [1, D, N], Transpose to tokens, a position embedding, LayerNormalization
 * or its decomposition, one attention head and an Erf-GELU MLP, a residual, and a mean over tokens.
 * Number `index` of the sweep (deterministic).
 * @example vitGraph(0).layers  // e.g. ["patch 16", "d 96", "side 32", "bias"]
 */
export function vitGraph(index: number): CnnGraph {
  const rng = new Rng(0xc0de + index * 104729);
  const pick = <T>(xs: readonly T[]): T => xs[rng.below(xs.length)];
  const opset = pick([13, 17]);
  const p = pick([4, 8, 16]);
  const d = pick([16, 32, 48, 64, 96, 128]);
  const side = p * pick([2, 4, 7]);
  const n = (side / p) ** 2;
  const nodes: OnnxNode[] = [];
  const inits: NamedTensor[] = [];
  let k = 0;
  const floats = (count: number, scale: number): number[] => Array.from({ length: count }, () => (rng.u32() / 2 ** 32 * 2 - 1) * scale);
  const init = (name: string, shape: number[], values: number[], type: "float32" | "int64" = "float32"): string => {
    inits.push({ name, tensor: type === "int64" ? Tensor.fromValues(values.map(BigInt), "int64", shape) : Tensor.fromValues(values, "float32", shape) });
    return name;
  };
  const node = (opType: string, inputs: string[], attributes: OnnxAttribute[] = []): string => {
    const out = `${opType.toLowerCase()}${k++}`;
    nodes.push({ name: `${opType}_${k}`, opType, domain: "", inputs, outputs: [out], attributes });
    return out;
  };
  const ints = (name: string, v: number[]): OnnxAttribute => ({ name, type: "INTS", value: v.map(BigInt) });
  const int = (name: string, v: number): OnnxAttribute => ({ name, type: "INT", value: BigInt(v) });
  const bias = rng.below(2) === 0;
  const patch = node("Conv", ["x", init("pw", [d, 3, p, p], floats(d * 3 * p * p, 1 / Math.sqrt(3 * p * p))), ...(bias ? [init("pb", [d], floats(d, 0.1))] : [])],
    [ints("kernel_shape", [p, p]), ints("strides", [p, p])]);
  const flat = node("Reshape", [patch, init("s3", [3], [1, d, -1], "int64")]);
  const tokens = node("Transpose", [flat], [ints("perm", [0, 2, 1])]);
  const e = node("Add", [tokens, init("pos", [1, n, d], floats(n * d, 0.1))]);
  const norm = (input: string, tag: string): string => {
    if (opset >= 17 && rng.below(2) === 0) return node("LayerNormalization", [input, init(`g${tag}`, [d], floats(d, 0.2).map((v) => 1 + v)), init(`b${tag}`, [d], floats(d, 0.1))], [int("axis", -1)]);
    const mu = node("ReduceMean", [input], [ints("axes", [-1])]);
    const xc = node("Sub", [input, mu]);
    const v = node("ReduceMean", [node("Mul", [xc, xc])], [ints("axes", [-1])]);
    return node("Div", [xc, node("Sqrt", [node("Add", [v, init(`eps${tag}`, [], [1e-5])])])]);
  };
  const ln = norm(e, "1");
  const q = node("MatMul", [ln, init("wq", [d, d], floats(d * d, 1 / Math.sqrt(d)))]);
  const kk = node("MatMul", [ln, init("wk", [d, d], floats(d * d, 1 / Math.sqrt(d)))]);
  const v = node("MatMul", [ln, init("wv", [d, d], floats(d * d, 1 / Math.sqrt(d)))]);
  const s = node("Mul", [node("MatMul", [q, node("Transpose", [kk], [ints("perm", [0, 2, 1])])]), init("scale", [], [1 / Math.sqrt(d)])]);
  const a = node("MatMul", [node("Softmax", [s], [int("axis", -1)]), v]);
  const r1 = node("Add", [node("MatMul", [a, init("wo", [d, d], floats(d * d, 1 / Math.sqrt(d)))]), e]);
  const f1 = node("MatMul", [norm(r1, "2"), init("w1", [d, 2 * d], floats(2 * d * d, 1 / Math.sqrt(d)))]);
  const gelu = node("Mul", [node("Mul", [f1, node("Add", [node("Erf", [node("Div", [f1, init("sqrt2", [], [Math.SQRT2])])]), init("one", [], [1])])]), init("half", [], [0.5])]);
  const r2 = node("Add", [node("MatMul", [gelu, init("w2", [2 * d, d], floats(2 * d * d, 1 / Math.sqrt(2 * d)))]), r1]);
  const y = node("ReduceMean", [r2], [ints("axes", [1])]);
  const bytes = encodeModel({
    irVersion: 8, opsetImports: [{ domain: "", version: opset }],
    graph: { name: `vit${index}`, nodes, initializers: inits, inputs: [{ name: "x", elemType: 1, shape: [1, 3, side, side] }], outputs: [{ name: y, elemType: 1 }] },
  });
  const input = new Rng(index + 7);
  const values = Array.from({ length: 3 * side * side }, () => (input.u32() / 2 ** 32) * 2 - 1);
  return { name: `vit${index}`, layers: [`patch ${p}`, `d ${d}`, `side ${side}`, bias ? "bias" : "no bias"], opset, bytes, feeds: [{ name: "x", type: "float32", dims: [1, 3, side, side], values }] };
}

/** A generated graph: its bytes, the layers it chains (for the report), and an input to run it on. */
export interface CnnGraph {
  name: string;
  layers: string[];
  opset: number;
  bytes: Uint8Array;
  feeds: RunFeed[];
}

const LAYERS = [
  "conv", "conv-act", "conv-residual", "depthwise", "conv-stride", "bn", "maxpool", "avgpool", "concat", "transpose",
  "resize", "topk", "max", "min", "cumsum", "roialign", "nms", "gap", "se", "bcast",
] as const;
type Layer = (typeof LAYERS)[number] | "upsample";

const ACTIVATIONS = ["Relu", "Sigmoid", "Clip", "LeakyRelu", "HardSigmoid", "Tanh"];

/**
 * Graph number `index` of the sweep (deterministic). Every 8th graph is opset 9 with Upsample in
 * place of Resize (Upsample is gone from later opsets' onnxruntime kernels).
 * @example cnnGraph(3).layers  // ["max", "min", "max", "maxpool"]
 */
export function cnnGraph(index: number): CnnGraph {
  const rng = new Rng(0x5eed + index * 7919);
  const pick = <T>(xs: readonly T[]): T => xs[rng.below(xs.length)];
  const opset = index % 8 === 7 ? 9 : pick([11, 13, 17]);
  let c = pick([3, 8, 16, 16, 24, 32, 48, 64]);
  let h = pick([8, 12, 16, 17, 32]);
  const inC = c;
  const inH = h;
  const nodes: OnnxNode[] = [];
  const inits: NamedTensor[] = [];
  const extraOutputs: { name: string; elemType: number }[] = [];
  let x = "x";
  let k = 0;
  const fresh = (s: string): string => `${s}${k++}`;
  const floats = (n: number, scale: number): number[] => Array.from({ length: n }, () => (rng.u32() / 2 ** 32 * 2 - 1) * scale);
  const init = (base: string, shape: number[], values: number[], type: "float32" | "int64" = "float32"): string => {
    const name = fresh(base);
    inits.push({ name, tensor: type === "int64" ? Tensor.fromValues(values.map(BigInt), "int64", shape) : Tensor.fromValues(values, "float32", shape) });
    return name;
  };
  const node = (opType: string, inputs: string[], attributes: OnnxAttribute[] = [], outputs = 1): string[] => {
    const outs = Array.from({ length: outputs }, () => fresh(opType.toLowerCase()));
    nodes.push({ name: fresh(`${opType}_`), opType, domain: "", inputs, outputs: outs, attributes });
    return outs;
  };
  const ints = (name: string, v: number[]): OnnxAttribute => ({ name, type: "INTS", value: v.map(BigInt) });
  const int = (name: string, v: number): OnnxAttribute => ({ name, type: "INT", value: BigInt(v) });
  const flt = (name: string, v: number): OnnxAttribute => ({ name, type: "FLOAT", value: v });
  const str = (name: string, v: string): OnnxAttribute => ({ name, type: "STRING", value: v });
  const conv = (input: string, cin: number, cout: number, kernel: number, stride = 1, group = 1): string => {
    const w = init("w", [cout, cin / group, kernel, kernel], floats(cout * (cin / group) * kernel * kernel, 1 / Math.sqrt(cin * kernel)));
    const b = init("b", [cout], floats(cout, 0.1));
    const p = kernel >> 1;
    return node("Conv", [input, w, b], [ints("kernel_shape", [kernel, kernel]), ints("pads", [p, p, p, p]), ints("strides", [stride, stride]), int("group", group)])[0];
  };
  const activation = (input: string): string => {
    const a = pick(ACTIVATIONS);
    if (a === "Clip") return opset >= 11 ? node("Clip", [input, init("lo", [], [0]), init("hi", [], [6])])[0] : node("Clip", [input], [flt("min", 0), flt("max", 6)])[0];
    if (a === "LeakyRelu") return node(a, [input], [flt("alpha", 0.1)])[0];
    return node(a, [input])[0];
  };
  const count = 3 + rng.below(6);
  const layers: Layer[] = [];
  for (let i = 0; i < count; i++) {
    let layer: Layer = pick(LAYERS);
    if (layer === "resize" && opset === 9) layer = "upsample";
    if ((layer === "cumsum" && opset < 11) || (layer === "roialign" && opset < 10) || (layer === "nms" && opset < 10)) layer = "conv-act";
    if ((layer === "maxpool" || layer === "avgpool" || layer === "conv-stride") && h < 4) layer = "conv";
    if ((layer === "resize" || layer === "upsample") && h > 32) layer = "conv";
    if (layer === "gap" && i < count - 2) layer = "conv-act";
    layers.push(layer);
    switch (layer) {
      case "conv":
      case "conv-act": {
        const out = pick([8, 16, 32, 48, 64]);
        x = conv(x, c, out, pick([1, 3]));
        c = out;
        if (layer === "conv-act") x = activation(x);
        break;
      }
      case "conv-residual": {
        const y = node("Relu", [conv(x, c, c, 3)])[0];
        x = node("Relu", [node("Add", [conv(y, c, c, 3), x])[0]])[0];
        break;
      }
      case "depthwise":
        x = node("Relu", [conv(x, c, c, 3, 1, c)])[0];
        break;
      case "conv-stride": {
        const out = pick([16, 32, 64]);
        x = conv(x, c, out, 3, 2);
        c = out;
        h = Math.floor((h - 1) / 2) + 1;
        break;
      }
      case "bn":
        x = node("BatchNormalization", [x, init("s", [c], floats(c, 0.2).map((v) => 1 + v)), init("bb", [c], floats(c, 0.1)), init("m", [c], floats(c, 0.1)), init("v", [c], floats(c, 0.2).map((v) => 1 + v))], [flt("epsilon", 1e-5)])[0];
        break;
      case "maxpool":
      case "avgpool": {
        const op = layer === "maxpool" ? "MaxPool" : "AveragePool";
        if (rng.below(2) === 0) {
          x = node(op, [x], [ints("kernel_shape", [2, 2]), ints("strides", [2, 2])])[0];
          h = Math.floor(h / 2);
        } else x = node(op, [x], [ints("kernel_shape", [3, 3]), ints("strides", [1, 1]), ints("pads", [1, 1, 1, 1])])[0];
        break;
      }
      case "gap":
        x = node("GlobalAveragePool", [x])[0];
        h = 1;
        break;
      case "concat": {
        const a = pick([8, 16, 32]);
        const b = pick([8, 16, 24]);
        x = node("Concat", [node("Relu", [conv(x, c, a, 1)])[0], conv(x, c, b, 3)], [int("axis", 1)])[0];
        c = a + b;
        break;
      }
      case "se": {
        // Squeeze-and-excitation: a [1, C, 1, 1] gate multiplied into the map (a broadcasting Mul).
        const g = node("GlobalAveragePool", [x])[0];
        const r = node("Relu", [conv(g, c, Math.max(4, c >> 2), 1)])[0];
        x = node("Mul", [x, node(pick(["Sigmoid", "HardSigmoid"]), [conv(r, Math.max(4, c >> 2), c, 1)])[0]])[0];
        break;
      }
      case "bcast": {
        // An Add or Mul with a constant of a broadcasting shape, next to a Conv.
        const shape = pick([[1, c, 1, 1], [c, 1, 1], [1, 1, h, h], [1], [1, c, h, h]]);
        const n = shape.reduce((a, b) => a * b, 1);
        x = node(pick(["Add", "Mul"]), [conv(x, c, c, pick([1, 3])), init("k", shape, floats(n, 1))])[0];
        break;
      }
      case "transpose":
        // Square maps keep the shape; the NCHWc pass sees a Transpose between two Conv chains.
        x = node("Transpose", [x], [ints("perm", [0, 1, 3, 2])])[0];
        break;
      case "resize": {
        const scales = init("scales", [4], [1, 1, 2, 2]);
        const mode = pick(["nearest", "linear"]);
        x = node("Resize", opset >= 11 ? [x, init("roi", [0], []), scales] : [x, scales], [str("mode", mode)])[0];
        h *= 2;
        break;
      }
      case "upsample":
        x = node("Upsample", [x, init("scales", [4], [1, 1, 2, 2])], [str("mode", "nearest")])[0];
        h *= 2;
        break;
      case "topk": {
        // Sorting each row keeps the shape: k = the width.
        // TopK-1 (opset 9) takes k as an attribute; TopK-10 as an input.
        const [values] = opset < 10 ? node("TopK", [x], [int("axis", 3), int("k", h)], 2) : node("TopK", [x, init("k", [1], [h], "int64")], [int("axis", 3)], 2);
        x = values;
        break;
      }
      case "max":
      case "min":
        x = node(layer === "max" ? "Max" : "Min", [x, conv(x, c, c, 1)])[0];
        break;
      case "cumsum":
        x = node("CumSum", [x, init("axis", [], [3], "int64")])[0];
        break;
      case "roialign": {
        const rois = init("rois", [1, 4], [0, 0, h - 1, h - 1]);
        const batch = init("bi", [1], [0], "int64");
        const size = Math.max(2, h >> 1);
        x = node("RoiAlign", [x, rois, batch], [int("output_height", size), int("output_width", size), int("sampling_ratio", 2)])[0];
        h = size;
        break;
      }
      case "nms": {
        // A side branch: scores from the channel mean, fixed boxes; the selected indices are an output.
        const mean = node("ReduceMean", [x], [ints("axes", [1]), int("keepdims", 1)])[0];
        const scores = node("Reshape", [mean, init("sshape", [3], [1, 1, -1], "int64")])[0];
        const boxes = init("boxes", [1, h * h, 4], Array.from({ length: h * h * 4 }, (_, j) => ((j >> 2) % h) + (j % 4 >= 2 ? 2 : 0) + (j % 2) * 0.5));
        const [sel] = node("NonMaxSuppression", [boxes, scores, init("maxout", [1], [5], "int64"), init("iou", [1], [0.5]), init("sth", [1], [-1])]);
        extraOutputs.push({ name: sel, elemType: 7 });
        break;
      }
    }
  }
  // The chain ends in a Conv 1x1 so that every graph's last float32 op is one NCHWc rewrites.
  const yName = node("Relu", [conv(x, c, 16, 1)])[0];
  const bytes = encodeModel({
    irVersion: 8,
    opsetImports: [{ domain: "", version: opset }],
    graph: {
      name: `cnn${index}`, nodes, initializers: inits,
      inputs: [{ name: "x", elemType: 1, shape: [1, inC, inH, inH] }],
      outputs: [{ name: yName, elemType: 1 }, ...extraOutputs],
    },
  });
  const input = new Rng(index + 1);
  const values = Array.from({ length: inC * inH * inH }, () => (input.u32() / 2 ** 32) * 2 - 1);
  return { name: `cnn${index}`, layers, opset, bytes, feeds: [{ name: "x", type: "float32", dims: [1, inC, inH, inH], values }] };
}
