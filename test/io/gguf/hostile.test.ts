/**
 * Hostile GGUF files: every check gguf.cpp's reader makes (and llama.cpp's loader makes on data
 * and splits) is an INVALID_DATA TensorcastError with its reason, one test each, on files built
 * byte by byte (build.ts) so that each check is reached alone. Counts, lengths and floods that
 * claim more than the file holds are refused before anything is allocated for them.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { bytesSource } from "../../../src/io/byte-source.js";
import { readGguf, type GgufFile } from "../../../src/io/gguf/header.js";
import { ggufModel } from "../../../src/io/gguf/split.js";
import { TensorcastError } from "../../../src/index.js";
import { Bytes, buildGguf, val, type GgufSpec, type KvSpec, type TensorSpec } from "./build.js";

const T_U8 = 0, T_U16 = 2, T_U32 = 4, T_I32 = 5, T_STR = 8, T_ARR = 9, T_U64 = 10;
const F32 = 0, Q4_0 = 2;

const read = (b: Uint8Array): Promise<GgufFile> => readGguf(bytesSource(b), { name: "x.gguf" });

async function refused(spec: GgufSpec | Uint8Array, reason: RegExp): Promise<void> {
  const bytes = spec instanceof Uint8Array ? spec : buildGguf(spec);
  await assert.rejects(read(bytes), (e: unknown) => {
    assert.ok(e instanceof TensorcastError, String(e));
    assert.equal(e.code, "INVALID_DATA", e.message);
    assert.match(e.message, /^x\.gguf: gguf: /);
    assert.match(e.message, reason);
    return true;
  });
}

const kv = (key: string, type: number, value: Uint8Array): KvSpec => ({ key, type, value });
const f32 = (name: string, dims: number[] = [4], extra: Partial<TensorSpec> = {}): TensorSpec => ({ name, dims, typeId: F32, ...extra });

test("a valid built file reads (the base every case below breaks one field of)", async () => {
  const g = await read(buildGguf({ kv: [kv("general.name", T_STR, val.str("x"))], tensors: [f32("a", [4, 2]), f32("b")] }));
  assert.deepEqual(g.tensors.map((t) => [t.name, t.shape, t.offset]), [["a", [2, 4], 0], ["b", [4], 32]]);
  const be = await read(buildGguf({ bigEndian: true, kv: [kv("k", T_U32, val.u32(7, false))], tensors: [f32("a")] }));
  assert.equal(be.littleEndian, false);
  assert.equal(be.metadata.get("k")?.value, 7);
});

test("magic: not 'GGUF', or a file too short to hold it", async () => {
  const b = buildGguf({});
  b[3] = 0x58;
  await refused(b, /the magic is 'GGUX', not 'GGUF'/);
  await refused(new Uint8Array([0x47, 0x47]), /too short for GGUF's magic/);
});

test("version: 0, 1 (dropped), 4 (newer); and a header cut short", async () => {
  await refused({ version: 0 }, /version 0 is not a GGUF version/);
  await refused({ version: 1 }, /version 1 is no longer read/);
  await refused({ version: 4 }, /version 4 is not one tensorcast reads \(2, 3\)/);
  await refused({ truncate: 12 }, /the tensor and key-value counts at byte 8 needs 16 bytes/);
});

test("counts: negative as int64, over 2^30, or beyond what the file can hold", async () => {
  await refused({ nTensors: 1n << 63n }, /number of tensors is 9223372036854775808, negative/);
  await refused({ nKv: (1n << 30n) + 1n }, /number of key-value pairs is 1073741825, over the limit/);
  await refused({ nKv: 1000n, nTensors: 1000n }, /1000 tensors and 1000 key-value pairs need at least 37000 bytes, but the file has 0/);
});

test("strings: over 1 GiB, or past the end of the file", async () => {
  const long = new Bytes().raw(new TextEncoder().encode("GGUF")).u32(3).u64(0).u64(1).u64((1 << 30) + 1).raw(new Uint8Array(16)).bytes();
  await refused(long, /key 0's length|key 0 at byte 24 is 1073741825 bytes long, over the limit of 1073741824/);
  await refused({ kv: [kv("k", T_STR, val.str("abc", true, 1000))] }, /key "k" at byte \d+ is 1000 bytes long, past the end of the file/);
});

test("keys: empty, duplicate, or not UTF-8", async () => {
  await refused({ kv: [kv("", T_U8, val.u8(1))] }, /key 0 at byte 24 is empty/);
  await refused({ kv: [kv("a", T_U8, val.u8(1)), kv("a", T_U8, val.u8(2))] }, /key 1 at byte \d+, "a", is a duplicate/);
  await refused({ kv: [{ key: new Uint8Array([0xff, 0xfe]), type: T_U8, value: val.u8(1) }] }, /key 0's name at byte 24 is not valid UTF-8|key 0 at byte 24 is not valid UTF-8/);
  // gguf.cpp finds keys by C string: to llama.cpp this one is general.alignment (the fuzz class found it).
  await refused({ kv: [kv("general.alignment\0x", T_U32, val.u32(64))] }, /key 0 at byte 24, "general.alignment\\u0000x", holds a NUL, where gguf.cpp's C strings end \(llama.cpp reads it as "general.alignment"\)/);
});

test("value types: unknown (13), an array of an unknown type, too many items, items past the end, nesting past 64", async () => {
  await refused({ kv: [kv("k", 13, val.u8(1))] }, /key "k" has value type 13, not a GGUF type/);
  await refused({ kv: [kv("k", T_ARR, val.arr(99, 1, val.u8(0)))] }, /key "k" has value type 99/);
  await refused({ kv: [kv("k", T_ARR, val.arr(T_U8, (1n << 30n) + 1n))] }, /key "k" at byte \d+ has 1073741825 items, over the limit/);
  await refused({ kv: [kv("k", T_ARR, val.arr(T_U32, 1000, new Uint8Array(8)))] }, /key "k" at byte \d+ has 1000 uint32 items, which need at least 4000 bytes, past the end/);
  await refused({ kv: [kv("k", T_ARR, val.arr(T_STR, 1 << 29, new Uint8Array(64)))] }, /has 536870912 string items, which need at least 4294967296 bytes/);
  // 65 arrays each holding the next.
  let nested = val.arr(T_U8, 0);
  for (let i = 0; i < 64; i++) nested = new Bytes().u32(T_ARR).u64(1).raw(nested).bytes();
  await refused({ kv: [kv("k", T_ARR, nested)] }, /nests arrays 65 deep, past the limit of 64/);
  // 64 deep is read.
  let ok = val.arr(T_U8, 1, val.u8(5));
  for (let i = 0; i < 63; i++) ok = new Bytes().u32(T_ARR).u64(1).raw(ok).bytes();
  await read(buildGguf({ kv: [kv("k", T_ARR, ok)] }));
});

test("general.alignment: not uint32, zero, not a power of two", async () => {
  await refused({ kv: [kv("general.alignment", T_U64, new Bytes().u64(32).bytes())] }, /general\.alignment must be of type uint32 but is uint64/);
  await refused({ kv: [kv("general.alignment", T_U32, val.u32(0))] }, /general\.alignment 0 is not a power of 2/);
  await refused({ kv: [kv("general.alignment", T_U32, val.u32(48))] }, /general\.alignment 48 is not a power of 2/);
  const g = await read(buildGguf({ kv: [kv("general.alignment", T_U32, val.u32(64))], alignment: 64, tensors: [f32("a"), f32("b")] }));
  assert.deepEqual([g.alignment, g.tensors[1].offset, g.dataOffset % 64], [64, 64, 0]);
});

test("tensor names: 64 bytes or more (63 is read), a second tensor of one name, not UTF-8", async () => {
  await refused({ tensors: [f32("n".repeat(64))] }, /its name is 64 bytes, GGML allows at most 63/);
  await read(buildGguf({ tensors: [f32("n".repeat(63))] }));
  await refused({ tensors: [f32("é".repeat(32))] }, /its name is 64 bytes/);
  await refused({ tensors: [f32("a"), f32("a")] }, /tensor 1 \("a"\) at byte \d+: a second tensor of that name/);
  await refused({ tensors: [f32("x", [4], { name: new Uint8Array([0xc0, 0x80]) })] }, /tensor 0's name at byte \d+ is not valid UTF-8/);
  await refused({ tensors: [f32("blk\0.0.w")] }, /tensor 0 \("blk\\u0000\.0\.w"\) at byte 24: its name holds a NUL, where ggml's C string names end \(llama.cpp reads it as "blk"\)/);
});

test("dimensions: more than 4, negative, a product at INT64_MAX or more, a size in bytes past 2^64", async () => {
  await refused({ tensors: [f32("a", [1, 1, 1, 1, 1])] }, /5 dimensions, GGML allows at most 4/);
  await refused({ tensors: [{ name: "a", dims: [4n, (1n << 64n) - 1n], typeId: F32 }] }, /dimension 1 is -1, negative/);
  await refused({ tensors: [{ name: "a", dims: [1n << 32n, 1n << 31n], typeId: F32 }] }, /shape \(4294967296, 2147483648, 1, 1\) has 9223372036854775808 elements, at least INT64_MAX/);
  await refused({ tensors: [{ name: "a", dims: [(1n << 31n), (1n << 31n) + 1n], typeId: F32 }] }, /its size in bytes passes 2\^64/);
});

test("type ids: past GGML_TYPE_COUNT, negative, removed (Q4_2, Q4_0_4_4)", async () => {
  await refused({ tensors: [{ name: "a", dims: [32], typeId: 43 }] }, /GGML type id 43, not in \[0, 43\)/);
  await refused({ tensors: [{ name: "a", dims: [32], typeId: -1 }] }, /GGML type id -1, not in/);
  await refused({ tensors: [{ name: "a", dims: [32], typeId: 4 }] }, /GGML type id 4 \(Q4_2, removed from ggml\) has no block size/);
  await refused({ tensors: [{ name: "a", dims: [32], typeId: 31 }] }, /GGML type id 31 \(Q4_0_4_4, removed/);
});

test("a row that is not a multiple of the type's block", async () => {
  await refused({ tensors: [{ name: "a", dims: [16, 2], typeId: Q4_0 }] }, /its rows hold 16 elements, not a multiple of Q4_0's block of 32/);
  await read(buildGguf({ tensors: [{ name: "a", dims: [32, 2], typeId: Q4_0 }] }));
});

test("offsets that are not the running padded sum", async () => {
  await refused({ tensors: [f32("a", [4], { offset: 4 })] }, /tensor "a": its data offset is 4, but the tensors before it end at 0/);
  await refused({ tensors: [f32("a"), f32("b", [4], { offset: 16 })] }, /tensor "b": its data offset is 16, but the tensors before it end at 32 \(padded to 32\)/);
  await refused({ tensors: [f32("a"), f32("b", [4], { offset: 64 })] }, /its data offset is 64, but the tensors before it end at 32/);
});

test("data past the end of the file; a data section that starts past it; a dimension past 2^53", async () => {
  const full = buildGguf({ tensors: [f32("a", [64])] });
  await read(full);
  await refused(full.subarray(0, full.length - 1), /tensor "a": its 256 bytes at \d+ end at \d+, past the end of the file/);
  // The infos end 8 bytes into a 32-byte line: padding to it needs bytes the file lacks.
  const empty = buildGguf({ tensors: [{ name: "abcdefg", dims: [0], typeId: F32 }], data: new Uint8Array(0) });
  const headerEnd = 24 + 8 + 7 + 4 + 8 + 4 + 8;
  await refused(empty.subarray(0, headerEnd), /the data section would start at 64 \(padded to 32\), past the end of the file/);
  await refused({ tensors: [{ name: "a", dims: [0n, 1n << 60n], typeId: F32 }] }, /dimension 1152921504606846976 is past 2\^53/);
});

test("split models: part order, split.no, a tensor in two parts, split.tensors.count, split.count", async () => {
  const part = (no: number, count: number, names: string[], total?: number): Promise<GgufFile> =>
    read(buildGguf({
      kv: [kv("split.no", T_U16, val.u16(no)), kv("split.count", T_U16, val.u16(count)), ...(total === undefined ? [] : [kv("split.tensors.count", T_I32, val.i32(total))])],
      tensors: names.map((n) => f32(n)),
    }));
  const m = ggufModel([await part(0, 2, ["a"], 2), await part(1, 2, ["b"])]);
  assert.deepEqual(m.tensors.map((t) => [t.name, t.split]), [["a", 0], ["b", 1]]);
  const check = (files: GgufFile[], reason: RegExp): void => {
    assert.throws(() => ggufModel(files), (e: unknown) => e instanceof TensorcastError && e.code === "INVALID_DATA" && reason.test(e.message));
  };
  check([await part(1, 2, ["a"], 2), await part(0, 2, ["b"])], /split\.no is 1, but it is part 0 \(0-based\) of 2/);
  check([await part(0, 2, ["a"], 2), await part(1, 2, ["a"])], /tensor "a" is also in part 0/);
  check([await part(0, 2, ["a"], 3), await part(1, 2, ["b"])], /split\.tensors\.count is 3, but the 2 parts hold 2 tensors/);
  check([await part(0, 3, ["a"], 2), await part(1, 3, ["b"])], /split\.count is 3, but 2 parts were given/);
  check([await part(0, 2, ["a"], 2), await part(1, 3, ["b"])], /split\.count is 3, but the first part says 2/);
  check([await part(0, 2, ["a"], 1)], /split\.count is 2, but 1 part was given/);
  const noSplitNo = await read(buildGguf({ kv: [kv("split.count", T_U16, val.u16(2))], tensors: [f32("b")] }));
  check([await part(0, 2, ["a"], 2), noSplitNo], /a part of a split model without split\.no/);
  check([await read(buildGguf({ kv: [kv("split.count", T_U32, val.u32(2))] }))], /split\.count must be of type uint16 but is uint32/);
});

test("floods: claimed counts cost nothing; real ones cost what the file holds", async () => {
  const before = process.memoryUsage();
  // Claims of 2^30 pairs, tensors, array items and 1 GiB strings, in files of a few dozen bytes.
  await refused({ nKv: 1n << 30n }, /need at least/);
  await refused({ nTensors: 1n << 30n }, /need at least/);
  await refused({ kv: [kv("k", T_ARR, val.arr(T_U64, 1 << 30))] }, /past the end/);
  await refused({ kv: [kv("k", T_ARR, val.arr(T_ARR, 1 << 30))] }, /past the end/);
  await refused({ kv: [kv("k", T_STR, val.str("", true, 1 << 30))] }, /past the end/);
  const after = process.memoryUsage();
  assert.ok(after.arrayBuffers - before.arrayBuffers < 16 * 2 ** 20, `array buffers grew by ${after.arrayBuffers - before.arrayBuffers}`);
  // 50,000 real key-value pairs and 20,000 tensor infos (about 2.3 MB of header) read in full.
  const pairs: KvSpec[] = Array.from({ length: 50_000 }, (_, i) => kv(`k.${i}`, T_U8, val.u8(i)));
  const infos: TensorSpec[] = Array.from({ length: 20_000 }, (_, i) => ({ name: `t.${i}`, dims: [0], typeId: F32 }));
  const flood = buildGguf({ kv: pairs, tensors: infos });
  const g = await read(flood);
  assert.equal(g.metadata.size, 50_000);
  assert.equal(g.tensors.length, 20_000);
  // A 1,000,000-item array is one typed array, not a JavaScript array of numbers.
  const big = await read(buildGguf({ kv: [kv("k", T_ARR, val.arr(T_U8, 1_000_000, new Uint8Array(1_000_000)))] }));
  assert.ok((big.metadata.get("k")!.value as { items: unknown }).items instanceof Uint8Array);
});

test("a string longer than a JavaScript string can hold (gguf.cpp reads up to 1 GiB): refused before its bytes are read", async () => {
  // A file of 600 MiB whose one key's string value takes all of it; only the header is served, and
  // any read of more than 1 MiB fails the test (before the fix the reader read all 600 MiB, then
  // V8 threw its own RangeError decoding them).
  const head = new Bytes().raw(new TextEncoder().encode("GGUF")).u32(3).u64(0).u64(1).str("k").u32(T_STR).u64(600 * 2 ** 20).bytes();
  const reads: number[] = [];
  const source = {
    size: head.length + 600 * 2 ** 20,
    async read(position: number, length: number): Promise<Uint8Array> {
      reads.push(length);
      if (length > 2 ** 20) throw new Error(`the reader asked for ${length} bytes at ${position}`);
      const out = new Uint8Array(length);
      out.set(head.subarray(position, position + length));
      return out;
    },
  };
  await assert.rejects(readGguf(source, { name: "x.gguf" }), (e: unknown) => {
    assert.ok(e instanceof TensorcastError, String(e));
    assert.equal(e.code, "NOT_IMPLEMENTED");
    assert.match(e.message, /^x\.gguf: gguf: key "k" at byte 37 is 629145600 bytes long, longer than a JavaScript string can hold \(536870888 bytes\)/);
    return true;
  });
  assert.ok(reads.every((n) => n <= 2 ** 20), String(reads));
});
