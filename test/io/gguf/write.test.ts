/**
 * The GGUF writer: every fixture gguf-py wrote (little- and big-endian, v2 and v3, general.alignment
 * 64, every metadata type, arrays of arrays, every block type, a split model's parts) read by the
 * reader and written back gives the file byte for byte; what gguf.cpp would refuse is refused.
 * The live peer (llama.cpp's own gguf_write_to_file) is in write-peer.test.ts.
 */
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { bytesSource } from "../../../src/io/byte-source.js";
import { readGguf } from "../../../src/io/gguf/header.js";
import { ggmlDims, layoutGguf, writeGguf, type GgufTensorToWrite } from "../../../src/io/gguf/write.js";
import type { GgufMetadataEntry } from "../../../src/io/gguf/values.js";
import { TensorcastError } from "../../../src/index.js";
import { FIXTURES } from "./expected.js";
import { contentOf, memorySink } from "./write-support.js";

const files = [
  ...readdirSync(join(FIXTURES, "files")).filter((f) => f.endsWith(".gguf")).map((f) => join(FIXTURES, "files", f)),
  ...readdirSync(join(FIXTURES, "reader")).filter((f) => f.endsWith(".gguf")).map((f) => join(FIXTURES, "reader", f)),
];

test(`every gguf-py fixture (${files.length} files) read and written back is the same file, byte for byte`, async () => {
  assert.ok(files.length >= 10, `fixtures found: ${files.length}`);
  for (const path of files) {
    const bytes = new Uint8Array(readFileSync(path));
    const g = await readGguf(bytesSource(bytes), { name: path });
    const { metadata, tensors } = contentOf(g, bytes, 1000);
    const sink = memorySink();
    const layout = await writeGguf(sink, metadata, tensors, { version: g.version as 2 | 3, littleEndian: g.littleEndian });
    const out = sink.bytes();
    assert.equal(layout.size, out.length, path);
    assert.equal(layout.header.length, g.dataOffset, `${path}: the data section starts where gguf-py put it`);
    assert.deepEqual(layout.offsets, g.tensors.map((t) => t.offset), path);
    assert.equal(out.length, bytes.length, `${path}: size`);
    const first = out.findIndex((b, i) => b !== bytes[i]);
    assert.equal(first, -1, `${path}: first differing byte ${first}`);
  }
});

test("ggmlDims: gguf-py's every dimension, or llama.cpp's ggml_n_dims without trailing 1s", () => {
  assert.deepEqual(ggmlDims([1, 64]), [64, 1]);
  assert.deepEqual(ggmlDims([1, 64], true), [64]);
  assert.deepEqual(ggmlDims([3, 1, 1], true), [1, 1, 3]);
  assert.deepEqual(ggmlDims([1, 1], true), [1]);
  assert.deepEqual(ggmlDims([]), [1]);
});

const kv = (key: string, type: GgufMetadataEntry["type"], value: GgufMetadataEntry["value"]): GgufMetadataEntry => ({ key, type, value });
const f32 = (n: number) => ({ name: "w", ggmlType: "F32", dims: [n], data: new Uint8Array(4 * n) });

test("values of every type, arrays of arrays, and the alignment: what the reader reads back", async () => {
  const metadata = [
    kv("general.alignment", "uint32", 16),
    kv("u8", "uint8", 255), kv("i8", "int8", -128), kv("u16", "uint16", 65535), kv("i16", "int16", -32768),
    kv("u32", "uint32", 4294967295), kv("i32", "int32", -2147483648), kv("f32", "float32", 0.1), kv("b", "bool", true),
    kv("s", "string", "héllo"), kv("u64", "uint64", 2n ** 64n - 1n), kv("i64", "int64", -(2n ** 63n)), kv("f64", "float64", 0.1),
    kv("arr", "array", { itemType: "int32", items: Int32Array.from([1, -2, 3]) }),
    kv("strs", "array", { itemType: "string", items: ["a", "", "ü"] }),
    kv("nested", "array", { itemType: "array", items: [{ itemType: "uint8", items: Uint8Array.from([1, 2]) }, { itemType: "string", items: ["x"] }] }),
  ];
  const sink = memorySink();
  await writeGguf(sink, metadata, [f32(3), { name: "q", ggmlType: "q8_0", dims: [32, 2], data: new Uint8Array(68) }]);
  const g = await readGguf(bytesSource(sink.bytes()));
  assert.equal(g.alignment, 16);
  assert.equal(g.dataOffset % 16, 0);
  assert.deepEqual(g.tensors.map((t) => [t.name, t.ggmlType.name, t.shape, t.offset]), [["w", "F32", [3], 0], ["q", "Q8_0", [2, 32], 16]]);
  for (const e of metadata) {
    const got = g.metadata.get(e.key);
    assert.equal(got?.type, e.type, e.key);
    if (e.key === "f32") assert.equal(got?.value, Math.fround(0.1));
    else assert.deepEqual(got?.value, e.value, e.key);
  }
});

