/**
 * `tensorcast convert model.gguf [--to T] -o OUTDIR` against what transformers itself writes
 * (test/fixtures/gguf-hf/make.py: `from_pretrained(DIR, gguf_file=..., dtype=T)` then
 * `save_pretrained`): for each of the 8 tiny models, every file of OUTDIR byte for byte, shards and
 * index included; and `diff model.gguf OUTDIR` through the same names. Then what is refused.
 */
import assert from "node:assert/strict";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { runCli as run } from "../support/cli.js";
import { scratch } from "../node/helpers.js";
import type { DiffReport } from "../../src/node/convert/diff.js";
import { convertGgufToHf, type GgufToHfReport } from "../../src/node/convert/gguf-to-hf.js";
import { Interrupted } from "../../src/node/convert/schedule.js";

const ROOT = fileURLToPath(new URL("../../../", import.meta.url));
const FIXTURES = join(ROOT, "test/fixtures/gguf-hf");
const CASES = ["llama", "llama-spm", "mistral", "qwen2", "qwen3", "gemma2", "gemma3", "phi3"];
const TOKENIZER_FILES = ["tokenizer.json", "tokenizer_config.json", "chat_template.jinja"];

/** What save_pretrained wrote for `c` into saved/`sub`, with the tokenizer's files beside the case. */
function golden(c: string, sub: string): Map<string, Buffer> {
  const files = new Map<string, Buffer>();
  const saved = join(FIXTURES, c, "saved", sub);
  for (const name of readdirSync(saved)) files.set(name, readFileSync(join(saved, name)));
  for (const name of TOKENIZER_FILES) if (existsSync(join(FIXTURES, c, name))) files.set(name, readFileSync(join(FIXTURES, c, name)));
  return files;
}

function assertFolderIs(out: string, want: Map<string, Buffer>, what: string): void {
  assert.deepStrictEqual(readdirSync(out).sort(), [...want.keys()].sort(), `${what}: the files`);
  for (const [name, bytes] of want) assert.ok(readFileSync(join(out, name)).equals(bytes), `${what}: ${name} differs from transformers'`);
}

for (const c of CASES) {
  test(`${c}: convert model.gguf -o OUTDIR writes what transformers' from_pretrained(gguf_file=) + save_pretrained writes, byte for byte`, async () => {
    const dir = scratch();
    const gguf = join(FIXTURES, c, "model.gguf");
    // No --to: float32, as transformers loads a GGUF without dtype=.
    const plain = await run("convert", gguf, "-o", join(dir, "f32"), "--quiet");
    assert.equal(plain.code, 0, plain.err);
    assertFolderIs(join(dir, "f32"), golden(c, "float32"), `${c} float32`);
    // bfloat16, in chunks of 64 bytes: every head of Q/K cut across chunks, read back the same
    const bf16 = await run("convert", gguf, "--to", "bfloat16", "-o", join(dir, "bf16") + "/", "--chunk-size", "64", "--quiet");
    assert.equal(bf16.code, 0, bf16.err);
    assertFolderIs(join(dir, "bf16"), golden(c, "bfloat16"), `${c} bfloat16`);
    // diff matches the GGUF to the folder through transformers' names: float32 identical, bfloat16 within half an ULP
    const same = await run("diff", gguf, join(dir, "f32"), "--json");
    assert.equal(same.code, 0, same.err);
    const s = JSON.parse(same.out) as DiffReport;
    assert.deepStrictEqual([s.onlyInA, s.onlyInB], [[], []]);
    assert.equal(s.identical, s.tensors.length);
    assert.ok(s.tensors.some((t) => t.name === "model.embed_tokens.weight"));
    const near = JSON.parse((await run("diff", join(dir, "bf16"), gguf, "--json")).out) as DiffReport;
    assert.deepStrictEqual([near.onlyInA, near.onlyInB], [[], []]);
    assert.equal(near.tensors.length, s.tensors.length);
    for (const t of near.tensors) assert.ok(t.stats!.maxUlp <= 0.5, `${t.name}: ${t.stats!.maxUlp} ULP`);
    // the same through two worker threads (two of the cases: workers cost a start each)
    if (c !== "llama" && c !== "gemma2") return;
    const jobs = await run("convert", gguf, "--to", "bfloat16", "-o", join(dir, "bf16-jobs"), "--chunk-size", "96", "--jobs", "2", "--quiet");
    assert.equal(jobs.code, 0, jobs.err);
    assertFolderIs(join(dir, "bf16-jobs"), golden(c, "bfloat16"), `${c} bfloat16 --jobs 2`);
  });
}

