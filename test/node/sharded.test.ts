/**
 * Sharded Hugging Face checkpoints: a generated 3-shard checkpoint of mixed types converts as a
 * folder, by its index, and as three `--shard K/3` processes plus `tensorcast index`, to the same
 * bytes; every tensor is `cast`'s bit for bit; the index's weight_map and total_size are exact;
 * inconsistent checkpoints, bad slices and existing outputs are refused; SIGINT leaves no OUTDIR.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync, closeSync, openSync, writeSync } from "node:fs";
import { join } from "node:path";
import { cast, dtype, Tensor } from "../../src/index.js";
import { openTensorFile } from "../../src/node/index.js";
import { readCheckpoint } from "../../src/node/io/checkpoint.js";
import { parseShardSlice, sliceShards } from "../../src/node/convert/sharded.js";
import { encodeSafetensorsHeader } from "../../src/node/io/safetensors.js";
import { cli, randomBytes, randomFloat32, rejectsCode, ROOT, safetensorsBytes, scratch, sha256, type RawTensor } from "./helpers.js";

const dir = scratch();
const BIN = join(ROOT, "bin", "tensorcast.js");
const built = existsSync(join(ROOT, "dist", "node", "cli", "main.js"));

const f32 = (values: number[]): Uint8Array => new Uint8Array(new Float32Array(values).buffer);

/** The three shards: floats of five types (NaN, Inf and overflow among them) and an int64 tensor, which is kept. */
function shardTensors(): RawTensor[][] {
  const special = new Float32Array(randomFloat32(64, 3, 500).buffer);
  special.set([NaN, Infinity, -Infinity, 1e30, -1e30, 2 ** -140, -0, 464, 480, 61440]);
  return [
    [
      { name: "model.embed_tokens.weight", dtype: "float32", shape: [16, 8], bytes: randomFloat32(128, 1, 3) },
      { name: "model.layers.0.mlp.weight", dtype: "bfloat16", shape: [8, 8], bytes: randomBytes(128, 2) },
      { name: "model.layers.0.norm.weight", dtype: "float16", shape: [8], bytes: cast(Tensor.fromBytes(randomFloat32(8, 4, 2), "float32", [8]), "float16", {}).bytes() },
    ],
    [
      { name: "model.layers.1.mlp.weight", dtype: "float32", shape: [8, 8], bytes: new Uint8Array(special.buffer) },
      { name: "model.layers.1.positions", dtype: "int64", shape: [4], bytes: new Uint8Array(new BigInt64Array([0n, 1n, -7n, 1n << 40n]).buffer) },
      { name: "model.layers.1.scale", dtype: "float8e5m2", shape: [24], bytes: randomBytes(24, 5) },
    ],
    [
      { name: "lm_head.weight", dtype: "float64", shape: [4, 8], bytes: new Uint8Array(new Float64Array(Array.from({ length: 32 }, (_, i) => (i - 16) * 1234.5678 + 1e-9)).buffer) },
      { name: "model.layers.2.mlp.weight", dtype: "float32", shape: [8, 4], bytes: f32(Array.from({ length: 32 }, (_, i) => Math.sin(i) * 70000)) },
    ],
  ];
}

const SHARDS = ["model-00001-of-00003.safetensors", "model-00002-of-00003.safetensors", "model-00003-of-00003.safetensors"];

/** Writes the checkpoint into `folder`: shards, an index in no particular order, config and tokenizer, a subfolder. */
function makeCheckpoint(folder: string, index?: (map: Record<string, string>) => unknown): void {
  mkdirSync(folder, { recursive: true });
  const map: Record<string, string> = {};
  shardTensors().forEach((tensors, i) => {
    writeFileSync(join(folder, SHARDS[i]), safetensorsBytes(tensors, { format: "pt" }));
    for (const t of tensors.slice().reverse()) map[t.name] = SHARDS[i];
  });
  // A wrong total_size, as a shell loop over the shards leaves; total_parameters is kept.
  const json = index ? index(map) : { metadata: { total_size: 1, total_parameters: 554 }, weight_map: map };
  writeFileSync(join(folder, "model.safetensors.index.json"), JSON.stringify(json));
  writeFileSync(join(folder, "config.json"), '{"model_type": "llama", "torch_dtype": "float32"}\n');
  writeFileSync(join(folder, "tokenizer.json"), JSON.stringify({ vocab: { a: 0, b: 1 } }));
  mkdirSync(join(folder, "original"), { recursive: true });
  writeFileSync(join(folder, "original", "consolidated.pth"), "not read");
}

