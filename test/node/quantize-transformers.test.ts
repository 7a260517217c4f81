/**
 * The variants `tensorcast quantize DIR` makes, loaded by their real consumer: transformers.js
 * (@huggingface/transformers, on onnxruntime-node in Node) reads a tiny BERT folder the test writes
 * (test/support/tiny-bert.ts) through `pipeline("feature-extraction", ..., { dtype })` with remote
 * models off, for every dtype, and its features stay within a bound of the float32 ones derived per
 * mode. Missing locally (no `npm install` since it became a devDependency), the test is skipped
 * with the reason; under CI it fails.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { runCli } from "../support/cli.js";
import { scratch } from "./helpers.js";
import { HIDDEN, writeTinyBert } from "../support/tiny-bert.js";

type Transformers = typeof import("@huggingface/transformers");

const MODES = ["fp16", "q8", "int8", "uint8", "q4", "q4f16", "bnb4"] as const;
type Mode = (typeof MODES)[number];

/** Two sentences of different lengths: the batch is padded, so attention_mask matters. */
const TEXTS = ["The quantized model runs in every browser.", "Small weights, fast bits!"];

/** float16's unit roundoff. */
const U16 = 2 ** -11;

/**
 * Relative L2 error of the features against float32's, per mode. The features are LayerNorm outputs
 * (unit RMS per token), so the error is that of the layer's sums relative to their size:
 * - fp16: every weight and every op's result rounds once (relative error <= u = 2^-11); some 20
 *   roundings lie on the longest path, with signs that do not align (sqrt(20) u / sqrt(3) = 2.6u): 4u.
 * - 8-bit (q8, int8, uint8): weight and activation steps are range / 255 per tensor (a Gaussian
 *   tensor of 4096 values spans ~7.8 RMS), an RMS error of 7.8 / 255 / sqrt(12) = 0.9% of each
 *   operand, 1.25% of a product: 0.04.
 * - 4-bit (q4, q4f16, bnb4): a block of 32 (q4) or 64 (bnb4) Gaussian weights has amax ~2.1-2.4 RMS
 *   and a step of about amax / 8, an RMS weight error of 2.1 / 8 / sqrt(12) = 7.6% or more: 0.2.
 * A wrong scale, zero point or nibble order gives errors near 1 or above; the measured errors are in
 * docs/quantize.md.
 */
const BOUND: Record<Mode, number> = { fp16: 4 * U16, q8: 0.04, int8: 0.04, uint8: 0.04, q4: 0.2, q4f16: 0.2, bnb4: 0.2 };

async function loadTransformers(): Promise<Transformers | string> {
  try {
    return await import("@huggingface/transformers");
  } catch (e) {
    return `@huggingface/transformers is not installed (${(e as Error).message.split("\n")[0]}); run npm install`;
  }
}

function relativeL2(got: Float32Array, want: Float32Array): number {
  let num = 0;
  let den = 0;
  for (let i = 0; i < want.length; i++) {
    num += (got[i] - want[i]) ** 2;
    den += want[i] ** 2;
  }
  return Math.sqrt(num / den);
}

test("transformers.js loads every variant of quantize DIR through pipeline('feature-extraction', { dtype }), close to float32", async (t) => {
  const transformers = await loadTransformers();
  if (typeof transformers === "string") {
    if (process.env.CI) assert.fail(transformers);
    t.skip(transformers);
    return;
  }
  const { env, pipeline } = transformers;
  const root = scratch();
  const dir = join(root, "tiny-bert");
  writeTinyBert(dir);
  const r = await runCli("quantize", dir, "--modes", MODES.join(","), "--json");
  assert.equal(r.code, 0, r.err);
  const report = JSON.parse(r.out) as { mode: string; quantized: number; left: { node: string }[] }[];
  // Six constant-B MatMuls (and for int8 / uint8 / q8 the two Gathers); the two MatMuls of activations stay float.
  const quantizedBy = Object.fromEntries(report.map((x) => [x.mode, x.quantized]));
  assert.deepEqual(quantizedBy, { fp16: quantizedBy.fp16, q8: 8, int8: 8, uint8: 8, q4: 6, q4f16: 6, bnb4: 6 });
  assert.ok(quantizedBy.fp16 > 0);
  const suffix = (m: Mode) => (m === "q8" ? "quantized" : m);
  assert.deepEqual(readdirSync(join(dir, "onnx")).sort(), ["model.onnx", ...MODES.map((m) => `model_${suffix(m)}.onnx`)].sort());

  env.allowRemoteModels = false;
  env.allowLocalModels = true;
  env.localModelPath = root;
  env.useBrowserCache = false;
  const features = async (dtype: "fp32" | Mode) => {
    const extractor = await pipeline("feature-extraction", "tiny-bert", { dtype, device: "cpu" });
    try {
      const out = await extractor(TEXTS);
      return { data: out.data as Float32Array, dims: out.dims };
    } finally {
      await extractor.dispose();
    }
  };
  const float32 = await features("fp32");
  assert.equal(float32.dims.length, 3);
  assert.deepEqual([float32.dims[0], float32.dims[2]], [2, HIDDEN]);
  // The float32 pipeline reads model.onnx: its features are unit-RMS LayerNorm outputs, not zeros or NaN.
  assert.ok(float32.data.every(Number.isFinite));
  const errors: Record<string, number> = {};
  for (const mode of MODES) {
    const got = await features(mode);
    assert.deepEqual(got.dims, float32.dims, mode);
    errors[mode] = relativeL2(got.data, float32.data);
    assert.ok(errors[mode] <= BOUND[mode], `${mode}: relative L2 error of the features against float32 ${errors[mode]} > ${BOUND[mode]}`);
    // A variant is not the float32 model under another name.
    assert.ok(errors[mode] > 0, `${mode}: features equal float32's`);
  }
  if (process.env.TENSORCAST_VERBOSE) console.log("relative L2 error against float32", JSON.stringify(errors));
});
