/**
 * A converted checkpoint folder's config.json says the new type (issue 28): its torch_dtype /
 * dtype keys are rewritten in place when every floating-point tensor has the new type and
 * transformers can load it, the rest of the file kept byte for byte; otherwise it is copied and
 * the summary says why.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { configDtypeKeys, retypeConfig } from "../../src/node/io/hf-config.js";
import type { CheckpointReport } from "../../src/node/convert/sharded.js";
import { cli, randomFloat32, safetensorsBytes, scratch } from "./helpers.js";

/** A config as people write them: odd spacing, escapes, sub-configs, a quantization_config, look-alikes in strings. */
const CONFIG = `{
  "architectures": ["LlavaForConditionalGeneration"],
  "note": "a \\"dtype\\": \\"float32\\" in a string, and {braces} [brackets]",
  "torch_dtype":"float32",
  "text_config": {"model_type": "llama", "torch_dtype" :  "float32", "rope_scaling": {"dtype": "float32"}, "list": [{"dtype": "float32"}]},
  "vision_config": { "dtype": "float32", "hidden_size": 1.5e3 },
  "quantization_config": {"dtype": "float32", "bnb_4bit_compute_dtype": "float16"},
  "pad_token_id": null,
  "use_cache": true,
  "extra": {"torch_dtype": "float32"},
  "dtype": "auto",
  "\\u0064type": "float32"
}
`;

test("configDtypeKeys finds torch_dtype / dtype at the top and in *_config objects, nowhere else", () => {
  const keys = configDtypeKeys(CONFIG);
  assert.deepEqual(keys.map((k) => [k.key, k.value]), [
    ["torch_dtype", "float32"], ["text_config.torch_dtype", "float32"], ["vision_config.dtype", "float32"], ["dtype", "float32"],
  ]);
  for (const k of keys) assert.equal(CONFIG.slice(k.start, k.end), '"float32"');
  // Every byte but the four literals is kept: spacing, escapes, number spellings, the look-alikes.
  const expected = CONFIG.replace('"torch_dtype":"float32"', '"torch_dtype":"bfloat16"')
    .replace('"torch_dtype" :  "float32"', '"torch_dtype" :  "bfloat16"')
    .replace('{ "dtype": "float32", "hidden', '{ "dtype": "bfloat16", "hidden')
    .replace('"\\u0064type": "float32"', '"\\u0064type": "bfloat16"');
  assert.equal(retypeConfig(CONFIG, keys, "bfloat16"), expected);
  // Not JSON: refused by the one bounded JSON reader (src/node/io/json.ts), with its code.
  assert.throws(() => configDtypeKeys('{"torch_dtype": "float32"'), (e: unknown) => e instanceof Error && (e as { code?: string }).code === "INVALID_DATA" && /config\.json: is not valid JSON/.test(e.message));
  assert.throws(() => configDtypeKeys(`${"[".repeat(200)}${"]".repeat(200)}`), (e: unknown) => (e as { code?: string }).code === "INVALID_DATA");
});

/** A two-shard checkpoint in `folder`: float32 weights, an int64 tensor, config.json as given. */
function checkpoint(folder: string, config: string): void {
  mkdirSync(folder, { recursive: true });
  const shards: [string, { name: string; dtype: string; shape: number[]; bytes: Uint8Array }[]][] = [
    ["model-00001-of-00002.safetensors", [
      { name: "model.embed.weight", dtype: "float32", shape: [4, 4], bytes: randomFloat32(16, 1) },
      { name: "model.positions", dtype: "int64", shape: [2], bytes: new Uint8Array(16) },
    ]],
    ["model-00002-of-00002.safetensors", [{ name: "lm_head.weight", dtype: "float32", shape: [4, 4], bytes: randomFloat32(16, 2) }]],
  ];
  const map: Record<string, string> = {};
  for (const [file, tensors] of shards) {
    writeFileSync(join(folder, file), safetensorsBytes(tensors));
    for (const t of tensors) map[t.name] = file;
  }
  writeFileSync(join(folder, "model.safetensors.index.json"), JSON.stringify({ metadata: {}, weight_map: map }));
  writeFileSync(join(folder, "config.json"), config);
}

