/**
 * Every output is read back and checked against its plan before it is renamed into place
 * (src/node/io/verify.ts). A writer bug, injected into the real CLI by test/support/corrupt-writer.ts
 * (the ONNX graph-length bug fixed in a041cdd, or a file one byte short), ends in exit 70 with code
 * INTERNAL, and neither OUT nor a temporary file is left.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { cast, dtype, Tensor } from "../../src/index.js";
import { encodeModel, encodeTensorProto } from "../../src/io/onnx/encode.js";
import { openTensorFile } from "../../src/node/io/reader.js";
import { verifyOutput } from "../../src/node/io/verify.js";
import { planOutput } from "../../src/node/io/writer.js";
import { modelOf } from "../support/onnx-model.js";
import { randomFloat32, rejectsCode, ROOT, safetensorsBytes, scratch } from "./helpers.js";

const BIN = join(ROOT, "bin", "tensorcast.js");
const HOOK = join(ROOT, "build", "test", "support", "corrupt-writer.js");
const built = existsSync(join(ROOT, "dist", "node", "cli", "main.js"));
const dir = scratch();

/** A model with one float32 initializer of 40 elements (160 bytes; 80 as float16, so its length prefix shrinks). */
function modelBytes(): Uint8Array {
  const model = modelOf({
    inputs: [], outputs: [{ name: "y", elemType: 1, shape: [40] }], opset: 13, irVersion: 8,
    nodes: [{ opType: "Cast", inputs: ["w"], outputs: ["y"], attributes: [{ name: "to", type: "INT", i: 1 }] }],
  });
  model.graph.initializers.push({ name: "w", tensor: Tensor.fromBytes(randomFloat32(40, 7), "float32", [40]) });
  return encodeModel(model);
}

/** Runs the CLI in a child process with writer.js altered by `fault`. */
function convertWithFault(fault: string, args: string[]): { code: number | null; err: string } {
  // --no-deprecation: Node 26 warns that module.register() (the hook) is deprecated, on stderr.
  const r = spawnSync(process.execPath, ["--no-deprecation", "--import", HOOK, BIN, "convert", ...args], {
    env: { ...process.env, TENSORCAST_TEST_CORRUPT: fault }, encoding: "utf8",
  });
  return { code: r.status, err: r.stderr };
}

const INTERNAL_REPORT =
  /^internal error: .*: the (onnx|pb|safetensors|npy) file written does not read back as planned \(.+\), so it was removed and nothing was written \(code INTERNAL\)\. This is a bug in tensorcast .*: please report it/;

test("the ONNX graph-length bug of a041cdd, put back: exit 70, code INTERNAL, no OUT, no temporary", { skip: !built && "dist/ is not built (npm run build)" }, () => {
  const folder = join(dir, "graph-length");
  const input = join(dir, "one.onnx");
  writeFileSync(input, modelBytes());
  for (const fault of ["graph-length"]) {
    mkdirSync(folder, { recursive: true });
    const out = join(folder, "one.f16.onnx");
    const r = convertWithFault(fault, [input, "--to", "float16", "--initializers", "w", "-o", out]);
    assert.equal(r.code, 70, r.err);
    assert.match(r.err, INTERNAL_REPORT);
    assert.match(r.err, /one\.f16\.onnx: the onnx file written does not read back/);
    assert.equal(r.err.split("\n").length, 2, "one line, no stack trace");
    assert.deepEqual(readdirSync(folder), []);
  }
});