const IN = join(dir, "in");
makeCheckpoint(IN);

async function tensorsOf(path: string): Promise<Map<string, Tensor>> {
  const file = await openTensorFile(path);
  try {
    const out = new Map<string, Tensor>();
    for (const t of file.tensors) out.set(t.name, Tensor.fromBytes(await t.read(0, t.size), t.dtype, t.shape));
    return out;
  } finally {
    await file.close();
  }
}

/** The folder's files and their hashes (temporaries would show up here too). */
function contents(folder: string): Record<string, string> {
  return Object.fromEntries(readdirSync(folder).sort().map((f) => [f, sha256(join(folder, f))]));
}

/** Checks an output folder against the input: every tensor cast's, the index exact, the other files copied. */
async function checkOutput(out: string, to: string): Promise<void> {
  assert.deepEqual(readdirSync(out).sort(), ["config.json", "model.safetensors.index.json", ...SHARDS, "tokenizer.json"].sort());
  let totalSize = 0;
  const weightMap: Record<string, string> = {};
  for (const s of SHARDS) {
    const before = await tensorsOf(join(IN, s));
    const after = await tensorsOf(join(out, s));
    assert.deepEqual([...after.keys()].sort(), [...before.keys()].sort(), s);
    for (const [name, x] of before) {
      const y = after.get(name)!;
      const expected = x.dtype.kind === "float" && x.dtype !== dtype(to) ? cast(x, to, {}) : x;
      assert.equal(y.dtype, expected.dtype, name);
      assert.deepEqual(y.shape, expected.shape, name);
      assert.deepEqual(y.bytes(), expected.bytes(), `${name}: not cast's bytes`);
      totalSize += expected.bytes().length;
      weightMap[name] = s;
    }
    const file = await openTensorFile(join(out, s));
    assert.deepEqual(file.metadata, { format: "pt" });
    await file.close();
  }
  const index = JSON.parse(readFileSync(join(out, "model.safetensors.index.json"), "utf8"));
  assert.deepEqual(index, { metadata: { total_parameters: 554, total_size: totalSize }, weight_map: weightMap });
  // transformers' layout: sorted keys, two-space indent, a final newline.
  const sorted = Object.fromEntries(Object.keys(weightMap).sort().map((k) => [k, weightMap[k]]));
  assert.equal(readFileSync(join(out, "model.safetensors.index.json"), "utf8"), JSON.stringify({ metadata: { total_parameters: 554, total_size: totalSize }, weight_map: sorted }, null, 2) + "\n");
  assert.equal(sha256(join(out, "tokenizer.json")), sha256(join(IN, "tokenizer.json")));
  // config.json says the new type where transformers can load it (checkpoint-config.ts); else it is copied.
  const config = readFileSync(join(IN, "config.json"), "utf8");
  assert.equal(readFileSync(join(out, "config.json"), "utf8"), ["float16", "bfloat16"].includes(to) ? config.replace('"float32"', `"${to}"`) : config);
}

let reference: Record<string, string> | undefined;

test("a folder converts: every tensor is cast's, the index exact, the other files copied, the subfolder left out", async () => {
  const out = join(dir, "out.folder");
  const r = await cli(["convert", IN, "--to", "bfloat16", "-o", out]);
  assert.equal(r.code, 0, r.err);
  assert.match(r.out, /index: model\.safetensors\.index\.json, total_size \d+/);
  assert.match(r.out, /copied: config\.json, tokenizer\.json/);
  assert.match(r.out, /left out: original \(a subfolder\)/);
  await checkOutput(out, "bfloat16");
  reference = contents(out);
  // Threads and small chunks give the same bytes.
  const threaded = join(dir, "out.threaded");
  assert.equal((await cli(["convert", IN, "--to", "bfloat16", "-o", threaded, "--jobs", "2", "--chunk-size", "64"])).code, 0);
  assert.deepEqual(contents(threaded), reference);
  assert.deepEqual(readdirSync(dir).filter((f) => f.startsWith(".")), [], "a temporary was left");
});

