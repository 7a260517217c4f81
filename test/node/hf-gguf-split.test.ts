/**
 * `tensorcast convert DIR --to T -o OUT.gguf --split-max-size / --split-max-tensors /
 * --no-tensor-first-split`: the parts convert_hf_to_gguf.py writes (test/fixtures/hf-gguf/
 * splits.json, made by make_splits.py), byte for byte, with its names; `--shard K/N` writes part
 * K+1 alone with the same bytes; the parts read back as the one model the unsplit file holds;
 * refusals name what was given and what is taken.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync, rmSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { cli, ROOT, scratch, sha256 } from "./helpers.js";
import { openGguf } from "../../src/node/io/gguf.js";
import { readGgufBlocks } from "../../src/io/gguf/records.js";
import type { GgufModelTensor } from "../../src/io/gguf/split.js";
import { splitByGgufPy, splitByGgufSplit, splitMetadata, parseSplitSize, splitOutputPaths } from "../../src/io/gguf/split-write.js";

const DIR = join(ROOT, "test", "fixtures", "hf-gguf");
const OUT = scratch();

interface SplitCase {
  folder: string;
  outtype: string;
  options: string[];
  parts: { name: string; sha256: string; size: number }[];
}
const CASES = JSON.parse(readFileSync(join(DIR, "splits.json"), "utf8")) as Record<string, SplitCase>;

function fresh(name: string): string {
  const d = join(OUT, name);
  rmSync(d, { recursive: true, force: true });
  mkdirSync(d, { recursive: true });
  return d;
}

for (const [name, c] of Object.entries(CASES)) {
  test(`convert ${c.folder}/ --to ${c.outtype} ${c.options.join(" ")}: convert_hf_to_gguf.py's ${c.parts.length} parts`, async () => {
    const d = fresh(name);
    const r = await cli(["convert", join(DIR, c.folder), "--to", c.outtype, "-o", join(d, "out.gguf"), ...c.options]);
    assert.equal(r.code, 0, r.err);
    assert.deepEqual(readdirSync(d).sort(), c.parts.map((p) => p.name));
    for (const p of c.parts) {
      assert.equal(readFileSync(join(d, p.name)).length, p.size, p.name);
      assert.equal(sha256(join(d, p.name)), p.sha256, p.name);
    }
    assert.match(r.out, new RegExp(`out-00001-of-${String(c.parts.length).padStart(5, "0")}\\.gguf`));
  });
}

test("--shard K/N writes part K+1 of N alone, the bytes the whole run writes", async () => {
  const c = CASES["llama-f16-tensors4"]!;
  const d = fresh("shards");
  const n = c.parts.length;
  for (const k of [0, 2, n - 1]) {
    const r = await cli(["convert", join(DIR, c.folder), "--to", c.outtype, "-o", join(d, "out.gguf"), ...c.options, "--shard", `${k}/${n}`]);
    assert.equal(r.code, 0, r.err);
    assert.equal(sha256(join(d, c.parts[k]!.name)), c.parts[k]!.sha256);
  }
  assert.deepEqual(readdirSync(d).sort(), [0, 2, n - 1].map((k) => c.parts[k]!.name));
  const wrong = await cli(["convert", join(DIR, c.folder), "--to", c.outtype, "-o", join(d, "out.gguf"), ...c.options, "--shard", `0/${n + 1}`]);
  assert.equal(wrong.code, 2, wrong.err);
  assert.match(wrong.err, new RegExp(`into ${n} parts, so --shard takes K/${n} with K from 0 to ${n - 1}`));
  const noSplit = await cli(["convert", join(DIR, c.folder), "--to", c.outtype, "-o", join(d, "x.gguf"), "--shard", "0/2"]);
  assert.equal(noSplit.code, 2);
  assert.match(noSplit.err, /give --split-max-size or --split-max-tensors/);
});

test("the parts read back as one model: the unsplit file's metadata and tensors, with split.* added", async () => {
  const c = CASES["llama-f32-size100K"]!;
  const d = join(OUT, "llama-f32-size100K");
  if (!existsSync(join(d, c.parts[0]!.name))) {
    const r = await cli(["convert", join(DIR, c.folder), "--to", c.outtype, "-o", join(d, "out.gguf"), ...c.options]);
    assert.equal(r.code, 0, r.err);
  }
  const split = await openGguf(join(d, c.parts[1]!.name));
  const whole = await openGguf(join(DIR, "llama.f32.gguf"));
  try {
    assert.equal(split.model.files.length, c.parts.length);
    const keys = [...split.model.metadata.keys()];
    assert.deepEqual(keys, [...whole.model.metadata.keys(), "split.no", "split.count", "split.tensors.count"]);
    assert.deepEqual(split.model.tensors.map((t) => [t.name, t.ggmlType.name, t.dims.join(",")]), whole.model.tensors.map((t) => [t.name, t.ggmlType.name, t.dims.join(",")]));
    for (let i = 0; i < whole.model.tensors.length; i++) {
      const blocks = (t: GgufModelTensor): number => t.byteLength / t.ggmlType.typeSize;
      const a = await readGgufBlocks(split.model, split.model.tensors[i]!, 0, blocks(split.model.tensors[i]!));
      const b = await readGgufBlocks(whole.model, whole.model.tensors[i]!, 0, blocks(whole.model.tensors[i]!));
      assert.ok(Buffer.from(a).equals(Buffer.from(b)), whole.model.tensors[i]!.name);
    }
  } finally {
    await split.close();
    await whole.close();
  }
});

test("refused: split sizes and counts that are not numbers, named with what is taken", async () => {
  const d = fresh("refused");
  for (const [opt, v, want] of [["--split-max-size", "5GiB", /digits, optionally followed by K, M or G/], ["--split-max-size", "-1", /digits/], ["--split-max-tensors", "x", /a number of tensors, got "x"/]] as const) {
    const r = await cli(["convert", join(DIR, "llama"), "--to", "f16", "-o", join(d, "out.gguf"), opt, v]);
    assert.equal(r.code, 2, `${opt} ${v}`);
    assert.match(r.err, want);
  }
  assert.deepEqual(readdirSync(d), []);
});

test("split rules: gguf-py's and llama-gguf-split's on made-up sizes", () => {
  // gguf-py: unpadded sizes, both limits, never an empty part but the first with --no-tensor-first-split
  assert.deepEqual(splitByGgufPy([10, 10, 10], { maxTensors: 2 }), [[0, 1], [2]]);
  assert.deepEqual(splitByGgufPy([10, 10, 10], { maxBytes: 20 }), [[0, 1], [2]]);
  assert.deepEqual(splitByGgufPy([10, 10, 10], { maxBytes: 19 }), [[0], [1], [2]]);
  assert.deepEqual(splitByGgufPy([50, 10, 10], { maxBytes: 20 }), [[0], [1, 2]]);
  assert.deepEqual(splitByGgufPy([10, 10, 10], { maxBytes: 25, maxTensors: 1 }), [[0], [1], [2]]);
  assert.deepEqual(splitByGgufPy([10, 10], { firstWithoutTensors: true }), [[], [0, 1]]);
  assert.deepEqual(splitByGgufPy([10, 10], {}), [[0, 1]]);
  // llama-gguf-split: sizes padded to 32, one limit, by size an over-sized first tensor leaves part 1 empty
  assert.deepEqual(splitByGgufSplit([10, 10, 10], { maxBytes: 64 }), [[0, 1], [2]]);
  assert.deepEqual(splitByGgufSplit([10, 10, 10], { maxBytes: 63 }), [[0], [1], [2]]);
  assert.deepEqual(splitByGgufSplit([100, 10], { maxBytes: 64 }), [[], [0], [1]]);
  assert.deepEqual(splitByGgufSplit([1, 1, 1, 1, 1], { maxTensors: 2 }), [[0, 1], [2, 3], [4]]);
  assert.deepEqual(splitByGgufSplit(Array(130).fill(1), {}).map((p) => p.length), [128, 2]);
  assert.throws(() => splitByGgufSplit([1], { maxTensors: 1, maxBytes: 1 }), /by tensor count or by size, not both/);
  assert.throws(() => splitByGgufPy([1], { maxTensors: -1 }), /maxTensors must be a count/);
  assert.throws(() => splitByGgufPy(Array(100001).fill(1), { maxTensors: 1 }), /100001 parts/);
});

test("split metadata, names and sizes", () => {
  const meta = [
    { key: "general.architecture", type: "string", value: "llama" },
    { key: "split.count", type: "uint16", value: 9 },
    { key: "llama.block_count", type: "uint32", value: 2 },
  ] as const;
  assert.deepEqual(splitMetadata(meta, 0, 1, 5), meta);
  assert.deepEqual(splitMetadata(meta, 0, 3, 5).map((e) => `${e.key}=${e.value}`), ["general.architecture=llama", "llama.block_count=2", "split.no=0", "split.count=3", "split.tensors.count=5"]);
  assert.deepEqual(splitMetadata(meta, 2, 3, 5).map((e) => `${e.key}:${e.type}=${e.value}`), ["split.no:uint16=2", "split.count:uint16=3", "split.tensors.count:int32=5"]);
  assert.throws(() => splitMetadata(meta, 3, 3, 5), /parts are numbered 0 to count - 1/);
  assert.deepEqual(splitOutputPaths("d/m.gguf", 1), ["d/m.gguf"]);
  assert.deepEqual(splitOutputPaths("d/m.GGUF", 2), ["d/m-00001-of-00002.gguf", "d/m-00002-of-00002.gguf"]);
  assert.equal(parseSplitSize("100K"), 100_000);
  assert.equal(parseSplitSize("5G"), 5e9);
  assert.equal(parseSplitSize("123"), 123);
  for (const bad of ["", "1.5G", "5GB", "k", "2T"]) assert.throws(() => parseSplitSize(bad), /digits, optionally followed by K, M or G/, bad);
});
