/**
 * The command line as a newcomer meets it (issue 28): the type names people type, and what a
 * conversion says about itself.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { runCli as run } from "../support/cli.js";
import { scratch } from "../node/helpers.js";
import { mlp } from "../io/precision/models.js";
import { convertFile, type ConvertReport } from "../../src/node/convert/convert.js";
import { formatBytes } from "../../src/node/io/tensors.js";

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
 * The MLP test model with w1 and w2 (float32, 512 and 256 bytes) in the side file `data` beside
 * `model.onnx` in `dir`, written by convertFile itself (w1 "converted" to float32: kept, but
 * every initializer of 256 bytes or more goes to the side file).
 */
async function externalMlp(dir: string): Promise<string> {
  const inline = join(dir, "inline.onnx");
  writeFileSync(inline, mlp().bytes);
  const model = join(dir, "model.onnx");
  await convertFile(inline, model, { to: "float32", names: ["w1"], externalData: "data", externalThreshold: 256 });
  return model;
}

test("sizes count every file read and written: an .onnx model and its external data", async () => {
  const dir = scratch();
  const model = await externalMlp(dir);
  const sideIn = statSync(join(dir, "data")).size;
  assert.equal(sideIn, 512 + 256, "the fixture keeps w1 and w2 in its side file");
  const bytesIn = statSync(model).size + sideIn;
  const cases: [string, string[], string[]][] = [
    ["whole graph, inline OUT", ["--to", "float16"], ["a.onnx"]],
    ["whole graph, OUT with its side file", ["--to", "float16", "--external-data", "b.data"], ["b.onnx", "b.data"]],
    ["weights only", ["--to", "float8e4m3fn", "--external-data", "c.data"], ["c.onnx", "c.data"]],
    ["named initializers", ["--to", "float16", "--initializers", "w2", "--external-data", "d.data"], ["d.onnx", "d.data"]],
    ["to safetensors", ["--to", "float16"], ["e.safetensors"]],
  ];
  for (const [what, flags, outs] of cases) {
    const r = await run("convert", model, ...flags, "-o", join(dir, outs[0]), "--json");
    assert.equal(r.code, 0, `${what}: ${r.err}`);
    const report = JSON.parse(r.out) as ConvertReport;
    const bytesOut = outs.reduce((n, f) => n + statSync(join(dir, f)).size, 0);
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