test("by the index's path: the same folder", async () => {
  const out = join(dir, "out.byindex");
  const r = await cli(["convert", join(IN, "model.safetensors.index.json"), "--to", "bfloat16", "-o", `${out}/`, "--json"]);
  assert.equal(r.code, 0, r.err);
  const report = JSON.parse(r.out);
  assert.equal(report.shards.length, 3);
  assert.equal(report.totalSize, JSON.parse(readFileSync(join(out, "model.safetensors.index.json"), "utf8")).metadata.total_size);
  await checkOutput(out, "bfloat16");
  assert.deepEqual(contents(out), reference);
});

test("other targets: float8e4m3fn and float16", async () => {
  for (const to of ["float8e4m3fn", "float16"]) {
    const out = join(dir, `out.${to}`);
    assert.equal((await cli(["convert", IN, "--to", to, "-o", out, "-q"])).code, 0);
    await checkOutput(out, to);
  }
});

test("--shard K/N: deterministic round-robin slices from 0", () => {
  assert.deepEqual(parseShardSlice("0/3"), { index: 0, count: 3 });
  assert.deepEqual(parseShardSlice("2/3"), { index: 2, count: 3 });
  assert.deepEqual(sliceShards(["a", "b", "c", "d", "e"], { index: 1, count: 3 }), ["b", "e"]);
  assert.deepEqual(sliceShards(["a", "b"], { index: 2, count: 3 }), []);
  for (const bad of ["3/3", "-1/3", "1/0", "a/b", "1/3/4", "1", "", "0/1000001", " /3"]) {
    assert.throws(() => parseShardSlice(bad), (e: Error & { code?: string }) => e.code === "INVALID_ATTRIBUTE" && /0 <= K < N/.test(e.message), bad);
  }
});

function exited(child: ChildProcess): Promise<{ code: number | null; err: string }> {
  let err = "";
  child.stderr?.on("data", (d: Buffer) => (err += d.toString()));
  return new Promise((resolve) => child.on("exit", (code) => resolve({ code, err })));
}

test("--shard K/3 in three concurrent processes, then tensorcast index: the same folder", { skip: !built && "dist/ is not built", timeout: 120_000 }, async () => {
  const out = join(dir, "out.sliced");
  const runs = [0, 1, 2].map((k) => exited(spawn(process.execPath, [BIN, "convert", IN, "--to", "bfloat16", "-o", out, "--shard", `${k}/3`, "-q"], { stdio: ["ignore", "ignore", "pipe"] })));
  for (const r of await Promise.all(runs)) assert.deepEqual(r, { code: 0, err: "" });
  assert.ok(!existsSync(join(out, "model.safetensors.index.json")), "a slice wrote an index");
  const r = await cli(["index", out, "--from", IN]);
  assert.equal(r.code, 0, r.err);
  assert.match(r.out, /model\.safetensors\.index\.json: 8 tensors in 3 shards, total_size \d+/);
  await checkOutput(out, "bfloat16");
  assert.deepEqual(contents(out), reference);
});

test("--shard in process: each slice writes only its shards; index names a missing slice; without --from only total_size", async () => {
  const out = join(dir, "out.partial");
  for (const k of [0, 2]) assert.equal((await cli(["convert", IN, "--to", "bfloat16", "-o", out, "--shard", `${k}/3`, "-q"])).code, 0);
  assert.deepEqual(readdirSync(out).sort(), ["config.json", SHARDS[0], SHARDS[2], "tokenizer.json"]);
  let r = await cli(["index", out, "--from", IN]);
  assert.equal(r.code, 1);
  assert.match(r.err, /lacks 1 of the 3 shards \(model-00002-of-00003\.safetensors\): a slice has not finished/);
  assert.ok(!existsSync(join(out, "model.safetensors.index.json")));
  // A slice run twice is refused unless --force redoes it.
  assert.equal((await cli(["convert", IN, "--to", "bfloat16", "-o", out, "--shard", "0/3"])).code, 2);
  assert.equal((await cli(["convert", IN, "--to", "bfloat16", "-o", out, "--shard", "0/3", "--force", "-q"])).code, 0);
  assert.equal((await cli(["convert", IN, "--to", "bfloat16", "-o", out, "--shard", "1/3", "-q"])).code, 0);
  r = await cli(["index", out]);
  assert.equal(r.code, 0, r.err);
  const index = JSON.parse(readFileSync(join(out, "model.safetensors.index.json"), "utf8"));
  assert.deepEqual(Object.keys(index.metadata), ["total_size"]);
  assert.equal(index.metadata.total_size, JSON.parse(readFileSync(join(dir, "out.folder", "model.safetensors.index.json"), "utf8")).metadata.total_size);
  // An existing index is replaced only with --force.
  r = await cli(["index", out, "--from", IN]);
  assert.equal(r.code, 2);
  assert.match(r.err, /already exists; pass --force/);
  assert.equal((await cli(["index", out, "--from", IN, "--force", "-q"])).code, 0);
  assert.deepEqual(contents(out), reference);
});

