/**
 * The GGUF reader sees in gguf-py's files exactly what gguf-py's reader sees: the shared golden
 * files (little-endian, general.alignment 64, big-endian) and make-reader.py's (every metadata
 * type, arrays of arrays, v2, a split model, a big-endian file of block types converted by
 * gguf_convert_endian.py), from a Node file, a Blob and bytes in memory alike.
 */
import assert from "node:assert/strict";
import { openAsBlob, readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { blobSource, bytesSource } from "../../../src/io/byte-source.js";
import { readGguf } from "../../../src/io/gguf/header.js";
import { ggufModel, splitNameOf, splitPaths } from "../../../src/io/gguf/split.js";
import { ggufRecords, ggufTensor, type GgufRecord } from "../../../src/io/gguf/records.js";
import { cast, Tensor } from "../../../src/index.js";
import { dequantizeGgml } from "../../../src/ggml/index.js";
import { openGguf, readGgufFile } from "../../../src/node/io/gguf.js";
import { openTensorFile } from "../../../src/node/io/reader.js";
import { RandomAccessFile } from "../../../src/node/io/file.js";
import { assertSeesSame, FIXTURES, readIndex } from "./expected.js";

const GOLDEN = readIndex(join(FIXTURES, "index.json")).files;
const READER = readIndex(join(FIXTURES, "reader", "reader.json")).files;
const pathOf = (name: string): string => (name in GOLDEN ? join(FIXTURES, "files", name) : join(FIXTURES, "reader", name));

for (const [name, want] of [...Object.entries(GOLDEN), ...Object.entries(READER)]) {
  test(`${name}: every key, type, value and tensor info as gguf-py reads them`, async () => {
    const file = await RandomAccessFile.open(pathOf(name));
    try {
      await assertSeesSame(await readGguf(file, { name }), want, name);
    } finally {
      await file.close();
    }
  });
}

test("a Blob (fs.openAsBlob, as a page's File) and bytes in memory read as the file does", async () => {
  for (const name of ["small.gguf", "every-type.gguf", "big-endian.gguf", "be-blocks.gguf"]) {
    const want = GOLDEN[name] ?? READER[name];
    await assertSeesSame(await readGguf(blobSource(await openAsBlob(pathOf(name)), name), { name }), want, `${name} as a Blob`);
    await assertSeesSame(await readGguf(bytesSource(readFileSync(pathOf(name))), { name }), want, `${name} in memory`);
  }
});

async function records(path: string): Promise<GgufRecord[]> {
  const m = await readGgufFile(path);
  try {
    const out: GgufRecord[] = [];
    for await (const r of m.records()) out.push(r);
    return out;
  } finally {
    await m.close();
  }
}

test("a big-endian file (gguf_convert_endian.py's) yields the little-endian original's records byte for byte", async () => {
  const be = await records(join(FIXTURES, "reader", "be-blocks.gguf"));
  const le = await records(join(FIXTURES, "reader", "be-blocks.le.gguf"));
  assert.deepEqual(be.map((r) => r.ggmlType.name), ["F32", "F16", "BF16", "Q4_0", "Q8_0", "MXFP4"]);
  assert.equal(be.length, le.length);
  for (let i = 0; i < be.length; i++) {
    assert.equal(be[i].name, le[i].name);
    assert.deepEqual(be[i].shape, le[i].shape);
    assert.deepEqual(be[i].bytes, le[i].bytes, be[i].name);
  }
});

test("a split model reads as one: every part's tensors in order, the same records as the unsplit file", async () => {
  assert.deepEqual(splitNameOf("m-00002-of-00003.gguf"), { prefix: "m", no: 2, count: 3 });
  assert.equal(splitNameOf("m-00004-of-00003.gguf"), undefined);
  assert.deepEqual(splitPaths("d/m", 2), ["d/m-00001-of-00002.gguf", "d/m-00002-of-00002.gguf"]);
  const whole = await records(join(FIXTURES, "reader", "every-type.gguf"));
  for (const part of [1, 2, 3]) {
    // Any part's name opens the whole model.
    const split = await records(join(FIXTURES, "reader", `split-0000${part}-of-00003.gguf`));
    assert.deepEqual(split.map((r) => r.name), whole.map((r) => r.name));
    for (let i = 0; i < whole.length; i++) assert.deepEqual(split[i].bytes, whole[i].bytes, whole[i].name);
  }
  const f = await openGguf(join(FIXTURES, "reader", "split-00001-of-00003.gguf"));
  try {
    assert.equal(f.parts.length, 3);
    assert.deepEqual(f.model.tensors.map((t) => t.split), [0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2]);
    assert.equal(f.model.metadata.get("general.name")?.value, "reader fixture");
  } finally {
    await f.close();
  }
});

test("the core alone: ggufModel over parts given as ByteSources", async () => {
  const parts = [1, 2, 3].map((k) => join(FIXTURES, "reader", `split-0000${k}-of-00003.gguf`));
  const files = await Promise.all(parts.map((p) => readGguf(bytesSource(readFileSync(p)), { name: p })));
  const model = ggufModel(files);
  assert.equal(model.tensors.length, 16);
  const names: string[] = [];
  for await (const r of ggufRecords(model)) names.push(r.name);
  assert.equal(names.length, 16);
});

test("dequantized to float32 by src/ggml, then to bfloat16 and float16 by Cast (one rounding)", async () => {
  for (const r of await records(join(FIXTURES, "files", "small.gguf"))) {
    const f32 = dequantizeGgml(r.ggmlType, r.bytes);
    const x = Tensor.fromStorage(f32, "float32", r.shape);
    assert.deepEqual(ggufTensor(r).toValues(), x.toValues(), r.name);
    for (const to of ["bfloat16", "float16"] as const) assert.deepEqual(ggufTensor(r, to).bytes(), cast(x, to).bytes(), `${r.name} to ${to}`);
  }
});

test("openTensorFile lists GGUF tensors row-major: plain types as themselves, block types as float32 read in any run", async () => {
  const f = await openTensorFile(join(FIXTURES, "reader", "every-type.gguf"));
  try {
    assert.equal(f.format, "gguf");
    const byName = new Map(f.tensors.map((t) => [t.name, t]));
    assert.equal(byName.get("plain.1.f16")!.dtype.name, "float16");
    assert.equal(byName.get("plain.6.i64")!.dtype.name, "int64");
    assert.equal(byName.get("block.0.bf16")!.dtype.name, "bfloat16");
    const q = byName.get("block.5.q8_0")!;
    assert.equal(q.dtype.name, "float32");
    assert.deepEqual(q.shape, [3, 96]);
    const whole = new Float32Array((await q.read(0, q.size)).slice().buffer);
    // Runs that start and end inside blocks give the same values.
    for (const [start, count] of [[8, 40], [24, 8], [32, 256], [280, 8]]) {
      const part = new Float32Array((await q.read(start, count)).slice().buffer);
      assert.deepEqual(part, whole.subarray(start, start + count), `[${start}, ${start + count})`);
    }
  } finally {
    await f.close();
  }
});
