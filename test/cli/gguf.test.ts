/**
 * The CLI on GGUF models: `inspect` (metadata table, GGML types, bits per weight, statistics of the
 * dequantized values, --json), `convert model.gguf --to T -o OUT.safetensors` (GGUF names, values
 * dequantized bit for bit and cast once, written atomically and verified) and `diff` between GGUF
 * files and against safetensors, all checked against src/ggml's decoders and Cast directly.
 */
import assert from "node:assert/strict";
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { runCli as run } from "../support/cli.js";
import { scratch } from "../node/helpers.js";
import { cast, Tensor } from "../../src/index.js";
import { dequantizeGgml } from "../../src/ggml/index.js";
import { openTensorFile } from "../../src/node/io/reader.js";
import { readGgufFile } from "../../src/node/io/gguf.js";
import { inspectFile, type InspectReport } from "../../src/node/convert/inspect.js";
import { convertFile } from "../../src/node/convert/convert.js";

const ROOT = fileURLToPath(new URL("../../../", import.meta.url));
const SMALL = join(ROOT, "test/fixtures/gguf/files/small.gguf");
const EVERY = join(ROOT, "test/fixtures/gguf/reader/every-type.gguf");
const SPLIT = join(ROOT, "test/fixtures/gguf/reader/split-00001-of-00003.gguf");

/** Each tensor's values as src/ggml decodes them (plain types cast to float32 exactly), by name. */
async function dequantized(path: string): Promise<Map<string, { shape: readonly number[]; values: Tensor }>> {
  const m = await readGgufFile(path);
  const out = new Map<string, { shape: readonly number[]; values: Tensor }>();
  try {
    for await (const r of m.records()) out.set(r.name, { shape: r.shape, values: Tensor.fromStorage(dequantizeGgml(r.ggmlType, r.bytes), "float32", r.shape) });
  } finally {
    await m.close();
  }
  return out;
}

async function tensorsOf(path: string): Promise<Map<string, { dtype: string; shape: readonly number[]; bytes: Uint8Array }>> {
  const f = await openTensorFile(path);
  try {
    const out = new Map<string, { dtype: string; shape: readonly number[]; bytes: Uint8Array }>();
    for (const t of f.tensors) out.set(t.name, { dtype: t.dtype.name, shape: t.shape, bytes: (await t.read(0, t.size)).slice() });
    return out;
  } finally {
    await f.close();
  }
}

test("inspect model.gguf: the header, every metadata key with its type and value, each tensor's GGML type, bytes, bits per weight and statistics", async () => {
  const r = await run("inspect", SMALL);
  assert.equal(r.code, 0, r.err);
  const lines = r.out.split("\n");
  assert.match(lines[0], /small\.gguf: GGUF v3 \(little-endian, alignment 32\), 7 tensors, 27\.3 KiB, 17 metadata keys$/);
  assert.match(r.out, /\ntest\.u64\s+uint64\s+"9223372036854775813"\n/);
  assert.match(r.out, /\ntest\.arr_str\s+array\[string\] x 3\s+\["a", "", "ü"\]\n/);
  assert.match(r.out, /\ntensor\s+ggml type\s+shape\s+bytes\s+bits\/w\s+min\s+max\s+mean\s+nan\s+inf\n/);
  assert.match(r.out, /\nblk\.3\.w_q4_k\s+Q4_K\s+\[12, 256\]\s+1728\s+4\.5\s/);
  assert.match(r.out, /\nblk\.2\.w_q8_0\s+Q8_0\s+\[12, 256\]\s+3264\s+8\.5\s/);
  const every = await run("inspect", EVERY, "--no-stats");
  assert.match(every.out, /\ntokenizer\.ggml\.tokens\s+array\[string\] x 40\s+\["tok0", "tok1", "tok2", "tok3", \.\.\.\]\n/);
  assert.match(every.out, /\nt\.arr_arr_i32\s+array\[array\] x 3\s+\["array\[int32\] x 3", "array\[int32\] x 1", "array\[int32\] x 2"\]\n/);
});

test("inspect --json: metadata exact (64-bit integers as strings past 2^53), and statistics equal to the dequantized values'", async () => {
  const r = await run("inspect", SMALL, "--json");
  assert.equal(r.code, 0, r.err);
  const report = JSON.parse(r.out) as InspectReport;
  assert.equal(report.format, "gguf");
  assert.deepEqual({ ...report.gguf, metadata: undefined }, { version: 3, endian: "little", alignment: 32, parts: 1, metadata: undefined });
  const byKey = new Map(report.gguf!.metadata.map((m) => [m.key, m]));
  assert.deepEqual(byKey.get("test.u64"), { key: "test.u64", type: "uint64", value: "9223372036854775813" });
  assert.deepEqual(byKey.get("test.i64"), { key: "test.i64", type: "int64", value: "-4611686018427387904" });
  assert.deepEqual(byKey.get("test.arr_i32"), { key: "test.arr_i32", type: "array", itemType: "int32", count: 3, value: [1, -2, 3], cut: false });
  const want = await dequantized(SMALL);
  for (const t of report.tensors) {
    const values = want.get(t.name)!.values.toValues() as number[];
    assert.equal(t.stats!.min, Math.min(...values), t.name);
    assert.equal(t.stats!.max, Math.max(...values), t.name);
    assert.equal(t.stats!.nan, 0);
  }
  assert.deepEqual(report.tensors.find((t) => t.name === "blk.3.w_q4_k")!.ggml, { type: "Q4_K", bytes: 1728, bitsPerWeight: 4.5 });
});

