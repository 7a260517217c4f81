/**
 * Model folders whose weights are one file (model.safetensors, config.json, tokenizer files, no
 * index) are the one-shard case of a folder for every command that takes one: convert, quantize,
 * the way back, inspect, diff; also from the Hugging Face cache's snapshot layout. --max-shard-size
 * lays a folder out anew as save_pretrained does: against huggingface_hub's split and
 * save_pretrained's own folders (test/fixtures/shards/make.py), from either layout.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { cast, dtype, Tensor } from "../../src/index.js";
import { openTensorFile } from "../../src/node/index.js";
import { readCheckpoint } from "../../src/node/io/checkpoint.js";
import { parseShardSize, splitShards } from "../../src/node/io/shard-split.js";
import { cli, random, randomFloat32, rejectsCode, ROOT, safetensorsBytes, scratch, sha256, type RawTensor } from "./helpers.js";

const dir = scratch();
const SHARDS = join(ROOT, "test", "fixtures", "shards");
const GOLDEN = JSON.parse(readFileSync(join(SHARDS, "split.json"), "utf8")) as {
  order: string[];
  cases: { to: string; max_shard_size: string; bytes: number; files: Record<string, string[]>; index: string | null }[];
  sizes: { text: string; huggingface_hub: number | null; transformers: number | null }[];
};

type Read = { dtype: string; shape: readonly number[]; bytes: Uint8Array };

/** A file's tensors in file order. */
async function tensorsOf(path: string): Promise<Map<string, Read>> {
  const f = await openTensorFile(path);
  try {
    const m = new Map<string, Read>();
    for (const t of f.tensors) m.set(t.name, { dtype: t.dtype.name, shape: [...t.shape], bytes: (await t.read(0, t.size)).slice() });
    return m;
  } finally {
    await f.close();
  }
}

/** Every tensor of a folder's .safetensors files. */
async function folderTensors(folder: string): Promise<Map<string, Read>> {
  const all = new Map<string, Read>();
  for (const f of readdirSync(folder).filter((n) => n.endsWith(".safetensors")).sort()) for (const [k, v] of await tensorsOf(join(folder, f))) all.set(k, v);
  return all;
}

function contents(folder: string): Record<string, string> {
  return Object.fromEntries(readdirSync(folder).sort().map((f) => [f, sha256(join(folder, f))]));
}

/** What `convert --to T` makes of a tensor: cast's bytes for a float of another type, else the same. */
function converted(x: Read, to: string): Read {
  const d = dtype(x.dtype);
  if (d.kind !== "float" || d === dtype(to)) return x;
  const y = cast(Tensor.fromBytes(x.bytes, d, [...x.shape]), to, {});
  return { dtype: y.dtype.name, shape: [...y.shape], bytes: y.bytes() };
}

// The fixture one-file folder, with what people's folders also hold beside it.
const ONE = join(dir, "one");
cpSync(join(SHARDS, "one-file"), ONE, { recursive: true });
writeFileSync(join(ONE, "README.md"), "# tiny\n");
writeFileSync(join(ONE, "consolidated.safetensors"), safetensorsBytes([{ name: "x", dtype: "float32", shape: [1], bytes: randomFloat32(1, 9) }]));
mkdirSync(join(ONE, "onnx"));
writeFileSync(join(ONE, "onnx", "model.onnx"), "not read");

