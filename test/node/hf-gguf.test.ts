/**
 * `tensorcast convert DIR --to T -o OUT.gguf` end to end: the file written equals
 * convert_hf_to_gguf.py's (test/fixtures/hf-gguf/) byte for byte, from a one-file folder and from
 * the same folder sharded; no temporary is left; refusals name what was given and what is taken.
 */
import { shardedCopy } from "../support/hf-folders.js";
import { test } from "node:test";
import assert from "node:assert/strict";
import { copyFileSync, cpSync, existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { cli, ROOT, scratch, sha256 } from "./helpers.js";
import { convertHfToGguf } from "../../src/node/convert/hf-gguf.js";
import { rejectsCode } from "./helpers.js";

const DIR = join(ROOT, "test", "fixtures", "hf-gguf");
const CASES = ["llama", "mistral", "qwen2", "qwen3", "phi3", "gemma2", "gemma3", "llama3rope", "mixtral", "qwen3_moe"].filter((c) => existsSync(join(DIR, c, "config.json")));
const OUT = scratch();

function goldenSum(c: string, t: string): { sha256: string; size: number } {
  return (JSON.parse(readFileSync(join(DIR, `${c}.gguf.json`), "utf8")) as Record<string, { sha256: string; size: number }>)[t]!;
}

for (const c of CASES) {
  test(`convert ${c}/ -o OUT.gguf: convert_hf_to_gguf.py's file, every outtype`, async () => {
    for (const [t, to] of [["f32", "float32"], ["f16", "f16"], ["bf16", "bfloat16"], ["q8_0", "q8_0"]]) {
      const out = join(OUT, `${c}.${t}.gguf`);
      const r = await cli(["convert", join(DIR, c), "--to", to!, "-o", out]);
      assert.equal(r.code, 0, r.err);
      assert.match(r.out, /metadata keys/);
      assert.equal(sha256(out), goldenSum(c, t!).sha256, `${c} ${t}`);
    }
    assert.deepEqual(readdirSync(OUT).filter((f) => f.endsWith(".tmp")), []);
  });
}

/** A copy of a case's folder in two shards (shardedCopy), kept under the folder's own name: general.name is made from it. */
function sharded(c: string, at?: string): string {
  return shardedCopy(join(DIR, c), join(OUT, `shards-${c}`, c), at);
}

test("convert of a sharded folder: the same file as from one file (shards by name, each one's tensors by name)", async () => {
  const out = join(OUT, "sharded.q8_0.gguf");
  const r = await cli(["convert", sharded("llama"), "--to", "q8_0", "-o", out]);
  assert.equal(r.code, 0, r.err);
  assert.ok(readFileSync(out).equals(readFileSync(join(DIR, "llama.q8_0.gguf"))));
});

test("convert of a sharded mixture of experts, a block's experts in both shards: convert_hf_to_gguf.py's file", async () => {
  const cases = [
    ["mixtral", "q8_0", "q8_0", "model.layers.1.block_sparse_moe.experts.2.w1.weight"],
    ["qwen3_moe", "bf16", "bfloat16", "model.layers.1.mlp.experts.2.down_proj.weight"],
  ] as const;
  for (const [c, t, to, at] of cases) {
    const dir = sharded(c, at);
    const index = JSON.parse(readFileSync(join(dir, "model.safetensors.index.json"), "utf8")) as { weight_map: Record<string, string> };
    // block 1's experts are in both shards: its merged tensors wait for the second
    const files = new Set(Object.entries(index.weight_map).filter(([n]) => n.includes("layers.1.") && n.includes("experts")).map(([, f]) => f));
    assert.equal(files.size, 2, c);
    const out = join(OUT, `sharded.${c}.${t}.gguf`);
    await convertHfToGguf(dir, out, to);
    assert.equal(sha256(out), goldenSum(c, t).sha256, `${c} ${t}`);
  }
});

test("tensors read and encoded a few rows at a time give the same bytes (Q/K chunks whole heads; merged experts one expert's rows at a time)", async () => {
  for (const [c, t, to] of [["llama", "q8_0", "q8_0"], ["llama", "f16", "float16"], ["gemma2", "bf16", "bfloat16"], ["mixtral", "q8_0", "q8_0"], ["qwen3_moe", "f16", "float16"], ["llama3rope", "f32", "float32"]] as const) {
    const out = join(OUT, `chunked.${c}.${t}.gguf`);
    // 100 values: one row of most tensors, one head's 2 x 8 rows of Q and K
    await convertHfToGguf(join(DIR, c), out, to, { chunkValues: 100 });
    assert.equal(sha256(out), goldenSum(c, t).sha256, `${c} ${t}`);
  }
});

test("convert DIR -o OUT.gguf refuses an unmapped model class, naming it and the mapped ones", async () => {
  const dir = join(OUT, "falcon");
  cpSync(join(DIR, "llama"), dir, { recursive: true });
  const config = JSON.parse(readFileSync(join(dir, "config.json"), "utf8")) as Record<string, unknown>;
  config.architectures = ["FalconForCausalLM"];
  writeFileSync(join(dir, "config.json"), JSON.stringify(config));
  await rejectsCode(convertHfToGguf(dir, join(OUT, "falcon.gguf"), "float16"), "UNSUPPORTED_TYPE", /FalconForCausalLM/, /LlamaForCausalLM/, /Qwen2ForCausalLM/, /MixtralForCausalLM/, /Qwen3MoeForCausalLM/);
  const r = await cli(["convert", dir, "--to", "f16", "-o", join(OUT, "falcon.gguf")]);
  assert.equal(r.code, 1);
  assert.match(r.err, /FalconForCausalLM/);
  assert.equal(existsSync(join(OUT, "falcon.gguf")), false);
});

test("convert DIR -o OUT.gguf: bad --to, an existing OUT, options that do not apply", async () => {
  const out = join(OUT, "refused.gguf");
  let r = await cli(["convert", join(DIR, "llama"), "--to", "float8e4m3fn", "-o", out]);
  assert.equal(r.code, 2);
  assert.match(r.err, /float32, float16, bfloat16, q8_0, tq1_0, tq2_0, auto .*q4_k.*"float8e4m3fn"/);
  r = await cli(["convert", join(DIR, "llama"), "-o", out]);
  assert.equal(r.code, 2);
  copyFileSync(join(DIR, "llama", "config.json"), out);
  r = await cli(["convert", join(DIR, "llama"), "--to", "f16", "-o", out]);
  assert.equal(r.code, 2);
  assert.match(r.err, /--force/);
  r = await cli(["convert", join(DIR, "llama"), "--to", "f16", "-o", out, "--force", "--json"]);
  assert.equal(r.code, 0, r.err);
  assert.equal((JSON.parse(r.out) as { architecture: string }).architecture, "llama");
  r = await cli(["convert", join(DIR, "llama"), "--to", "f16", "-o", join(OUT, "x.gguf"), "--skip", "norm"]);
  assert.equal(r.code, 2);
  assert.match(r.err, /--skip does not apply/);
});

test("convert DIR -o OUT.gguf: the note for tokenizer.ggml.pre chosen without a known hash; --tokenizer-pre sets it", async () => {
  const out = join(OUT, "pre.gguf");
  let r = await cli(["convert", join(DIR, "qwen2"), "--to", "f16", "-o", out]);
  assert.equal(r.code, 0, r.err);
  assert.match(r.out, /^note: tokenizer\.ggml\.pre qwen2, by tokenizer\.json's pre-tokenizer regex: its check-text hash 8e6c10fd201bbf8f1210623e8cb54f1e857cbcb7723b562815a6fb70d718e143 is not one/m);
  assert.equal(sha256(out), goldenSum("qwen2", "f16").sha256);
  r = await cli(["convert", join(DIR, "qwen2"), "--to", "f16", "-o", out, "--force", "--json", "--tokenizer-pre", "deepseek-llm"]);
  assert.equal(r.code, 0, r.err);
  assert.match((JSON.parse(r.out) as { notes: string[] }).notes[0]!, /deepseek-llm, as given/);
  assert.ok(readFileSync(out).includes(Buffer.from("deepseek-llm")));
});

test("quantize DIR and convert DIR --to q8_0 take --tokenizer-pre as convert DIR --to f16 does; a GGUF input refuses it", async () => {
  const named = async (args: string[], out: string): Promise<void> => {
    const r = await cli([...args, "-o", out, "--force", "--quiet", "--tokenizer-pre", "deepseek-llm"]);
    assert.equal(r.code, 0, r.err);
    assert.ok(readFileSync(out).includes(Buffer.from("deepseek-llm")), `${args.join(" ")}: tokenizer.ggml.pre not deepseek-llm`);
  };
  await named(["quantize", join(DIR, "qwen2"), "--mode", "Q8_0"], join(OUT, "pre-q8.gguf"));
  await named(["convert", join(DIR, "qwen2"), "--to", "q8_0"], join(OUT, "pre-convert-q8.gguf"));
  const r = await cli(["quantize", join(OUT, "pre-q8.gguf"), "--mode", "Q4_0", "-o", join(OUT, "pre-q4.gguf"), "--tokenizer-pre", "gpt-2"]);
  assert.equal(r.code, 2);
  assert.match(r.err, /--tokenizer-pre names a Hugging Face folder's tokenizer/);
});