test("a file one byte short, in every format: exit 70, code INTERNAL, no OUT, no temporary", { skip: !built && "dist/ is not built (npm run build)" }, () => {
  const w = Tensor.fromBytes(randomFloat32(64, 3), "float32", [8, 8]);
  const inputs: [string, Uint8Array, string[]][] = [
    ["in.safetensors", safetensorsBytes([{ name: "w", dtype: "float32", shape: [8, 8], bytes: w.bytes() }]), []],
    ["in.pb", encodeTensorProto(w, { name: "w" }), []],
    ["in.onnx", modelBytes(), ["--initializers", "w"]],
  ];
  const folder = join(dir, "short");
  mkdirSync(folder, { recursive: true });
  for (const [name, bytes, extra] of inputs) {
    const input = join(dir, name);
    writeFileSync(input, bytes);
    const outputs = name === "in.onnx" ? ["o.onnx"] : name === "in.pb" ? ["o.pb", "o.npy"] : ["o.safetensors"];
    for (const o of outputs) {
      const r = convertWithFault("short", [input, "--to", "bfloat16", ...extra, "-o", join(folder, o)]);
      assert.equal(r.code, 70, `${name} -> ${o}: ${r.err}`);
      assert.match(r.err, INTERNAL_REPORT);
      assert.deepEqual(readdirSync(folder), [], `${name} -> ${o}`);
    }
  }
});

test("verifyOutput: a file that reads back as planned passes; each difference is named", async () => {
  const w = Tensor.fromBytes(randomFloat32(6, 5), "float32", [2, 3]);
  const input = join(dir, "v.safetensors");
  writeFileSync(input, safetensorsBytes([{ name: "w", dtype: "float32", shape: [2, 3], bytes: w.bytes() }, { name: "b", dtype: "float32", shape: [3], bytes: w.bytes().subarray(0, 12) }]));
  const file = await openTensorFile(input);
  try {
    const plan = await planOutput(file, "safetensors", new Map([[file.tensors[0], dtype("float16")]]), "out.safetensors");
    const good = join(dir, "good.safetensors");
    writeFileSync(good, safetensorsBytes([
      { name: "w", dtype: "float16", shape: [2, 3], bytes: cast(w, "float16").bytes() },
      { name: "b", dtype: "float32", shape: [3], bytes: w.bytes().subarray(0, 12) },
    ]));
    assert.equal(await verifyOutput(plan, good, "out.safetensors"), undefined);
    const cases: [string, Uint8Array, RegExp][] = [
      ["wrong type", safetensorsBytes([
        { name: "w", dtype: "bfloat16", shape: [2, 3], bytes: cast(w, "bfloat16").bytes() },
        { name: "b", dtype: "float32", shape: [3], bytes: w.bytes().subarray(0, 12) },
      ]), /\(tensor "w" reads back as bfloat16 \[2, 3\], not float16 \[2, 3\]\)/],
      ["wrong shape", safetensorsBytes([
        { name: "w", dtype: "float16", shape: [3, 2], bytes: cast(w, "float16").bytes() },
        { name: "b", dtype: "float32", shape: [3], bytes: w.bytes().subarray(0, 12) },
      ]), /\(tensor "w" reads back as float16 \[3, 2\], not float16 \[2, 3\]\)/],
      ["missing tensor", safetensorsBytes([
        { name: "w", dtype: "float16", shape: [2, 3], bytes: cast(w, "float16").bytes() },
        { name: "c", dtype: "float32", shape: [3], bytes: w.bytes().subarray(0, 12) },
      ]), /\(tensor "b" is missing\)/],
      ["moved bytes", safetensorsBytes([
        { name: "b", dtype: "float32", shape: [3], bytes: w.bytes().subarray(0, 12) },
        { name: "w", dtype: "float16", shape: [2, 3], bytes: cast(w, "float16").bytes() },
      ]), /\(tensor "w" has 12 bytes at \d+, not 12 bytes at \d+\)/],
      ["truncated", new Uint8Array(40), /\(header length 0 is too small for a JSON object\)/],
    ];
    for (const [what, bytes, pattern] of cases) {
      const path = join(dir, `bad-${what.replace(/ /g, "-")}.safetensors`);
      writeFileSync(path, bytes);
      const e = await rejectsCode(verifyOutput(plan, path, "out.safetensors"), "INTERNAL", pattern);
      assert.ok(e.message.startsWith("out.safetensors: the safetensors file written does not read back as planned ("), `${what}: ${e.message}`);
    }
  } finally {
    await file.close();
  }
});