test("convert DIR: a one-file folder gives a one-file folder (no index), every tensor cast's, other files copied, config retyped", async () => {
  const out = join(dir, "one.bf16");
  const r = await cli(["convert", ONE, "--to", "bfloat16", "-o", out]);
  assert.equal(r.code, 0, r.err);
  assert.match(r.out, /\(1 file, to bfloat16/);
  assert.match(r.out, /weights: model\.safetensors, no index \(one file\)/);
  assert.match(r.out, /copied: README\.md, config\.json, tokenizer\.json/);
  assert.match(r.out, /left out: consolidated\.safetensors \(weights other than model\.safetensors\), onnx \(a subfolder\)/);
  assert.deepEqual(readdirSync(out).sort(), ["README.md", "config.json", "model.safetensors", "tokenizer.json"]);
  const before = await tensorsOf(join(ONE, "model.safetensors"));
  const after = await tensorsOf(join(out, "model.safetensors"));
  assert.deepEqual([...after.keys()], [...before.keys()]);
  for (const [name, x] of before) assert.deepEqual(after.get(name), converted(x, "bfloat16"), name);
  assert.equal(readFileSync(join(out, "config.json"), "utf8"), readFileSync(join(ONE, "config.json"), "utf8").replace('"float32"', '"bfloat16"'));
  assert.equal(sha256(join(out, "tokenizer.json")), sha256(join(ONE, "tokenizer.json")));
  // The one shard is what converting the file itself gives, byte for byte.
  const file = join(dir, "one.bf16.safetensors");
  assert.equal((await cli(["convert", join(ONE, "model.safetensors"), "--to", "bfloat16", "-o", file, "-q"])).code, 0);
  assert.equal(sha256(join(out, "model.safetensors")), sha256(file));
  const report = JSON.parse((await cli(["convert", ONE, "--to", "bfloat16", "-o", join(dir, "one.json"), "--json"])).out);
  assert.equal(report.indexName, undefined);
  assert.deepEqual(report.files, ["model.safetensors"]);
  // --force replaces an earlier one-file output (it has no index, only its .safetensors).
  assert.equal((await cli(["convert", ONE, "--to", "bfloat16", "-o", out])).code, 2);
  assert.equal((await cli(["convert", ONE, "--to", "bfloat16", "-o", out, "--force", "-q"])).code, 0);
  assert.deepEqual(contents(out), contents(join(dir, "one.json")));
  assert.deepEqual(readdirSync(dir).filter((f) => f.startsWith(".")), [], "a temporary was left");
});

test("quantize --mode fp8 of a Hub folder that also holds onnx/ quantizes its model.safetensors (an ONNX mode would take onnx/)", async () => {
  const out = join(dir, "one.fp8");
  const r = await cli(["quantize", ONE, "--mode", "fp8", "-o", out]);
  assert.equal(r.code, 0, r.err);
  assert.match(r.out, /0 tensors quantized, 10 kept/);
  assert.deepEqual(readdirSync(out).sort(), ["README.md", "config.json", "model.safetensors", "tokenizer.json"]);
  assert.equal((await cli(["quantize", ONE, "--mode=nvfp4", "-o", join(dir, "one.nvfp4"), "-q"])).code, 0);
});

test("readCheckpoint: a folder of one weights file under another name keeps it; it is the one shard of an unindexed checkpoint", async () => {
  const folder = join(dir, "named");
  mkdirSync(folder);
  cpSync(join(SHARDS, "one-file", "model.safetensors"), join(folder, "diffusion_pytorch_model.safetensors"));
  writeFileSync(join(folder, "config.json"), "{}");
  const c = await readCheckpoint(folder);
  assert.deepEqual([c.indexed, c.shards, c.indexName, c.others, c.metadata], [false, ["diffusion_pytorch_model.safetensors"], "diffusion_pytorch_model.safetensors.index.json", ["config.json"], {}]);
  assert.deepEqual([...c.weightMap.keys()], GOLDEN.order);
  const out = join(dir, "named.f16");
  assert.equal((await cli(["convert", folder, "--to", "float16", "-o", out, "-q"])).code, 0);
  assert.deepEqual(readdirSync(out).sort(), ["config.json", "diffusion_pytorch_model.safetensors"]);
  // Shards are named after it, as save_pretrained names them from its weights name.
  const sharded = join(dir, "named.sharded");
  assert.equal((await cli(["convert", folder, "--to", "float16", "-o", sharded, "--max-shard-size", "2KB", "-q"])).code, 0);
  assert.deepEqual(readdirSync(sharded).sort(), ["config.json", "diffusion_pytorch_model-00001-of-00004.safetensors", "diffusion_pytorch_model-00002-of-00004.safetensors",
    "diffusion_pytorch_model-00003-of-00004.safetensors", "diffusion_pytorch_model-00004-of-00004.safetensors", "diffusion_pytorch_model.safetensors.index.json"]);
});

test("a folder with neither an index nor a model.safetensors is refused by every folder-taking command, naming what it lacks", async () => {
  const empty = join(dir, "no-weights");
  mkdirSync(empty);
  writeFileSync(join(empty, "config.json"), "{}");
  // Weights tensorcast does not read (TensorFlow's); a pytorch_model.bin would make it a PyTorch folder.
  writeFileSync(join(empty, "tf_model.h5"), "hdf5");
  const message = /no-weights: is a folder without safetensors weights: neither a sharded checkpoint's index \(a file named like model\.safetensors\.index\.json\) nor a model\.safetensors/;
  await rejectsCode(readCheckpoint(empty), "INVALID_DATA", message);
  for (const argv of [
    ["convert", empty, "--to", "float16", "-o", join(dir, "never1")], ["quantize", empty, "--mode", "fp8", "-o", join(dir, "never2")],
    ["inspect", empty], ["diff", empty, ONE],
  ]) {
    const r = await cli(argv);
    assert.equal(r.code, 1, argv.join(" "));
    assert.match(r.err, message, argv.join(" "));
  }
  const two = join(dir, "two-files");
  mkdirSync(two);
  for (const n of ["a.safetensors", "b.safetensors"]) cpSync(join(SHARDS, "one-file", "model.safetensors"), join(two, n));
  await rejectsCode(readCheckpoint(two), "INVALID_DATA", /holds 2 safetensors files \(a\.safetensors, b\.safetensors\) but no index and no model\.safetensors saying which are the model/);
  assert.ok(!existsSync(join(dir, "never1")) && !existsSync(join(dir, "never2")));
});

test("inspect and diff take a one-file folder", async () => {
  let r = await cli(["inspect", ONE, "--json"]);
  assert.equal(r.code, 0, r.err);
  const report = JSON.parse(r.out);
  assert.deepEqual(report.tensors.map((t: { name: string }) => t.name), GOLDEN.order);
  r = await cli(["diff", ONE, join(ONE, "model.safetensors")]);
  assert.equal(r.code, 0, r.err);
  assert.match(r.out, /10 of 10 common tensors identical/);
  const out = join(dir, "one.f16");
  assert.equal((await cli(["convert", ONE, "--to", "float16", "-o", out, "-q"])).code, 0);
  r = await cli(["diff", ONE, out, "--json"]);
  assert.equal(r.code, 0, r.err);
  const diff = JSON.parse(r.out);
  assert.equal(diff.tensors.length, 10);
  assert.deepEqual([diff.onlyInA, diff.onlyInB], [[], []]);
});

test("the Hugging Face cache's snapshot layout (links into blobs/): a one-file folder converts as its copy does; a link elsewhere is refused", async () => {
  const hub = join(dir, "hub", "models--org--tiny");
  const snapshot = join(hub, "snapshots", "0123abc");
  mkdirSync(join(hub, "blobs"), { recursive: true });
  mkdirSync(snapshot, { recursive: true });
  for (const f of ["model.safetensors", "config.json", "tokenizer.json"]) {
    cpSync(join(SHARDS, "one-file", f), join(hub, "blobs", `sha-${f}`));
    symlinkSync(join("..", "..", "blobs", `sha-${f}`), join(snapshot, f));
  }
  const plain = join(dir, "hub.plain");
  const linked = join(dir, "hub.linked");
  assert.equal((await cli(["convert", join(SHARDS, "one-file"), "--to", "bfloat16", "-o", plain, "-q"])).code, 0);
  const r = await cli(["convert", snapshot, "--to", "bfloat16", "-o", linked]);
  assert.equal(r.code, 0, r.err);
  assert.deepEqual(contents(linked), contents(plain));
  assert.equal((await cli(["convert", snapshot, "--to", "bfloat16", "-o", join(dir, "hub.sharded"), "--max-shard-size", "4KB", "-q"])).code, 0);
  assert.equal(readdirSync(join(dir, "hub.sharded")).filter((f) => f.endsWith(".safetensors")).length, 2);
  assert.match((await cli(["inspect", snapshot])).out, /a\.embed\.weight/);
  // model.safetensors linking out of the folder and out of the cache's blobs/.
  const odd = join(dir, "odd-link");
  mkdirSync(odd);
  symlinkSync(join(SHARDS, "one-file", "model.safetensors"), join(odd, "model.safetensors"));
  await rejectsCode(readCheckpoint(odd), "INVALID_DATA", /model\.safetensors: is the folder's weights, but it is a symbolic link to .*, outside the folder/);
});

test("--shard on a one-file folder, --shard with --max-shard-size, --max-shard-size on a file, and bad sizes are usage errors", async () => {
  const cases: [string[], RegExp][] = [
    [["convert", ONE, "--to", "float16", "-o", join(dir, "never3"), "--shard", "0/2"], /--shard K\/N slices a sharded checkpoint's shards; .* holds one weights file \(model\.safetensors\) and no index/],
    [["convert", join(SHARDS, "pretrained", "2KB"), "--to", "float16", "-o", join(dir, "never4"), "--shard", "0/2", "--max-shard-size", "5KB"], /--shard K\/N and --max-shard-size contradict each other/],
    [["convert", join(ONE, "model.safetensors"), "--to", "float16", "-o", join(dir, "never5.safetensors"), "--max-shard-size", "5KB"], /--max-shard-size lays out a model folder's weights; .* is a file/],
    [["quantize", ONE, "--mode", "fp8", "-o", join(dir, "never6"), "--shard", "1/2"], /holds one weights file \(model\.safetensors\) and no index; --shard K\/N slices/],
    [["quantize", join(ONE, "model.safetensors"), "--mode", "fp8", "-o", join(dir, "never7.safetensors"), "--max-shard-size", "5KB"], /is a file; --max-shard-size lays out a model folder's weights/],
  ];
  for (const bad of ["5XB", "", "GB", "-1GB", "0", "1.5", "1e3", "0.0001KB"]) {
    cases.push([["convert", ONE, "--to", "float16", "-o", join(dir, "never8"), "--max-shard-size", bad], /--max-shard-size .* is not a size of at least 1 byte: .*KB, MB, GB, TB = 10\^3 \.\. 10\^12 bytes/]);
  }
  for (const [argv, message] of cases) {
    const r = await cli(argv);
    assert.equal(r.code, 2, `${argv.join(" ")}: ${r.err}`);
    assert.match(r.err, message, argv.join(" "));
  }
  assert.deepEqual(readdirSync(dir).filter((f) => f.startsWith("never")), []);
});

test("parseShardSize reads sizes as huggingface_hub's parse_size_to_int (what save_pretrained calls), binary units as transformers' convert_file_size_to_int", () => {
  for (const s of GOLDEN.sizes) {
    // A plain number is bytes (Python callers pass an int; neither reader takes the string).
    const want = s.huggingface_hub ?? s.transformers ?? Number(s.text);
    assert.equal(parseShardSize(s.text), want, s.text);
  }
  // "5gb": huggingface_hub reads it as 5 GB (its unit is upper-cased); transformers' older reader as bits.
  assert.equal(GOLDEN.sizes.find((s) => s.text === "5gb")!.transformers, 625_000_000);
  assert.equal(parseShardSize("5gb"), 5_000_000_000);
  assert.equal(parseShardSize("1TiB"), 2 ** 40);
  assert.equal(parseShardSize("0.1GB"), 100_000_000);
});

test("splitShards: huggingface_hub's rule on the fixture's sizes, every case of split.json", () => {
  const sizes = new Map<string, Map<string, number>>();
  for (const to of ["float32", "bfloat16"]) {
    const header = JSON.parse(readFileSync(join(SHARDS, "one-file", "model.safetensors")).subarray(8, 8 + readFileSync(join(SHARDS, "one-file", "model.safetensors")).readUInt32LE(0)).toString());
    sizes.set(to, new Map(GOLDEN.order.map((n) => {
      const [b, e] = header[n].data_offsets as number[];
      return [n, to === "bfloat16" && header[n].dtype === "F32" ? (e - b) / 2 : e - b];
    })));
  }
  for (const c of GOLDEN.cases) {
    const items = GOLDEN.order.map((n) => ({ names: [n], bytes: sizes.get(c.to)!.get(n)! }));
    const files = splitShards(items, c.bytes, "model");
    assert.deepEqual(Object.fromEntries(files.map((f) => [f.name, f.items.flatMap((i) => i.names)])), c.files, `${c.to} ${c.max_shard_size}`);
  }
});

test("--max-shard-size from a one-file folder: the files, their tensors and the index huggingface_hub's split gives, text for text", async () => {
  const before = await tensorsOf(join(SHARDS, "one-file", "model.safetensors"));
  let n = 0;
  for (const c of GOLDEN.cases) {
    const out = join(dir, `split.${n++}`);
    const r = await cli(["convert", join(SHARDS, "one-file"), "--to", c.to, "-o", out, "--max-shard-size", String(c.bytes), "-q"]);
    assert.equal(r.code, 0, r.err);
    const indexed = c.index !== null;
    assert.deepEqual(readdirSync(out).sort(), [...Object.keys(c.files), ...(indexed ? ["model.safetensors.index.json"] : []), "config.json", "tokenizer.json"].sort(), `${c.to} ${c.max_shard_size}`);
    if (indexed) assert.equal(readFileSync(join(out, "model.safetensors.index.json"), "utf8"), c.index, `${c.to} ${c.max_shard_size}: the index`);
    for (const [file, names] of Object.entries(c.files)) {
      const got = await tensorsOf(join(out, file));
      assert.deepEqual([...got.keys()], names, `${file}: its tensors in order`);
      for (const name of names) assert.deepEqual(got.get(name), converted(before.get(name)!, c.to), name);
      assert.deepEqual((await openTensorFile(join(out, file)).then(async (f) => [f.metadata, await f.close()]))[0], { format: "pt" });
    }
  }
});

test("--max-shard-size against save_pretrained's own folders: re-sharded, joined into one file, and sharded from one file", async () => {
  const P = join(SHARDS, "pretrained");
  // 2KB shards re-sharded at 5KB: save_pretrained's 5KB folder, its index byte for byte (total_parameters kept from the input's).
  const resharded = join(dir, "pre.5KB");
  let r = await cli(["convert", join(P, "2KB"), "--to", "float32", "-o", resharded, "--max-shard-size", "5KB"]);
  assert.equal(r.code, 0, r.err);
  assert.match(r.out, /\(2 shards, to float32/);
  assert.deepEqual(readdirSync(resharded).sort(), readdirSync(join(P, "5KB")).sort());
  assert.equal(readFileSync(join(resharded, "model.safetensors.index.json"), "utf8"), readFileSync(join(P, "5KB", "model.safetensors.index.json"), "utf8"));
  for (const f of readdirSync(resharded).filter((x) => x.endsWith(".safetensors"))) {
    assert.deepEqual(await tensorsOf(join(resharded, f)), await tensorsOf(join(P, "5KB", f)), f);
  }
  // Joined: one model.safetensors and no index, as save_pretrained under a large max_shard_size.
  const joined = join(dir, "pre.joined");
  r = await cli(["convert", join(P, "2KB"), "--to", "float32", "-o", joined, "--max-shard-size", "1GB"]);
  assert.equal(r.code, 0, r.err);
  assert.deepEqual(readdirSync(joined), ["model.safetensors"]);
  assert.deepEqual(await tensorsOf(join(joined, "model.safetensors")), await tensorsOf(join(P, "one", "model.safetensors")));
  // One file sharded at 2KB: save_pretrained's 2KB folder; the one file has no index to take total_parameters from.
  const sharded = join(dir, "pre.2KB");
  r = await cli(["convert", join(P, "one"), "--to", "float32", "-o", sharded, "--max-shard-size", "2KB", "-q"]);
  assert.equal(r.code, 0, r.err);
  assert.deepEqual(readdirSync(sharded).sort(), readdirSync(join(P, "2KB")).sort());
  const expected = JSON.parse(readFileSync(join(P, "2KB", "model.safetensors.index.json"), "utf8"));
  delete expected.metadata.total_parameters;
  assert.equal(readFileSync(join(sharded, "model.safetensors.index.json"), "utf8"), JSON.stringify(expected, null, 2) + "\n");
  assert.deepEqual(await folderTensors(sharded), await folderTensors(join(P, "2KB")));
  // And back: the sharded output joined again is the one file's tensors.
  r = await cli(["convert", sharded, "--to", "float32", "-o", join(dir, "pre.rejoined"), "--max-shard-size", "1GB", "-q"]);
  assert.equal(r.code, 0, r.err);
  assert.equal(sha256(join(dir, "pre.rejoined", "model.safetensors")), sha256(join(joined, "model.safetensors")));
});

// ---- quantize and the way back -------------------------------------------------------------

/** bfloat16 bytes of `n` values ~ N(0, std), deterministic. */
function bf16(n: number, seed: number, std = 0.02): Uint8Array {
  const r = random(seed);
  const f = new Float32Array(n);
  for (let i = 0; i < n; i++) f[i] = std * (((r() / 4294967296) * 2 - 1) + ((r() / 4294967296) * 2 - 1));
  return cast(Tensor.fromBytes(new Uint8Array(f.buffer), "float32", [n]), "bfloat16", {}).bytes();
}

function t(name: string, shape: number[], seed: number, std = 0.02): RawTensor {
  return { name, dtype: "bfloat16", shape, bytes: bf16(shape.reduce((a, b) => a * b, 1), seed, std) };
}

const LLAMA = join(dir, "llama-one");
const LLAMA_CONFIG = '{\n  "architectures": ["LlamaForCausalLM"],\n  "torch_dtype": "bfloat16"\n}\n';
mkdirSync(LLAMA);
writeFileSync(join(LLAMA, "model.safetensors"), safetensorsBytes([
  t("model.embed_tokens.weight", [512, 256], 1), t("model.layers.0.input_layernorm.weight", [256], 2, 1),
  t("model.layers.0.self_attn.q_proj.weight", [256, 256], 3), t("model.layers.0.mlp.gate_proj.weight", [384, 256], 4),
  t("model.layers.0.mlp.down_proj.weight", [256, 384], 5), t("model.layers.0.mlp.experts.gate_up_proj", [2, 64, 128], 6),
  t("model.norm.weight", [256], 7, 1), t("lm_head.weight", [512, 256], 8),
], { format: "pt" }));
writeFileSync(join(LLAMA, "config.json"), LLAMA_CONFIG);
writeFileSync(join(LLAMA, "tokenizer.json"), '{"model": {}}');

for (const mode of ["fp8", "fp8-ue8m0", "mxfp4", "nvfp4"] as const) {
  test(`quantize --mode ${mode} of a one-file folder: one file, no index, quantization_config; the way back gives the folder again`, async () => {
    const q = join(dir, `llama-${mode}`);
    let r = await cli(["quantize", LLAMA, "--mode", mode, "-o", q]);
    assert.equal(r.code, 0, r.err);
    assert.match(r.out, /config\.json: quantization_config added/);
    assert.deepEqual(readdirSync(q).sort(), ["config.json", "model.safetensors", "tokenizer.json"]);
    assert.match(readFileSync(join(q, "config.json"), "utf8"), /"quantization_config": \{"quant_method": ?"(fp8|mxfp4|compressed-tensors)"/);
    // The one file is what quantizing the file itself gives.
    const qFile = join(dir, `llama-${mode}.safetensors`);
    assert.equal((await cli(["quantize", join(LLAMA, "model.safetensors"), "--mode", mode, "-o", qFile, "-q"])).code, 0);
    assert.equal(sha256(join(q, "model.safetensors")), sha256(qFile));
    // The way back: one file again, config.json byte for byte the original.
    const back = join(dir, `llama-${mode}.back`);
    r = await cli(["convert", q, "--to", "bfloat16", "-o", back]);
    assert.equal(r.code, 0, r.err);
    assert.deepEqual(readdirSync(back).sort(), ["config.json", "model.safetensors", "tokenizer.json"]);
    assert.equal(readFileSync(join(back, "config.json"), "utf8"), LLAMA_CONFIG);
    const backFile = join(dir, `llama-${mode}.back.safetensors`);
    assert.equal((await cli(["convert", qFile, "--to", "bfloat16", "-o", backFile, "-q"])).code, 0);
    assert.equal(sha256(join(back, "model.safetensors")), sha256(backFile));
    assert.deepEqual([...(await tensorsOf(join(back, "model.safetensors"))).keys()], [...(await tensorsOf(join(LLAMA, "model.safetensors"))).keys()]);
    r = await cli(["inspect", q]);
    assert.equal(r.code, 0, r.err);
    r = await cli(["diff", LLAMA, q, "--json"]);
    assert.equal(r.code, 0, r.err);
    assert.deepEqual(JSON.parse(r.out).onlyInB, []);
  });
}

test("quantize --max-shard-size shards a one-file folder (a weight and its scales in one file); the way back keeps that layout or joins it", async () => {
  const q = join(dir, "llama-fp8-sharded");
  let r = await cli(["quantize", LLAMA, "--mode", "fp8", "-o", q, "--max-shard-size", "150000"]);
  assert.equal(r.code, 0, r.err);
  const shards = readdirSync(q).filter((f) => f.endsWith(".safetensors")).sort();
  assert.ok(shards.length >= 3, shards.join(" "));
  assert.ok(shards.every((s, i) => s === `model-0000${i + 1}-of-0000${shards.length}.safetensors`), shards.join(" "));
  const index = JSON.parse(readFileSync(join(q, "model.safetensors.index.json"), "utf8"));
  let total = 0;
  for (const s of shards) {
    const ts = await tensorsOf(join(q, s));
    const bytes = [...ts.values()].reduce((n, x) => n + x.bytes.length, 0);
    total += bytes;
    // Over the limit only as one tensor with its scales, alone (a 512 x 256 bfloat16 embedding is 262144 bytes).
    if (bytes > 150000) assert.equal([...ts.keys()].filter((k) => !k.endsWith("_scale_inv")).length, 1, s);
    for (const name of ts.keys()) {
      assert.equal(index.weight_map[name], s, name);
      if (name.endsWith("_scale_inv")) assert.ok(ts.has(name.slice(0, -"_scale_inv".length)), `${name} is not beside its weight`);
    }
  }
  assert.equal(index.metadata.total_size, total);
  // Same tensors as the one-file quantization, tensor for tensor.
  const one = await tensorsOf(join(dir, "llama-fp8", "model.safetensors"));
  assert.deepEqual(new Map([...(await folderTensors(q))].sort()), new Map([...one].sort()));
  // The way back, sharded as it is; and joined into one file: the one-file way back, byte for byte.
  const back = join(dir, "llama-fp8-sharded.back");
  r = await cli(["convert", q, "--to", "bfloat16", "-o", back]);
  assert.equal(r.code, 0, r.err);
  assert.deepEqual(readdirSync(back).filter((f) => f.endsWith(".safetensors")).sort(), shards);
  const joined = join(dir, "llama-fp8-joined.back");
  r = await cli(["convert", q, "--to", "bfloat16", "-o", joined, "--max-shard-size", "5GB"]);
  assert.equal(r.code, 0, r.err);
  assert.deepEqual(readdirSync(joined).sort(), ["config.json", "model.safetensors", "tokenizer.json"]);
  // The same tensors as the one-file way back; their order is the shards' (a tensor over the limit
  // got a shard of its own ahead of the one being filled, as huggingface_hub places it).
  const sorted = async (f: string): Promise<Map<string, Read>> => new Map([...(await tensorsOf(f))].sort());
  assert.deepEqual(await sorted(join(joined, "model.safetensors")), await sorted(join(dir, "llama-fp8.back", "model.safetensors")));
  assert.deepEqual([...(await tensorsOf(join(joined, "model.safetensors"))).keys()], [...(await folderTensors(q)).keys()].filter((n) => !n.endsWith("_scale_inv")));
  assert.equal(readFileSync(join(joined, "config.json"), "utf8"), LLAMA_CONFIG);
  // A sharded quantization joined by quantize itself.
  const qJoined = join(dir, "llama-fp8-requantized");
  r = await cli(["quantize", back, "--mode", "fp8", "-o", qJoined, "--max-shard-size", "5GB"]);
  assert.equal(r.code, 0, r.err);
  assert.deepEqual(readdirSync(qJoined).sort(), ["config.json", "model.safetensors", "tokenizer.json"]);
  const qOne = join(dir, "llama-fp8-requantized-one");
  assert.equal((await cli(["quantize", joined, "--mode", "fp8", "-o", qOne, "-q"])).code, 0);
  assert.deepEqual(contents(qJoined), contents(qOne));
  rmSync(qJoined, { recursive: true });
});

test("quantize --max-shard-size counts a weight with its scales: q_proj's 65536 fp8 bytes and 16 of scale_inv after a 512-byte norm", async () => {
  // model.layers.0.input_layernorm.weight (256 bfloat16: 512 bytes), then q_proj: 65536 + 2 x 2 float32.
  const shardOf = async (limit: number): Promise<Record<string, string>> => {
    const out = join(dir, `llama-fp8-${limit}`);
    const r = await cli(["quantize", LLAMA, "--mode", "fp8", "-o", out, "--max-shard-size", String(limit), "-q"]);
    assert.equal(r.code, 0, r.err);
    return JSON.parse(readFileSync(join(out, "model.safetensors.index.json"), "utf8")).weight_map;
  };
  const together = await shardOf(512 + 65536 + 16);
  assert.equal(together["model.layers.0.input_layernorm.weight"], together["model.layers.0.self_attn.q_proj.weight"]);
  assert.equal(together["model.layers.0.self_attn.q_proj.weight_scale_inv"], together["model.layers.0.self_attn.q_proj.weight"]);
  const apart = await shardOf(512 + 65536 + 15);
  assert.notEqual(apart["model.layers.0.input_layernorm.weight"], apart["model.layers.0.self_attn.q_proj.weight"]);
  assert.equal(apart["model.layers.0.self_attn.q_proj.weight_scale_inv"], apart["model.layers.0.self_attn.q_proj.weight"]);
});

/** A Hugging Face cache snapshot of `folder`'s files (models--org--NAME/snapshots/REV/f -> ../../blobs/sha-f). */
function snapshotOf(folder: string, name: string): string {
  const repo = join(dir, "hub-both", `models--org--${name}`);
  const snapshot = join(repo, "snapshots", "f00dfeed");
  mkdirSync(join(repo, "blobs"), { recursive: true });
  mkdirSync(snapshot, { recursive: true });
  for (const f of readdirSync(folder)) {
    cpSync(join(folder, f), join(repo, "blobs", `sha-${f}`));
    symlinkSync(join("..", "..", "blobs", `sha-${f}`), join(snapshot, f));
  }
  return snapshot;
}

test("Hub snapshot folders in both layouts (one file, sharded) through every folder-taking command: the same outputs as their plain copies", async () => {
  // save_pretrained's 2KB-sharded folder, with the config and tokenizer a Hub repository has beside it.
  const sharded = join(dir, "pretrained-2KB");
  cpSync(join(SHARDS, "pretrained", "2KB"), sharded, { recursive: true });
  writeFileSync(join(sharded, "config.json"), '{\n  "torch_dtype": "float32"\n}\n');
  writeFileSync(join(sharded, "tokenizer.json"), '{"model": {}}');
  for (const [name, plain] of [["llama-one", LLAMA], ["pretrained-2KB", sharded]] as const) {
    const snapshot = snapshotOf(plain, name);
    const runs: [string, string[]][] = [
      ["bf16", ["convert", "IN", "--to", "bfloat16", "-o", "OUT"]],
      ["resharded", ["convert", "IN", "--to", "float16", "-o", "OUT", "--max-shard-size", "3KB"]],
      ["joined", ["convert", "IN", "--to", "float16", "-o", "OUT", "--max-shard-size", "5GB"]],
      ["fp8", ["quantize", "IN", "--mode", "fp8", "-o", "OUT"]],
      ["mxfp4", ["quantize", "IN", "--mode", "mxfp4", "-o", "OUT"]],
    ];
    for (const [what, argv] of runs) {
      const outs = [];
      for (const [from, tag] of [[plain, "plain"], [snapshot, "snap"]]) {
        const out = join(dir, `hub-both.${name}.${what}.${tag}`);
        const r = await cli(argv.map((a) => (a === "IN" ? from : a === "OUT" ? out : a)).concat("-q"));
        assert.equal(r.code, 0, `${name} ${what} ${tag}: ${r.err}`);
        outs.push(contents(out));
      }
      assert.deepEqual(outs[1], outs[0], `${name} ${what}: the snapshot's output is the plain folder's`);
      assert.ok(Object.keys(outs[0]).includes("config.json"), `${name} ${what}: config.json copied`);
      // The way back from the snapshot's quantized output is the plain one's.
      if (what === "fp8") {
        const backs = [];
        for (const tag of ["plain", "snap"]) {
          const out = join(dir, `hub-both.${name}.back.${tag}`);
          const back = await cli(["convert", join(dir, `hub-both.${name}.fp8.${tag}`), "--to", "bfloat16", "-o", out, "-q"]);
          assert.equal(back.code, 0, back.err);
          backs.push(contents(out));
        }
        assert.deepEqual(backs[1], backs[0], `${name}: the way back`);
      }
    }
    const [a, b] = await Promise.all([cli(["inspect", plain, "--json", "--no-stats"]), cli(["inspect", snapshot, "--json", "--no-stats"])]);
    assert.equal(b.code, 0, b.err);
    assert.deepEqual(JSON.parse(b.out).tensors, JSON.parse(a.out).tensors);
    const d = await cli(["diff", snapshot, plain, "--json"]);
    assert.equal(d.code, 0, d.err);
    const diff = JSON.parse(d.out);
    assert.deepEqual([diff.onlyInA, diff.onlyInB], [[], []]);
    assert.ok(diff.tensors.length > 0 && diff.tensors.every((t: { stats: { differing: number } }) => t.stats.differing === 0), name);
  }
});
