/**
 * fp16 (the whole-graph float16 conversion, float32 inputs and outputs) and q4f16 (q4, then float16,
 * MatMulNBits computing in float16 with float16 scales): both load and run in onnxruntime-node,
 * close to the float32 model's golden output.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { convertModelPrecision, quantizeModel } from "../../../src/onnx/index.js";
import { PbMessage } from "../../../src/io/onnx/precision/pb.js";
import { cast } from "../../../src/index.js";
import { decodeTensorProto } from "../../../src/io/onnx/tensorproto.js";
import { matMulNBitsToFloat16 } from "../../../src/io/onnx/quantize/q4f16.js";
import { assertSameBytes, golden, goldenFeeds, readNpy, runModel } from "./golden.js";

function largestDifference(got: Float32Array, want: Float32Array): number {
  let worst = 0;
  for (let i = 0; i < want.length; i++) worst = Math.max(worst, Math.abs(got[i] - want[i]));
  return worst;
}

test("fp16 is the whole-graph float16 conversion with float32 inputs and outputs", async () => {
  const r = quantizeModel(golden("model.onnx"), { mode: "fp16" });
  assertSameBytes(r.bytes, convertModelPrecision(golden("model.onnx"), { to: "float16", keepIoTypes: true }).bytes, "fp16");
  const y = await runModel(r.bytes, goldenFeeds(false));
  assert.equal(y.type, "float32");
  assert.ok(largestDifference(y.data as Float32Array, readNpy("out_model.npy").data as Float32Array) < 1e-3);
});

test("q4f16: MatMulNBits reads float16 A and float16 scales (q4's rounded to nearest even), and runs close to q4", async () => {
  const r = quantizeModel(golden("model.onnx"), { mode: "q4f16" });
  const g = PbMessage.parse(r.bytes, "ModelProto").sub(7, "GraphProto")!;
  const inits = new Map(g.subs(5, "TensorProto").map((t) => [t.string(8), decodeTensorProto(t.encode()).tensor]));
  const q4 = PbMessage.parse(golden("model_q4.onnx"), "ModelProto").sub(7, "GraphProto")!;
  const nodes = g.subs(1, "NodeProto");
  const producer = new Map(nodes.flatMap((n) => n.strings(2).map((o) => [o, n] as const)));
  const matmuls = nodes.filter((n) => n.string(4) === "MatMulNBits");
  assert.equal(matmuls.length, 3);
  // No Cast pair around MatMulNBits (float16 -> float32 -> float16 is the identity, removed): it
  // reads the float16 nodes' outputs directly; the one Cast left gives the float32 output y.
  assert.deepEqual(nodes.map((n) => n.string(4)), ["Gather", "MatMulNBits", "Add", "Relu", "MatMulNBits", "MatMulNBits", "Cast"]);
  for (const m of matmuls) {
    const [a, , scales] = m.strings(1);
    assert.notEqual(producer.get(a)!.string(4), "Cast");
    const s = inits.get(scales)!;
    assert.equal(s.dtype.name, "float16");
    const s32 = decodeTensorProto(q4.subs(5, "TensorProto").find((t) => t.string(8) === scales)!.encode()).tensor;
    assert.deepEqual([...(s.data as Uint16Array)], [...(cast(s32, "float16").data as Uint16Array)]);
  }
  const y = await runModel(r.bytes, goldenFeeds(false));
  assert.equal(y.type, "float32");
  assert.ok(largestDifference(y.data as Float32Array, readNpy("out_model_q4.npy").data as Float32Array) < 2e-3);
});

test("q4f16: a Cast to float32 of a value not known to be float16 is kept with the Cast back (int64 -> float32 -> float16 rounds)", () => {
  // ids (int64) -> Cast to float32 -> MatMulNBits: the Cast pair this pass makes around A is not
  // the identity here, so it stays.
  const q4 = quantizeModel(golden("model.onnx"), { mode: "q4" }).bytes;
  const m = PbMessage.parse(q4, "ModelProto");
  const g = m.sub(7, "GraphProto")!;
  const first = g.subs(1, "NodeProto").find((n) => n.string(4) === "MatMulNBits")!;
  const a = first.strings(1)[0];
  const cast = new PbMessage([], "NodeProto").addString(1, "ids").addString(2, a).addString(3, "ids_cast").addString(4, "Cast")
    .addMessage(5, new PbMessage([], "AttributeProto").addString(1, "to").addVarint(3, 1).addVarint(20, 2));
  // Replace the Gather (which wrote A) with the Cast.
  g.fields = g.fields.filter((f) => f.no !== 1 || g.message(f, "NodeProto").string(4) !== "Gather");
  g.fields.unshift({ no: 1, wire: 2, data: new Uint8Array(0), msg: cast });
  const out = matMulNBitsToFloat16(m.encode(), 17).bytes;
  const nodes = PbMessage.parse(out, "ModelProto").sub(7, "GraphProto")!.subs(1, "NodeProto");
  assert.deepEqual(nodes.slice(0, 3).map((n) => [n.string(4), n.strings(1)[0]]), [["Cast", "ids"], ["Cast", a], ["MatMulNBits", nodes[1].strings(2)[0]]]);
});
