/**
 * .npy: files NumPy wrote (test/fixtures/checkpoints/generate_npy.py) read back with the right
 * types, shapes and values (big-endian converted, Fortran order refused or transposed, raw '|V2'
 * only with a stated type); every type written and read back; ml_dtypes names as descr; sub-byte
 * types one per byte; and, when python3 with NumPy is on the machine, NumPy reads what tensorcast
 * writes.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { cast, DTYPES, Tensor, dtype } from "../../src/index.js";
import { convertFile, openTensorFile } from "../../src/node/index.js";
import { encodeNpyHeader, npyDescr, rawToNpy } from "../../src/node/io/npy.js";
import type { NpyOptions } from "../../src/node/io/npy.js";
import { rawByteLength } from "../../src/node/io/tensors.js";
import { FIXTURES, randomBytes, rejectsCode, scratch } from "./helpers.js";
import { pythonMissing } from "../support/python.js";

const dir = scratch();

async function readNpy(path: string, opts: NpyOptions = {}): Promise<Tensor> {
  const file = await openTensorFile(path, { npy: opts });
  try {
    assert.equal(file.tensors.length, 1);
    const t = file.tensors[0];
    return Tensor.fromBytes(await t.read(0, t.size), t.dtype, t.shape);
  } finally {
    await file.close();
  }
}

const F4 = [1.5, -2, Math.fround(0.1), Infinity, -0, 448];

test("NumPy's own files: little- and big-endian, versions 1.0, 2.0, 3.0", async () => {
  for (const name of ["f4.npy", "f4_big_endian.npy", "f4_v2.npy", "f4_v3.npy"]) {
    const t = await readNpy(join(FIXTURES, name));
    assert.equal(t.dtype.name, "float32", name);
    assert.deepEqual(t.shape, [2, 3], name);
    assert.deepEqual(t.toValues(), F4, name);
  }
  const f2 = await readNpy(join(FIXTURES, "f2_big_endian.npy"));
  assert.equal(f2.dtype.name, "float16");
  assert.deepEqual(f2.toValues(), [1, 65504, -Infinity]);
  const i8 = await readNpy(join(FIXTURES, "i8_scalar.npy"));
  assert.deepEqual([i8.dtype.name, i8.shape, i8.toValues()], ["int64", [], [-(2n ** 40n)]]);
  const b1 = await readNpy(join(FIXTURES, "b1.npy"));
  assert.deepEqual([b1.dtype.name, b1.toValues()], ["bool", [true, false, true]]);
  const u1 = await readNpy(join(FIXTURES, "u1_empty.npy"));
  assert.deepEqual([u1.dtype.name, u1.shape, u1.size], ["uint8", [0, 4], 0]);
  const c8 = await readNpy(join(FIXTURES, "c8.npy"));
  assert.deepEqual([c8.dtype.name, c8.toValues()], ["complex64", [[1, 2], [-0, -3]]]);
});

test("Fortran order is refused, or read as the transpose when asked", async () => {
  const path = join(FIXTURES, "f4_fortran.npy");
  await rejectsCode(openTensorFile(path), "UNSUPPORTED_TYPE", /f4_fortran\.npy: is a Fortran-order .* shape \(2, 3\).*--fortran transpose/);
  const t = await readNpy(path, { fortran: "transpose" });
  assert.deepEqual(t.shape, [3, 2]);
  // The transpose of [[1.5, -2, 0.1], [inf, -0, 448]], in C order.
  assert.deepEqual(t.toValues(), [1.5, Infinity, -2, -0, Math.fround(0.1), 448]);
});

test("raw '|V2' (np.save of an ml_dtypes array) needs --npy-dtype", async () => {
  const path = join(FIXTURES, "v2_bfloat16.npy");
  await rejectsCode(openTensorFile(path), "UNKNOWN_DTYPE", /descr '\|V2' is raw 2-byte data.*--npy-dtype bfloat16/);
  const t = await readNpy(path, { assume: "bfloat16" });
  assert.deepEqual([t.dtype.name, t.toValues()], ["bfloat16", [1, -2, 0.5]]);
  await rejectsCode(openTensorFile(path, { npy: { assume: "float8e4m3fn" } }), "UNSUPPORTED_TYPE", /takes 1 bytes per element, but descr '\|V2' has 2/);
});

test("every type except string writes and reads back (ml_dtypes names, sub-byte one per byte)", async () => {
  for (const t of DTYPES) {
    if (t.kind === "string") continue;
    const size = 12;
    // 12 elements of 2, 4 or 6 bits fill whole bytes: no padding bits to normalise.
    const tensor = Tensor.fromBytes(randomBytes(rawByteLength(t, size), t.onnx), t, [3, 4]);
    const path = join(dir, `${t.name}.npy`);
    writeFileSync(path, Buffer.concat([encodeNpyHeader(t, [3, 4]), rawToNpy(t, tensor.bytes(), size)]));
    const back = await readNpy(path);
    assert.equal(back.dtype, t, t.name);
    assert.deepEqual(back.shape, [3, 4]);
    assert.deepEqual(back.bytes(), tensor.bytes(), t.name);
    const header = readFileSync(path).subarray(10, 10 + 80).toString("latin1");
    assert.match(header, new RegExp(`^\\{'descr': '${npyDescr(t)!.replace("|", "\\|")}', 'fortran_order': False, 'shape': \\(3, 4\\), \\}`));
    if (t.packed) {
      // One element per byte, the code in the low bits.
      const stored = readFileSync(path).subarray(readFileSync(path).length - size);
      assert.ok(stored.every((b) => b < 2 ** t.bits), t.name);
    }
  }
});

test("headers are padded to 64 bytes and spell shapes as NumPy does", () => {
  const text = (shape: number[]): string => Buffer.from(encodeNpyHeader(dtype("float32"), shape)).toString("latin1");
  assert.equal(text([]).length % 64, 0);
  assert.match(text([]), /'shape': \(\), \}\s*\n$/);
  assert.match(text([5]), /'shape': \(5,\), \}/);
  assert.match(text([2, 3]), /'shape': \(2, 3\), \}/);
  assert.equal(Buffer.from(encodeNpyHeader(dtype("bfloat16"), [1])).subarray(10).toString("latin1").slice(0, 22), "{'descr': 'bfloat16', ");
});

test("bad .npy headers are refused with the file and what is wrong", async () => {
  const cases: [string, Buffer, string, RegExp][] = [
    ["magic", Buffer.from("NUMPY\x01\x00"), "INVALID_DATA", /not a \.npy file/],
    ["version", Buffer.from("\x93NUMPY\x04\x00\x10\x00{}", "latin1"), "INVALID_DATA", /format version 4\.0/],
    ["header length", Buffer.from("\x93NUMPY\x01\x00\xff\xff{", "latin1"), "INVALID_DATA", /truncated: the \.npy header is 65535 bytes/],
    ["huge header", Buffer.concat([Buffer.from("\x93NUMPY\x02\x00", "latin1"), Buffer.from([0, 0, 0, 0x40]), Buffer.alloc(16)]), "INVALID_DATA", /over the 1048576-byte limit/],
    ["missing key", npy("{'descr': '<f4', 'shape': (1,), }"), "INVALID_DATA", /keys descr, shape; it must have exactly/],
    ["structured", npy("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }"), "UNSUPPORTED_TYPE", /structured/],
    ["unknown descr", npy("{'descr': '<f16', 'fortran_order': False, 'shape': (1,), }"), "UNKNOWN_DTYPE", /descr '<f16' is not a type/],
    ["object", npy("{'descr': '|O', 'fortran_order': False, 'shape': (1,), }"), "UNKNOWN_DTYPE", /descr '\|O'/],
    ["negative dim", npy("{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }"), "INVALID_SHAPE", /shape \(-1,\) has -1/],
    ["overflow", npy("{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296), }"), "INVALID_SHAPE", /more than 2\^53 - 1/],
    ["truncated data", npy("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", 8), "SHAPE_MISMATCH", /truncated: shape \(3,\) of <f4 needs 12 bytes of data, but 8/],
    ["extra data", npy("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", 8), "SHAPE_MISMATCH", /has 4 bytes after/],
    ["not a literal", npy("{'descr': '<f4', 'fortran_order': Fals, 'shape': (1,), }", 4), "INVALID_DATA", /not a Python literal/],
    ["unterminated", npy("{'descr': '<f4", 0), "INVALID_DATA", /unterminated string/],
  ];
  for (const [what, bytes, code, pattern] of cases) {
    const path = join(dir, `bad-${what.replace(/\W+/g, "-")}.npy`);
    writeFileSync(path, bytes);
    const e = await rejectsCode(openTensorFile(path), code, pattern);
    assert.ok(e.message.startsWith(`${path}: `), `${what}: ${e.message}`);
  }
});

/** A version 1.0 .npy file with this header text and `data` zero bytes. */
function npy(dict: string, data = 4): Buffer {
  const total = Math.ceil((10 + dict.length + 1) / 64) * 64;
  const header = dict.padEnd(total - 10 - 1) + "\n";
  const prefix = Buffer.from("\x93NUMPY\x01\x00", "latin1");
  const length = Buffer.alloc(2);
  length.writeUInt16LE(header.length);
  return Buffer.concat([prefix, length, Buffer.from(header, "latin1"), Buffer.alloc(data)]);
}