test("bad --shard values and --shard on a file are usage errors", async () => {
  for (const bad of ["3/3", "x", "1/0", "-1/2"]) {
    const r = await cli(["convert", IN, "--to", "bfloat16", "-o", join(dir, "never"), "--shard", bad]);
    assert.equal(r.code, 2, bad);
    assert.match(r.err, /--shard .* is not a slice K\/N with 0 <= K < N/);
  }
  const r = await cli(["convert", join(IN, SHARDS[0]), "--to", "bfloat16", "-o", join(dir, "never.safetensors"), "--shard", "0/2"]);
  assert.equal(r.code, 2);
  assert.match(r.err, /--shard slices a sharded checkpoint/);
  assert.ok(!existsSync(join(dir, "never")));
});

test("index tells a tensor in two shards, a shard of another checkpoint, a changed shape", async () => {
  const out = join(dir, "out.tampered");
  cpSync(join(dir, "out.folder"), out, { recursive: true });
  rmSync(join(out, "model.safetensors.index.json"));
  const extra = join(out, "model-00009-of-00009.safetensors");
  writeFileSync(extra, safetensorsBytes([{ name: "lm_head.weight", dtype: "float32", shape: [1], bytes: f32([1]) }]));
  let r = await cli(["index", out, "--from", IN]);
  assert.match(r.err, /model-00009-of-00009\.safetensors: is not a shard of/);
  r = await cli(["index", out]);
  assert.equal(r.code, 1);
  assert.match(r.err, /holds tensor "lm_head\.weight", which model-00003-of-00003\.safetensors holds too/);
  rmSync(extra);
  writeFileSync(join(out, SHARDS[2]), safetensorsBytes([
    { name: "lm_head.weight", dtype: "bfloat16", shape: [32], bytes: new Uint8Array(64) },
    { name: "model.layers.2.mlp.weight", dtype: "bfloat16", shape: [8, 4], bytes: new Uint8Array(64) },
  ]));
  r = await cli(["index", out, "--from", IN]);
  assert.equal(r.code, 1);
  assert.match(r.err, /tensor "lm_head\.weight" has shape \[32\], but \[4, 8\] in the input/);
  assert.ok(!existsSync(join(out, "model.safetensors.index.json")));
});

/** A copy of the input, altered by `change`. */
function variant(name: string, change: (folder: string) => void): string {
  const folder = join(dir, name);
  cpSync(IN, folder, { recursive: true });
  change(folder);
  return folder;
}

function rewriteIndex(folder: string, edit: (index: { metadata: unknown; weight_map: Record<string, string> }) => void): void {
  const path = join(folder, "model.safetensors.index.json");
  const index = JSON.parse(readFileSync(path, "utf8"));
  edit(index);
  writeFileSync(path, JSON.stringify(index));
}

