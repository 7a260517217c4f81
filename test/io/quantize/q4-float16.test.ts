/**
 * q4 of a float16 MatMul weight (issue 26 point 2): MatMulNBitsQuantizer hands a float16 B to
 * MLAS's MLFloat16 instantiation, which stores float16 scales (MLFloat16(scale_f)) and divides by
 * the stored scale, while an asymmetric zero point comes from the float32 scale_f
 * (onnxruntime/core/mlas/lib/q4_dq.cpp, quantizeAndTranspose and range2scalezp).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { quantizeModel } from "../../../src/onnx/index.js";
import { PbMessage } from "../../../src/io/onnx/precision/pb.js";
import { W } from "../../support/protobuf.js";
import { runModel } from "./golden.js";
import { float16Feed, ortData } from "../../support/ort.js";

/** y = a @ w, a float16 [1, K], w the float16 initializer [K, N] of `bits`. */
function float16Model(bits: readonly number[], K: number, N: number): Uint8Array {
  const vi = (name: string, dims: number[]): W => {
    const shape = new W();
    for (const d of dims) shape.len(1, new W().int(1, d));
    return new W().len(1, name).len(2, new W().len(1, new W().int(1, 10).len(2, shape)));
  };
  const raw = new Uint8Array(new Uint16Array(bits).buffer);
  const graph = new W()
    .len(1, new W().len(1, "a").len(1, "w").len(2, "y").len(3, "mm").len(4, "MatMul"))
    .len(2, "half")
    .len(5, new W().int(1, K).int(1, N).int(2, 10).len(8, "w").len(9, raw))
    .len(11, vi("a", [1, K])).len(12, vi("y", [1, N]));
  return new W().int(1, 8).len(7, graph).len(8, new W().len(1, "").int(2, 17)).bytes();
}

const F16 = { "15.0078125": 0x4B81, "11.5078125": 0x49C1, "1": 0x3C00, "0": 0 };

test("q4 of a float16 B: float16 scales, codes from the stored scale, the zero point from the float32 one", async () => {
  // One column, K = 16, block 16, asymmetric: range [0, 15.0078125], scale_f = 15.0078125 / 15 =
  // 1.00052..., stored as float16 1.0009765625 (0x3C01). 11.5078125 / 1.00052 = 11.5018 would code
  // 12; divided by the stored scale, 11.4966 codes 11.
  const bits = [F16["15.0078125"], F16["11.5078125"], ...new Array(14).fill(0)];
  const r = quantizeModel(float16Model(bits, 16, 1), { mode: "q4", blockSize: 16, symmetric: false });
  assert.equal(r.quantized, 1);
  const g = PbMessage.parse(r.bytes, "ModelProto").sub(7, "GraphProto")!;
  const tensor = (name: string): PbMessage => g.subs(5, "TensorProto").find((t) => t.string(8) === name)!;
  const scales = tensor("w_scales");
  assert.equal(scales.int(2), 10);
  assert.deepEqual(Array.from(new Uint16Array(scales.all(9)[0].data.slice().buffer)), [0x3C01]);
  assert.deepEqual(Array.from(tensor("w_Q4").all(9)[0].data), [0xBF, 0, 0, 0, 0, 0, 0, 0]);
  assert.deepEqual(Array.from(tensor("w_zero_points").all(9)[0].data), [0x80]);

  // It runs in onnxruntime (MatMulNBits with float16 A and scales): a = [1, 1, 0, ...] gives
  // (15 + 11) * 1.0009765625 = 26.025390625, which float16 rounds to 26.03125 (0x4E82).
  const a = new Uint16Array(16);
  a[0] = a[1] = F16["1"];
  const y = await runModel(r.bytes, { a: float16Feed(a, [1, 16]) });
  assert.deepEqual(Array.from(ortData(y) as Uint16Array), [0x4E82]);
});

test("q4 of a float16 B, symmetric block 32: scale -m / 8 is a float16 value itself; bnb4 leaves float16 B float", () => {
  const bits = Array.from({ length: 32 * 2 }, (_, i) => (i * 2654435761) & 0x3bff);
  const model = float16Model(bits, 32, 2);
  const r = quantizeModel(model, { mode: "q4" });
  assert.equal(r.quantized, 1);
  const g = PbMessage.parse(r.bytes, "ModelProto").sub(7, "GraphProto")!;
  assert.equal(g.subs(5, "TensorProto").find((t) => t.string(8) === "w_scales")!.int(2), 10);
  const b = quantizeModel(model, { mode: "bnb4" });
  assert.deepEqual(b.left, [{ node: "mm", opType: "MatMul", reason: "B is float16; tensorcast quantizes float32 weights" }]);
});
