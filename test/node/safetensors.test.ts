/**
 * safetensors: every dtype the format names round-trips through tensorcast's writer and reader
 * (and through a conversion that keeps it), the committed example written by an independent
 * generator reads back, __metadata__ is kept, and every way a header can lie is refused with the
 * file, the tensor and what is wrong.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { dtype } from "../../src/index.js";
import { convertFile, exampleCheckpoint, exampleTensors, openTensorFile } from "../../src/node/index.js";
import { MAX_HEADER_LENGTH, SAFETENSORS_DTYPES } from "../../src/node/io/safetensors.js";
import { rawByteLength } from "../../src/node/io/tensors.js";
import { FIXTURES, randomBytes, rawSafetensors, rejectsCode, safetensorsBytes, scratch } from "./helpers.js";

const dir = scratch();

function write(name: string, bytes: Uint8Array): string {
  const path = join(dir, name);
  writeFileSync(path, bytes);
  return path;
}

test("every safetensors dtype round-trips: header, shape and bytes", async () => {
  const tensors = Object.entries(SAFETENSORS_DTYPES).map(([code, name], i) => {
    const t = dtype(name);
    const shape = [2, 8]; // 16 elements: whole bytes for the 4- and 6-bit types
    return { name: `t.${code}`, dtype: t, shape, bytes: randomBytes(rawByteLength(t, 16), i + 1) };
  });
  const path = write("all.safetensors", safetensorsBytes(tensors, { note: "kept" }));
  const file = await openTensorFile(path);
  try {
    assert.equal(file.format, "safetensors");
    assert.deepEqual(file.metadata, { note: "kept" });
    assert.equal(file.tensors.length, tensors.length);
    for (const [i, t] of file.tensors.entries()) {
      assert.equal(t.name, tensors[i].name);
      assert.equal(t.dtype, tensors[i].dtype);
      assert.deepEqual(t.shape, [2, 8]);
      assert.deepEqual(await t.read(0, 16), tensors[i].bytes, t.name);
      // A run in the middle, as chunks are read.
      const from = rawByteLength(t.dtype, 8);
      assert.deepEqual(await t.read(8, 8), tensors[i].bytes.subarray(from), `${t.name} [8, 16)`);
    }
  } finally {
    await file.close();
  }
  // A conversion that changes nothing writes the same file back, byte for byte.
  const out = join(dir, "all.copy.safetensors");
  const report = await convertFile(path, out, { to: "float32", only: /^$/ });
  assert.equal(report.tensors.filter((t) => t.converted).length, 0);
  assert.deepEqual(readFileSync(out), readFileSync(path));
});

test("the committed example (independent generator) is exactly what exampleCheckpoint() writes", async () => {
  const fixture = readFileSync(join(FIXTURES, "example.safetensors"));
  assert.deepEqual(new Uint8Array(fixture), exampleCheckpoint());
  const file = await openTensorFile(join(FIXTURES, "example.safetensors"));
  try {
    assert.deepEqual(file.metadata, { format: "pt", source: "tensorcast built-in example" });
    const expected = exampleTensors();
    assert.deepEqual(file.tensors.map((t) => t.name), expected.map((t) => t.name));
    for (const [i, t] of file.tensors.entries()) {
      assert.deepEqual(await t.read(0, t.size), expected[i].tensor.bytes(), t.name);
    }
  } finally {
    await file.close();
  }
});

test("header padding, __metadata__ anywhere, unusual names and an empty file of tensors", async () => {
  const data = new Uint8Array(new Float32Array([1, 2]).buffer);
  const json = '{"__proto__":{"dtype":"F32","shape":[1],"data_offsets":[4,8]},"0":{"dtype":"F32","shape":[],"data_offsets":[0,4]},"__metadata__":{"__proto__":"x"}}      ';
  const path = write("odd.safetensors", rawSafetensors(json, data));
  const file = await openTensorFile(path);
  try {
    assert.deepEqual(file.tensors.map((t) => [t.name, t.shape]), [["0", []], ["__proto__", [1]]]);
    assert.deepEqual(Object.entries(file.metadata!), [["__proto__", "x"]]);
  } finally {
    await file.close();
  }
  const empty = await openTensorFile(write("empty.safetensors", rawSafetensors("{}")));
  assert.equal(empty.tensors.length, 0);
  await empty.close();
});

/** Each lie a header can tell, with what the error must say. */
const LIES: [string, Uint8Array, string, RegExp[]][] = [
  ["too short for the length", new Uint8Array([1, 2, 3]), "INVALID_DATA", [/8-byte header length/]],
  ["a 10 GB header length", (() => {
    const b = rawSafetensors("{}");
    new DataView(b.buffer, b.byteOffset).setBigUint64(0, 10_000_000_000n, true);
    return b;
  })(), "INVALID_DATA", [/10000000000 is over the 100000000-byte limit/]],
  ["a u64 max header length", (() => {
    const b = rawSafetensors("{}");
    new DataView(b.buffer, b.byteOffset).setBigUint64(0, 2n ** 64n - 1n, true);
    return b;
  })(), "INVALID_DATA", [/18446744073709551615 is over/]],
  ["a header longer than the file", (() => {
    const b = rawSafetensors("{}");
    b[0] = 200;
    return b;
  })(), "INVALID_DATA", [/truncated: the header says it is 200 bytes long/]],
  ["not starting with {", rawSafetensors(' {"a":1}'), "INVALID_DATA", [/must start with "\{"/]],
  ["invalid JSON", rawSafetensors("{\"a\":"), "INVALID_DATA", [/not valid JSON/]],
  ["invalid UTF-8 in a name", rawSafetensors(Buffer.concat([Buffer.from('{"'), Buffer.from([0xff, 0xfe]), Buffer.from('":1}')])),
    "INVALID_DATA", [/header is not valid UTF-8/]],
  ["an unknown dtype", rawSafetensors('{"w":{"dtype":"F128","shape":[1],"data_offsets":[0,16]}}', new Uint8Array(16)), "UNKNOWN_DTYPE",
    [/tensor "w": unknown dtype "F128"; safetensors defines F64/]],
  ["offsets past the end", rawSafetensors('{"w":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}}', new Uint8Array(8)), "INVALID_DATA",
    [/tensor "w": data_offsets \[0, 16\] reach past the end of the data \(8 bytes\)/]],
  ["overlapping tensors", rawSafetensors('{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}}', new Uint8Array(12)),
    "INVALID_DATA", [/tensor "b": data_offsets \[4, 12\] overlap tensor "a"/]],
  ["a gap", rawSafetensors('{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}}', new Uint8Array(12)),
    "INVALID_DATA", [/tensor "b": .* leave a gap: bytes \[4, 8\)/]],
  ["bytes after the last tensor", rawSafetensors('{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}', new Uint8Array(8)),
    "INVALID_DATA", [/4 bytes belong to no tensor/]],
  ["size not shape x dtype", rawSafetensors('{"a":{"dtype":"BF16","shape":[3],"data_offsets":[0,4]}}', new Uint8Array(4)),
    "SHAPE_MISMATCH", [/tensor "a": data_offsets \[0, 4\] hold 4 bytes, but shape \[3\] of BF16 needs 6/]],
  ["a shape whose product overflows", rawSafetensors('{"a":{"dtype":"U8","shape":[4294967296,4294967296],"data_offsets":[0,0]}}'),
    "INVALID_SHAPE", [/tensor "a": shape \[4294967296,4294967296\] has more than 2\^53 - 1 elements/]],
  ["a negative dimension", rawSafetensors('{"a":{"dtype":"U8","shape":[-1],"data_offsets":[0,0]}}'), "INVALID_SHAPE", [/tensor "a": shape \[-1\] has -1/]],
  ["an offset beyond 2^53", rawSafetensors('{"a":{"dtype":"U8","shape":[0],"data_offsets":[0,18446744073709551615]}}'), "INVALID_DATA", [/two integers/]],
  ["F4 not filling a byte", rawSafetensors('{"a":{"dtype":"F4","shape":[3],"data_offsets":[0,2]}}', new Uint8Array(2)),
    "SHAPE_MISMATCH", [/3 elements of 4 bits, which do not fill whole bytes/]],
  ["metadata that is not strings", rawSafetensors('{"__metadata__":{"a":1}}'), "INVALID_DATA", [/metadata values must be strings/]],
  ["an unknown field", rawSafetensors('{"a":{"dtype":"U8","shape":[0],"data_offsets":[0,0],"x":1}}'), "INVALID_DATA", [/tensor "a": unknown field "x"/]],
];

for (const [what, bytes, code, patterns] of LIES) {
  test(`refused: ${what}`, async () => {
    const path = write(`lie-${what.replace(/\W+/g, "-")}.safetensors`, bytes);
    const e = await rejectsCode(openTensorFile(path), code, ...patterns);
    assert.ok(e.message.startsWith(`${path}: `), e.message);
  });
}

test("the header cap is the Rust reader's", () => {
  assert.equal(MAX_HEADER_LENGTH, 100_000_000);
});
