/**
 * The variants `tensorcast quantize DIR` makes, loaded by their real consumer: transformers.js
 * (@huggingface/transformers, on onnxruntime-node in Node) reads a tiny BERT folder the test writes
 * (test/support/tiny-bert.ts) through `pipeline("feature-extraction", ..., { dtype })` with remote
 * models off, for every dtype, and its features stay within a bound of the float32 ones derived per
 * mode; and the golden variants onnxruntime's Python quantizers made of test/fixtures/quantize/model.onnx,
 * loaded the same way, are no closer to float32 than ours. Missing locally (no `npm install` since it became a devDependency), the test is skipped
 * with the reason; under CI it fails.
 */
import { test, type TestContext } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { runCli } from "../support/cli.js";
import { scratch } from "./helpers.js";
import { HIDDEN, writeModelFolder, writeTinyBert } from "../support/tiny-bert.js";
import { PbMessage } from "../../src/io/onnx/precision/pb.js";
import { golden, relativeL2 } from "../io/quantize/golden.js";

/**
 * The part of @huggingface/transformers the tests use, spelled here: the module is imported by a
 * name TypeScript does not resolve, so the tests build (and skip with the reason) without it.
 */
interface Transformers {
  env: { allowRemoteModels: boolean; allowLocalModels: boolean; localModelPath: string; useBrowserCache: boolean };
  pipeline(task: "feature-extraction", model: string, options: { dtype: string; device: string }): Promise<FeatureExtractor>;
}
interface FeatureExtractor {
  (texts: string[]): Promise<{ data: unknown; dims: number[] }>;
  dispose(): Promise<void>;
}
const TRANSFORMERS: string = "@huggingface/transformers";

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
 * the README ("Make the transformers.js variants").
 */
const BOUND: Record<Mode, number> = { fp16: 4 * U16, q8: 0.04, int8: 0.04, uint8: 0.04, q4: 0.2, q4f16: 0.2, bnb4: 0.2 };

/** The module, or undefined after skipping `t` with the reason it is missing (under CI: failing). */
async function loadTransformers(t: TestContext): Promise<Transformers | undefined> {
  try {
    return (await import(TRANSFORMERS)) as Transformers;
  } catch (e) {
    const why = `@huggingface/transformers is not installed (${(e as Error).message.split("\n")[0]}); run npm install`;
    if (process.env.CI) assert.fail(why);
    t.skip(why);
    return undefined;
  }
}

/** The features transformers.js' feature-extraction pipeline gives for TEXTS from the folder `root`/`name`, per dtype, local files only. */
function featureExtractor({ env, pipeline }: Transformers, root: string, name: string) {
  env.allowRemoteModels = false;
  env.allowLocalModels = true;
  env.localModelPath = root;
  env.useBrowserCache = false;
  return async (dtype: "fp32" | Mode) => {
    const extractor = await pipeline("feature-extraction", name, { dtype, device: "cpu" });
    try {
      const out = await extractor(TEXTS);
      return { data: out.data as Float32Array, dims: out.dims };
    } finally {
      await extractor.dispose();
    }
  };
}

test("transformers.js loads every variant of quantize DIR through pipeline('feature-extraction', { dtype }), close to float32", async (t) => {
  const transformers = await loadTransformers(t);
  if (!transformers) return;
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
  for (const x of report.filter((x) => x.mode !== "fp16")) assert.deepEqual(x.left.map((l) => l.node), ["scores.raw", "context"], x.mode);
  const suffix = (m: Mode) => (m === "q8" ? "quantized" : m);
  assert.deepEqual(readdirSync(join(dir, "onnx")).sort(), ["model.onnx", ...MODES.map((m) => `model_${suffix(m)}.onnx`)].sort());

  const features = featureExtractor(transformers, root, "tiny-bert");
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

/**
 * The fixture model with the names transformers.js' BertModel feeds and reads: ids -> input_ids,
 * y -> last_hidden_state, in graph inputs, outputs, value_info and every node.
 */
function asBert(bytes: Uint8Array): Uint8Array {
  const names = new Map([["ids", "input_ids"], ["y", "last_hidden_state"]]);
  const m = PbMessage.parse(bytes, "ModelProto");
  const g = m.sub(7, "GraphProto")!;
  for (const n of g.subs(1, "NodeProto")) {
    for (const no of [1, 2]) n.strings(no).forEach((s, k) => names.has(s) && n.setStringAt(no, k, names.get(s)!));
  }
  for (const no of [11, 12, 13]) {
    for (const v of g.subs(no, "ValueInfoProto")) if (names.has(v.string(1))) v.setString(1, names.get(v.string(1))!);
  }
  return m.encode();
}

test("through transformers.js, our variants of the fixture model are as close to float32 as onnxruntime Python's golden ones", async (t) => {
  const transformers = await loadTransformers(t);
  if (!transformers) return;
  // Python's onnxruntime is not needed: its variants of test/fixtures/quantize/model.onnx are golden
  // files. Both folders hold the same model (the fixture, renamed for BertModel); "ours" gets its
  // variants from quantize DIR, "python" the golden files under transformers.js' names.
  const root = scratch();
  writeModelFolder(join(root, "ours"), asBert(golden("model.onnx")));
  writeModelFolder(join(root, "python"), asBert(golden("model.onnx")));
  const theirs: Partial<Record<Mode, string>> = { q8: "model_int8", int8: "model_int8", uint8: "model_uint8", q4: "model_q4", bnb4: "model_bnb4" };
  const modes = Object.keys(theirs) as Mode[];
  for (const mode of modes) writeFileSync(join(root, "python", "onnx", `model_${mode === "q8" ? "quantized" : mode}.onnx`), asBert(golden(`${theirs[mode]}.onnx`)));
  const r = await runCli("quantize", join(root, "ours"), "--modes", modes.join(","));
  assert.equal(r.code, 0, r.err);
  const ours = featureExtractor(transformers, root, "ours");
  const python = featureExtractor(transformers, root, "python");
  const float32 = await ours("fp32");
  assert.deepEqual((await python("fp32")).data, float32.data);
  for (const mode of modes) {
    const [e, eTheirs] = [relativeL2((await ours(mode)).data, float32.data), relativeL2((await python(mode)).data, float32.data)];
    // 1% of margin: for a change that is not byte-identical but as accurate; today the errors are equal.
    assert.ok(e <= eTheirs * 1.01, `${mode}: our features' error ${e} > 1.01 x onnxruntime Python's ${eTheirs}`);
    assert.ok(eTheirs > 0, `${mode}: the Python-made variant's features equal float32's (not loaded?)`);
    if (process.env.TENSORCAST_VERBOSE) console.log(mode, "relative L2 error against float32: ours", e, "onnxruntime Python's", eTheirs);
  }
});
