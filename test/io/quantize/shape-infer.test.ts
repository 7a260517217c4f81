/**
 * The value_info the dynamic quantizer adds (src/io/onnx/quantize/shape-infer.ts) against onnx's own
 * shape inference (Debian's python3-onnx 1.12, onnx.shape_inference.infer_shapes) on models that
 * exercise each rule: Gather on an inner axis, MatMul with batch broadcast and 1-D operands, onnx's
 * broadcast with symbols, Conv with strides, pads, dilations, SAME_UPPER and symbolic sizes,
 * Flatten, Gemm, Transpose, Cast, and operators it does not know. Every entry we write must be
 * byte for byte onnx's entry of that name; the entries we leave out are listed and must be exactly
 * the expected ones. Without python3-onnx: skipped with the reason (fails under CI).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PbMessage } from "../../../src/io/onnx/precision/pb.js";
import { addInferredValueInfo } from "../../../src/io/onnx/quantize/shape-infer.js";
import { buildModel, type NodeSpec, type ValueSpec } from "../../support/onnx-model.js";
import { onnxMissing, PYTHON } from "../../support/python.js";

const F = 1;
const I64 = 7;
const input = (name: string, shape: (number | string)[], elemType = F): ValueSpec => ({ name, elemType, shape });

const INPUTS: ValueSpec[] = [
  input("data", [5, 7, 3]), input("idx", ["b", 2], I64), input("a", ["b", "s", 8]), input("w", [8, 4]), input("v", [8]),
  input("p", [2, 1, 3, 8]), input("q", [5, 8, 6]), input("m", ["b", 1, 4]), input("n", [3, 1]), input("u", ["b", 4]),
  input("t", ["c", 4]), input("x", ["n", 3, 10, 12]), input("k", [8, 3, 3, 3]), input("x2", [1, 3, 9, 9]),
  input("x3", [1, 3, "h", "w"]), input("g1", [3, 4]), input("g2", [5, 4]), input("f", [2, 3, 4, 5]), input("fb", ["b", 3, 4]),
];
const NODES: NodeSpec[] = [
  { opType: "Gather", inputs: ["data", "idx"], outputs: ["gathered"], attributes: [{ name: "axis", type: "INT", i: 1 }] },
  { opType: "MatMul", inputs: ["a", "w"], outputs: ["mm"] },
  { opType: "MatMul", inputs: ["v", "w"], outputs: ["mm1d"] },
  { opType: "MatMul", inputs: ["p", "q"], outputs: ["mmb"] },
  { opType: "Add", inputs: ["m", "n"], outputs: ["added"] },
  { opType: "Mul", inputs: ["mm", "mm1d"], outputs: ["scaled"] },
  { opType: "Sub", inputs: ["u", "t"], outputs: ["two_symbols"] },
  { opType: "Conv", inputs: ["x", "k"], outputs: ["conv"], attributes: [{ name: "strides", type: "INTS", ints: [2, 2] }, { name: "pads", type: "INTS", ints: [1, 1, 1, 1] }] },
  { opType: "Conv", inputs: ["x2", "k"], outputs: ["conv_same"], attributes: [{ name: "auto_pad", type: "STRING", s: "SAME_UPPER" }, { name: "strides", type: "INTS", ints: [2, 2] }] },
  { opType: "Conv", inputs: ["x2", "k"], outputs: ["conv_dil"], attributes: [{ name: "dilations", type: "INTS", ints: [2, 2] }] },
  { opType: "Conv", inputs: ["x3", "k"], outputs: ["conv_sym"] },
  { opType: "Relu", inputs: ["conv"], outputs: ["relu"] },
  { opType: "Flatten", inputs: ["f"], outputs: ["flat"], attributes: [{ name: "axis", type: "INT", i: 2 }] },
  { opType: "Flatten", inputs: ["fb"], outputs: ["flat_sym"] },
  { opType: "Gemm", inputs: ["g1", "g2"], outputs: ["gemm"], attributes: [{ name: "transB", type: "INT", i: 1 }] },
  { opType: "Transpose", inputs: ["fb"], outputs: ["tr"], attributes: [{ name: "perm", type: "INTS", ints: [0, 2, 1] }] },
  { opType: "Transpose", inputs: ["fb"], outputs: ["tr_default"] },
  { opType: "Cast", inputs: ["mm"], outputs: ["half"], attributes: [{ name: "to", type: "INT", i: 10 }] },
  { opType: "Softmax", inputs: ["half"], outputs: ["soft"] },
  { opType: "Shape", inputs: ["a"], outputs: ["shape_of"] },
  { opType: "Relu", inputs: ["shape_of"], outputs: ["after_unknown"] },
];
/**
 * What onnx infers and this inference leaves out, on purpose: two symbols broadcast together, sizes
 * onnx names unk__N (Conv over a symbolic size, Flatten of a symbol), an unknown operator and what
 * follows it.
 */
const LEFT_OUT = ["two_symbols", "conv_sym", "flat_sym", "shape_of", "after_unknown"];

test("the value_info added for the dynamic quantizer is onnx 1.12's infer_shapes entry for entry", { skip: !process.env.CI && onnxMissing() }, () => {
  const bytes = buildModel({ opset: 13, inputs: INPUTS, outputs: [input("soft", ["b", "s", 4], 10)], nodes: NODES });
  const model = PbMessage.parse(bytes, "ModelProto");
  const graph = model.sub(7, "GraphProto")!;
  addInferredValueInfo(graph);
  const ours = new Map(graph.subs(13, "ValueInfoProto").map((v) => [v.string(1), Buffer.from(v.encode()).toString("hex")]));
  const dir = mkdtempSync(join(tmpdir(), "tensorcast-shape-"));
  try {
    writeFileSync(join(dir, "m.onnx"), bytes);
    const script = "import onnx, sys, json\n" +
      "m = onnx.shape_inference.infer_shapes(onnx.load(sys.argv[1]))\n" +
      "print(json.dumps({v.name: v.SerializeToString().hex() for v in m.graph.value_info}))\n";
    const r = spawnSync(PYTHON, ["-c", script, join(dir, "m.onnx")], { encoding: "utf8" });
    assert.equal(r.status, 0, r.stderr);
    const theirs = new Map(Object.entries(JSON.parse(r.stdout) as Record<string, string>));
    for (const [name, hex] of ours) assert.equal(hex, theirs.get(name), `value_info ${name}: ours differs from onnx's`);
    // Every node output but the graph output has an entry in onnx's; ours lacks exactly LEFT_OUT.
    const missing = [...theirs.keys()].filter((n) => !ours.has(n));
    assert.deepEqual(missing.sort(), [...LEFT_OUT].sort());
    assert.equal(ours.size, NODES.length - 1 - LEFT_OUT.length);
    // Written in node order, after what the graph declared.
    assert.deepEqual([...ours.keys()], NODES.map((n) => n.outputs[0]).filter((n) => n !== "soft" && !LEFT_OUT.includes(n)));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
