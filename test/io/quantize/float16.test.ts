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
  for (const m of matmuls) {
    const [a, , scales] = m.strings(1);
    const castA = producer.get(a)!;
    assert.equal(castA.string(4), "Cast");
    assert.equal(castA.sub(5, "AttributeProto")!.int(3), 10);
    const s = inits.get(scales)!;
    assert.equal(s.dtype.name, "float16");
    const s32 = decodeTensorProto(q4.subs(5, "TensorProto").find((t) => t.string(8) === scales)!.encode()).tensor;
    assert.deepEqual([...(s.data as Uint16Array)], [...(cast(s32, "float16").data as Uint16Array)]);
  }
  const y = await runModel(r.bytes, goldenFeeds(false));
  assert.equal(y.type, "float32");
  assert.ok(largestDifference(y.data as Float32Array, readNpy("out_model_q4.npy").data as Float32Array) < 2e-3);
});
