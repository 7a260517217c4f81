/**
 * `tensorcast quantize` on ONNX models: one file (--mode, -o), a model folder (--modes, the
 * transformers.js names), the summary and --json, and the bad-input rules (exit codes 1 and 2,
 * existing outputs, already-quantized models, nothing to quantize).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { runCli } from "../support/cli.js";
import { scratch } from "../node/helpers.js";
import { GOLDEN, golden } from "../io/quantize/golden.js";
import { quantizeModelFile } from "../../src/node/index.js";
import { buildModel } from "../support/onnx-model.js";

test("quantize IN.onnx --mode q4 -o OUT.onnx writes onnxruntime's model_q4.onnx and a summary", async () => {
  const dir = scratch();
  const out = join(dir, "q4.onnx");
  const r = await runCli("quantize", join(GOLDEN, "model.onnx"), "--mode", "q4", "-o", out);
  assert.equal(r.code, 0, r.err);
  assert.deepEqual(new Uint8Array(readFileSync(out)), golden("model_q4.onnx"));
  assert.match(r.out, /q4\.onnx: q4, 142\.1 KiB -> 86\.8 KiB \(61%\), [0-9.]+ s, 3 nodes quantized\n$/);
  assert.deepEqual(readdirSync(dir), ["q4.onnx"]); // no temporary left
  // fp16 converts tensors, it replaces no node: the summary says which.
  const half = await runCli("quantize", join(GOLDEN, "model.onnx"), "--mode", "fp16", "-o", join(dir, "fp16.onnx"));
  assert.equal(half.code, 0, half.err);
  assert.match(half.out, /fp16\.onnx: fp16, 142\.1 KiB -> 71\.3 KiB \(50%\), [0-9.]+ s, 5 tensors converted to float16\n$/);
  rmSync(join(dir, "fp16.onnx"));
  const again = await runCli("quantize", join(GOLDEN, "model.onnx"), "--mode", "q4", "--block-size", "16", "--asymmetric", "-o", out, "--force", "--json");
  assert.equal(again.code, 0, again.err);
  const report = JSON.parse(again.out) as { mode: string; quantized: number; left: unknown[] }[];
  assert.deepEqual(report.map((x) => [x.mode, x.quantized, x.left.length]), [["q4", 3, 0]]);
  assert.deepEqual(new Uint8Array(readFileSync(out)), golden("model_q4_asym_b16.onnx"));
});

test("quantize DIR --modes writes onnx/NAME_SUFFIX.onnx for each model that is not a variant", async () => {
  const dir = scratch();
  mkdirSync(join(dir, "onnx"));
  copyFileSync(join(GOLDEN, "model.onnx"), join(dir, "onnx", "model.onnx"));
  copyFileSync(join(GOLDEN, "model_bnb4.onnx"), join(dir, "onnx", "model_bnb4.onnx"));
  const r = await runCli("quantize", dir, "--modes", "q8,q4,bnb4", "--force");
  assert.equal(r.code, 0, r.err);
  assert.deepEqual(readdirSync(join(dir, "onnx")).sort(), ["model.onnx", "model_bnb4.onnx", "model_q4.onnx", "model_quantized.onnx"]);
  assert.deepEqual(new Uint8Array(readFileSync(join(dir, "onnx", "model_bnb4.onnx"))), golden("model_bnb4.onnx"));
  assert.equal(r.out.trim().split("\n").length, 3);
});

test("quantize bad input: usage errors exit 2, refused models 1, an existing output is kept", async () => {
  const dir = scratch();
  const model = join(GOLDEN, "model.onnx");
  for (const args of [["--mode", "q5", "-o", join(dir, "a.onnx")], ["--mode", "q4"], ["--mode", "q4", "-o", join(dir, "a.onnx"), "--block-size", "24"], ["--modes", "q4", "-o", join(dir, "a.onnx")]]) {
    const r = await runCli("quantize", model, ...args);
    assert.equal(r.code, 2, `${args.join(" ")}: ${r.err}`);
  }
  const quantized = await runCli("quantize", join(GOLDEN, "model_q4.onnx"), "--mode", "q4", "-o", join(dir, "b.onnx"));
  assert.equal(quantized.code, 1);
  assert.match(quantized.err, /quantized already \(it holds MatMulNBits\).*--force-requantize/);
  assert.equal(existsSync(join(dir, "b.onnx")), false);
  writeFileSync(join(dir, "c.onnx"), "keep");
  const exists = await runCli("quantize", model, "--mode", "int8", "-o", join(dir, "c.onnx"));
  assert.equal(exists.code, 1);
  assert.equal(readFileSync(join(dir, "c.onnx"), "utf8"), "keep");
});

test("quantizeModelFile: a model with nothing to quantize is written as it was, counted 0, its MatMul listed", async () => {
  const dir = scratch();
  const input = join(dir, "plain.onnx");
  const bytes = buildModel({
    inputs: [{ name: "a", elemType: 1, shape: [2, 16] }, { name: "b", elemType: 1, shape: [16, 4] }],
    outputs: [{ name: "y", elemType: 1, shape: [2, 4] }],
    nodes: [{ opType: "MatMul", inputs: ["a", "b"], outputs: ["y"], name: "mm" }],
    opset: 17,
  });
  writeFileSync(input, bytes);
  const r = await quantizeModelFile(input, join(dir, "plain_int8.onnx"), { mode: "int8" });
  assert.equal(r.quantized, 0);
  assert.deepEqual(r.left.map((l) => l.node), ["mm"]);
  const cli = await runCli("quantize", input, "--mode", "q4", "-o", join(dir, "plain_q4.onnx"));
  assert.equal(cli.code, 0);
  assert.match(cli.out, /nothing to quantize: written as it was, 1 left float\n  left float: MatMul mm: B is not an initializer\n/);
});

test("quantize gemm.onnx: q8 rewrites the Gemms and writes onnxruntime's gemm_int8.onnx; every mode's summary names each node left float and why", async () => {
  const dir = scratch();
  const q8 = await runCli("quantize", join(GOLDEN, "gemm.onnx"), "--mode", "q8", "-o", join(dir, "q8.onnx"));
  assert.equal(q8.code, 0, q8.err);
  assert.deepEqual(new Uint8Array(readFileSync(join(dir, "q8.onnx"))), golden("gemm_int8.onnx"));
  assert.match(q8.out, /q8\.onnx: q8, .*, 5 nodes quantized, 4 left float\n/);
  for (const line of [
    /\n {2}left float: Gemm g5: alpha is 0\.5; onnxruntime's dynamic quantizer rewrites a Gemm as MatMul \(then quantized\) only with alpha = beta = 1 and transA = 0\n/,
    /\n {2}left float: Gemm g6: beta is 2;/, /\n {2}left float: Gemm g7: transA is 1;/,
    /\n {2}left float: MatMul g8_MatMul: B is not an initializer \(MatMulConstBOnly\) \(the MatMul made of Gemm g8\)\n/,
  ]) assert.match(q8.out, line);
  for (const mode of ["int8", "uint8"]) {
    const r = await runCli("quantize", join(GOLDEN, "gemm.onnx"), "--mode", mode, "-o", join(dir, `${mode}.onnx`), "--json");
    assert.equal(r.code, 0, r.err);
    const [report] = JSON.parse(r.out) as { quantized: number; left: { node: string }[] }[];
    assert.deepEqual([report.quantized, report.left.map((l) => l.node)], [5, ["g5", "g6", "g7", "g8_MatMul"]], mode);
    assert.deepEqual(new Uint8Array(readFileSync(join(dir, `${mode}.onnx`))), golden(`gemm_${mode}.onnx`), mode);
  }
  for (const mode of ["q4", "q4f16", "bnb4"]) {
    const r = await runCli("quantize", join(GOLDEN, "gemm.onnx"), "--mode", mode, "-o", join(dir, `${mode}.onnx`));
    assert.equal(r.code, 0, r.err);
    assert.match(r.out, mode === "q4f16" ? /nothing to quantize to 4 bits: converted to float16, 9 left float\n/ : /nothing to quantize: written as it was, 9 left float\n/, mode);
    assert.equal(r.out.match(/\n {2}left float: Gemm [^:]+: Matmul(NBits|Bnb4) takes MatMul only/gi)?.length, 9, `${mode}: ${r.out}`);
  }
  const fp16 = await runCli("quantize", join(GOLDEN, "gemm.onnx"), "--mode", "fp16", "-o", join(dir, "fp16.onnx"));
  assert.equal(fp16.code, 0, fp16.err);
  assert.match(fp16.out, /fp16\.onnx: fp16, .* tensors converted to float16\n$/);
});
