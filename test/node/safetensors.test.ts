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
import { dtype, TensorcastError } from "../../src/index.js";
import { convertFile, exampleCheckpoint, exampleTensors, openTensorFile } from "../../src/node/index.js";
import { encodeSafetensorsHeader, MAX_HEADER_LENGTH, parseSafetensorsHeader, SAFETENSORS_DTYPES } from "../../src/node/io/safetensors.js";
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
  // One byte short, the boundary of the check: "{}" is 2 bytes, the length says 3.
  ["a header one byte longer than the file", (() => {
    const b = rawSafetensors("{}");
    b[0] = 3;
    return b;
  })(), "INVALID_DATA", [/truncated: the header says it is 3 bytes long, but only 2 bytes follow the length/]],
  ["not an object", rawSafetensors(" []"), "INVALID_DATA", [/the header must be a JSON object \("\{" after any spaces\); it starts with a list/]],
  ["invalid JSON", rawSafetensors("{\"a\":"), "INVALID_DATA", [/not valid JSON: expected a value, found the end of the header \(at byte 5 of the header\)/]],
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
    "INVALID_SHAPE", [/tensor "a": shape \[4294967296, 4294967296\] has more elements than 2\^64 - 1/]],
  ["a product that overflows u64 before a 0 (the Rust reader folds from the left)",
    rawSafetensors('{"a":{"dtype":"U8","shape":[4294967296,4294967296,0],"data_offsets":[0,0]}}'), "INVALID_SHAPE", [/more elements than 2\^64 - 1/]],
  ["a product above 2^53", rawSafetensors('{"a":{"dtype":"U8","shape":[4294967296,4294967296],"data_offsets":[0,0]}}'.replace("4294967296]", "2097152]")),
    "INVALID_SHAPE", [/has 9007199254740992 elements, more than 2\^53 - 1/]],
  ["a negative dimension", rawSafetensors('{"a":{"dtype":"U8","shape":[-1],"data_offsets":[0,0]}}'), "INVALID_SHAPE", [/tensor "a": shape has -1; dimensions are unsigned integers/]],
  ["an offset beyond 2^53", rawSafetensors('{"a":{"dtype":"U8","shape":[0],"data_offsets":[0,18446744073709551615]}}'), "INVALID_DATA",
    [/data_offsets has 18446744073709551615, past the end of any file/]],
  ["an offset beyond 2^64", rawSafetensors('{"a":{"dtype":"U8","shape":[0],"data_offsets":[0,18446744073709551616]}}'), "INVALID_DATA",
    [/data_offsets has 18446744073709551616, which is not an unsigned 64-bit integer/]],
  ["a dimension beyond 2^53 (the Rust reader accepts one in an empty tensor)", rawSafetensors('{"a":{"dtype":"U8","shape":[0,9007199254740992],"data_offsets":[0,0]}}'),
    "INVALID_SHAPE", [/dimension 9007199254740992, above 2\^53 - 1, which tensorcast cannot represent/]],
  ["F4 not filling a byte", rawSafetensors('{"a":{"dtype":"F4","shape":[3],"data_offsets":[0,2]}}', new Uint8Array(2)),
    "SHAPE_MISMATCH", [/3 elements of 4 bits, which do not fill whole bytes/]],
  ["metadata that is not strings", rawSafetensors('{"__metadata__":{"a":1}}'), "INVALID_DATA", [/__metadata__ "a" is a number; metadata values must be strings/]],
  ["a missing field", rawSafetensors('{"a":{"dtype":"U8","data_offsets":[0,0]}}'), "INVALID_DATA", [/tensor "a": it has no shape; a tensor has dtype, shape and data_offsets/]],
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

// ---- issue 13: hostile headers (defects 3, 4 and 7) ----

const EMPTY_U8 = '{"dtype":"U8","shape":[0],"data_offsets":[0,0]}';
const F32_1 = '{"dtype":"F32","shape":[1],"data_offsets":[0,4]}';

