/**
 * The command line as a newcomer meets it (issue 28): the type names people type, and what a
 * conversion says about itself.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { copyFileSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { runCli as run } from "../support/cli.js";
import { ROOT, scratch } from "../node/helpers.js";
import { mlp } from "../io/precision/models.js";
import { convertFile, type ConvertReport } from "../../src/node/convert/convert.js";
import type { ModelConvertReport } from "../../src/node/convert/model-precision.js";
import { formatBytes } from "../../src/node/io/tensors.js";
import { encodeModel } from "../../src/io/onnx/encode.js";
import type { OnnxAttribute, OnnxNode } from "../../src/io/onnx/model.js";
import { Tensor } from "../../src/tensor.js";

test("--to fp16 / fp32 / bf16 are accepted; --to fp8 names the float8 types", async () => {
  for (const [name, want] of [["fp16", "float16"], ["fp32", "float32"], ["fp64", "float64"], ["bf16", "bfloat16"]]) {
    const r = await run("cast", "--json", "--to", name, "1");
    assert.equal(r.code, 0, r.err);
    assert.equal((JSON.parse(r.out) as { to: string }).to, want);
  }
  const fp8 = await run("cast", "--to", "fp8", "1");
  assert.equal(fp8.code, 1);
  assert.match(fp8.err, /^error: --to: unknown data type "fp8" \(closest: float8e4m3fn, float8e4m3fnuz, float8e5m2, float8e5m2fnuz, float8e8m0\); /);
  const convert = await run("convert", "--example", "--to", "fp8");
  assert.equal(convert.code, 2);
  assert.match(convert.err, /--to: unknown data type "fp8" \(closest: float8e4m3fn, /);
});

/**
 * x[1,8,16,16] -> Conv 3x3 (k: [32, 8, 3, 3], 9,216 bytes) -> Relu -> GlobalAveragePool -> Flatten
 * -> Gemm (fw: [10, 32], 1,280 bytes) at `opset`: a CNN whose Conv and pooling have no bfloat16
 * before opset 22, so most of its weight bytes are read by nodes kept in float32.
 */
function convNet(opset: number): Uint8Array {
  const values = (n: number, seed: number) => Array.from({ length: n }, (_, i) => Math.sin(i * 0.37 + seed) * 0.25);
  const weights: [string, number[]][] = [["k", [32, 8, 3, 3]], ["kb", [32]], ["fw", [10, 32]], ["fb", [10]]];
  const node = (opType: string, inputs: string[], output: string, attributes: OnnxAttribute[] = []): OnnxNode =>
    ({ name: opType, opType, domain: "", inputs, outputs: [output], attributes });
  return encodeModel({
    irVersion: 8, opsetImports: [{ domain: "", version: opset }],
    graph: {
      name: "convnet",
      nodes: [
        node("Conv", ["x", "k", "kb"], "c", [{ name: "kernel_shape", type: "INTS", value: [3n, 3n] }, { name: "pads", type: "INTS", value: [1n, 1n, 1n, 1n] }]),
        node("Relu", ["c"], "r"), node("GlobalAveragePool", ["r"], "p"), node("Flatten", ["p"], "f"),
        node("Gemm", ["f", "fw", "fb"], "y", [{ name: "transB", type: "INT", value: 1n }]),
      ],
      initializers: weights.map(([name, shape], i) => ({ name, tensor: Tensor.fromValues(values(shape.reduce((a, b) => a * b, 1), i), "float32", shape) })),
      inputs: [{ name: "x", elemType: 1, shape: [1, 8, 16, 16] }], outputs: [{ name: "y", elemType: 1, shape: [1, 10] }],
    },
  });
}

/**
 * convNet(17) with k and fw (float32, 9,216 and 1,280 bytes) in the side file `data` beside
 * `model.onnx` in `dir`, written by convertFile itself (k "converted" to float32: kept, but every
 * initializer of 1024 bytes or more goes to the side file).
 */
async function externalConvNet(dir: string): Promise<string> {
  const inline = join(dir, "inline.onnx");
  writeFileSync(inline, convNet(17));
  const model = join(dir, "model.onnx");
  await convertFile(inline, model, { to: "float32", names: ["k"], externalData: "data" });
  return model;
}

test("sizes count every file read and written: an .onnx model and its external data", async () => {
  const dir = scratch();
  const model = await externalConvNet(dir);
  const sideIn = statSync(join(dir, "data")).size;
  assert.ok(sideIn >= 9216 + 1280, "the fixture keeps k and fw in its side file");
  const bytesIn = statSync(model).size + sideIn;
  const cases: [string, string[], string[]][] = [
    ["whole graph, inline OUT", ["--to", "float16"], ["a.onnx"]],
    ["whole graph, OUT with its side file", ["--to", "float16", "--external-data", "b.data"], ["b.onnx", "b.data"]],
    ["weights only", ["--to", "float8e4m3fn", "--external-data", "c.data"], ["c.onnx", "c.data"]],
    ["named initializers", ["--to", "float16", "--initializers", "fw", "--external-data", "d.data"], ["d.onnx", "d.data"]],
    ["to safetensors", ["--to", "float16"], ["e.safetensors"]],
  ];
  for (const [what, flags, outs] of cases) {
    const r = await run("convert", model, ...flags, "-o", join(dir, outs[0]), "--json");
    assert.equal(r.code, 0, `${what}: ${r.err}`);
    const report = JSON.parse(r.out) as ConvertReport;
    const sizes = outs.map((f) => statSync(join(dir, f)).size);
    assert.ok(sizes.every((n) => n > 0), `${what}: ${outs.join(", ")} are ${sizes.join(", ")} bytes`);
    const bytesOut = sizes.reduce((a, b) => a + b, 0);
    assert.deepEqual([report.bytesIn, report.bytesOut], [bytesIn, bytesOut], what);
  }
  const text = await run("convert", model, "--to", "bfloat16", "-o", join(dir, "f.onnx"));
  assert.equal(text.code, 0, text.err);
  const out = statSync(join(dir, "f.onnx")).size;
  assert.match(text.out, new RegExp(`tensors converted; ${formatBytes(bytesIn).replace(".", "\\.")} -> ${formatBytes(out).replace(".", "\\.")} in `));
});