test("what gguf.cpp refuses is refused with the reason", async () => {
  const refuses = async (metadata: GgufMetadataEntry[], tensors: GgufTensorToWrite[], re: RegExp, code = "INVALID_ATTRIBUTE"): Promise<void> => {
    await assert.rejects(writeGguf(memorySink(), metadata, tensors), (e: unknown) => e instanceof TensorcastError && e.code === code && re.test(e.message), String(re));
  };
  await refuses([kv("", "uint8", 1)], [], /a key is empty/);
  await refuses([kv("a", "uint8", 1), kv("a", "uint8", 2)], [], /"a" is given twice/);
  await refuses([kv("a\0b", "uint8", 1)], [], /key "a\\u0000b" holds a NUL/);
  await refuses([], [{ ...f32(1), name: "w\0x" }], /tensor "w\\u0000x": its name holds a NUL/);
  await refuses([kv("general.alignment", "uint32", 48)], [], /power of two/);
  await refuses([kv("general.alignment", "uint64", 32n)], [], /uint32 power of two/);
  await refuses([kv("x", "uint8", 256)], [], /256 is not a uint8/);
  await refuses([kv("x", "int64", 2n ** 63n)], [], /is not a int64/);
  await refuses([kv("x", "string", 5)], [], /not a string/);
  await refuses([], [{ ...f32(1), name: "n".repeat(64) }], /64 bytes, GGML allows at most 63/);
  await refuses([], [f32(1), f32(1)], /"w" is given twice/);
  await refuses([], [{ ...f32(1), dims: [1, 1, 1, 1, 1] }], /5 dimensions/);
  await refuses([], [{ name: "q", ggmlType: "Q4_0", dims: [48], data: new Uint8Array(0) }], /48 elements, not a multiple of Q4_0's block of 32/);
  await refuses([], [{ ...f32(2), data: new Uint8Array(7) }], /needs 8 bytes .* has 7/, "SHAPE_MISMATCH");
  await refuses([], [{ ...f32(2), data: new Uint8Array(9) }], /needs 8 bytes .* has more/, "SHAPE_MISMATCH");
  assert.throws(() => layoutGguf([], [{ name: "t", ggmlType: "Q9_9", dims: [32] }]), (e: unknown) => e instanceof TensorcastError && e.code === "UNKNOWN_DTYPE");
});

test("tensorcast/gguf's writer refuses an array value over a detached buffer with a TensorcastError, before writing", async () => {
  const gguf = await import("../../../src/gguf/index.js");
  const items = new Uint8Array(4);
  structuredClone(items.buffer, { transfer: [items.buffer] });
  const meta = [{ key: "k", type: "array", value: { itemType: "uint8", items } }] as const;
  assert.throws(() => gguf.layoutGguf(meta as never, []), (e: unknown) => e instanceof TensorcastError && e.code === "INVALID_ATTRIBUTE" && /detached/.test(e.message));
  let wrote = 0;
  await assert.rejects(gguf.writeGguf({ write: () => void wrote++ }, meta as never, []), (e: unknown) => e instanceof TensorcastError && /detached/.test(e.message));
  assert.equal(wrote, 0);
});