test("convert DIR --to bfloat16: config.json's dtype keys say bfloat16, every other byte kept", async () => {
  const dir = scratch();
  checkpoint(join(dir, "in"), CONFIG);
  const r = await cli(["convert", join(dir, "in"), "--to", "bf16", "-o", join(dir, "out")]);
  assert.equal(r.code, 0, r.err);
  assert.match(r.out, /\nconfig\.json: torch_dtype float32 -> bfloat16, text_config\.torch_dtype float32 -> bfloat16, vision_config\.dtype float32 -> bfloat16, dtype float32 -> bfloat16\n/);
  assert.equal(readFileSync(join(dir, "out", "config.json"), "utf8"), retypeConfig(CONFIG, configDtypeKeys(CONFIG), "bfloat16"));
  const json = await cli(["convert", join(dir, "in"), "--to", "float16", "-o", join(dir, "out16"), "--json"]);
  const report = JSON.parse(json.out) as CheckpointReport;
  assert.deepEqual(report.config, {
    file: "config.json", updated: true,
    keys: [{ key: "torch_dtype", was: "float32" }, { key: "text_config.torch_dtype", was: "float32" }, { key: "vision_config.dtype", was: "float32" }, { key: "dtype", was: "float32" }],
  });
  // Slice 0 copies the config, and decides for the whole checkpoint from the index.
  const slice = await cli(["convert", join(dir, "in"), "--to", "bfloat16", "-o", join(dir, "slices"), "--shard", "0/2"]);
  assert.equal(slice.code, 0, slice.err);
  assert.equal(readFileSync(join(dir, "slices", "config.json"), "utf8"), retypeConfig(CONFIG, configDtypeKeys(CONFIG), "bfloat16"));
});

test("config.json is copied as it is, and the summary says why, when it cannot name the new type", async () => {
  const dir = scratch();
  const simple = '{"model_type": "llama", "torch_dtype": "float32"}\n';
  checkpoint(join(dir, "in"), simple);
  const cases: [string[], RegExp][] = [
    [["--to", "bfloat16", "--skip", "lm_head"], /\nconfig\.json copied as it is \(torch_dtype float32\): 1 floating-point tensor stays in another type than bfloat16: lm_head\.weight, float32 \(matched by --skip\)\n/],
    [["--to", "bfloat16", "--only", "lm_head"], /\nconfig\.json copied as it is \(torch_dtype float32\): 1 floating-point tensor stays in another type than bfloat16: model\.embed\.weight, float32 \(not matched by --only\)\n/],
    [["--to", "float8e4m3fn"], /\nconfig\.json copied as it is \(torch_dtype float32\): transformers loads weights as float16, bfloat16, float32, float64, not float8e4m3fn\n/],
  ];
  for (const [i, [flags, says]] of cases.entries()) {
    const out = join(dir, `out${i}`);
    const r = await cli(["convert", join(dir, "in"), ...flags, "-o", out]);
    assert.equal(r.code, 0, r.err);
    assert.match(r.out, says);
    assert.equal(readFileSync(join(out, "config.json"), "utf8"), simple);
  }
  // Already the new type, or not JSON: copied, and only the second is worth a line.
  const same = await cli(["convert", join(dir, "in"), "--to", "float32", "-o", join(dir, "same")]);
  assert.doesNotMatch(same.out, /config\.json:|config\.json copied/);
  writeFileSync(join(dir, "in", "config.json"), '{"torch_dtype": "float32",}');
  const bad = await cli(["convert", join(dir, "in"), "--to", "bfloat16", "-o", join(dir, "bad")]);
  assert.equal(bad.code, 0, bad.err);
  assert.match(bad.out, /\nconfig\.json copied as it is: it is not UTF-8 JSON \(/);
  assert.equal(readFileSync(join(dir, "bad", "config.json"), "utf8"), '{"torch_dtype": "float32",}');
});
