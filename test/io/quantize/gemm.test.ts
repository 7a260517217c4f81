/**
 * Gemm under int8 / uint8 / q8 (src/io/onnx/quantize/gemm.ts): rewritten as MatMul (+ Add of C)
 * as onnxruntime's dynamic quantizer does, against the golden files of onnxruntime 1.30.0's
 * ONNXQuantizer (test/fixtures/quantize/make_gemm.py): every initializer, node and value_info
 * entry byte for byte, then the whole file; the result runs in onnxruntime-node to the golden
 * output; the Gemms the rewrite leaves are listed with their reason, in every mode. quantize_dynamic's
 * own files (the same quantizer, saved after ONNXModel.topological_sort) are ours with that sort.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as ort from "onnxruntime-node";
import { quantizeModel, type QuantizeOptions } from "../../../src/onnx/index.js";
import { PbMessage } from "../../../src/io/onnx/precision/pb.js";
import { assertRecordedOutput, assertSameBytes, golden, ortTopologicalSort, readNpy, runModel } from "./golden.js";

const CASES: { file: string; opts: QuantizeOptions }[] = [
  { file: "gemm_int8", opts: { mode: "int8" } },
  { file: "gemm_uint8", opts: { mode: "uint8" } },
  { file: "gemm_int8_perchannel", opts: { mode: "int8", perChannel: true } },
  { file: "gemm_uint8_perchannel", opts: { mode: "uint8", perChannel: true } },
  // q8 stores int8 weights for a model without Conv / attention operators.
  { file: "gemm_int8", opts: { mode: "q8" } },
];

/** What every 8-bit mode leaves float in gemm.onnx, and why. */
const LEFT_DYNAMIC = [
  { node: "g5", opType: "Gemm", reason: /^alpha is 0\.5; onnxruntime's dynamic quantizer rewrites a Gemm as MatMul/ },
  { node: "g6", opType: "Gemm", reason: /^beta is 2;/ },
  { node: "g7", opType: "Gemm", reason: /^transA is 1;/ },
  { node: "g8_MatMul", opType: "MatMul", reason: /^B is not an initializer \(MatMulConstBOnly\) \(the MatMul made of Gemm g8\)$/ },
];

function graphOf(bytes: Uint8Array): PbMessage {
  return PbMessage.parse(bytes, "ModelProto").sub(7, "GraphProto")!;
}

function fields(bytes: Uint8Array, no: number, context: string): Uint8Array[] {
  return graphOf(bytes).subs(no, context).map((f) => f.encode());
}

function feeds(): Record<string, ort.Tensor> {
  const x = readNpy("gx.npy");
  const w = readNpy("gwdyn.npy");
  return { x: new ort.Tensor("float32", x.data as Float32Array, x.shape), wdyn: new ort.Tensor("float32", w.data as Float32Array, w.shape) };
}

function assertLeft(left: readonly { node: string; opType: string; reason: string }[], want: typeof LEFT_DYNAMIC): void {
  assert.deepEqual(left.map((l) => [l.node, l.opType]), want.map((l) => [l.node, l.opType]));
  left.forEach((l, i) => assert.match(l.reason, want[i].reason, l.node));
}

for (const { file, opts } of CASES) {
  test(`Gemm, ${JSON.stringify(opts)}: ${file}.onnx's initializers, nodes and value_info byte for byte, then the whole file, and its output`, async () => {
    const r = quantizeModel(golden("gemm.onnx"), opts);
    const want = golden(`${file}.onnx`);
    // g1, g2, the unnamed Gemm, g4 and g9 become quantized MatMuls.
    assert.equal(r.quantized, 5);
    assertLeft(r.left, LEFT_DYNAMIC);
    for (const [no, context] of [[5, "TensorProto"], [1, "NodeProto"], [13, "ValueInfoProto"], [11, "ValueInfoProto"]] as const) {
      const ours = fields(r.bytes, no, context);
      const theirs = fields(want, no, context);
      assert.equal(ours.length, theirs.length, `${file}: the count of graph field ${no}`);
      ours.forEach((t, i) => assertSameBytes(t, theirs[i], `${file} ${context} ${i} (graph field ${no})`));
    }
    assertSameBytes(r.bytes, want, `${file}, the whole file`);
    const y = await runModel(r.bytes, feeds());
    await assertRecordedOutput(y.data as Float32Array, `${file}.onnx`, feeds(), `out_${file}.npy`, opts.mode !== "uint8");
  });
}

test("Gemm: the rewrite's names and order, as onnxruntime writes them (MatMul `g_MatMul` -> `Y_MatMul`, Add `g_Add`, Transpose `g_Transpose` -> `B_Transposed`, B transposed under its own name)", () => {
  const r = quantizeModel(golden("gemm.onnx"), { mode: "int8" });
  const g = graphOf(r.bytes);
  const nodes = g.subs(1, "NodeProto").map((n) => `${n.string(4)} ${n.string(3)}: ${n.strings(1).join(",")} -> ${n.strings(2).join(",")}`);
  assert.ok(nodes.includes("MatMulInteger g1_MatMul_quant: x_quantized,W1_quantized,x_zero_point,W1_zero_point -> h1_MatMul_output_quantized"), nodes.join("\n"));
  assert.ok(nodes.includes("Add g1_Add: h1_MatMul,C1 -> h1"));
  // The unnamed Gemm without C: its MatMul writes h3 itself and has no name.
  assert.ok(nodes.includes("MatMulInteger : h2_quantized,W3_quantized,h2_zero_point,W3_zero_point -> h3_output_quantized"));
  assert.ok(nodes.includes("Transpose g8_Transpose: wdyn -> wdyn_Transposed"));
  assert.ok(nodes.includes("MatMul g8_MatMul: h7,wdyn_Transposed -> h8_MatMul"));
  assert.ok(nodes.includes("Add g9_Add: y_MatMul,c9 -> y"));
  assert.equal(nodes.filter((n) => n.startsWith("Gemm ")).length, 3);
  // W2 [16, 32] with transB = 1 was quantized as its transpose [32, 16]: per tensor, so the codes of element (k, n) are those of W2[n, k].
  const w2 = g.subs(5, "TensorProto").find((t) => t.string(8) === "W2_quantized")!;
  assert.deepEqual(w2.varints(1).map(Number), [32, 16]);
  const src = graphOf(golden("gemm.onnx")).subs(5, "TensorProto").find((t) => t.string(8) === "W2")!;
  assert.deepEqual(src.varints(1).map(Number), [16, 32]);
});

test("Gemm in q4 / q4f16 / bnb4: left float and listed (MatMulNBits and MatMulBnb4 take MatMul only, as onnxruntime's quantizers)", () => {
  for (const mode of ["q4", "q4f16", "bnb4"] as const) {
    const r = quantizeModel(golden("gemm.onnx"), { mode });
    assert.equal(r.quantized, 0, mode);
    assert.deepEqual(r.left.map((l) => [l.node, l.opType]), ["g1", "g2", "(Gemm -> h3)", "g4", "g5", "g6", "g7", "g8", "g9"].map((n) => [n, "Gemm"]), mode);
    for (const l of r.left) assert.match(l.reason, /MatMul only/, `${mode} ${l.node}`);
  }
});

/** gemm.onnx with a Max (on the float16 pass's block list, as onnxconverter-common's) reading h1 and r1, after the other nodes. */
function withBlockedMax(): Uint8Array {
  const model = PbMessage.parse(golden("gemm.onnx"), "ModelProto");
  const g = model.sub(7, "GraphProto")!;
  const max = new PbMessage([], "NodeProto").addString(1, "h1").addString(1, "r1").addString(2, "hmax").addString(3, "clamp").addString(4, "Max");
  const at = g.fields.map((f) => f.no).lastIndexOf(1) + 1;
  g.fields.splice(at, 0, { no: 1, wire: 2, data: new Uint8Array(0), msg: max });
  return model.encode(1 << 16);
}

test("Gemm in fp16 / q4f16: fp16 computes every Gemm in float16 and lists the node it keeps in float32; q4f16 lists both the Gemms and that node", () => {
  const fp16 = quantizeModel(withBlockedMax(), { mode: "fp16" });
  assert.deepEqual(fp16.left, [{ node: "clamp", opType: "Max", reason: "kept in float32: on the block list" }]);
  const nodes = graphOf(fp16.bytes).subs(1, "NodeProto").map((n) => n.string(4));
  assert.equal(nodes.filter((n) => n === "Gemm").length, 9);
  const q4f16 = quantizeModel(withBlockedMax(), { mode: "q4f16" });
  assert.deepEqual(q4f16.left.map((l) => [l.node, l.opType]), [...["g1", "g2", "(Gemm -> h3)", "g4", "g5", "g6", "g7", "g8", "g9"].map((n) => [n, "Gemm"]), ["clamp", "Max"]]);
  assert.match(q4f16.left.at(-1)!.reason, /^kept in float32: on the block list$/);
  // The 8-bit and other 4-bit modes do not quantize Max, so they do not list it.
  for (const mode of ["int8", "q4", "bnb4"] as const) assert.ok(!quantizeModel(withBlockedMax(), { mode }).left.some((l) => l.node === "clamp"), mode);
  // gemm.onnx itself: every node computes in float16, none left.
  assert.deepEqual(quantizeModel(golden("gemm.onnx"), { mode: "fp16" }).left, []);
});

/** gemm.onnx with Gemm g2's B (W2, transB = 1) also read by a second node. */
function withSharedTransposedB(): Uint8Array {
  const model = PbMessage.parse(golden("gemm.onnx"), "ModelProto");
  const g = model.sub(7, "GraphProto")!;
  const extra = new PbMessage([], "NodeProto").addString(1, "W2").addString(2, "w2_again").addString(3, "reads_w2").addString(4, "Identity");
  const at = g.fields.findIndex((f) => f.no === 1);
  g.fields.splice(at, 0, { no: 1, wire: 2, data: new Uint8Array(0), msg: extra });
  return model.encode(1 << 16);
}

test("Gemm: a transB = 1 weight another node reads too stays float, untransposed (onnxruntime would transpose it under that node)", async () => {
  const r = quantizeModel(withSharedTransposedB(), { mode: "int8" });
  const g2 = r.left.find((l) => l.node === "g2");
  assert.ok(g2, JSON.stringify(r.left));
  assert.match(g2.reason, /B \(W2, transB = 1\) is read by another node/);
  assert.equal(r.quantized, 4);
  const g = graphOf(r.bytes);
  const w2 = g.subs(5, "TensorProto").find((t) => t.string(8) === "W2")!;
  assert.deepEqual(w2.varints(1).map(Number), [16, 32]);
  // The model still runs, near the float model's output.
  const y = (await runModel(r.bytes, feeds())).data as Float32Array;
  const want = readNpy("out_gemm.npy").data as Float32Array;
  assert.equal(y.length, want.length);
  for (let i = 0; i < y.length; i++) assert.ok(Math.abs(y[i] - want[i]) < 0.05 * (1 + Math.abs(want[i])), `${i}: ${y[i]} vs ${want[i]}`);
});

test("Gemm in the branches of an If: gemm_if_int8.onnx byte for byte (B of the main graph transposed there, the branches' value_info), and its output for both branches", async () => {
  const r = quantizeModel(golden("gemm_if.onnx"), { mode: "int8" });
  assert.deepEqual(r.left, []);
  assert.equal(r.quantized, 2);
  assertSameBytes(r.bytes, golden("gemm_if_int8.onnx"), "gemm_if_int8, the whole file");
  const x = readNpy("gx.npy");
  for (const c of [true, false]) {
    const f = { c: new ort.Tensor("bool", [c], []), x: new ort.Tensor("float32", x.data as Float32Array, x.shape) };
    const y = await runModel(r.bytes, f);
    await assertRecordedOutput(y.data as Float32Array, "gemm_if_int8.onnx", f, `out_gemm_if_int8_${c}.npy`, true);
  }
});

test("Gemm whose MatMul stays float (float64): its transposed B stays, after the other initializers, as onnxruntime leaves it; gemm_double_int8.onnx byte for byte and its output", async () => {
  const r = quantizeModel(golden("gemm_double.onnx"), { mode: "int8" });
  assert.equal(r.quantized, 1);
  assert.deepEqual(r.left.map((l) => [l.node, l.opType, l.reason]), [["gd_MatMul", "MatMul", "the weight is float64 (the MatMul made of Gemm gd)"]]);
  const inits = graphOf(r.bytes).subs(5, "TensorProto").map((t) => `${t.string(8)} [${t.varints(1).join(", ")}]`);
  assert.deepEqual(inits, ["Cf [12]", "Cd [8]", "Wd [12, 8]", "Wf_scale []", "Wf_zero_point []", "Wf_quantized [24, 12]"]);
  assertSameBytes(r.bytes, golden("gemm_double_int8.onnx"), "gemm_double_int8, the whole file");
  const x = readNpy("gx.npy");
  const f = { x: new ort.Tensor("float32", x.data as Float32Array, x.shape) };
  const y = await runModel(r.bytes, f);
  await assertRecordedOutput(y.data as Float32Array, "gemm_double_int8.onnx", f, "out_gemm_double_int8.npy", true);
});

test("Gemm the rewrite cannot read: an alpha typed INT, a 1-D transposed B, an empty C name; listed or rewritten, never a crash", () => {
  const model = PbMessage.parse(golden("gemm.onnx"), "ModelProto");
  const g = model.sub(7, "GraphProto")!;
  const nodes = g.subs(1, "NodeProto");
  const byName = (n: string): PbMessage => nodes.find((m) => m.string(3) === n)!;
  // g5's alpha (FLOAT 0.5) becomes an INT attribute.
  const alpha = byName("g5").subs(5, "AttributeProto")[0];
  alpha.fields = alpha.fields.filter((f) => f.no !== 2 && f.no !== 20);
  alpha.addVarint(3, 1).addVarint(20, 2);
  // W2 (g2's B, transB = 1) becomes 1-D.
  const w2 = g.subs(5, "TensorProto").find((t) => t.string(8) === "W2")!;
  w2.fields = w2.fields.filter((f) => f.no !== 1);
  w2.fields.unshift({ no: 1, wire: 0, data: new PbMessage([], "x").addVarint(1, 512).fields[0].data });
  // g1's C becomes "" (no C).
  byName("g1").setStringAt(1, 2, "");
  const r = quantizeModel(model.encode(1 << 16), { mode: "int8" });
  const reasons = Object.fromEntries(r.left.map((l) => [l.node, l.reason]));
  assert.match(reasons.g5, /^its alpha is not a float;/);
  assert.match(reasons.g2, /^B \(W2\) is 1-D, not 2-D;/);
  const out = graphOf(r.bytes).subs(1, "NodeProto");
  assert.ok(!out.some((n) => n.string(3) === "g1_Add"));
  assert.ok(out.some((n) => n.string(3) === "g1_MatMul_quant" && n.strings(2)[0] === "h1_output_quantized"));
});

for (const [file, opts] of [["gemm_big_int8", { mode: "int8" }], ["gemm_big_uint8_perchannel", { mode: "uint8", perChannel: true }]] as const) {
  test(`Kept initializers of 991 bytes or more carry data_location DEFAULT, as onnxruntime's external-data reload leaves them: ${file}.onnx byte for byte`, async () => {
    const r = quantizeModel(golden("gemm_big.onnx"), opts);
    assert.equal(r.quantized, 1);
    // Ca (1024 bytes), Wb (8192), U991 and the transposed Wd the rewrite made (1024) have the field; Cb, Cd and U990 (990 bytes) do not.
    const located = graphOf(r.bytes).subs(5, "TensorProto").filter((t) => t.fields.some((f) => f.no === 14)).map((t) => t.string(8));
    assert.deepEqual(located, ["Ca", "Wb", "U991", "Wd"]);
    assertSameBytes(r.bytes, golden(`${file}.onnx`), `${file}, the whole file`);
    const x = readNpy("gxb.npy");
    const f = { x: new ort.Tensor("float32", x.data as Float32Array, x.shape) };
    const y = await runModel(r.bytes, f);
    await assertRecordedOutput(y.data as Float32Array, `${file}.onnx`, f, `out_${file}.npy`, opts.mode === "int8");
  });
}

test("data_location DEFAULT in an If's branches too (onnxruntime's reload recurses into subgraphs): gemm_if_big_int8.onnx byte for byte", () => {
  const r = quantizeModel(golden("gemm_if_big.onnx"), { mode: "int8" });
  assert.equal(r.quantized, 1);
  assertSameBytes(r.bytes, golden("gemm_if_big_int8.onnx"), "gemm_if_big_int8, the whole file");
});

/** Every golden the dynamic quantizer made, with the options that make it here. */
const DYNAMIC_GOLDENS: [string, string, QuantizeOptions][] = [
  ...CASES.map((c): [string, string, QuantizeOptions] => ["gemm.onnx", c.file, c.opts]),
  ["gemm_if.onnx", "gemm_if_int8", { mode: "int8" }], ["gemm_double.onnx", "gemm_double_int8", { mode: "int8" }],
  ["gemm_big.onnx", "gemm_big_int8", { mode: "int8" }], ["gemm_big.onnx", "gemm_big_uint8_perchannel", { mode: "uint8", perChannel: true }],
  ["gemm_if_big.onnx", "gemm_if_big_int8", { mode: "int8" }],
];

test("quantize_dynamic's files (onnxruntime 1.30.0's documented entry): ours with its topological sort of the nodes, byte for byte, for every Gemm golden", () => {
  for (const [src, file, opts] of DYNAMIC_GOLDENS) {
    const theirs = golden(`${file}.quantize_dynamic.onnx`);
    // The sort as reimplemented here turns ONNXQuantizer's golden into quantize_dynamic's (make_gemm.py asserts the same in Python) ...
    assertSameBytes(ortTopologicalSort(golden(`${file}.onnx`)), theirs, `${file}: ONNXQuantizer's file, sorted`);
    // ... and ours into it; the order really differs, so the sort is not a no-op here.
    const ours = quantizeModel(golden(src), opts).bytes;
    assertSameBytes(ortTopologicalSort(ours), theirs, `${file} ${JSON.stringify(opts)}: ours, sorted`);
    assert.notDeepEqual(ours, theirs, `${file}: the two orders are the same`);
  }
});