test("--keep-io-types and --block-ops: one rule for weights-only conversions, asked for or implied by the target", async () => {
  const dir = scratch();
  const model = join(dir, "mlp.onnx");
  writeFileSync(model, mlp().bytes);
  const refused: [string[], string][] = [
    [["--to", "float8e4m3fn", "--keep-io-types"], "--keep-io-types"],
    [["--to", "float16", "--weights-only", "--keep-io-types"], "--keep-io-types"],
    [["--to", "int4", "--block-ops", "Relu"], "--block-ops"],
    [["--to", "bfloat16", "--weights-only", "--block-ops", "Relu"], "--block-ops"],
  ];
  for (const [flags, flag] of refused) {
    const r = await run("convert", model, ...flags, "-o", join(dir, "x.onnx"));
    assert.equal(r.code, 2, flags.join(" "));
    assert.match(r.err, new RegExp(`^error: ${flag} applies to whole-graph conversion \\(--to float16 or bfloat16 without --weights-only\\); --(to|weights-only)[^;]* stores the weights only, and the graph, its inputs and outputs stay float32`), flags.join(" "));
  }
  for (const flags of [["--to", "float16", "--keep-io-types"], ["--to", "bfloat16", "--block-ops", "Relu"], ["--to", "float8e4m3fn"]]) {
    const r = await run("convert", model, ...flags, "-o", join(dir, "ok.onnx"), "--force", "--quiet");
    assert.equal(r.code, 0, `${flags.join(" ")}: ${r.err}`);
  }
});

test("a bfloat16 graph that barely shrinks says so and names what stores the weights as bfloat16", async () => {
  const dir = scratch();
  const model = join(dir, "cnn17.onnx");
  writeFileSync(model, convNet(17));
  const note = /^most weight bytes stay float32: 9\.13 KiB of 9\.77 KiB, read by nodes kept in float32, so the model barely shrinks; --weights-only stores every weight as bfloat16 \(cast back to float32 where read\), or --to float16 converts more operators/m;
  const bf16 = await run("convert", model, "--to", "bfloat16", "-o", join(dir, "bf16.onnx"));
  assert.equal(bf16.code, 0, bf16.err);
  assert.match(bf16.out, /Conv "Conv" \(graph "convnet"\): Conv-11 does not allow bfloat16/);
  assert.match(bf16.out, note);
  const json = await run("convert", model, "--to", "bfloat16", "-o", join(dir, "bf16.json.onnx"), "--json");
  assert.deepEqual((JSON.parse(json.out) as ModelConvertReport).floatWeightBytes, { target: (320 + 10) * 2, other: (32 * 8 * 3 * 3 + 32) * 4 });
  // Where most bytes are converted, or only the weights are, there is nothing to say.
  for (const flags of [["--to", "float16"], ["--to", "bfloat16", "--weights-only"]]) {
    const r = await run("convert", model, ...flags, "-o", join(dir, `${flags.join("")}.onnx`));
    assert.equal(r.code, 0, r.err);
    assert.doesNotMatch(r.out, /most weight bytes/, flags.join(" "));
  }
});

test("bin/tensorcast.js without dist/ (a fresh clone after npm ci) says in one line to run npm run build", () => {
  const dir = scratch();
  mkdirSync(join(dir, "bin"));
  copyFileSync(join(ROOT, "bin", "tensorcast.js"), join(dir, "bin", "tensorcast.js"));
  writeFileSync(join(dir, "package.json"), JSON.stringify({ type: "module" }));
  const r = spawnSync(process.execPath, [join(dir, "bin", "tensorcast.js"), "--version"], { encoding: "utf8" });
  assert.equal(r.stderr, "error: tensorcast is not built (no dist/node/cli/main.js): run `npm run build` in the tensorcast folder first\n");
  assert.equal(r.stdout, "");
  assert.equal(r.status, 70);
  // Built, the same file runs the CLI.
  const built = spawnSync(process.execPath, [join(ROOT, "bin", "tensorcast.js"), "--version"], { encoding: "utf8" });
  assert.equal(built.status, 0, built.stderr);
  assert.match(built.stdout, /^\d+\.\d+\.\d+/);
});

test("docs/convert.md says what whole-model conversion does with external data: takes it (the sizes test above converts one)", () => {
  const doc = readFileSync(join(ROOT, "docs", "convert.md"), "utf8").replace(/\s+/g, " ");
  assert.doesNotMatch(doc, /Whole-model conversion \([^)]*\) refuses the external model/);
  assert.match(doc, /Whole-model conversion \([^]*?\) takes a model with external data too/);
});