const BROKEN: [string, (folder: string) => void, RegExp][] = [
  ["missing shard", (f) => rmSync(join(f, SHARDS[1])), /model-00002-of-00003\.safetensors: is named by model\.safetensors\.index\.json, but there is no such file/],
  ["tensor in two shards", (f) => writeFileSync(join(f, SHARDS[2]), safetensorsBytes([...shardTensors()[2], shardTensors()[0][0]])), /holds tensor "model\.embed_tokens\.weight", which model-00001-of-00003\.safetensors holds too/],
  ["tensor in the wrong shard", (f) => rewriteIndex(f, (i) => (i.weight_map["lm_head.weight"] = SHARDS[0])), /model-00001-of-00003\.safetensors: has no tensor "lm_head\.weight"|holds tensor "lm_head\.weight", which model\.safetensors\.index\.json says is in model-00001/],
  ["tensor the map does not list", (f) => rewriteIndex(f, (i) => delete i.weight_map["lm_head.weight"]), /holds tensor "lm_head\.weight", which model\.safetensors\.index\.json's weight_map does not list/],
  ["tensor the shard lacks", (f) => rewriteIndex(f, (i) => (i.weight_map["ghost"] = SHARDS[0])), /model-00001-of-00003\.safetensors: has no tensor "ghost"/],
  ["shard missing from the map", (f) => rewriteIndex(f, (i) => {
    for (const [k, v] of Object.entries(i.weight_map)) if (v === SHARDS[2]) delete i.weight_map[k];
  }), /maps no tensor to model-00003-of-00003\.safetensors, a shard of the same numbered set/],
  ["path escape", (f) => rewriteIndex(f, (i) => (i.weight_map["lm_head.weight"] = "../in/model-00003-of-00003.safetensors")), /maps tensor "lm_head\.weight" to "\.\.\/in\/model-00003-of-00003\.safetensors", which is a path, not a file name in the folder/],
  ["absolute path", (f) => rewriteIndex(f, (i) => (i.weight_map["lm_head.weight"] = join(IN, SHARDS[2]))), /which is an absolute path/],
  ["hidden name", (f) => rewriteIndex(f, (i) => (i.weight_map["lm_head.weight"] = ".x.safetensors")), /which is a hidden name/],
  ["a symbolic link out of the folder", (f) => {
    rmSync(join(f, SHARDS[2]));
    symlinkSync(join(IN, SHARDS[2]), join(f, SHARDS[2]));
  }, /model-00003-of-00003\.safetensors: is named by model\.safetensors\.index\.json, but it is a symbolic link to .*, outside the folder/],
  ["no weight_map", (f) => writeFileSync(join(f, "model.safetensors.index.json"), '{"metadata": {}}'), /has no "weight_map" object/],
  ["not JSON", (f) => writeFileSync(join(f, "model.safetensors.index.json"), "{"), /is not valid JSON/],
  // Python's json (transformers reads the index with it) refuses a byte order mark too.
  ["a byte order mark", (f) => writeFileSync(join(f, "model.safetensors.index.json"), "\ufeff" + readFileSync(join(f, "model.safetensors.index.json"), "utf8")), /is not valid JSON/],
  ["a shard that is not safetensors", (f) => writeFileSync(join(f, SHARDS[0]), "garbage!"), /model-00001-of-00003\.safetensors: header length/],
  ["two indexes", (f) => writeFileSync(join(f, "model.fp16.safetensors.index.json"), "{}"), /holds 2 indexes \(model\.fp16\.safetensors\.index\.json, model\.safetensors\.index\.json\); name the one to read/],
];

for (const [what, change, message] of BROKEN) {
  test(`refused: ${what}`, async () => {
    const folder = variant(`broken.${what.replace(/\W+/g, "-")}`, change);
    await rejectsCode(readCheckpoint(folder), "INVALID_DATA", message);
    const out = join(dir, `never.${what.replace(/\W+/g, "-")}`);
    const r = await cli(["convert", folder, "--to", "bfloat16", "-o", out]);
    assert.equal(r.code, 1, r.err);
    assert.match(r.err, message);
    assert.match(r.err, /\(code INVALID_DATA\)\n$/);
    assert.ok(!existsSync(out));
    assert.equal((await cli(["inspect", folder, "--no-stats"])).code, 1);
  });
}

test("a symbolic link inside the folder, or into a Hugging Face cache's blobs/, is followed", async () => {
  const hub = join(dir, "hub", "models--x--y");
  const snapshot = join(hub, "snapshots", "abc123");
  mkdirSync(join(hub, "blobs"), { recursive: true });
  mkdirSync(snapshot, { recursive: true });
  for (const f of readdirSync(IN)) {
    if (f === "original") continue;
    cpSync(join(IN, f), join(hub, "blobs", `blob-${f}`));
    symlinkSync(join("..", "..", "blobs", `blob-${f}`), join(snapshot, f));
  }
  const out = join(dir, "out.hub");
  const r = await cli(["convert", snapshot, "--to", "bfloat16", "-o", out]);
  assert.equal(r.code, 0, r.err);
  assert.deepEqual(contents(out), reference);
});

test("OUTDIR: a non-empty folder only with --force and only a checkpoint's; an empty one is used; a file is refused", async () => {
  const busy = join(dir, "busy");
  mkdirSync(busy);
  writeFileSync(join(busy, "notes.txt"), "mine");
  let r = await cli(["convert", IN, "--to", "bfloat16", "-o", busy]);
  assert.equal(r.code, 2);
  assert.match(r.err, /busy: already exists and is not empty; pass --force/);
  r = await cli(["convert", IN, "--to", "bfloat16", "-o", busy, "--force"]);
  assert.equal(r.code, 2);
  assert.match(r.err, /is not a checkpoint's folder/);
  assert.deepEqual(readdirSync(busy), ["notes.txt"]);
  mkdirSync(join(busy, "sub"));
  writeFileSync(join(busy, "x.safetensors.index.json"), "{}");
  r = await cli(["convert", IN, "--to", "bfloat16", "-o", busy, "--force"]);
  assert.match(r.err, /holds "sub", which is not a regular file/);

  const again = join(dir, "out.again");
  cpSync(join(dir, "out.float16"), again, { recursive: true });
  assert.equal((await cli(["convert", IN, "--to", "bfloat16", "-o", again])).code, 2);
  assert.equal((await cli(["convert", IN, "--to", "bfloat16", "-o", again, "--force", "-q"])).code, 0);
  assert.deepEqual(contents(again), reference);

  const empty = join(dir, "empty");
  mkdirSync(empty);
  assert.equal((await cli(["convert", IN, "--to", "bfloat16", "-o", empty, "-q"])).code, 0);
  assert.deepEqual(contents(empty), reference);

  r = await cli(["convert", IN, "--to", "bfloat16", "-o", join(dir, "x.safetensors")]);
  assert.equal(r.code, 2);
  assert.match(r.err, /names a file, but a model folder is written as a folder/);
  r = await cli(["convert", IN, "--to", "bfloat16", "-o", IN, "--force"]);
  assert.equal(r.code, 2);
  assert.match(r.err, /is the input folder/);
  r = await cli(["convert", IN, "--to", "bfloat16", "-o", join(dir, "no", "such", "out")]);
  assert.equal(r.code, 74);
  assert.deepEqual(readdirSync(dir).filter((f) => f.startsWith(".")), []);
});

test("--initializers names tensors across shards; --skip filters in every shard; an unknown name is refused", async () => {
  const out = join(dir, "out.named");
  let r = await cli(["convert", IN, "--to", "float16", "-o", out, "--initializers", "lm_head.weight,model.layers.1.positions", "--json"]);
  assert.equal(r.code, 0, r.err);
  const converted = (JSON.parse(r.out).shards as { tensors: { name: string; converted: boolean }[] }[]).flatMap((s) => s.tensors.filter((t) => t.converted).map((t) => t.name));
  assert.deepEqual(converted.sort(), ["lm_head.weight", "model.layers.1.positions"]);
  const after = await tensorsOf(join(out, SHARDS[1]));
  assert.equal(after.get("model.layers.1.positions")!.dtype, dtype("float16"));
  assert.equal(after.get("model.layers.1.mlp.weight")!.dtype, dtype("float32"));
  r = await cli(["convert", IN, "--to", "float16", "-o", join(dir, "out.skip"), "--skip", "mlp", "--json"]);
  const kept = (JSON.parse(r.out).shards as { tensors: { name: string; converted: boolean }[] }[]).flatMap((s) => s.tensors.filter((t) => !t.converted).map((t) => t.name));
  // norm.weight is already float16.
  assert.deepEqual(kept.sort(), ["model.layers.0.mlp.weight", "model.layers.0.norm.weight", "model.layers.1.mlp.weight", "model.layers.1.positions", "model.layers.2.mlp.weight"]);
  r = await cli(["convert", IN, "--to", "float16", "-o", join(dir, "never.named"), "--initializers", "nope"]);
  assert.equal(r.code, 1);
  assert.match(r.err, /has no tensor named "nope" in any shard/);
  assert.ok(!existsSync(join(dir, "never.named")));
});

test("a shard that fails mid-way (the last one) leaves no OUTDIR and no temporary folder", async () => {
  const folder = variant("odd", (f) => {
    writeFileSync(join(f, SHARDS[2]), safetensorsBytes([...shardTensors()[2], { name: "odd", dtype: "float32", shape: [3], bytes: f32([1, 2, 3]) }]));
    rewriteIndex(f, (i) => (i.weight_map.odd = SHARDS[2]));
  });
  const parent = join(dir, "odd.parent");
  mkdirSync(parent);
  const out = join(parent, "out");
  // 3 elements of float4e2m1 do not fill whole bytes: refused when the third shard is planned.
  const r = await cli(["convert", folder, "--to", "float4e2m1", "-o", out]);
  assert.equal(r.code, 1);
  assert.match(r.err, /tensor "odd": 3 elements of F4 do not fill whole bytes/);
  assert.deepEqual(readdirSync(parent), []);
});

test("inspect and diff take folders", async () => {
  let r = await cli(["inspect", IN, "--json"]);
  assert.equal(r.code, 0, r.err);
  const report = JSON.parse(r.out);
  assert.equal(report.tensors.length, 8);
  assert.equal(report.size, SHARDS.reduce((n, s) => n + statSync(join(IN, s)).size, 0));
  assert.equal(report.metadata.total_parameters, "554");
  r = await cli(["diff", IN, join(dir, "out.folder"), "--json"]);
  assert.equal(r.code, 0, r.err);
  const diff = JSON.parse(r.out);
  assert.equal(diff.tensors.length, 8);
  assert.deepEqual([diff.onlyInA, diff.onlyInB], [[], []]);
  assert.equal(diff.tensors.find((t: { name: string }) => t.name === "model.layers.1.positions").stats.differing, 0);
  r = await cli(["diff", IN, join(IN, "model.safetensors.index.json")]);
  assert.match(r.out, /8 of 8 common tensors identical/);
});

/** A checkpoint of three 24 MiB float32 shards, for interrupting. */
function bigCheckpoint(folder: string): void {
  mkdirSync(folder);
  const n = (24 * 1024 * 1024) / 4;
  const values = new Float32Array(n);
  for (let i = 0; i < n; i++) values[i] = Math.sin(i) * (1 + (i % 100));
  const map: Record<string, string> = {};
  for (const s of SHARDS) {
    const name = `w.${s}`;
    map[name] = s;
    const fd = openSync(join(folder, s), "w");
    writeSync(fd, encodeSafetensorsHeader([{ name, dtype: dtype("float32"), shape: [n], size: n, byteLength: 4 * n }]));
    writeSync(fd, new Uint8Array(values.buffer));
    closeSync(fd);
  }
  writeFileSync(join(folder, "model.safetensors.index.json"), JSON.stringify({ metadata: { total_size: 3 * 4 * n }, weight_map: map }));
}

test("SIGINT mid-way: exit 130, no OUTDIR, no temporary folder", { skip: !built && "dist/ is not built", timeout: 120_000 }, async () => {
  const parent = join(dir, "stop");
  mkdirSync(parent);
  const input = join(parent, "big");
  bigCheckpoint(input);
  const out = join(parent, "out");
  const child = spawn(process.execPath, [BIN, "convert", input, "--to", "float16", "-o", out, "--jobs", "1"], { stdio: ["ignore", "ignore", "pipe"] });
  const done = exited(child);
  const deadline = Date.now() + 60_000;
  let started = false;
  while (!started && Date.now() < deadline && child.exitCode === null) {
    const tmp = readdirSync(parent).find((f) => f.startsWith(".out.tensorcast-"));
    if (tmp) {
      try {
        started = readdirSync(join(parent, tmp)).some((f) => statSync(join(parent, tmp, f)).blocks * 512 >= 4 * 1024 * 1024);
      } catch {
        // Not there any more.
      }
    }
    if (!started) await new Promise((r) => setTimeout(r, 10));
  }
  assert.ok(started, "the conversion never started writing");
  child.kill("SIGINT");
  assert.deepEqual(await done, { code: 130, err: `interrupted by SIGINT: ${out} was not written (${input} is unchanged)\n` });
  assert.deepEqual(readdirSync(parent), ["big"]);
});
