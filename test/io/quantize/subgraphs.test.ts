/**
 * int8 / uint8 quantize the MatMuls inside If and Loop bodies (issue 26 point 2: onnxruntime's
 * dynamic quantization with EnableSubgraph, as transformers.js runs it): each body is quantized by
 * a sub-pass whose parent is the enclosing graph's pass, as ONNXQuantizer's sub-quantizer is, so a
 * weight of the main graph is quantized into the main graph's initializers and an outer value's
 * DynamicQuantizeLinear goes before the If; the If is made again by make_node (attributes sorted).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as ort from "onnxruntime-node";
import { quantizeModel } from "../../../src/onnx/index.js";
import { PbMessage } from "../../../src/io/onnx/precision/pb.js";
import { W } from "../../support/protobuf.js";
import { int8OutputsDiffer, runModel } from "./golden.js";

const vi = (name: string, elem: number, dims: (number | string)[]): W => {
  const shape = new W();
  for (const d of dims) shape.len(1, typeof d === "number" ? new W().int(1, d) : new W().len(2, d));
  return new W().len(1, name).len(2, new W().len(1, new W().int(1, elem).len(2, shape)));
};
const weight = (name: string, k: number, n: number, seed: number): W => {
  const f = new Float32Array(k * n);
  for (let i = 0; i < f.length; i++) f[i] = Math.sin(i * 0.7 + seed) * 0.3;
  return new W().int(1, k).int(1, n).int(2, 1).len(8, name).len(9, new Uint8Array(f.buffer));
};
const node = (op: string, inputs: string[], outputs: string[], name: string, attrs: W[] = []): W => {
  const w = new W();
  for (const i of inputs) w.len(1, i);
  for (const o of outputs) w.len(2, o);
  w.len(3, name).len(4, op);
  for (const a of attrs) w.len(5, a);
  return w;
};

/** y = If(c, then: x @ w (w of the main graph), else: x @ w2 (w2 the branch's own)). */
function ifModel(): Uint8Array {
  const thenBranch = new W().len(1, node("MatMul", ["x", "w"], ["yt"], "mm_then")).len(2, "then").len(12, vi("yt", 1, [1, 8]));
  const elseBranch = new W().len(1, node("MatMul", ["x", "w2"], ["ye"], "mm_else")).len(2, "else").len(5, weight("w2", 16, 8, 2)).len(12, vi("ye", 1, [1, 8]));
  const attr = (name: string, g: W): W => new W().len(1, name).len(6, g).int(20, 5);
  const graph = new W()
    .len(1, node("If", ["c"], ["y"], "branch", [attr("then_branch", thenBranch), attr("else_branch", elseBranch)]))
    .len(2, "main").len(5, weight("w", 16, 8, 1))
    .len(11, vi("c", 9, [])).len(11, vi("x", 1, [1, 16])).len(12, vi("y", 1, [1, 8]));
  return new W().int(1, 8).len(7, graph).len(8, new W().len(1, "").int(2, 17)).bytes();
}

test("int8: MatMuls in If bodies become MatMulInteger; the main graph's weight is quantized there, x's DynamicQuantizeLinear before the If", async (t) => {
  const r = quantizeModel(ifModel(), { mode: "int8" });
  assert.equal(r.quantized, 2);
  assert.deepEqual(r.left, []);
  const g = PbMessage.parse(r.bytes, "ModelProto").sub(7, "GraphProto")!;
  const nodes = g.subs(1, "NodeProto");
  assert.deepEqual(nodes.map((n) => [n.string(4), n.string(3)]), [["DynamicQuantizeLinear", "x_QuantizeLinear"], ["If", "branch"]]);
  const attrs = nodes[1].subs(5, "AttributeProto");
  assert.deepEqual(attrs.map((a) => a.string(1)), ["else_branch", "then_branch"]);
  assert.deepEqual(g.subs(5, "TensorProto").map((t) => t.string(8)), ["w_scale", "w_zero_point", "w_quantized"]);
  const thenG = attrs[1].sub(6, "GraphProto")!;
  const elseG = attrs[0].sub(6, "GraphProto")!;
  assert.deepEqual(thenG.subs(1, "NodeProto").map((n) => n.string(4)), ["MatMulInteger", "Cast", "Mul", "Mul"]);
  assert.deepEqual(thenG.subs(1, "NodeProto")[0].strings(1), ["x_quantized", "w_quantized", "x_zero_point", "w_zero_point"]);
  assert.deepEqual(thenG.subs(5, "TensorProto").length, 0);
  assert.deepEqual(elseG.subs(5, "TensorProto").map((t) => t.string(8)), ["w2_scale", "w2_zero_point", "w2_quantized"]);

  // The weight's tensors are those of the same weight quantized in a flat model.
  const flatGraph = new W().len(1, node("MatMul", ["x", "w"], ["y"], "mm")).len(2, "flat").len(5, weight("w", 16, 8, 1))
    .len(11, vi("x", 1, [1, 16])).len(12, vi("y", 1, [1, 8]));
  const flat = quantizeModel(new W().int(1, 8).len(7, flatGraph).len(8, new W().len(1, "").int(2, 17)).bytes(), { mode: "int8" });
  const tensors = (bytes: Uint8Array): Uint8Array[] => PbMessage.parse(bytes, "ModelProto").sub(7, "GraphProto")!.all(5).map((f) => f.data);
  assert.deepEqual(tensors(r.bytes), tensors(flat.bytes));
  // Both branches run in onnxruntime, close to the float model where its int8 kernel is exact.
  const x = new Float32Array(16).map((_, i) => Math.cos(i) * 0.5);
  const apart = await int8OutputsDiffer();
  if (apart !== undefined) t.diagnostic(`not compared with the float model: ${apart}`);
  for (const c of apart === undefined ? [true, false] : []) {
    const feeds = { c: new ort.Tensor("bool", [c], []), x: new ort.Tensor("float32", x, [1, 16]) };
    const q = (await runModel(r.bytes, feeds)).data as Float32Array;
    const f = (await runModel(ifModel(), feeds)).data as Float32Array;
    for (let i = 0; i < 8; i++) assert.ok(Math.abs(q[i] - f[i]) < 0.03, `${c} ${i}: ${q[i]} vs ${f[i]}`);
  }
});