test("--max-shard-size: numbered shards and model.safetensors.index.json exactly as save_pretrained(max_shard_size=) writes them", async () => {
  const dir = scratch();
  const out = join(dir, "sharded");
  const r = await run("convert", join(FIXTURES, "llama/model.gguf"), "--to", "float16", "--max-shard-size", "20KB", "-o", out, "--json");
  assert.equal(r.code, 0, r.err);
  assertFolderIs(out, golden("llama", "float16-20KB"), "llama float16 20KB");
  const report = JSON.parse(r.out) as GgufToHfReport;
  assert.equal(report.indexName, "model.safetensors.index.json");
  assert.equal(report.files.length, 4);
  assert.deepStrictEqual(report.tensors.filter((t) => t.transform !== "identity").map((t) => t.name), [
    "model.layers.0.self_attn.k_proj.weight", "model.layers.0.self_attn.q_proj.weight",
    "model.layers.1.self_attn.k_proj.weight", "model.layers.1.self_attn.q_proj.weight",
  ]);
  // diff reads a sharded folder through its index
  const d = JSON.parse((await run("diff", join(FIXTURES, "llama/model.gguf"), out, "--json")).out) as DiffReport;
  assert.deepStrictEqual([d.tensors.length, d.onlyInA, d.onlyInB], [21, [], []]);
});

test("--max-shard-size on a model with tied embeddings: no lm_head, total_parameters counting the embedding once, as save_pretrained", async () => {
  const dir = scratch();
  const out = join(dir, "tied");
  const r = await run("convert", join(FIXTURES, "qwen2/model.gguf"), "--max-shard-size", "30KB", "-o", out, "--quiet");
  assert.equal(r.code, 0, r.err);
  assertFolderIs(out, golden("qwen2", "float32-30KB"), "qwen2 float32 30KB");
});

test("the report: each transformers tensor with its GGUF tensor, stored type and transform; what is left out", async () => {
  const dir = scratch();
  const r = await run("convert", join(FIXTURES, "gemma2/model.gguf"), "--to", "bfloat16", "-o", join(dir, "o"));
  assert.equal(r.code, 0, r.err);
  assert.match(r.out, /GGUF gemma2 -> Hugging Face folder, bfloat16/);
  assert.match(r.out, /\nmodel\.layers\.0\.input_layernorm\.weight\s+\[32\]\s+blk\.0\.attn_norm\.weight\s+F32\s+offset\s/);
  assert.match(r.out, /\nmodel\.embed_tokens\.weight\s+\[400, 32\]\s+token_embd\.weight\s+F16\s+\d/);
  assert.match(r.out, /24 tensors in model\.safetensors \(one file, no index\)/);
  assert.match(r.out, /written: config\.json, generation_config\.json, tokenizer\.json, tokenizer_config\.json\n/);
});

test("an OUT with a file extension stays the GGUF-named safetensors conversion", async () => {
  const dir = scratch();
  const r = await run("convert", join(FIXTURES, "llama/model.gguf"), "--to", "float32", "-o", join(dir, "flat.safetensors"), "--quiet");
  assert.equal(r.code, 0, r.err);
  assert.ok(readFileSync(join(dir, "flat.safetensors")).includes("blk.0.attn_q.weight"));
});

