/**
 * .onnx models written back by `convert --initializers`, float32 -> float16 -> float32, with
 * initializers of every size from 1 to 300 elements and of sizes on both sides of 2^7, 2^14 and
 * 2^21 bytes (where a TensorProto's length prefix, or the graph's, gains or loses a byte; a041cdd
 * fixed a graph length that missed this). Every output is read three ways: our decodeModel,
 * onnxruntime (which also runs the graph: y_i = Cast(w_i, FLOAT)), and, when Debian's python3-onnx
 * is installed, onnx.checker.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { onnxMissing, PYTHON } from "../support/python.js";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import * as ort from "onnxruntime-node";
import { cast, Tensor } from "../../src/index.js";
import { encodeModel } from "../../src/io/onnx/encode.js";
import { decodeModel } from "../../src/io/onnx/model.js";
import { modelOf } from "../support/onnx-model.js";
import { cli, randomFloat32, scratch } from "./helpers.js";

const dir = scratch();

/** Element counts whose float32 (4n) or float16 (2n) bytes lie just below, at and above `bytes`. */
function around(bytes: number): number[] {
  const counts = new Set<number>();
  for (const width of [4, 2]) for (const d of [-24, -16, -8, 0, 8]) counts.add((bytes + d) / width);
  return [...counts];
}

const MODELS: [string, number[]][] = [
  ["counts", Array.from({ length: 300 }, (_, i) => i + 1)],
  ["around-2^7", around(2 ** 7)],
  ["around-2^14", around(2 ** 14)],
  ["around-2^21", around(2 ** 21)],
  // One initializer whose change moves the whole graph's length across a boundary.
  ["graph-2^14", [(2 ** 14 + 64) / 4]],
  ["graph-2^21", [(2 ** 21 + 64) / 4]],
];

/** A model (IR 8, opset 13: what onnx 1.12's checker knows) with y_i = Cast(w_i, to=FLOAT). */
function model(counts: readonly number[], seed: number): { bytes: Uint8Array; weights: Tensor[] } {
  const names = counts.map((_, i) => `w${i}`);
  const m = modelOf({
    inputs: [], opset: 13, irVersion: 8,
    outputs: counts.map((n, i) => ({ name: `y${i}`, elemType: 1, shape: [n] })),
    nodes: names.map((w, i) => ({ opType: "Cast", inputs: [w], outputs: [`y${i}`], attributes: [{ name: "to", type: "INT", i: 1 }] })),
  });
  const weights = counts.map((n, i) => Tensor.fromBytes(randomFloat32(n, seed + i, 1000), "float32", [n]));
  weights.forEach((tensor, i) => m.graph.initializers.push({ name: names[i], tensor }));
  return { bytes: encodeModel(m), weights };
}

/** onnx.checker's verdict and the initializers as Python's onnx reads them: [name, data_type, dims]. */
function pythonView(path: string): { status: number | null; out: string; err: string } {
  const script = [
    "import json, sys, onnx",
    "m = onnx.load(sys.argv[1])",
    "onnx.checker.check_model(m)",
    "print(json.dumps([[t.name, t.data_type, list(t.dims), len(t.raw_data)] for t in m.graph.initializer]))",
  ].join("\n");
  const r = spawnSync(PYTHON, ["-c", script, path], { encoding: "utf8", maxBuffer: 1 << 24 });
  return { status: r.status, out: r.stdout, err: r.stderr };
}

for (const [label, counts] of MODELS) {
  test(`float32 -> float16 -> float32 initializers (${label}: ${counts.length} of ${Math.min(...counts)}..${Math.max(...counts)} elements) read back by decodeModel, onnxruntime and onnx.checker`, { timeout: 300_000 }, async (t) => {
    const { bytes, weights } = model(counts, label.length * 1000);
    const input = join(dir, `${label}.onnx`);
    writeFileSync(input, bytes);
    const names = weights.map((_, i) => `w${i}`).join(",");
    const half = weights.map((w) => cast(w, "float16"));
    const steps: [string, string, string, Tensor[]][] = [
      [input, join(dir, `${label}.f16.onnx`), "float16", half],
      [join(dir, `${label}.f16.onnx`), join(dir, `${label}.back.onnx`), "float32", half.map((h) => cast(h, "float32"))],
    ];
    for (const [from, to, type, expected] of steps) {
      const r = await cli(["convert", from, "--to", type, "--initializers", names, "-o", to, "--json"]);
      assert.equal(r.code, 0, r.err);
      const written = new Uint8Array(readFileSync(to));
      // Ours: every initializer has the new type and exactly the bytes Cast gives.
      const decoded = decodeModel(written);
      assert.equal(decoded.graph.initializers.length, counts.length);
      decoded.graph.initializers.forEach((init, i) => {
        assert.equal(init.name, `w${i}`);
        assert.equal(init.tensor.dtype.name, type, init.name);
        assert.deepEqual(init.tensor.bytes(), expected[i].bytes(), init.name);
      });
      // onnxruntime loads it and Cast(w_i, FLOAT) gives float32(float16(w_i)) either way.
      const session = await ort.InferenceSession.create(written);
      const outputs = await session.run({});
      half.forEach((h, i) => {
        const y = outputs[`y${i}`].data as Float32Array;
        assert.deepEqual(new Uint8Array(y.buffer, y.byteOffset, y.byteLength), cast(h, "float32").bytes(), `y${i}`);
      });
      await session.release();
      await t.test(`onnx.checker accepts ${type} output`, { skip: onnxMissing() }, () => {
        const p = pythonView(to);
        assert.equal(p.status, 0, p.err);
        const elemType = type === "float16" ? 10 : 1;
        assert.deepEqual(JSON.parse(p.out), counts.map((n, i) => [`w${i}`, elemType, [n], n * (type === "float16" ? 2 : 4)]));
      });
    }
  });
}
