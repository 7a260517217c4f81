/**
 * `tensorcast convert model.onnx --to float16|bfloat16|float8... -o out.onnx`: whole-model
 * conversion through the CLI (the pass itself is tested in precision.test.ts).
 */
import assert from "node:assert/strict";
import { readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { encodeModel } from "../../../src/io/onnx/encode.js";
import { decodeModel, opsetVersion } from "../../../src/io/onnx/model.js";
import { Tensor } from "../../../src/tensor.js";
import { cli, scratch } from "../../node/helpers.js";
import { mlp } from "./models.js";

const dir = scratch();

/** y = x @ w (w: n x n float32, with one value beyond float16's range). */
function bigMatMul(n: number): Uint8Array {
  const values = Array.from({ length: n * n }, (_, i) => Math.sin(i) * 0.5);
  values[7] = 70000;
  return encodeModel({
    irVersion: 8, opsetImports: [{ domain: "", version: 13 }],
    graph: {
      name: "big", nodes: [{ name: "mm", opType: "MatMul", domain: "", inputs: ["x", "w"], outputs: ["y"], attributes: [] }],
      initializers: [{ name: "w", tensor: Tensor.fromValues(values, "float32", [n, n]) }],
      inputs: [{ name: "x", elemType: 1, shape: [1, n] }], outputs: [{ name: "y", elemType: 1, shape: [1, n] }],
    },
  });
}

describe("convert an .onnx model as a whole", () => {
  const input = join(dir, "mlp.onnx");
  writeFileSync(input, mlp().bytes);

  it("--to float16 rewrites the graph: float16 initializers and io, a summary line", async () => {
    const out = join(dir, "mlp.f16.onnx");
    const r = await cli(["convert", input, "--to", "float16", "-o", out]);
    assert.equal(r.code, 0, r.err);
    assert.match(r.out, /graph converted to float16: 0 Cast nodes inserted, 0 nodes kept in float32/);
    const m = decodeModel(readFileSync(out));
    assert.deepEqual(m.graph.initializers.map((t) => t.tensor.dtype.name), ["float16", "float16", "float16", "float16"]);
    assert.deepEqual([...m.graph.inputs, ...m.graph.outputs].map((v) => v.elemType), [10, 10]);
  });

  it("--keep-io-types keeps float32 io; --json reports the kept nodes and the Casts", async () => {
    const out = join(dir, "mlp.keep.onnx");
    const r = await cli(["convert", input, "--to", "float16", "--keep-io-types", "--block-ops", "Relu", "--json", "-o", out]);
    assert.equal(r.code, 0, r.err);
    const report = JSON.parse(r.out);
    assert.equal(report.mode, "graph");
    assert.deepEqual(report.kept.map((k: { opType: string }) => k.opType), ["Relu"]);
    // x -> f16, around Relu two, y -> f32.
    assert.equal(report.castsInserted, 4);
    const m = decodeModel(readFileSync(out));
    assert.deepEqual([...m.graph.inputs, ...m.graph.outputs].map((v) => v.elemType), [1, 1]);
  });

  it("float16 overflow is clamped to 65504 and counted as saturated", async () => {
    const input2 = join(dir, "big.onnx");
    writeFileSync(input2, bigMatMul(8));
    const out = join(dir, "big.f16.onnx");
    const r = await cli(["convert", input2, "--to", "float16", "--json", "-o", out]);
    assert.equal(r.code, 0, r.err);
    const stats = JSON.parse(r.out).tensors[0].stats;
    assert.equal(stats.saturated, 1);
    assert.equal(stats.outOfRange, 1);
    const w = decodeModel(readFileSync(out)).graph.initializers[0].tensor;
    assert.equal((w.data as Uint16Array)[7], 0x7bff);
  });

  it("--to float8e4m3fn stores the weights in a quarter of the bytes, opset raised to 19", async () => {
    const input3 = join(dir, "big256.onnx");
    writeFileSync(input3, bigMatMul(256));
    const out = join(dir, "big256.f8.onnx");
    const r = await cli(["convert", input3, "--to", "float8e4m3fn", "-o", out]);
    assert.equal(r.code, 0, r.err);
    assert.match(r.out, /weights stored as float8e4m3fn: 1 Cast nodes inserted, 0 nodes kept in float32; opset 13 -> 19/);
    const ratio = statSync(input3).size / statSync(out).size;
    assert.ok(ratio > 3.9 && ratio < 4.01, `size ratio ${ratio}`);
    const m = decodeModel(readFileSync(out));
    assert.equal(opsetVersion(m), 19);
    assert.equal(m.irVersion >= 9, true);
    assert.deepEqual(m.graph.nodes.map((n) => n.opType), ["Cast", "MatMul"]);
  });

  it("refuses options that do not apply, with usage errors", async () => {
    const out = join(dir, "x.onnx");
    assert.equal((await cli(["convert", input, "--to", "float16", "--keep-io-types", "--weights-only", "-o", out])).code, 2);
    assert.equal((await cli(["convert", input, "--to", "float16", "--skip", "w1", "-o", out])).code, 2);
    const r = await cli(["convert", input, "--to", "float16", "--keep-io-types", "-o", join(dir, "x.safetensors")]);
    assert.equal(r.code, 2);
    assert.match(r.err, /--keep-io-types applies to an \.onnx model written back as \.onnx/);
    const r2 = await cli(["convert", input, "--to", "int8", "-o", out]);
    assert.equal(r2.code, 1);
    assert.match(r2.err, /weights cannot be stored as int8/);
  });
});
