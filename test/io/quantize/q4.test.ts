/**
 * q4 (MatMulNBits) against onnxruntime 1.30.0's MatMulNBitsQuantizer: the whole model file equal
 * byte for byte to the golden ones (block 32 symmetric: transformers.js' q4; block 128; block 16
 * asymmetric), the model run in onnxruntime-node giving the golden output, MLAS's rule on edge
 * blocks, and the bad-input rules.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { quantizeModel } from "../../../src/onnx/index.js";
import { mlasQuantize4, roundHalfAway } from "../../../src/kernels/quant/mlas-blockwise.js";
import { TensorcastError } from "../../../src/index.js";
import { PbMessage } from "../../../src/io/onnx/precision/pb.js";
import { buildModel } from "../../support/onnx-model.js";
import { assertSameBytes, golden, goldenFeeds, readNpy, runModel } from "./golden.js";

const CASES = [
  { file: "model_q4", opts: { mode: "q4" } },
  { file: "model_q4_b128", opts: { mode: "q4", blockSize: 128 } },
  { file: "model_q4_asym_b16", opts: { mode: "q4", blockSize: 16, symmetric: false } },
] as const;

for (const { file, opts } of CASES) {
  test(`q4: ${file}.onnx equals onnxruntime's byte for byte, and runs to its output`, async () => {
    const r = quantizeModel(golden("model.onnx"), opts);
    assert.equal(r.quantized, 3);
    assert.deepEqual(r.left, []);
    assertSameBytes(r.bytes, golden(`${file}.onnx`), file);
    const y = await runModel(r.bytes, goldenFeeds(false));
    const want = readNpy(`out_${file}.npy`);
    assert.deepEqual(y.dims, want.shape);
    const got = y.data as Float32Array;
    let worst = 0;
    for (let i = 0; i < got.length; i++) worst = Math.max(worst, Math.abs(got[i] - (want.data[i] as number)));
    // The same weights under the same onnxruntime; the kernels' summation order may differ by CPU.
    assert.ok(worst <= 1e-5, `${file}: largest difference from onnxruntime's output ${worst}`);
    if (process.env.TENSORCAST_VERBOSE) console.log(file, "largest difference", worst);
  });
}

test("q4: accuracy_level is written only when non-zero, in make_node's sorted place (K, N, accuracy_level, bits, block_size)", () => {
  const bytes = quantizeModel(golden("model.onnx"), { mode: "q4", accuracyLevel: 4 }).bytes;
  const text = Buffer.from(bytes).toString("latin1");
  assert.equal(text.split("accuracy_level").length - 1, 3);
  const node = PbMessage.parse(bytes, "ModelProto").sub(7, "GraphProto")!.subs(1, "NodeProto").find((n) => n.string(4) === "MatMulNBits")!;
  assert.deepEqual(node.subs(5, "AttributeProto").map((a) => [a.string(1), a.int(3)]), [["K", 64], ["N", 96], ["accuracy_level", 4], ["bits", 4], ["block_size", 32]]);
  const none = Buffer.from(quantizeModel(golden("model.onnx"), { mode: "q4", accuracyLevel: 0 }).bytes).toString("latin1");
  assert.equal(none.includes("accuracy_level"), false);
});

test("MLAS q4 rule: roundf halves away from zero; symmetric scale from the larger-magnitude bound", () => {
  assert.deepEqual([roundHalfAway(2.5), roundHalfAway(-2.5), roundHalfAway(3.5), roundHalfAway(0.49999997)], [3, -3, 4, 0]);
  // Block [-4, 1, ...0]: m = -4, scale 0.5, code = v * 2 + 8: -4 -> 0, 1 -> 10; 0.25 * 2 + 8 = 8.5 -> 9 (half up, even would be 8).
  const w = new Float32Array(16);
  w[0] = -4;
  w[1] = 1;
  w[2] = 0.25;
  const q = mlasQuantize4(w, 16, 1, 16, true);
  assert.deepEqual([...q.scales], [0.5]);
  assert.deepEqual([...q.packed.subarray(0, 2)], [0 | (10 << 4), 9 | (8 << 4)]);
  // The reciprocal is a float32 and the product rounds to float32 before + 8: here v * (1 / scale) + 8
  // is 2.5000001 in float32 steps (code 3), 2.4999999 with a float64 reciprocal or a division (code 2).
  const near = mlasQuantize4(Float32Array.from([0.5507140755653381, 0.37861594557762146, ...new Array(14).fill(0)]), 16, 1, 16, true);
  assert.equal(near.packed[0], 0 | (3 << 4));
  // A tie between bounds (|min| = |max|) takes min: scale = -(-2) / 8 ... here max 2, min -2 -> m = min = -2.
  const tie = mlasQuantize4(Float32Array.from([2, -2, ...new Array(14).fill(0)]), 16, 1, 16, true);
  assert.deepEqual([...tie.scales], [0.25]);
  assert.deepEqual(tie.packed[0], 15 | (0 << 4)); // 2 * 4 + 8 = 16 clamps to 15; -2 * 4 + 8 = 0
});

test("MLAS q4 rule: an odd K repeats the code two rows above in the spare nibble; odd block counts pad zero points with 8", () => {
  // K = 17, block 16: the task holds rows 0..16; row 16 is alone in its byte, whose high nibble keeps row 15's code.
  const w = new Float32Array(17).map((_, i) => (i - 8) / 8);
  const q = mlasQuantize4(w, 17, 1, 16, false);
  assert.equal(q.packed.length, 16);
  assert.equal(q.packed[8] >> 4, q.packed[7] >> 4);
  assert.equal(q.zeroPoints!.length, 1);
  assert.equal(q.zeroPoints![0] >> 4, 0); // two blocks: both nibbles written
  const single = mlasQuantize4(new Float32Array(16).fill(1), 16, 1, 16, false);
  assert.equal(single.zeroPoints![0] >> 4, 8);
  // A one-row task (K = 33, block 16: rows 32..32) has nothing to repeat: 0.
  const one = mlasQuantize4(new Float32Array(33).fill(-1), 33, 1, 16, true);
  assert.equal(one.packed[16] >> 4, 0);
  // An all-zero block: scale 0, reciprocal 0, every code the zero point.
  const zero = mlasQuantize4(new Float32Array(16), 16, 1, 16, false);
  assert.deepEqual([...zero.scales, zero.zeroPoints![0] & 15, zero.packed[0]], [0, 0, 0]);
});

test("q4 bad input: block sizes, options, an already-quantized model, nothing to quantize", () => {
  const model = golden("model.onnx");
  for (const blockSize of [8, 24, 0, -32, 33.5]) {
    assert.throws(() => quantizeModel(model, { mode: "q4", blockSize }), (e: unknown) => e instanceof TensorcastError && e.code === "INVALID_ATTRIBUTE");
  }
  assert.throws(() => quantizeModel(model, { mode: "q5" as "q4" }), (e: unknown) => e instanceof TensorcastError && e.code === "INVALID_ATTRIBUTE");
  assert.throws(() => quantizeModel(model, { mode: "q4", accuracyLevel: 5 }), (e: unknown) => e instanceof TensorcastError && e.code === "INVALID_ATTRIBUTE");
  const q4 = golden("model_q4.onnx");
  assert.throws(() => quantizeModel(q4, { mode: "q4" }), (e: unknown) => e instanceof TensorcastError && e.code === "INVALID_DATA" && /MatMulNBits/.test(e.message));
  const again = quantizeModel(q4, { mode: "q4", forceRequantize: true });
  assert.equal(again.quantized, 0);
  // Nothing left to quantize: the copy, byte for byte.
  assertSameBytes(again.bytes, q4, "requantized q4 model with nothing to quantize");
});

test("q4: a MatMul whose B is not a constant stays float and is listed; the model is otherwise copied", () => {
  const model = buildModel({
    inputs: [{ name: "a", elemType: 1, shape: [2, 16] }, { name: "b", elemType: 1, shape: [16, 4] }],
    outputs: [{ name: "y", elemType: 1, shape: [2, 4] }],
    nodes: [{ opType: "MatMul", inputs: ["a", "b"], outputs: ["y"], name: "mm" }],
    opset: 17,
  });
  const r = quantizeModel(model, { mode: "q4" });
  assert.equal(r.quantized, 0);
  assert.deepEqual(r.left, [{ node: "mm", opType: "MatMul", reason: "B is not an initializer" }]);
  const conv = quantizeModel(golden("conv.onnx"), { mode: "q4" });
  assert.equal(conv.quantized, 1);
});