test("a version 3.0 header that starts with U+FEFF is refused, as NumPy refuses it (its 'utf8' decode keeps the mark)", async () => {
  const dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }";
  const file = (text: string): Buffer => {
    const bytes = Buffer.from(text, "utf8");
    const total = Math.ceil((12 + bytes.length + 1) / 64) * 64;
    const header = Buffer.concat([bytes, Buffer.alloc(total - 12 - 1 - bytes.length, 0x20), Buffer.from("\n")]);
    const length = Buffer.alloc(4);
    length.writeUInt32LE(header.length);
    return Buffer.concat([Buffer.from("\x93NUMPY\x03\x00", "latin1"), length, header, Buffer.alloc(4)]);
  };
  const plain = join(dir, "v3-plain.npy");
  const marked = join(dir, "v3-bom.npy");
  writeFileSync(plain, file(dict));
  writeFileSync(marked, file("\ufeff" + dict));
  assert.deepEqual((await readNpy(plain)).shape, [1]);
  await rejectsCode(readNpy(marked), "INVALID_DATA");
});

test("NumPy reads what tensorcast writes (skipped without python3 + numpy)", { skip: pythonMissing("numpy", ["python3"]) }, async () => {
  const src = join(FIXTURES, "f4.npy");
  const out16 = join(dir, "np-f16.npy");
  await convertFile(src, out16, { to: "float16" });
  const out8 = join(dir, "np-i8.npy");
  await convertFile(join(FIXTURES, "f4_big_endian.npy"), out8, { to: "int8", includeIntegers: true });
  const script =
    "import numpy as np, sys, json\n" +
    "a = np.load(sys.argv[1]); b = np.load(sys.argv[2])\n" +
    "print(json.dumps([a.dtype.str, list(a.shape), [repr(float(x)) for x in a.ravel()], b.dtype.str, b.ravel().tolist()]))\n";
  const got = JSON.parse(execFileSync("python3", ["-c", script, out16, out8], { encoding: "utf8" }));
  const int8 = cast(Tensor.fromValues(F4, "float32"), "int8").toValues();
  assert.deepEqual(got, ["<f2", [2, 3], ["1.5", "-2.0", "0.0999755859375", "inf", "-0.0", "448.0"], "|i1", int8]);
});
