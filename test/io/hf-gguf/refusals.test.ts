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
  refuses(() => planHfToGguf(withConfig({ architectures: ["FalconForCausalLM"] }), headers, "float16"), "UNSUPPORTED_TYPE", /FalconForCausalLM/, /MistralForCausalLM/, /Gemma3ForCausalLM/);
  refuses(() => planHfToGguf(withConfig({ architectures: undefined }), headers, "float16"), "INVALID_DATA", /architectures/);
  refuses(() => planHfToGguf({ ...files, config: [] as never }, headers, "float16"), "INVALID_DATA");
  refuses(() => planHfToGguf(files, headers, "q4_k" as never), "UNSUPPORTED_TYPE", /q4_k/, /q8_0/);
  refuses(() => planHfToGguf(withConfig({ rope_parameters: { rope_type: "llama3", factor: 8, rope_theta: 5e5 } }), headers, "float16"), "UNSUPPORTED_TYPE", /llama3/);
  refuses(() => planHfToGguf(withConfig({ num_local_experts: 8 }), headers, "float16"), "UNSUPPORTED_TYPE", /experts/);
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
