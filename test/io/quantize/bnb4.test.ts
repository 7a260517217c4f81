/**
 * bnb4 (MatMulBnb4, NF4 and FP4, block 64) against onnxruntime 1.30.0's MatMulBnb4Quantizer: the
 * whole model file byte for byte, its output under onnxruntime-node, and the coding rule's edges.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { quantizeModel, type QuantizeOptions } from "../../../src/onnx/index.js";
import { bnb4Code, quantizeBnb4 } from "../../../src/kernels/quant/bnb4.js";
import { assertSameBytes, golden, goldenFeeds, readNpy, runModel } from "./golden.js";

const CASES: { file: string; opts: QuantizeOptions }[] = [
  { file: "model_bnb4", opts: { mode: "bnb4" } },
  { file: "model_bnb4_fp4", opts: { mode: "bnb4", quantType: "fp4" } },
];

for (const { file, opts } of CASES) {
  test(`bnb4: ${file}.onnx equals onnxruntime's byte for byte, and runs to its output`, async () => {
    const r = quantizeModel(golden("model.onnx"), opts);
    assert.equal(r.quantized, 3);
    assertSameBytes(r.bytes, golden(`${file}.onnx`), file);
    const y = await runModel(r.bytes, goldenFeeds(false));
    const want = readNpy(`out_${file}.npy`);
    assert.deepEqual([...(y.data as Float32Array)], [...(want.data as Float32Array)]);
  });
}

test("bnb4 rule: a value on a midpoint takes the lower code; the first element goes to the high nibble; an odd tail pairs with 0's code", () => {
  const mid = Math.fround(0.8614784181118011);
  assert.equal(bnb4Code(mid, "nf4"), 14);
  assert.equal(bnb4Code(Math.fround(mid + 2 ** -24), "nf4"), 15);
  assert.deepEqual([bnb4Code(0, "nf4"), bnb4Code(-1, "nf4"), bnb4Code(NaN, "nf4")], [7, 0, 0]);
  assert.deepEqual([bnb4Code(0, "fp4"), bnb4Code(-0, "fp4"), bnb4Code(1, "fp4"), bnb4Code(-0.25, "fp4"), bnb4Code(Math.fround(0.29166667), "fp4")], [0, 0, 3, 15, 7]);
  const q = quantizeBnb4(Float32Array.from([1, -1, 0.5]), 64, "nf4");
  assert.deepEqual([...q.packed], [0xf0, (bnb4Code(0.5, "nf4") << 4) | 7]);
  assert.deepEqual([...q.absmax], [1]);
  // The reciprocal is a float32: with absmax 3.3102118968963623, -2.0213241577148438 * fround(1 / absmax)
  // is just past the -0.6106 midpoint (code 1); with a float64 reciprocal it is not (code 2).
  const r = quantizeBnb4(Float32Array.from([3.3102118968963623, -2.0213241577148438]), 64, "nf4");
  assert.equal(r.packed[0], (15 << 4) | 1);
});