test("convert model.gguf --to float32|bfloat16|float16 -o OUT.safetensors: GGUF names, row-major shapes, ggml's values cast once", async () => {
  const dir = scratch();
  const want = await dequantized(SMALL);
  for (const to of ["float32", "bfloat16", "float16"] as const) {
    const out = join(dir, `small.${to}.safetensors`);
    const r = await run("convert", SMALL, "--to", to, "-o", out, "--quiet");
    assert.equal(r.code, 0, r.err);
    const got = await tensorsOf(out);
    assert.deepEqual([...got.keys()], [...want.keys()]);
    for (const [name, w] of want) {
      const g = got.get(name)!;
      assert.deepEqual(g.shape, w.shape, name);
      assert.equal(g.dtype, to, name);
      // F16 is cast from its own float16 values: the same as from their exact float32 decoding.
      assert.deepEqual(g.bytes, to === "float32" ? w.values.bytes() : cast(w.values, to).bytes(), `${name} as ${to}`);
    }
  }
  assert.deepEqual(readdirSync(dir).filter((f) => f.endsWith(".tmp")), []);
});

test("GGML blocks are decoded on the workers: convert and inspect with two workers and chunks that split blocks give the calling thread's bytes and statistics", async () => {
  const dir = scratch();
  const want = await dequantized(EVERY);
  const stats: string[] = [];
  for (const jobs of [0, 2]) {
    // 1,000 bytes: 250 float32 values, so most chunks start and end inside a block of 32 or 256.
    const out = join(dir, `every.${jobs}.safetensors`);
    const r = await convertFile(EVERY, out, { to: "bfloat16", jobs, chunkBytes: 1000 });
    assert.equal(r.workers, jobs, "the workers that took part");
    const got = await tensorsOf(out);
    for (const [name, w] of want) {
      const g = got.get(name)!;
      if (g.dtype !== "bfloat16") continue;
      assert.deepEqual(g.bytes, cast(w.values, "bfloat16").bytes(), `${name}, ${jobs} workers`);
    }
    const i = await inspectFile(EVERY, { jobs, chunkBytes: 1000 });
    stats.push(JSON.stringify(i.tensors.map((t) => t.stats)));
  }
  assert.equal(stats[1], stats[0], "inspect's statistics with two workers");
});

test("convert of a split model equals the unsplit file's; GGUF output and a part of the input as OUT are refused", async () => {
  const dir = scratch();
  assert.equal((await run("convert", SPLIT, "--to", "bfloat16", "-o", join(dir, "split.safetensors"), "--quiet")).code, 0);
  assert.equal((await run("convert", EVERY, "--to", "bfloat16", "-o", join(dir, "every.safetensors"), "--quiet")).code, 0);
  assert.deepEqual(await tensorsOf(join(dir, "split.safetensors")), await tensorsOf(join(dir, "every.safetensors")));
  // To GGUF, bfloat16 is GGML's BF16; this file's Q8_0 tensors are not requantized unasked, as llama-quantize refuses.
  const asGguf = await run("convert", SMALL, "--to", "bfloat16", "-o", join(dir, "x.gguf"));
  assert.notEqual(asGguf.code, 0);
  assert.match(asGguf.err, /is Q8_0 already: requantizing from type Q8_0 is disabled.*UNSUPPORTED_TYPE/);
  const part = join(ROOT, "test/fixtures/gguf/reader/split-00002-of-00003.gguf");
  const onPart = await run("convert", SPLIT, "--to", "bfloat16", "-o", part, "--force", "--output-format", "safetensors");
  assert.notEqual(onPart.code, 0);
  assert.match(onPart.err, /a part of the split model .* OUTPUT_IS_INPUT/);
});

test("diff a.gguf b.gguf and diff model.gguf OUT.safetensors compare dequantized values by name", async () => {
  const dir = scratch();
  const out = join(dir, "small.safetensors");
  assert.equal((await run("convert", SMALL, "--to", "float32", "-o", out, "--quiet")).code, 0);
  const same = await run("diff", SMALL, out, "--json");
  assert.equal(same.code, 0, same.err);
  const report = JSON.parse(same.out) as { tensors: { name: string; stats: { count: number; differing: number } }[] };
  assert.equal(report.tensors.length, 7);
  assert.ok(report.tensors.every((t) => t.stats.differing === 0 && t.stats.count > 0), same.out);
  const be = await run("diff", join(ROOT, "test/fixtures/gguf/reader/be-blocks.gguf"), join(ROOT, "test/fixtures/gguf/reader/be-blocks.le.gguf"));
  assert.equal(be.code, 0, be.err);
  assert.match(be.out, /6 of 6 common tensors identical/);
  const bf = join(dir, "small.bf16.safetensors");
  assert.equal((await run("convert", SMALL, "--to", "bfloat16", "-o", bf, "--quiet")).code, 0);
  const rounded = await run("diff", SMALL, bf);
  assert.match(rounded.out, /\nblk\.3\.w_q4_k\s+float32 \/ bfloat16\s+\[12, 256\]\s+\d+ of 3072\s+[\d.]+\s+[\d.]+\s+0\.5\s/);
});
