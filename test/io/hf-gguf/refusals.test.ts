/**
 * HF -> GGUF refusals and rules the golden files do not reach: each refusal is a TensorcastError
 * whose code is stable and whose message names what was given and what is taken; Q8_0's F16
 * fallback for rows that are not whole blocks; an unmapped tensor name.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { TensorcastError } from "../../../src/errors.js";
import { planHfToGguf, type HfFolderFiles, type HfTensorHeader } from "../../../src/io/hf-gguf/index.js";
import { folderFiles, folderTensors } from "./fixtures.js";

function refuses(f: () => unknown, code: string, ...patterns: RegExp[]): void {
  try {
    f();
  } catch (e) {
    assert.ok(e instanceof TensorcastError, String(e));
    assert.equal(e.code, code, e.message);
    for (const p of patterns) assert.match(e.message, p);
    return;
  }
  assert.fail("no error");
}

const files = folderFiles("llama");
const { headers } = folderTensors("llama");
const withConfig = (patch: Record<string, unknown>): HfFolderFiles => ({ ...files, config: { ...(files.config as object), ...patch } as never });

test("hf-gguf refuses what it does not convert, naming it", () => {
  refuses(() => planHfToGguf(withConfig({ architectures: ["FalconForCausalLM"] }), headers, "float16"), "UNSUPPORTED_TYPE", /FalconForCausalLM/, /MistralForCausalLM/, /Gemma3ForCausalLM/, /MixtralForCausalLM/, /Qwen3MoeForCausalLM/);
  refuses(() => planHfToGguf(withConfig({ architectures: ["Qwen2MoeForCausalLM"] }), headers, "float16"), "UNSUPPORTED_TYPE", /Qwen2MoeForCausalLM/, /Qwen3MoeForCausalLM/);
  refuses(() => planHfToGguf(withConfig({ architectures: undefined }), headers, "float16"), "INVALID_DATA", /architectures/);
  refuses(() => planHfToGguf({ ...files, config: [] as never }, headers, "float16"), "INVALID_DATA");
  refuses(() => planHfToGguf(files, headers, "q4_k" as never), "UNSUPPORTED_TYPE", /q4_k/, /q8_0/);
  const qwen3 = folderFiles("qwen3");
  const qwen3Headers = folderTensors("qwen3").headers;
  refuses(() => planHfToGguf({ ...qwen3, config: { ...(qwen3.config as object), num_experts: 8 } as never }, qwen3Headers, "float16"), "UNSUPPORTED_TYPE", /mixture-of-experts qwen3/, /Qwen3MoeForCausalLM/);
  refuses(() => planHfToGguf(withConfig({ num_hidden_layers: -1 }), headers, "float16"), "INVALID_DATA", /num_hidden_layers/);
  refuses(() => planHfToGguf(files, [...headers, { name: "model.layers.0.weird.weight", dtype: "float32", shape: [4] }], "float16"), "INVALID_DATA", /weird/, /Can not map/);
  refuses(() => planHfToGguf(files, headers.map((h, i) => (i === 0 ? { ...h, dtype: "int8" } : h)), "float16"), "UNSUPPORTED_TYPE", /int8/);
  refuses(() => planHfToGguf(withConfig({ num_key_value_heads: 3 }), headers, "float16"), "INVALID_DATA", /rotary halves/);
  refuses(() => planHfToGguf({ ...files, tokenizerJson: undefined }, headers, "float16"), "INVALID_DATA", /tokenizer/);
  const otherRegex = JSON.parse(JSON.stringify(files.tokenizerJson)) as { pre_tokenizer: { pretokenizers: { pattern?: { Regex: string } }[] } };
  otherRegex.pre_tokenizer.pretokenizers[0]!.pattern = { Regex: "\\s+" };
  refuses(() => planHfToGguf({ ...files, tokenizerJson: otherRegex as never }, headers, "float16"), "UNSUPPORTED_TYPE", /pre-tokenizer/, /llama-bpe/);
});

test("hf-gguf: Q8_0 rows that are not whole blocks fall back to F16; 1-D, norms and biases stay F32; inv_freq is left out", () => {
  const extra: HfTensorHeader[] = [
    { name: "model.layers.0.self_attn.o_proj.bias", dtype: "float32", shape: [64] },
    { name: "model.layers.0.rotary_emb.inv_freq", dtype: "float32", shape: [8] },
  ];
  const odd = headers.map((h) => (h.name === "model.layers.0.mlp.down_proj.weight" ? { ...h, shape: [64, 120] } : h));
  const plan = planHfToGguf(files, [...odd, ...extra], "q8_0");
  const type = (n: string): string | undefined => plan.tensors.find((t) => t.name === n)?.type;
  assert.equal(type("blk.0.ffn_down.weight"), "F16");
  assert.equal(type("blk.1.ffn_down.weight"), "Q8_0");
  assert.equal(type("blk.0.attn_norm.weight"), "F32");
  assert.equal(type("blk.0.attn_output.bias"), "F32");
  assert.equal(plan.tensors.some((t) => t.source.includes("inv_freq")), false);
  assert.deepEqual(plan.tensors.find((t) => t.name === "blk.0.ffn_down.weight")!.dims, [120, 64]);
});

const moe = (c: string) => ({ files: folderFiles(c), headers: folderTensors(c).headers });

test("hf-gguf mixture of experts: a block's experts all there, one tensor each, of one shape", () => {
  const { files: mf, headers: mh } = moe("mixtral");
  const without = (n: string): HfTensorHeader[] => mh.filter((h) => h.name !== n);
  // an expert missing: the block never fills (convert_hf_to_gguf: "Unprocessed experts")
  refuses(() => planHfToGguf(mf, without("model.layers.1.block_sparse_moe.experts.3.w2.weight"), "float16"), "INVALID_DATA", /Unprocessed experts/, /layers\.1\.block_sparse_moe\.experts/);
  // as many tensors as the block needs, one of them not an expert's weight
  const stray = mh.map((h) => (h.name === "model.layers.0.block_sparse_moe.experts.2.w3.weight" ? { ...h, name: "model.layers.0.block_sparse_moe.experts.2.w4.weight" } : h));
  refuses(() => planHfToGguf(mf, stray, "float16"), "INVALID_DATA", /experts\.2\.w3\.weight/, /4 experts of w1, w2, w3/);
  const odd = mh.map((h) => (h.name === "model.layers.0.block_sparse_moe.experts.1.w1.weight" ? { ...h, shape: [64, 64] } : h));
  refuses(() => planHfToGguf(mf, odd, "float16"), "INVALID_DATA", /cannot be stacked/, /\[64, 64\]/);
  refuses(() => planHfToGguf({ ...mf, config: { ...(mf.config as object), num_local_experts: null } as never }, mh, "float16"), "INVALID_DATA", /num_local_experts/, /expert count/);
  const { files: qf, headers: qh } = moe("qwen3_moe");
  const fused: HfTensorHeader[] = [...qh, { name: "model.layers.0.mlp.experts.gate_up_proj", dtype: "float16", shape: [12, 64, 64] }];
  refuses(() => planHfToGguf(qf, fused, "float16"), "UNSUPPORTED_TYPE", /gate_up_proj/, /one tensor per expert/);
  refuses(() => planHfToGguf({ ...qf, config: { ...(qf.config as object), scoring_func: "relu" } as never }, qh, "float16"), "INVALID_DATA", /relu/, /softmax, sigmoid/);
  // qwen3moe has no dense feed-forward tensors in llama.cpp's map (a dense layer of mlp_only_layers)
  refuses(() => planHfToGguf(qf, [...qh, { name: "model.layers.1.mlp.gate_proj.weight", dtype: "float16", shape: [128, 64] }], "float16"), "INVALID_DATA", /mlp\.gate_proj/, /qwen3moe/, /Can not map/);
});

test("hf-gguf mixture of experts: merged tensors in expert order where the block's last expert arrives; router F32; size label", () => {
  const { files, headers } = moe("qwen3_moe");
  const plan = planHfToGguf(files, headers, "q8_0");
  const names = plan.tensors.map((t) => t.name);
  const at = names.indexOf("blk.0.ffn_down_exps.weight");
  assert.deepEqual(names.slice(at - 1, at + 4), ["blk.0.attn_norm.weight", "blk.0.ffn_down_exps.weight", "blk.0.ffn_gate_exps.weight", "blk.0.ffn_up_exps.weight", "blk.0.ffn_gate_inp.weight"]);
  const down = plan.tensors[at]!;
  // names sort experts 0, 1, 10, 11, 2, ...; the stack is 0..11
  assert.deepEqual(down.parts.map((p) => Number(/experts\.(\d+)\./.exec(p.name)![1])), [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
  assert.deepEqual(down.dims, [32, 64, 12]);
  assert.equal(down.type, "Q8_0");
  assert.equal(plan.tensors.find((t) => t.name === "blk.1.ffn_gate_inp.weight")!.type, "F32");
  const meta = new Map(plan.metadata.map((e) => [e.key, e.value]));
  assert.equal(meta.get("general.size_label"), "12x103K");
  assert.equal(meta.get("qwen3moe.expert_count"), 12);
  assert.equal(meta.get("qwen3moe.expert_used_count"), 4);
  assert.equal(meta.get("qwen3moe.expert_feed_forward_length"), 32);
  // Qwen2MoeModel reads tokenizer.json only, a tokenizer.model beside it left alone
  assert.equal(meta.get("tokenizer.ggml.model"), "gpt2");
  const withSpm = planHfToGguf({ ...files, tokenizerModel: folderFiles("mistral").tokenizerModel }, headers, "q8_0");
  assert.equal(new Map(withSpm.metadata.map((e) => [e.key, e.value])).get("tokenizer.ggml.model"), "gpt2");
});

test("hf-gguf rope scaling: llama3 adds rope_freqs first and no key; linear and yarn keys; llama3 on Qwen writes neither", () => {
  const l3 = planHfToGguf(folderFiles("llama3rope"), folderTensors("llama3rope").headers, "float16");
  assert.equal(l3.tensors[0]!.name, "rope_freqs.weight");
  assert.equal(l3.tensors[0]!.type, "F32");
  assert.deepEqual([...l3.tensors[0]!.generated!], [1, 1, 1.9634953737258911, 6.209117889404297, 8, 8, 8, 8]);
  assert.equal(l3.metadata.some((e) => e.key.startsWith("llama.rope.scaling")), false);
  const q = planHfToGguf(withQwen3Rope({ rope_type: "llama3", factor: 8, rope_theta: 5e5 }), qwen3Headers(), "float16");
  assert.equal(q.tensors.some((t) => t.name === "rope_freqs.weight"), false);
  assert.equal(q.metadata.some((e) => e.key.startsWith("qwen3.rope.scaling")), false);
  const yarn = planHfToGguf(withQwen3Rope({ rope_type: "yarn", factor: 4, original_max_position_embeddings: 32768, rope_theta: 1e6, beta_fast: 32, beta_slow: 1, attention_factor: 0.5, extrapolation_factor: 1 }), qwen3Headers(), "float16");
  const keys = yarn.metadata.filter((e) => e.key.includes("rope.")).map((e) => `${e.key}=${String(e.value)}`);
  assert.deepEqual(keys, [
    "qwen3.rope.scaling.type=yarn", "qwen3.rope.scaling.factor=4", "qwen3.rope.scaling.original_context_length=32768",
    "qwen3.rope.scaling.yarn_ext_factor=1", "qwen3.rope.scaling.yarn_attn_factor=0.5", "qwen3.rope.scaling.yarn_beta_fast=32", "qwen3.rope.scaling.yarn_beta_slow=1",
    "qwen3.rope.freq_base=1000000",
  ]);
  refuses(() => planHfToGguf(withQwen3Rope({ rope_type: "yarn", factor: 4, rope_theta: 1e6 }), qwen3Headers(), "float16"), "INVALID_DATA", /original_max_position_embeddings/);
  refuses(() => planHfToGguf(withConfig({ rope_parameters: { rope_type: "llama3", factor: "8", rope_theta: 5e5 } }), headers, "float16"), "INVALID_DATA", /factor/);
});

function withQwen3Rope(rope: Record<string, unknown>): HfFolderFiles {
  const f = folderFiles("qwen3");
  return { ...f, config: { ...(f.config as object), rope_parameters: rope } as never };
}
const qwen3Headers = (): HfTensorHeader[] => folderTensors("qwen3").headers;

test("hf-gguf tokenizer.ggml.pre: an unknown check-text hash falls back to --tokenizer-pre, then the Split regex, said in the notes", () => {
  const pre = (p: ReturnType<typeof planHfToGguf>): unknown => p.metadata.find((e) => e.key === "tokenizer.ggml.pre")?.value;
  const plain = planHfToGguf(files, headers, "float16");
  assert.equal(pre(plain), "llama-bpe");
  assert.equal(plain.notes.length, 1);
  assert.match(plain.notes[0]!, /^tokenizer\.ggml\.pre llama-bpe, by tokenizer\.json's pre-tokenizer regex: its check-text hash 2affb15cd9f5b7c1842d070a0a7e08b6a3710b2da10a2030fec4c4dc0683dbd3 is not one convert_hf_to_gguf\.py knows$/);
  const given = planHfToGguf(files, headers, "float16", { tokenizerPre: "smollm" });
  assert.equal(pre(given), "smollm");
  assert.match(given.notes[0]!, /smollm, as given/);
  const otherRegex = JSON.parse(JSON.stringify(files.tokenizerJson)) as { pre_tokenizer: { pretokenizers: { pattern?: { Regex: string } }[] } };
  otherRegex.pre_tokenizer.pretokenizers[0]!.pattern = { Regex: "\\s+" };
  refuses(() => planHfToGguf({ ...files, tokenizerJson: otherRegex as never }, headers, "float16"), "UNSUPPORTED_TYPE", /check-text hash [0-9a-f]{64}/, /--tokenizer-pre NAME/);
  assert.equal(pre(planHfToGguf({ ...files, tokenizerJson: otherRegex as never }, headers, "float16", { tokenizerPre: "gpt-2" })), "gpt-2");
  // a tokenizer that cannot be run here is named by its regex all the same, and the note says why
  const unrunnable = JSON.parse(JSON.stringify(files.tokenizerJson)) as Record<string, unknown>;
  unrunnable.normalizer = { type: "BertNormalizer" };
  const p = planHfToGguf({ ...files, tokenizerJson: unrunnable as never }, headers, "float16");
  assert.equal(pre(p), "llama-bpe");
  assert.match(p.notes[0]!, /could not be run for the check-text hash \(tokenizer\.json's normalizer "BertNormalizer"/);
});