test("refused: an architecture the plan does not convert, a non-empty OUTDIR without --force, types and flags that do not apply", async () => {
  const dir = scratch();
  const gguf = join(FIXTURES, "llama/model.gguf");
  // general.architecture "llama" made "bloom": same length, the rest of the file as it was
  const bytes = readFileSync(gguf);
  const key = bytes.indexOf("general.architecture");
  const at = bytes.indexOf("llama", key + "general.architecture".length);
  const bloom = Buffer.from(bytes);
  bloom.write("bloom", at, "latin1");
  writeFileSync(join(dir, "bloom.gguf"), bloom);
  const arch = await run("convert", join(dir, "bloom.gguf"), "-o", join(dir, "bloom-out"));
  assert.equal(arch.code, 1);
  assert.match(arch.err, /GGUF architecture "bloom" cannot be converted to a Hugging Face folder; supported: llama, qwen2, qwen3, gemma2, gemma3, phi3/);
  assert.match(arch.err, /UNSUPPORTED_TYPE/);
  assert.equal(existsSync(join(dir, "bloom-out")), false);
  assert.deepStrictEqual(readdirSync(dir).filter((n) => n.startsWith(".")), [], "no temporary folder is left");

  // An existing non-empty OUTDIR: refused without --force, untouched
  const full = join(dir, "full");
  mkdirSync(full);
  writeFileSync(join(full, "notes.txt"), "mine");
  const busy = await run("convert", gguf, "-o", full);
  assert.equal(busy.code, 2);
  assert.match(busy.err, /already exists and is not empty; pass --force to replace it/);
  assert.deepStrictEqual(readdirSync(full), ["notes.txt"]);
  // --force replaces only a checkpoint's folder
  assert.equal((await run("convert", gguf, "-o", full, "--force")).code, 2);
  assert.deepStrictEqual(readdirSync(full), ["notes.txt"]);
  const earlier = join(dir, "earlier");
  assert.equal((await run("convert", gguf, "--to", "bfloat16", "-o", earlier, "-q")).code, 0);
  assert.equal((await run("convert", gguf, "-o", earlier, "-q")).code, 2);
  const again = await run("convert", gguf, "-o", earlier, "-q", "--force");
  assert.equal(again.code, 0, again.err);
  assertFolderIs(earlier, golden("llama", "float32"), "replaced with --force");

  const f8 = await run("convert", gguf, "--to", "float8e4m3fn", "-o", join(dir, "f8"));
  assert.equal(f8.code, 2);
  assert.match(f8.err, /--to float8e4m3fn: a GGUF model is written as a Hugging Face folder in float32, bfloat16, float16/);
  const only = await run("convert", gguf, "--to", "bfloat16", "--only", "attn", "-o", join(dir, "only"));
  assert.equal(only.code, 2);
  assert.match(only.err, /--only does not apply to a GGUF model written as a Hugging Face folder/);
  const shard = await run("convert", gguf, "--max-shard-size", "lots", "-o", join(dir, "lots"));
  assert.equal(shard.code, 2);
  assert.match(shard.err, /--max-shard-size/);
  assert.deepStrictEqual(readdirSync(dir).sort(), ["bloom.gguf", "earlier", "full"]);
});

test("stopped part way (the signal aborts after the first chunk): no OUTDIR, no temporary folder", async () => {
  const dir = scratch();
  const stop = new AbortController();
  await assert.rejects(
    convertGgufToHf(join(FIXTURES, "llama/model.gguf"), join(dir, "out"), {
      to: "bfloat16", chunkBytes: 64, signal: stop.signal, onProgress: () => stop.abort(),
    }),
    (e: unknown) => e instanceof Interrupted,
  );
  assert.deepStrictEqual(readdirSync(dir), []);
  // and an OUTDIR being replaced with --force stays as it was
  const earlier = join(dir, "earlier");
  await convertGgufToHf(join(FIXTURES, "gemma2/model.gguf"), earlier);
  const before = readdirSync(earlier).sort();
  const again = new AbortController();
  await assert.rejects(
    convertGgufToHf(join(FIXTURES, "llama/model.gguf"), earlier, { force: true, chunkBytes: 64, signal: again.signal, onProgress: () => again.abort() }),
    (e: unknown) => e instanceof Interrupted,
  );
  assert.deepStrictEqual(readdirSync(dir), ["earlier"]);
  assertFolderIs(earlier, golden("gemma2", "float32"), "the earlier OUTDIR");
  assert.deepStrictEqual(readdirSync(earlier).sort(), before);
});

test("a mixture of experts (Mixtral: llama with llama.expert_count) is refused, not written as a dense Llama without its experts", async () => {
  const dir = scratch();
  const gguf = join(dir, "mixtral.gguf");
  const made = await run("convert", join(ROOT, "test/fixtures/hf-gguf/mixtral"), "--to", "bf16", "-o", gguf, "-q");
  assert.equal(made.code, 0, made.err);
  const r = await run("convert", gguf, "--to", "bfloat16", "-o", join(dir, "out"));
  assert.notEqual(r.code, 0);
  assert.match(r.err, /with 4 experts \(llama\.expert_count\) cannot be converted to a Hugging Face folder.*\(code UNSUPPORTED_TYPE\)/);
  assert.equal(existsSync(join(dir, "out")), false);
});
