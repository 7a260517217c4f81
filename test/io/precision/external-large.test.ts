// suite: full
/**
 * Whole-model conversion of a model over 2 GiB (issue 15, part 3), in bounded memory: its
 * initializers (two of 1 GiB, one of 1 MiB) are in a sparse side file, with random regions so the
 * checks mean something. Converted to float16 as a whole graph, in a child process so that its
 * peak resident memory is its own: the 1 GiB result is written inline. With Identity kept in
 * float32 (--block-ops), the two large tensors stay float32 and the result, over 2 GiB, gets its
 * side file automatically. Skipped, saying why, when the disk lacks the room the outputs take.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { dtype, Tensor } from "../../../src/index.js";
import { castWeights } from "../../../src/io/onnx/precision/tensors.js";
import { convertModelFile } from "../../../src/node/convert/model-precision.js";
import { measureConversion } from "../../../src/node/convert/kernel.js";
import type { OnnxFileTensor } from "../../../src/node/io/onnx.js";
import { openTensorFile } from "../../../src/node/io/reader.js";
import { randomFloat32, rejectsCode, ROOT, scratch } from "../../node/helpers.js";
import { A, C, diskSkip, GiB, layoutOf, REGIONS, regionBytes, writeSparseModel } from "../../node/sparse-model.js";

const MiB = 2 ** 20;
const dir = process.env.KEEP_DIR ?? scratch();
/** The larger output (2 GiB + 1 MiB of side file) and room to spare. */
const skip = diskSkip(dir, 3 * GiB, "this test writes 2 GiB");

/** c's values: two of them past float16's range. */
const cBytes = randomFloat32(C, 9);
new Float32Array(cBytes.buffer, cBytes.byteOffset, C).set([1e6, -7e4], 5);
const c = Tensor.fromBytes(cBytes, "float32", [C]);

/** big.onnx (y_a = Identity(a), y_b = Identity(b), y_c = Relu(c)) and its sparse big.data. */
const writeInput = (): string => writeSparseModel(dir, cBytes, (n) => (n === "c" ? "Relu" : "Identity"));

interface ChildResult {
  report: { tensors: { name: string; to: string; stats?: { saturated: number; outOfRange: number; count: number } }[]; externalData?: unknown; workers: number };
  maxRss: number;
  seconds: number;
}

/** convertModelFile in a child process, so its peak resident memory is its own. */
function convertInChild(input: string, output: string, opts: object): ChildResult {
  const script = `
    import { convertModelFile } from ${JSON.stringify(join(ROOT, "build", "src", "node", "convert", "model-precision.js"))};
    const report = await convertModelFile(process.argv[2], process.argv[3], JSON.parse(process.argv[4]));
    console.log(JSON.stringify({ report, maxRss: process.resourceUsage().maxRSS * 1024, seconds: report.seconds }));
  `;
  // A file, not -e: worker threads inherit --input-type, which refuses their entry file.
  const file = join(dir, "convert-child.mjs");
  writeFileSync(file, script);
  const r = spawnSync(process.execPath, [file, input, output, JSON.stringify(opts)], { encoding: "utf8", maxBuffer: 64 * MiB });
  rmSync(file);
  assert.equal(r.status, 0, r.stderr);
  return JSON.parse(r.stdout) as ChildResult;
}

const f16 = dtype("float16");
const asF16 = (bytes: Uint8Array): Uint8Array => castWeights(Tensor.fromBytes(bytes, "float32", [bytes.length / 4]), { to: f16, saturate: true }).bytes();

