/**
 * int8 / uint8 / q8 (onnxruntime's dynamic IntegerOps quantization) against the golden files of
 * onnxruntime 1.30.0's ONNXQuantizer: every initializer and node byte for byte, then the whole file
 * (the value_info of onnx's shape inference included: src/io/onnx/quantize/shape-infer.ts); the
 * result run in onnxruntime-node gives the golden output.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { quantizeModel, type QuantizeOptions } from "../../../src/onnx/index.js";
import { ortScaleZeroPoint, ortQuantizeValues } from "../../../src/kernels/quant/ort-minmax.js";
import { PbMessage } from "../../../src/io/onnx/precision/pb.js";
import { assertRecordedOutput, assertSameBytes, golden, goldenFeeds, readNpy, runModel } from "./golden.js";

const CASES: { src: string; file: string; opts: QuantizeOptions }[] = [
  { src: "model", file: "model_int8", opts: { mode: "int8" } },
  { src: "model", file: "model_uint8", opts: { mode: "uint8" } },
  { src: "model", file: "model_int8_perchannel", opts: { mode: "int8", perChannel: true } },
  { src: "conv", file: "conv_uint8", opts: { mode: "uint8" } },
  { src: "conv", file: "conv_uint8", opts: { mode: "q8" } },
  { src: "model", file: "model_int8", opts: { mode: "q8" } },
];

function fields(bytes: Uint8Array, no: number, context: string): Uint8Array[] {
  return PbMessage.parse(bytes, "ModelProto").sub(7, "GraphProto")!.subs(no, context).map((f) => f.encode());
}

for (const { src, file, opts } of CASES) {
  test(`${JSON.stringify(opts)}: ${file}.onnx's initializers and nodes byte for byte, then the whole file, and its output`, async () => {
    const r = quantizeModel(golden(`${src}.onnx`), opts);
    const want = golden(`${file}.onnx`);
    assert.deepEqual(r.left, []);
    assert.equal(r.quantized, src === "conv" ? 2 : 4);
    const ours = fields(r.bytes, 5, "TensorProto");
    const theirs = fields(want, 5, "TensorProto");
    assert.equal(ours.length, theirs.length);
    ours.forEach((t, i) => assertSameBytes(t, theirs[i], `${file} initializer ${i}`));
    const nodes = fields(r.bytes, 1, "NodeProto");
    const wantNodes = fields(want, 1, "NodeProto");
    assert.equal(nodes.length, wantNodes.length);
    nodes.forEach((n, i) => assertSameBytes(n, wantNodes[i], `${file} node ${i}`));
    assertSameBytes(fields(r.bytes, 13, "ValueInfoProto")[0] ?? new Uint8Array(0), fields(want, 13, "ValueInfoProto")[0], `${file} value_info 0`);
    assertSameBytes(r.bytes, want, `${file}, the whole file`);
    const y = await runModel(r.bytes, goldenFeeds(src === "conv"));
    await assertRecordedOutput(y.data as Float32Array, `${file}.onnx`, goldenFeeds(src === "conv"), `out_${file}.npy`, opts.mode !== "uint8");
  });
}

test("quant_utils' rule: float64 scale rounded once to float32, zero point half to even, codes half to even in float32", () => {
  // uint8 over [-1, 2]: scale 3 / 255 (float64) -> float32; zero point round(0 + 1 / (3/255)) = round(85) = 85.
  assert.deepEqual(ortScaleZeroPoint(-1, 2, "uint8", false), { scale: Math.fround(3 / 255), zeroPoint: 85 });
  // A zero point at a tie: [-0.5, 0.5] over 0..255 -> 127.5 -> 128 (even); [-1.5, 0.5] * k ... symmetric uint8 -> round(127.5) = 128.
  assert.equal(ortScaleZeroPoint(-0.5, 0.5, "uint8", false).zeroPoint, 128);
  assert.equal(ortScaleZeroPoint(-3, 1, "uint8", true).zeroPoint, 128);
  // [-126.5, 128.5]: scale exactly 1, zero point 126.5 -> 126 (half up would give 127).
  assert.deepEqual(ortScaleZeroPoint(-126.5, 128.5, "uint8", false), { scale: 1, zeroPoint: 126 });
  // int8 symmetric: scale a / 127, zero point 0; a zero range gives scale 1.
  assert.deepEqual(ortScaleZeroPoint(-0.5, 1.27, "int8", true), { scale: Math.fround(2.54 / 254), zeroPoint: 0 });
  assert.deepEqual(ortScaleZeroPoint(0, 0, "int8", true), { scale: 1, zeroPoint: 0 });
  // Codes: 2.5 and 3.5 at scale 1 round to 2 and 4; int8 clips at -127, not -128.
  const out = new Int8Array(3);
  ortQuantizeValues([2.5, 3.5, -300], { scale: 1, zeroPoint: 0 }, "int8", out);
  assert.deepEqual([...out], [2, 4, -127]);
  // x / scale rounds to float32 first: -22.5 exactly (-> -22), though the float64 quotient is just below (-> -23).
  ortQuantizeValues([-0.08240024000406265], { scale: 0.0036622327752411366, zeroPoint: 0 }, "int8", out);
  assert.equal(out[0], -22);
});
