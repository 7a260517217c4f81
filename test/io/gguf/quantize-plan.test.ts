/**
 * The plan of llama_model_quantize (src/io/gguf/quantize-plan.ts) on its own: the rules read off
 * llama-quant.cpp, checked on made-up models where the tiny test models (quantize-golden.test.ts)
 * cannot reach them: 32 layers for the attn_v / ffn_down layer rules, experts, a 70B, odd names.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { ggmlType } from "../../../src/ggml/index.js";
import { llamaPreset, LLAMA_PRESETS } from "../../../src/ggml/presets.js";
import { fallbackType, layerOf, planGgufQuantization, quantizedMetadata, weightOrder, type PlanInputTensor } from "../../../src/io/gguf/quantize-plan.js";
import type { GgufMetadataEntry } from "../../../src/io/gguf/values.js";

function meta(layers: number, extra: Record<string, number> = {}, arch = "llama"): Map<string, GgufMetadataEntry> {
  const m = new Map<string, GgufMetadataEntry>();
  const add = (key: string, type: GgufMetadataEntry["type"], value: GgufMetadataEntry["value"]): void => void m.set(key, { key, type, value });
  add("general.architecture", "string", arch);
  add(`${arch}.block_count`, "uint32", layers);
  add(`${arch}.attention.head_count`, "uint32", extra.heads ?? 8);
  add(`${arch}.attention.head_count_kv`, "uint32", extra.headsKv ?? 8);
  if (extra.experts) add(`${arch}.expert_count`, "uint32", extra.experts);
  return m;
}

function layered(layers: number, cols = 256): PlanInputTensor[] {
  const f16 = ggmlType("F16");
  const out: PlanInputTensor[] = [{ name: "token_embd.weight", ggmlType: f16, dims: [cols, 32] }, { name: "output.weight", ggmlType: f16, dims: [cols, 32] }];
  for (let i = 0; i < layers; i++) {
    for (const n of ["attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down"]) out.push({ name: `blk.${i}.${n}.weight`, ggmlType: f16, dims: [cols, cols] });
    out.push({ name: `blk.${i}.attn_norm.weight`, ggmlType: ggmlType("F32"), dims: [cols] });
  }
  return out;
}

const typesOf = (plan: ReturnType<typeof planGgufQuantization>, part: string): string[] => plan.tensors.filter((t) => t.name.endsWith(part)).map((t) => t.to.name);

test("Q4_K_M over 32 layers: attn_v and ffn_down get Q6_K where use_more_bits says (first 4, last 4, every third between)", () => {
  const plan = planGgufQuantization(meta(32), layered(32), { preset: "q4_k_m" });
  const more = (i: number): boolean => i < 4 || i >= 28 || (i - 4) % 3 === 2;
  const want = Array.from({ length: 32 }, (_, i) => (more(i) ? "Q6_K" : "Q4_K"));
  assert.deepEqual(typesOf(plan, "attn_v.weight"), want);
  assert.deepEqual(typesOf(plan, "ffn_down.weight"), want);
  assert.deepEqual(typesOf(plan, "attn_q.weight"), Array(32).fill("Q4_K"));
  assert.equal(plan.tensors.find((t) => t.name === "output.weight")!.to.name, "Q6_K");
  assert.equal(plan.tensors.find((t) => t.name === "token_embd.weight")!.to.name, "Q4_K");
  assert.equal(plan.fileType, 15);
});

test("Q3_K_M: attn_v Q5_K for the first two, ffn_down Q5_K below n/16, attn_output Q4_K; Q4_K_S: attn_v Q5_K below 4, ffn_down below n/8", () => {
  const m = planGgufQuantization(meta(32), layered(32), { preset: "Q3_K_M" });
  assert.deepEqual(typesOf(m, "attn_v.weight").slice(0, 4), ["Q5_K", "Q5_K", "Q4_K", "Q4_K"]);
  assert.deepEqual(typesOf(m, "ffn_down.weight").slice(0, 3), ["Q5_K", "Q5_K", "Q4_K"]);
  assert.deepEqual(new Set(typesOf(m, "attn_output.weight")), new Set(["Q4_K"]));
  const s = planGgufQuantization(meta(32), layered(32), { preset: "Q4_K_S" });
  assert.deepEqual(typesOf(s, "attn_v.weight").slice(0, 5), ["Q5_K", "Q5_K", "Q5_K", "Q5_K", "Q4_K"]);
  assert.deepEqual(typesOf(s, "ffn_down.weight").slice(0, 5), ["Q5_K", "Q5_K", "Q5_K", "Q5_K", "Q4_K"]);
});

test("n_gqa >= 4 and 8 experts move attn_v; a 70B llama gets Q5_K for Q3_K/Q4_K attn_v", () => {
  const gqa = planGgufQuantization(meta(8, { heads: 32, headsKv: 8 }), layered(8), { preset: "Q2_K" });
  assert.deepEqual(new Set(typesOf(gqa, "attn_v.weight")), new Set(["Q4_K"]));
  const moe = planGgufQuantization(meta(8, { experts: 8 }), layered(8), { preset: "Q4_K_M" });
  assert.deepEqual(new Set(typesOf(moe, "attn_v.weight")), new Set(["Q8_0"]));
  assert.deepEqual(new Set(typesOf(moe, "attn_k.weight")), new Set(["Q8_0"]));
  const big = planGgufQuantization(meta(80, { heads: 64, headsKv: 8 }), layered(80, 256), { preset: "Q3_K_S" });
  assert.equal(big.facts.is70B, true);
  assert.deepEqual(new Set(typesOf(big, "attn_v.weight")), new Set(["Q5_K"]));
});

test("fallbacks as tensor_type_fallback: K and IQ types demoted, F16 for rows not a multiple of 32", () => {
  const f = (t: string, n: number): string => fallbackType(ggmlType(t), n).name;
  assert.deepEqual([f("Q4_K", 96), f("Q5_K", 96), f("Q6_K", 96), f("Q2_K", 64), f("Q3_K", 64), f("TQ1_0", 64), f("TQ2_0", 64), f("IQ4_XS", 64), f("IQ2_XXS", 32), f("IQ3_S", 32)],
    ["Q5_0", "Q5_1", "Q8_0", "Q4_0", "Q4_0", "Q4_0", "Q4_0", "IQ4_NL", "IQ4_NL", "IQ4_NL"]);
  assert.deepEqual([f("Q4_K", 80), f("Q8_0", 80), f("IQ4_NL", 48), f("Q4_K", 256)], ["F16", "F16", "F16", "Q4_K"]);
  const plan = planGgufQuantization(meta(1), [{ name: "blk.0.ffn_down.weight", ggmlType: ggmlType("F32"), dims: [96, 8] }], { preset: "Q4_K_M", pure: true });
  assert.equal(plan.tensors[0].to.name, "Q5_0");
  assert.equal(plan.tensors[0].fallbackFrom?.name, "Q4_K");
  assert.equal(plan.fallbacks, 1);
});

test("the weights_map order: tensors outside blocks first, then by layer number, then by name's bytes", () => {
  const names = ["blk.10.a.weight", "blk.2.b.weight", "output.weight", "blk.2.a.weight", "token_embd.weight", "blk.x.weight", "blk. 3.c"];
  assert.deepEqual(weightOrder(names.map((name) => ({ name }))).map((t) => t.name),
    ["blk.x.weight", "output.weight", "token_embd.weight", "blk.2.a.weight", "blk.2.b.weight", "blk. 3.c", "blk.10.a.weight"]);
  assert.deepEqual([layerOf("blk.-1.a"), layerOf("blk.+7x"), layerOf("blk.4294967297.a"), layerOf("blkx.1")], [-1, 7, 1, undefined]);
});

test("which tensors keep their type: 1-D, norms, names not ending in weight (a 5-byte name passes, as size_t arithmetic makes it), ffn_gate_inp", () => {
  const f16 = ggmlType("F16");
  const t = (name: string, dims: number[]): PlanInputTensor => ({ name, ggmlType: f16, dims });
  const plan = planGgufQuantization(meta(1), [
    t("blk.0.attn_norm.weight", [256, 256]), t("blk.0.ffn_gate_inp.weight", [256, 8]), t("blk.0.attn_q.bias", [256, 256]),
    t("abcde", [256, 4]), t("abcd", [256, 4]), t("blk.0.attn_q.weight", [256, 1]), t("position_embd.weight", [256, 4]),
  ], { preset: "Q8_0" });
  const to = Object.fromEntries(plan.tensors.map((p) => [p.name, p.to.name]));
  assert.deepEqual(to, { abcd: "F16", abcde: "Q8_0", "position_embd.weight": "F16", "blk.0.attn_norm.weight": "F16", "blk.0.attn_q.bias": "F16", "blk.0.attn_q.weight": "F16", "blk.0.ffn_gate_inp.weight": "F16" });
  assert.deepEqual(plan.tensors.find((p) => p.name === "blk.0.attn_q.weight")!.dims, [256]);
});

test("the output's metadata: the input's keys in order, split.* gone, quantization_version and file_type last", () => {
  const input: GgufMetadataEntry[] = [
    { key: "general.architecture", type: "string", value: "llama" }, { key: "general.file_type", type: "uint32", value: 1 },
    { key: "split.count", type: "uint16", value: 2 }, { key: "general.quantization_version", type: "uint32", value: 1 }, { key: "x", type: "int8", value: 3 },
  ];
  assert.deepEqual(quantizedMetadata(input, 18).map((e) => `${e.key}=${String(e.value)}`), ["general.architecture=llama", "x=3", "general.quantization_version=2", "general.file_type=18"]);
});

test("presets: every name in any case, ftype numbers, aliases; unknown names listed", () => {
  assert.equal(llamaPreset("q4_k").ftype, 15);
  assert.equal(llamaPreset("15").name, "Q4_K_M");
  assert.equal(llamaPreset("Mxfp4_Moe").defaultType.name, "MXFP4");
  assert.equal(LLAMA_PRESETS.length, 36);
  assert.throws(() => llamaPreset("Q4_K_X"), (e: Error & { code?: string }) => e.code === "UNKNOWN_DTYPE" && /Q4_K_M/.test(e.message));
});

test("refusals: an imatrix preset without one, requantizing without leave, an option type whose block does not fit", () => {
  const code = (f: () => unknown, want: string, re: RegExp): void => assert.throws(f, (e: Error & { code?: string }) => e.code === want && re.test(e.message));
  code(() => planGgufQuantization(meta(2), layered(2), { preset: "IQ2_XS" }), "UNSUPPORTED_TYPE", /importance matrix/);
  code(() => planGgufQuantization(meta(2), layered(2), { preset: "Q2_K_S" }), "UNSUPPORTED_TYPE", /importance matrix/);
  assert.equal(planGgufQuantization(meta(2), layered(2), { preset: "IQ2_XS", imatrix: true }).tensors.find((t) => t.name === "blk.0.attn_q.weight")!.to.name, "IQ2_XS");
  const q8 = layered(2).map((t) => (t.dims.length > 1 ? { ...t, ggmlType: ggmlType("Q8_0") } : t));
  code(() => planGgufQuantization(meta(2), q8, { preset: "Q4_K_M" }), "UNSUPPORTED_TYPE", /requantizing from type Q8_0 is disabled/);
  assert.ok(planGgufQuantization(meta(2), q8, { preset: "Q4_K_M", allowRequantize: true }).tensors.some((t) => t.from.name === "Q8_0" && t.to.name === "Q4_K"));
  // Q8_0 onto Q8_0 is no requantizing: the tensors are copied.
  assert.ok(planGgufQuantization(meta(2), q8, { preset: "Q8_0" }).tensors.every((t) => !t.quantize));
  code(() => planGgufQuantization(meta(2), layered(2, 64), { preset: "Q8_0", outputTensorType: "q4_k" }), "SHAPE_MISMATCH", /no fallback/);
});