test("a model over 2 GiB converts as a whole graph in bounded memory, inline at 1 GiB, and with a side file over 2 GiB", { skip, timeout: 300_000 }, async () => {
  const input = writeInput();
  const half = join(dir, "half.onnx");
  // The whole graph in float16: 1 GiB, inline.
  const one = convertInChild(input, half, { to: "float16" });
  console.log(`# over 2 GiB to float16 (graph, inline): ${one.seconds.toFixed(1)} s, peak RSS ${(one.maxRss / MiB).toFixed(0)} MiB, ${one.report.workers} workers`);
  assert.ok(one.maxRss < 600 * MiB, `peak RSS ${(one.maxRss / MiB).toFixed(0)} MiB for 2 GiB of weights`);
  assert.equal(one.report.externalData, undefined);
  assert.deepEqual(one.report.tensors.map((t) => [t.name, t.to]), [["a", "float16"], ["b", "float16"], ["c", "float16"]]);
  // c's two values past 65504 are clamped, as castWeights does, and counted.
  assert.deepEqual(one.report.tensors[2].stats, { ...measureConversion(c, castWeights(c, { to: f16, saturate: true })) });
  assert.equal(one.report.tensors[2].stats?.saturated, 2);
  assert.ok(statSync(half).size > GiB && statSync(half).size < GiB + 2 * MiB);
  const h = await openTensorFile(half);
  try {
    assert.deepEqual(h.tensors.map((t) => [t.name, t.dtype.name, (t as OnnxFileTensor).storage]), [["a", "float16", "raw"], ["b", "float16", "raw"], ["c", "float16", "raw"]]);
    assert.deepEqual(await h.tensors[2].read(0, C), asF16(c.bytes()));
    for (const at of REGIONS) {
      const got = await h.tensors[at < GiB ? 0 : 1].read((at % GiB) / 4, 16384);
      assert.deepEqual(got, asF16(regionBytes(REGIONS.indexOf(at))), `the region at ${at}, as float16`);
    }
    assert.deepEqual(await h.tensors[1].read(A / 2, 16384), new Uint8Array(32768), "a hole reads as zeros");
  } finally {
    await h.close();
  }
  rmSync(half);

  // Identity kept in float32: a and b stay float32, and the model, over 2 GiB, cannot be inline.
  const out = join(dir, "out.onnx");
  await rejectsCode(
    convertModelFile(input, out, { to: "float16", blockOps: ["Identity"], externalData: false }), "UNSUPPORTED_TYPE",
    /out\.onnx: would be 2148\d{6} bytes inline, over protobuf's limit of 2 GiB \(2147483647 bytes\); write its initializers to a side file \(--external-data out\.onnx\.data\)/,
  );
  assert.deepEqual(readdirSync(dir).sort(), ["big.data", "big.onnx"], "nothing written");
  const two = convertInChild(input, out, { to: "float16", blockOps: ["Identity"] });
  console.log(`# over 2 GiB, side file chosen: ${two.seconds.toFixed(1)} s, peak RSS ${(two.maxRss / MiB).toFixed(0)} MiB`);
  assert.ok(two.maxRss < 600 * MiB, `peak RSS ${(two.maxRss / MiB).toFixed(0)} MiB for 2 GiB of weights`);
  assert.deepEqual(two.report.externalData, { path: join(dir, "out.onnx.data"), location: "out.onnx.data", tensors: 3, bytes: 2 * GiB + 2 * C, automatic: true });
  assert.deepEqual(two.report.tensors.map((t) => t.name), ["c"]);
  assert.deepEqual(readdirSync(dir).sort(), ["big.data", "big.onnx", "out.onnx", "out.onnx.data"], "no temporary left");
  const back = await openTensorFile(out);
  try {
    assert.deepEqual(layoutOf(back), [["a", "float32", `out.onnx.data@0+${GiB}`], ["b", "float32", `out.onnx.data@${GiB}+${GiB}`], ["c", "float16", `out.onnx.data@${2 * GiB}+${2 * C}`]]);
    assert.deepEqual(await back.tensors[2].read(0, C), asF16(c.bytes()));
    for (const at of REGIONS) {
      assert.deepEqual(await back.tensors[at < GiB ? 0 : 1].read((at % GiB) / 4, 16384), regionBytes(REGIONS.indexOf(at)), `the region at ${at}`);
    }
  } finally {
    await back.close();
  }
  rmSync(out);
  rmSync(join(dir, "out.onnx.data"));
});