async function refused(name: string, bytes: Uint8Array, code: string, ...patterns: RegExp[]): Promise<void> {
  const path = write(`${name}.safetensors`, bytes);
  const e = await rejectsCode(openTensorFile(path), code, ...patterns);
  assert.ok(e.message.startsWith(`${path}: `), e.message);
  // Whatever the file says, the message quotes a bounded part of it.
  assert.ok(e.message.length < path.length + 400, `${e.message.length} characters`);
}

async function accepted(name: string, bytes: Uint8Array): Promise<{ tensors: [string, string, number[]][]; metadata?: Record<string, string> }> {
  const file = await openTensorFile(write(`${name}.safetensors`, bytes));
  try {
    return { tensors: file.tensors.map((t) => [t.name, t.dtype.name, [...t.shape]]), metadata: file.metadata ? { ...file.metadata } : undefined };
  } finally {
    await file.close();
  }
}

test("a shape, data_offsets, metadata value or ignored field nested 10,000 deep is INVALID_DATA, not a stack overflow", async () => {
  const deep = "[".repeat(10_000) + "]".repeat(10_000);
  await refused("deep-shape", rawSafetensors(`{"a":{"dtype":"U8","shape":${deep},"data_offsets":[0,0]}}`), "INVALID_DATA",
    /tensor "a": shape must be a list of unsigned integers; it has a list$/);
  await refused("deep-offsets", rawSafetensors(`{"a":{"dtype":"U8","shape":[0],"data_offsets":${deep}}}`), "INVALID_DATA",
    /tensor "a": data_offsets must be a list of two unsigned integers \[begin, end\]$/);
  await refused("deep-metadata", rawSafetensors(`{"__metadata__":{"k":${deep}}}`), "INVALID_DATA", /__metadata__ "k" is a list; metadata values must be strings$/);
  await refused("deep-ignored", rawSafetensors(`{"a":{"dtype":"U8","shape":[0],"data_offsets":[0,0],"x":${deep}}}`), "INVALID_DATA",
    /not valid JSON: arrays and objects nested more than 127 deep \(serde_json's limit\) \(at byte 181 of the header\)$/);
  // serde_json's limit is 127 levels, the header's own object and the tensor's included.
  const nest = (n: number): string => "[".repeat(n) + "]".repeat(n);
  assert.equal((await accepted("depth-127", rawSafetensors(`{"a":{"dtype":"U8","shape":[0],"data_offsets":[0,0],"x":${nest(125)}}}`))).tensors.length, 1);
  await refused("depth-128", rawSafetensors(`{"a":{"dtype":"U8","shape":[0],"data_offsets":[0,0],"x":${nest(126)}}}`), "INVALID_DATA", /nested more than 127 deep/);
});

test("a name thousands of characters long is quoted by its first 64 in errors", async () => {
  const name = "n".repeat(100_000);
  await refused("long-name", rawSafetensors(`{"${name}":{"dtype":"U8","shape":[1],"data_offsets":[0,2]}}`, new Uint8Array(2)), "SHAPE_MISMATCH",
    new RegExp(`tensor "${"n".repeat(64)}"\\.\\.\\. \\(100000 characters\\): data_offsets \\[0, 2\\] hold 2 bytes`));
});

test("numbers written as floats where the Rust reader requires integers are refused", async () => {
  for (const [dims, shown] of [["1e0", "1e0"], ["1.0", "1.0"], ["2.0", "2.0"], ["1E+0", "1E+0"], ["-0", "-0"]]) {
    await refused(`float-dim-${shown}`, rawSafetensors(`{"a":{"dtype":"U8","shape":[${dims}],"data_offsets":[0,1]}}`, new Uint8Array(1)), "INVALID_SHAPE",
      new RegExp(`tensor "a": shape has ${shown.replace("+", "\\+")}; dimensions are unsigned integers written without sign, fraction or exponent`));
  }
  for (const offsets of ["0,4.0", "0.0,4", "0,4e0", "-0,4", "0,2.0"]) {
    await refused(`float-offsets-${offsets}`, rawSafetensors(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[${offsets}]}}`, new Uint8Array(4)), "INVALID_DATA",
      /tensor "a": data_offsets has \S+; offsets are unsigned integers written without sign, fraction or exponent/);
  }
});

test("lone UTF-16 surrogates are refused in names, metadata and ignored fields; pairs are kept", async () => {
  for (const [what, json] of [
    ["a leading surrogate", `{"\\ud800":${F32_1}}`],
    ["a trailing surrogate", `{"\\udc00":${F32_1}}`],
    ["a leading surrogate before another escape", `{"\\ud800\\u0041":${F32_1}}`],
    ["a leading surrogate at the end of a name", `{"a\\uDBFF":${F32_1}}`],
    ["a metadata key", `{"__metadata__":{"\\ud800":"v"},"a":${F32_1}}`],
    ["a metadata value", `{"__metadata__":{"k":"\\udfff"},"a":${F32_1}}`],
    ["an ignored field", `{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4],"x":"\\ud800"}}`],
  ]) {
    await refused(`surrogate-${what}`, rawSafetensors(json, new Uint8Array(4)), "INVALID_DATA",
      /not valid JSON: a lone surrogate \\u[0-9a-f]{4} in a string \(serde_json refuses unpaired surrogates\)/);
  }
  assert.deepEqual((await accepted("surrogate-pair", rawSafetensors(`{"\\ud83d\\ude00":${F32_1}}`, new Uint8Array(4)))).tensors, [["😀", "float32", [1]]]);
});

test("a UTF-8 byte-order mark before the header's { is refused", async () => {
  const json = `{"a":${F32_1}}`;
  await refused("bom", rawSafetensors(Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(json)]), new Uint8Array(4)), "INVALID_DATA",
    /the header must be a JSON object \("\{" after any spaces\); it starts with a UTF-8 byte-order mark/);
  // Inside a name it is a character like any other.
  assert.deepEqual((await accepted("bom-in-name", rawSafetensors(`{"\ufeffa":${F32_1}}`, new Uint8Array(4)))).tensors, [["\ufeffa", "float32", [1]]]);
});

test("duplicate keys: a repeated field or __metadata__ is refused; a repeated tensor name or metadata key keeps the last, as the Rust reader does", async () => {
  for (const field of ['"dtype":"F32"', '"shape":[1]', '"data_offsets":[0,4]']) {
    const name = field.slice(1, field.indexOf('"', 1));
    await refused(`dup-${name}`, rawSafetensors(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4],${field}}}`, new Uint8Array(4)), "INVALID_DATA",
      new RegExp(`tensor "a": field ${name} appears twice \\(the Rust reader refuses a repeated field\\)`));
  }
  await refused("dup-field-escaped", rawSafetensors(`{"a":{"dtype":"F32","dtyp\\u0065":"F32","shape":[1],"data_offsets":[0,4]}}`, new Uint8Array(4)), "INVALID_DATA",
    /field dtype appears twice/);
  await refused("dup-metadata", rawSafetensors(`{"__metadata__":{},"a":${F32_1},"__metadata__":null}`, new Uint8Array(4)), "INVALID_DATA",
    /__metadata__ appears twice \(the Rust reader refuses a repeated __metadata__\)/);
  // serde's HashMap::insert keeps the last entry of a repeated name, but every entry must be a tensor.
  const last = await accepted("dup-name", rawSafetensors(`{"a":${F32_1},"b":${EMPTY_U8},"a":{"dtype":"U8","shape":[2,2],"data_offsets":[0,4]}}`, new Uint8Array(4)));
  assert.deepEqual(last.tensors, [["b", "uint8", [0]], ["a", "uint8", [2, 2]]]); // in the order of their offsets
  await refused("dup-name-first-not-a-tensor", rawSafetensors(`{"a":5,"a":${F32_1}}`, new Uint8Array(4)), "INVALID_DATA",
    /tensor "a": its entry must be an object with dtype, shape and data_offsets; it is a number/);
  await refused("dup-name-bytes-left", rawSafetensors(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]},"a":${F32_1}}`, new Uint8Array(8)), "INVALID_DATA",
    /4 bytes belong to no tensor/);
  const metadata = await accepted("dup-metadata-key", rawSafetensors(`{"__metadata__":{"k":"1","j":"x","k":"2"},"a":${F32_1}}`, new Uint8Array(4)));
  assert.deepEqual(Object.entries(metadata.metadata!), [["k", "2"], ["j", "x"]]);
});

test("what the Rust reader also accepts is read: leading whitespace, ignored fields, a tensor as a list, {NAME: null}, __metadata__ null", async () => {
  const data = new Uint8Array(8);
  const odd = await accepted("serde-forms", rawSafetensors(
    ` \t\r\n{"__metadata__":null,"a":["F32",[1],[0,4]],"b":{"x":[1,{"y":null}],"dtype":{"U8":null},"shape":[4],"data_offsets":[4,8],"z":"\\u00e9"}} \n`, data,
  ));
  assert.deepEqual(odd, { tensors: [["a", "float32", [1]], ["b", "uint8", [4]]], metadata: undefined });
  // A file without an extension is still recognised by its first bytes.
  const bare = join(dir, "leading-space-no-extension");
  writeFileSync(bare, rawSafetensors(`  {"a":${F32_1}}`, new Uint8Array(4)));
  const sniffed = await openTensorFile(bare);
  assert.equal(sniffed.format, "safetensors");
  await sniffed.close();
  // ... and what it refuses around them.
  await refused("list-of-4", rawSafetensors('{"a":["F32",[1],[0,4],1]}', new Uint8Array(4)), "INVALID_DATA",
    /a tensor written as a list has exactly 3 items: \[dtype, shape, data_offsets\]/);
  await refused("enum-not-null", rawSafetensors('{"a":{"dtype":{"F32":[]},"shape":[1],"data_offsets":[0,4]}}', new Uint8Array(4)), "INVALID_DATA",
    /a dtype written as an object is \{"NAME": null\}/);
  await refused("trailing-nul", rawSafetensors(`{"a":${F32_1}}\u0000`, new Uint8Array(4)), "INVALID_DATA",
    /only spaces, tabs and line breaks may follow the header's JSON object/);
  await refused("raw-control", rawSafetensors(`{"a\u0001":${F32_1}}`, new Uint8Array(4)), "INVALID_DATA", /a raw control character \(U\+0001\) in a string/);
  await refused("float-overflow", rawSafetensors(`{"a":{"dtype":"U8","shape":[0],"data_offsets":[0,0],"x":1.7976931348623158e308}}`), "INVALID_DATA",
    /the number 1\.7976931348623158e308 is out of range \(serde_json refuses a float that overflows\)/);
});

test("the writer refuses what its reader would: a name or metadata with an unpaired surrogate", () => {
  const t = { name: "a\ud800", dtype: dtype("float32"), shape: [1], size: 1, byteLength: 4 };
  assert.throws(() => encodeSafetensorsHeader([t], undefined, "out"), (e: unknown) =>
    e instanceof TensorcastError && e.code === "INVALID_DATA" && /out: tensor "a\\ud800": has an unpaired UTF-16 surrogate/.test(e.message));
  assert.throws(() => encodeSafetensorsHeader([{ ...t, name: "a" }], { k: "\udc00" }, "out"), /__metadata__ "k" has an unpaired UTF-16 surrogate/);
  // A pair is a character like any other.
  const bytes = encodeSafetensorsHeader([{ ...t, name: "😀" }], { k: "😀" });
  assert.equal(parseSafetensorsHeader(bytes.subarray(8), bytes.length + 4, "x").tensors[0].name, "😀");
});
