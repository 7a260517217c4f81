/**
 * The protobuf wire reader, TensorProto decoding (typed fields and raw_data for every data type)
 * and the ModelProto subset, on messages built byte by byte (test/support/protobuf.ts, a writer
 * deliberately separate from src/: a shared misunderstanding of the format could not hide in both).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { DTYPES, Tensor } from "../../src/index.js";
import { storageLength } from "../../src/tensor.js";
import { WireReader, WIRE_FIXED32, WIRE_LEN, WIRE_VARINT } from "../../src/io/onnx/wire.js";
import { decodeTensorProto, retag } from "../../src/io/onnx/tensorproto.js";
import { attributeNumber, decodeModel, findAttribute, opsetVersion } from "../../src/io/onnx/model.js";
import { throwsCode } from "../support/assertions.js";
import { tensorProto, W } from "../support/protobuf.js";

const hex = (b: Uint8Array): string => Buffer.from(b).toString("hex");

// ---- wire format -------------------------------------------------------------------------------

test("varints: one byte, multi-byte, 64-bit words, and 10-byte negatives", () => {
  const r = new WireReader(new W().varint(1).varint(300).varint(2n ** 32n + 5n).varint(2n ** 64n - 1n).varint(-1).varint(-2).bytes());
  assert.equal(r.uint32(), 1);
  assert.equal(r.uint32(), 300);
  r.varint64();
  assert.deepEqual([r.lo, r.hi], [5, 1]);
  assert.equal(r.uint64(), 2n ** 64n - 1n);
  assert.equal(r.int32(), -1);
  assert.equal(r.int64(), -2n);
  assert.ok(r.done);
});

test("varints: a non-minimal encoding is accepted; int64Number rejects beyond 2^53", () => {
  assert.equal(new WireReader(new Uint8Array([0x81, 0x80, 0x80, 0x00])).uint32(), 1);
  assert.equal(new WireReader(new W().varint(-(2 ** 53) + 1).bytes()).int64Number("x"), -(2 ** 53) + 1);
  throwsCode(() => new WireReader(new W().varint(2n ** 53n).bytes()).int64Number("dimension"), "INVALID_DATA", /dimension 9007199254740992/);
});

test("varints: more than 10 bytes, bits above 63, and truncation are INVALID_DATA", () => {
  const eleven = new Uint8Array([...Array(10).fill(0xff), 0x01]);
  throwsCode(() => new WireReader(eleven).varint64(), "INVALID_DATA", /longer than 10 bytes/);
  const overflow = new Uint8Array([...Array(9).fill(0xff), 0x02]);
  throwsCode(() => new WireReader(overflow).varint64(), "INVALID_DATA", /overflows 64 bits/);
  throwsCode(() => new WireReader(new Uint8Array([0x80])).varint64(), "INVALID_DATA", /truncated/);
  throwsCode(() => new WireReader(new Uint8Array([0xff, 0xff, 0xff, 0xff, 0xff, 0xff])).varint64(), "INVALID_DATA", /truncated/);
});

test("fixed32, fixed64, float and double are little-endian", () => {
  const w = new W().push(0x78, 0x56, 0x34, 0x12).push(1, 0, 0, 0, 2, 0, 0, 0);
  w.push(...new Uint8Array(new Float32Array([1.5]).buffer), ...new Uint8Array(new Float64Array([-0.1]).buffer));
  const r = new WireReader(w.bytes());
  assert.equal(r.fixed32(), 0x12345678);
  r.fixed64();
  assert.deepEqual([r.lo, r.hi], [1, 2]);
  assert.equal(r.float(), 1.5);
  assert.equal(r.double(), -0.1);
  throwsCode(() => new WireReader(new Uint8Array(3)).fixed32(), "INVALID_DATA", /truncated/);
  throwsCode(() => new WireReader(new Uint8Array(7)).double(), "INVALID_DATA", /truncated/);
});

test("tags: field numbers and wire types; invalid tags are INVALID_DATA", () => {
  const r = new WireReader(new W().int(3, 7).len(20, "ab").float(1000, 2).bytes());
  assert.equal(r.next(), 3);
  assert.equal(r.wireType, WIRE_VARINT);
  assert.equal(r.uint32(), 7);
  assert.equal(r.next(), 20);
  assert.equal(r.wireType, WIRE_LEN);
  assert.equal(r.string("s"), "ab");
  assert.equal(r.next(), 1000);
  assert.equal(r.wireType, WIRE_FIXED32);
  assert.equal(r.float(), 2);
  assert.equal(r.next(), 0);
  throwsCode(() => new WireReader(new Uint8Array([0x00, 0x00])).next(), "INVALID_DATA", /field number 0/);
  throwsCode(() => new WireReader(new Uint8Array([0x0e])).next(), "INVALID_DATA", /wire type 6/);
  throwsCode(() => new WireReader(new Uint8Array([0x0c])).next(), "INVALID_DATA", /end-group/);
});

test("skip() passes over every wire type, including nested groups", () => {
  const group = new W().tag(9, 3).int(1, 5).tag(2, 3).float(3, 1).tag(2, 4).len(4, "x").tag(9, 4);
  const w = new W().int(1, -1).double(2, 3).len(3, [1, 2, 3]).float(4, 1).push(...group.out).int(15, 42);
  const r = new WireReader(w.bytes());
  for (let f = r.next(); f !== 15; f = r.next()) r.skip();
  assert.equal(r.uint32(), 42);
  assert.ok(r.done);
  throwsCode(() => { const g = new WireReader(new W().tag(9, 3).int(1, 5).bytes()); g.next(); g.skip(); }, "INVALID_DATA", /truncated/);
  throwsCode(() => { const g = new WireReader(new W().tag(9, 3).tag(8, 4).bytes()); g.next(); g.skip(); }, "INVALID_DATA", /closed by end-group 8/);
});

test("length-delimited fields longer than what remains are INVALID_DATA", () => {
  const r = new WireReader(new W().tag(1, 2).varint(10).push(1, 2, 3).bytes());
  r.next();
  throwsCode(() => r.bytes(), "INVALID_DATA", /declares 10 bytes but only 3 remain/);
  const nested = new WireReader(new W().tag(1, 2).varint(2).push(0x08, 0x80).bytes());
  nested.next();
  const inner = nested.message("Inner");
  inner.next();
  // The varint's continuation byte would read past the nested message: truncated, not a read of the parent.
  throwsCode(() => inner.varint64(), "INVALID_DATA", /Inner: truncated/);
});

test("repeated scalars: packed and unpacked forms, mixed in one message", () => {
  const w = new W().int(1, 2).packed(1, [3, 400, -1]).int(1, 5);
  const r = new WireReader(w.bytes());
  const got: number[] = [];
  for (let f = r.next(); f !== 0; f = r.next()) r.repeated(WIRE_VARINT, "x", () => got.push(r.int32()));
  assert.deepEqual(got, [2, 3, 400, -1, 5]);
  // A packed run whose last varint is cut off by the run's own length.
  const bad = new WireReader(new W().tag(1, 2).varint(2).push(0x01, 0x80, 0x01).bytes());
  bad.next();
  throwsCode(() => bad.repeated(WIRE_VARINT, "x", () => bad.uint32()), "INVALID_DATA", /truncated/);
  const wrongType = new WireReader(new W().float(1, 1).bytes());
  wrongType.next();
  throwsCode(() => wrongType.repeated(WIRE_VARINT, "dims", () => wrongType.uint32()), "INVALID_DATA", /wire type fixed32, expected varint/);
});

test("a Node Buffer at an odd offset reads like a plain Uint8Array", () => {
  const pb = tensorProto(1, [2]).len(9, new Uint8Array(new Float32Array([1, -2]).buffer)).bytes();
  const backing = Buffer.alloc(pb.length + 3);
  backing.set(pb, 3);
  const { tensor } = decodeTensorProto(backing.subarray(3));
  assert.deepEqual(tensor.toValues(), [1, -2]);
  assert.deepEqual(decodeTensorProto(backing.subarray(3), { copy: false }).tensor.toValues(), [1, -2]);
});

// ---- TensorProto: typed fields -----------------------------------------------------------------

test("float_data: packed and unpacked; scalar and empty shapes", () => {
  const packed = tensorProto(1, [2, 2], "w").len(4, new Uint8Array(new Float32Array([1, 2, 3, -0]).buffer)).bytes();
  const a = decodeTensorProto(packed);
  assert.equal(a.name, "w");
  assert.equal(a.tensor.dtype.name, "float32");
  assert.deepEqual(a.tensor.shape, [2, 2]);
  assert.deepEqual(a.tensor.toValues(), [1, 2, 3, -0]);
  const unpacked = tensorProto(1, [3]).float(4, 0.5).float(4, NaN).len(4, new Uint8Array(new Float32Array([7]).buffer));
  assert.deepEqual(decodeTensorProto(unpacked.bytes()).tensor.toValues(), [0.5, NaN, 7]);
  const scalar = decodeTensorProto(tensorProto(1, []).float(4, 2.5).bytes()).tensor;
  assert.deepEqual([scalar.shape, scalar.size, scalar.toValues()], [[], 1, [2.5]]);
  const empty = decodeTensorProto(tensorProto(1, [0, 3]).bytes()).tensor;
  assert.deepEqual([empty.shape, empty.size], [[0, 3], 0]);
});

test("double_data, and complex as (re, im) pairs in float_data / double_data", () => {
  assert.deepEqual(decodeTensorProto(tensorProto(11, [2]).double(10, 0.1).double(10, -1e300).bytes()).tensor.toValues(), [0.1, -1e300]);
  const c64 = tensorProto(14, [2]).len(4, new Uint8Array(new Float32Array([1, 2, 3, 4]).buffer)).bytes();
  assert.deepEqual(decodeTensorProto(c64).tensor.toValues(), [[1, 2], [3, 4]]);
  const c128 = tensorProto(15, [1]).double(10, 0.1).double(10, -0.2).bytes();
  assert.deepEqual(decodeTensorProto(c128).tensor.toValues(), [[0.1, -0.2]]);
  throwsCode(() => decodeTensorProto(tensorProto(14, [2]).float(4, 1).float(4, 2).bytes()), "SHAPE_MISMATCH", /needs 4 numbers/);
});

test("int32_data: 8/16/32-bit integers, sign-extended or zero-extended, wrap like numpy's astype", () => {
  const dec = (type: number, values: number[]): Tensor => decodeTensorProto(tensorProto(type, [values.length]).packed(5, values).bytes()).tensor;
  assert.deepEqual(dec(3, [-56, 127, -128]).toValues(), [-56, 127, -128]); // INT8, sign-extended
  assert.deepEqual(dec(2, [200, 0, 255]).toValues(), [200, 0, 255]); // UINT8
  assert.deepEqual(dec(4, [-1, 65535, 32768]).toValues(), [65535, 65535, 32768]); // UINT16 either extension
  assert.deepEqual(dec(5, [-300, 32767, 65535]).toValues(), [-300, 32767, -1]); // INT16
  assert.deepEqual(dec(6, [-2147483648, 2147483647]).toValues(), [-2147483648, 2147483647]); // INT32
  // Unpacked int32_data reads the same.
  const unpacked = tensorProto(3, [2]).int(5, -5).int(5, 6).bytes();
  assert.deepEqual(decodeTensorProto(unpacked).tensor.toValues(), [-5, 6]);
});

test("int32_data: bool is 0/1 (any non-zero entry is true)", () => {
  const t = decodeTensorProto(tensorProto(9, [4]).packed(5, [0, 1, 0, 2]).bytes()).tensor;
  assert.deepEqual(t.toValues(), [false, true, false, true]);
  assert.equal(hex(t.bytes()), "00010001");
});

test("int32_data: float16 and bfloat16 bit patterns, zero- or sign-extended", () => {
  const f16 = decodeTensorProto(tensorProto(10, [3]).packed(5, [0x3c00, 0xc000, -16384]).bytes()).tensor;
  assert.deepEqual(Array.from(f16.data as Uint16Array), [0x3c00, 0xc000, 0xc000]);
  assert.deepEqual(f16.toValues(), [1, -2, -2]);
  const bf16 = decodeTensorProto(tensorProto(16, [3]).packed(5, [0x3f80, 0x7fc0, -16512]).bytes()).tensor;
  assert.deepEqual(Array.from(bf16.data as Uint16Array), [0x3f80, 0x7fc0, 0xbf80]);
  assert.deepEqual(bf16.toValues(), [1, NaN, -1]);
});

test("int32_data: float8 and e8m0 codes, one per entry", () => {
  const codes = [0x00, 0x38, 0x7f, 0x80, 0xff];
  for (const type of [17, 18, 19, 20, 24]) {
    const t = decodeTensorProto(tensorProto(type, [codes.length]).packed(5, codes).bytes()).tensor;
    assert.equal(hex(t.bytes()), "00387f80ff", `data type ${type}`);
  }
  const e4m3 = decodeTensorProto(tensorProto(17, [3]).packed(5, [0x38, 0x7e, 0x7f]).bytes()).tensor;
  assert.deepEqual(e4m3.toValues(), [1, 448, NaN]);
});

test("int32_data: sub-byte types hold one packed byte per entry", () => {
  // INT4 [-1, 2, 7]: bytes 0x2f (element 0 low nibble), 0x07 (odd count: high nibble zero).
  const int4 = decodeTensorProto(tensorProto(22, [3]).packed(5, [0x2f, 0x07]).bytes()).tensor;
  assert.deepEqual(int4.toValues(), [-1, 2, 7]);
  const uint4 = decodeTensorProto(tensorProto(21, [3]).packed(5, [0x2f, 0x07]).bytes()).tensor;
  assert.deepEqual(uint4.toValues(), [15, 2, 7]);
  // FLOAT4E2M1 codes 1 (0.5), 0xe (-4), 7 (6).
  const f4 = decodeTensorProto(tensorProto(23, [3]).packed(5, [0xe1, 0x07]).bytes()).tensor;
  assert.deepEqual(f4.toValues(), [0.5, -4, 6]);
  // INT2 [1, -2, -1, 0, 1]: x0 | x1<<2 | x2<<4 | x3<<6 = 0b00_11_10_01, then 0b01.
  const int2 = decodeTensorProto(tensorProto(26, [5]).packed(5, [0x39, 0x01]).bytes()).tensor;
  assert.deepEqual(int2.toValues(), [1, -2, -1, 0, 1]);
  const uint2 = decodeTensorProto(tensorProto(25, [5]).packed(5, [0x39, 0x01]).bytes()).tensor;
  assert.deepEqual(uint2.toValues(), [1, 2, 3, 0, 1]);
  // An entry written as a sign-extended int32 still decodes to its low byte.
  assert.deepEqual(decodeTensorProto(tensorProto(22, [2]).packed(5, [-1]).bytes()).tensor.toValues(), [-1, -1]);
  throwsCode(() => decodeTensorProto(tensorProto(22, [3]).packed(5, [0x2f]).bytes()), "SHAPE_MISMATCH", /needs 2 packed bytes/);
});

test("int64_data and uint64_data: full 64-bit range; uint32 lives in uint64_data", () => {
  const i64 = decodeTensorProto(tensorProto(7, [3]).packed(7, [-(2n ** 63n), 2n ** 63n - 1n, -1n]).bytes()).tensor;
  assert.deepEqual(i64.toValues(), [-(2n ** 63n), 2n ** 63n - 1n, -1n]);
  const u64 = decodeTensorProto(tensorProto(13, [2]).int(11, 2n ** 64n - 1n).int(11, 2n ** 32n).bytes()).tensor;
  assert.deepEqual(u64.toValues(), [2n ** 64n - 1n, 2n ** 32n]);
  const u32 = decodeTensorProto(tensorProto(12, [2]).packed(11, [4294967295, 7]).bytes()).tensor;
  assert.deepEqual(u32.toValues(), [4294967295, 7]);
  throwsCode(() => decodeTensorProto(tensorProto(12, [1]).int(5, 1).bytes()), "INVALID_DATA", /UINT32 elements are stored in uint64_data/);
});

test("string_data: UTF-8, strictly", () => {
  const t = decodeTensorProto(tensorProto(8, [3]).len(6, "héllo").len(6, "").len(6, "日本").bytes()).tensor;
  assert.deepEqual(t.toValues(), ["héllo", "", "日本"]);
  // A leading U+FEFF is a character of the element, not a byte order mark to drop (TextDecoder's default).
  const bom = decodeTensorProto(tensorProto(8, [2], "\ufeffname").len(6, "\ufeffa").len(6, "\ufeff").bytes());
  assert.deepEqual(bom.tensor.toValues(), ["\ufeffa", "\ufeff"]);
  assert.equal(bom.name, "\ufeffname");
  throwsCode(() => decodeTensorProto(tensorProto(8, [1]).len(6, [0xc3, 0x28]).bytes()), "INVALID_DATA", /string_data\[0\] is not valid UTF-8/);
  throwsCode(() => decodeTensorProto(tensorProto(8, [1]).len(9, [0x61]).bytes()), "INVALID_DATA", /never raw_data/);
  throwsCode(() => decodeTensorProto(tensorProto(1, [1], "").len(8, [0xff]).bytes()), "INVALID_DATA", /TensorProto: field 8 \(name\) is not valid UTF-8 \(at byte 6\)/);
});

// ---- TensorProto: raw_data and errors ----------------------------------------------------------

test("raw_data for every non-string data type is its little-endian storage bytes", () => {
  for (const t of DTYPES) {
    if (t.kind === "string") continue;
    const shape = [2, 3];
    const entries = storageLength(t, 6);
    const bytesPer = t.packed ? 1 : t.kind === "complex" ? t.bits / 16 : t.bits / 8;
    const raw = new Uint8Array(entries * bytesPer).map((_, i) => (i * 37 + 11) & 0xff);
    if (t.kind === "bool") raw.forEach((_, i) => (raw[i] = i & 1));
    const { tensor } = decodeTensorProto(tensorProto(t.onnx, shape).len(9, raw).bytes());
    assert.equal(tensor.dtype, t);
    assert.deepEqual(tensor.shape, shape);
    assert.equal(hex(tensor.bytes()), hex(raw), t.name);
    assert.deepEqual(tensor.toValues(), Tensor.fromBytes(raw, t, shape).toValues(), t.name);
  }
});

test("raw_data: sub-byte packing matches onnx.md section 1", () => {
  const int4 = decodeTensorProto(tensorProto(22, [3]).len(9, [0x87, 0x0f]).bytes()).tensor;
  assert.deepEqual(int4.toValues(), [7, -8, -1]);
  const uint2 = decodeTensorProto(tensorProto(25, [6]).len(9, [0b11_10_01_00, 0b0000_10_01]).bytes()).tensor;
  assert.deepEqual(uint2.toValues(), [0, 1, 2, 3, 1, 2]);
});

test("raw_data is copied by default and shared with copy: false", () => {
  const pb = tensorProto(2, [2]).len(9, [5, 6]).bytes();
  const copied = decodeTensorProto(pb).tensor;
  const shared = decodeTensorProto(pb, { copy: false }).tensor;
  pb[pb.length - 1] = 99;
  assert.deepEqual(copied.toValues(), [5, 6]);
  assert.deepEqual(shared.toValues(), [5, 99]);
});

test("fields may come in any order; the last data_type and raw_data win; unknown fields are skipped", () => {
  const w = new W().len(12, "doc").len(9, [1, 2]).int(2, 3).int(1, 2).len(16, new W().len(1, "k").len(2, "v")).int(2, 2);
  const t = decodeTensorProto(w.bytes()).tensor;
  assert.equal(t.dtype.name, "uint8");
  assert.deepEqual(t.toValues(), [1, 2]);
});

test("raw_data errors: wrong length, combined with a typed field", () => {
  throwsCode(() => decodeTensorProto(tensorProto(1, [2], "w").len(9, [0, 0, 0, 0]).bytes()), "SHAPE_MISMATCH", /tensor "w": raw_data has 4 bytes; shape \[2\] of FLOAT needs 8/);
  throwsCode(() => decodeTensorProto(tensorProto(1, [1]).len(9, [0, 0, 0, 0]).float(4, 1).bytes()), "INVALID_DATA", /both raw_data and float_data/);
});

test("typed-field errors: a field the type does not use, or the wrong count", () => {
  throwsCode(() => decodeTensorProto(tensorProto(1, [1]).int(5, 1).bytes()), "INVALID_DATA", /FLOAT elements are stored in float_data or raw_data, but the tensor has int32_data/);
  throwsCode(() => decodeTensorProto(tensorProto(10, [1]).float(4, 1).bytes()), "INVALID_DATA", /FLOAT16 .* int32_data/);
  throwsCode(() => decodeTensorProto(tensorProto(1, [3]).float(4, 1).bytes()), "SHAPE_MISMATCH", /float_data holds 1 entries; shape \[3\] of FLOAT needs 3 elements/);
  throwsCode(() => decodeTensorProto(tensorProto(7, [2]).bytes()), "SHAPE_MISMATCH", /int64_data holds 0 entries/);
  throwsCode(() => decodeTensorProto(tensorProto(1, []).len(4, [0, 0, 0]).bytes()), "INVALID_DATA", /not a multiple of 4/);
});

test("data_type, dims and location errors", () => {
  throwsCode(() => decodeTensorProto(new W().int(1, 1).bytes()), "INVALID_DATA", /data_type is 0/);
  throwsCode(() => decodeTensorProto(tensorProto(99, []).bytes()), "UNKNOWN_DTYPE");
  throwsCode(() => decodeTensorProto(tensorProto(1, [-1]).bytes()), "INVALID_SHAPE");
  throwsCode(() => decodeTensorProto(tensorProto(1, [2]).int(14, 1).bytes()), "NOT_IMPLEMENTED", /external data is not supported yet/);
  const entry = new W().len(1, "location").len(2, "w.bin");
  throwsCode(() => decodeTensorProto(tensorProto(1, [2]).len(13, entry).int(14, 1).bytes()), "NOT_IMPLEMENTED", /external data is not supported yet/);
  // external_data without data_location EXTERNAL is not external (as onnx and onnxruntime read
  // it): the data fields count, and there must be data.
  throwsCode(() => decodeTensorProto(tensorProto(1, [2]).len(13, entry).bytes()), "SHAPE_MISMATCH", /float_data holds 0 entries/);
  assert.deepEqual(decodeTensorProto(tensorProto(1, [1]).len(13, entry).float(4, 1.5).bytes()).tensor.toValues(), [1.5]);
  // data_location EXTERNAL with data here too is refused, as onnx.checker refuses it.
  throwsCode(() => decodeTensorProto(tensorProto(1, [1]).len(13, entry).int(14, 1).float(4, 1.5).bytes()), "INVALID_DATA", /stored externally .* and also has float_data/);
  throwsCode(() => decodeTensorProto(tensorProto(1, [2]).len(3, new W().int(1, 0).int(2, 2)).bytes()), "NOT_IMPLEMENTED", /segment/);
  // data_location = DEFAULT (0) is fine.
  assert.equal(decodeTensorProto(tensorProto(1, [1]).int(14, 0).float(4, 1).bytes()).tensor.size, 1);
});

test("retag: BFLOAT16 data tagged UINT16 (libonnx-testdata 1.12), as an option or a helper", () => {
  const pb = tensorProto(4, [2]).len(9, [0x80, 0x3f, 0xc0, 0xbf]).bytes();
  const option = decodeTensorProto(pb, { retag: "bfloat16" }).tensor;
  assert.equal(option.dtype.name, "bfloat16");
  assert.deepEqual(option.toValues(), [1, -1.5]);
  const helper = retag(decodeTensorProto(pb).tensor, 16);
  assert.deepEqual([helper.dtype.name, helper.shape, helper.toValues()], ["bfloat16", [2], [1, -1.5]]);
  // Typed int32_data gives the same bits.
  assert.deepEqual(decodeTensorProto(tensorProto(4, [2]).packed(5, [0x3f80, 0xbfc0]).bytes(), { retag: "bfloat16" }).tensor.toValues(), [1, -1.5]);
  throwsCode(() => retag(decodeTensorProto(pb).tensor, "float32"), "UNSUPPORTED_TYPE", /uint16 \(16 bits\) as float32 \(32 bits\)/);
  throwsCode(() => retag(Tensor.fromValues(["a"], "string"), "uint8"), "UNSUPPORTED_TYPE");
});

// ---- ModelProto --------------------------------------------------------------------------------

function valueInfo(name: string, elemType: number, dims: (number | string | null)[]): W {
  const shape = new W();
  for (const d of dims) {
    const dim = new W();
    if (typeof d === "number") dim.int(1, d);
    else if (typeof d === "string") dim.len(2, d);
    shape.len(1, dim);
  }
  const tensorType = new W().int(1, elemType).len(2, shape);
  return new W().len(1, name).len(2, new W().len(1, tensorType));
}

function attribute(name: string, type: number, build: (w: W) => void): W {
  const w = new W().len(1, name);
  build(w);
  if (type) w.int(20, type);
  return w;
}

function sampleModel(): Uint8Array {
  const node = new W()
    .len(1, "x").len(1, "").len(2, "y").len(3, "cast0").len(4, "Cast").len(7, "")
    .len(5, attribute("to", 2, (w) => w.int(3, 17)))
    .len(5, attribute("saturate", 2, (w) => w.int(3, 0)))
    .len(5, attribute("alpha", 1, (w) => w.float(2, 0.25)))
    .len(5, attribute("round_mode", 3, (w) => w.len(4, "nearest")))
    .len(5, attribute("value", 4, (w) => w.len(5, tensorProto(6, [2]).packed(5, [-1, 2]))))
    .len(5, attribute("floats", 6, (w) => w.float(7, 1).float(7, -2)))
    .len(5, attribute("ints", 7, (w) => w.packed(8, [1, -1]).int(8, 2n ** 63n - 1n)))
    .len(5, attribute("strings", 8, (w) => w.len(9, "a").len(9, "ü")))
    .len(5, attribute("body", 5, (w) => w.len(6, new W().len(2, "sub"))))
    .len(5, attribute("untyped", 0, (w) => w.int(3, -3)));
  const graph = new W()
    .len(1, node)
    .len(2, "g")
    .len(5, tensorProto(1, [1], "bias").float(4, 0.5))
    .len(10, "a graph doc string")
    .len(11, valueInfo("x", 1, [3, "N", null]))
    .len(12, valueInfo("y", 17, [3]))
    .len(13, valueInfo("hidden", 1, []));
  return new W()
    .int(1, 10)
    .len(2, "hand-written")
    .len(8, new W().len(1, "").int(2, 25))
    .len(8, new W().len(1, "com.example").int(2, 1))
    .len(7, graph)
    .bytes();
}

test("ModelProto: ir_version, opset imports, graph name, node fields", () => {
  const m = decodeModel(sampleModel());
  assert.equal(m.irVersion, 10);
  assert.deepEqual(m.opsetImports, [{ domain: "", version: 25 }, { domain: "com.example", version: 1 }]);
  assert.equal(opsetVersion(m, ""), 25);
  assert.equal(opsetVersion(m, "ai.onnx"), 25);
  assert.equal(opsetVersion(m, "com.example"), 1);
  assert.equal(opsetVersion(m, "com.other"), undefined);
  assert.equal(m.graph.name, "g");
  assert.equal(m.graph.nodes.length, 1);
  const n = m.graph.nodes[0];
  assert.deepEqual([n.name, n.opType, n.domain, n.inputs, n.outputs], ["cast0", "Cast", "", ["x", ""], ["y"]]);
});

test("ModelProto: every attribute type this reader decodes, and the rest as UNSUPPORTED", () => {
  const n = decodeModel(sampleModel()).graph.nodes[0];
  const byName = Object.fromEntries(n.attributes.map((a) => [a.name, a]));
  assert.deepEqual(byName.to, { name: "to", type: "INT", value: 17n });
  assert.deepEqual(byName.saturate, { name: "saturate", type: "INT", value: 0n });
  assert.deepEqual(byName.alpha, { name: "alpha", type: "FLOAT", value: 0.25 });
  assert.deepEqual(byName.round_mode, { name: "round_mode", type: "STRING", value: "nearest" });
  assert.deepEqual(byName.floats, { name: "floats", type: "FLOATS", value: [1, -2] });
  assert.deepEqual(byName.ints, { name: "ints", type: "INTS", value: [1n, -1n, 2n ** 63n - 1n] });
  assert.deepEqual(byName.strings, { name: "strings", type: "STRINGS", value: ["a", "ü"] });
  assert.deepEqual(byName.body, { name: "body", type: "UNSUPPORTED", onnxType: 5 });
  // No `type` field (IR version 1 style): inferred from the field that is set.
  assert.deepEqual(byName.untyped, { name: "untyped", type: "INT", value: -3n });
  const value = findAttribute(n, "value");
  assert.ok(value && value.type === "TENSOR");
  assert.deepEqual([value.value.dtype.name, value.value.toValues()], ["int32", [-1, 2]]);
  assert.equal(attributeNumber(n, "to"), 17);
  assert.equal(attributeNumber(n, "missing"), undefined);
  throwsCode(() => attributeNumber(n, "alpha"), "INVALID_ATTRIBUTE", /FLOAT, expected INT/);
});

test("ModelProto: initializers, inputs and outputs with elem types and shapes", () => {
  const g = decodeModel(sampleModel()).graph;
  assert.equal(g.initializers.length, 1);
  assert.equal(g.initializers[0].name, "bias");
  assert.deepEqual(g.initializers[0].tensor.toValues(), [0.5]);
  assert.deepEqual(g.inputs, [{ name: "x", elemType: 1, shape: [3, "N", null] }]);
  assert.deepEqual(g.outputs, [{ name: "y", elemType: 17, shape: [3] }]);
});

test("ModelProto errors: no graph, a truncated file, a bad nested tensor", () => {
  throwsCode(() => decodeModel(new W().int(1, 10).bytes()), "INVALID_DATA", /no graph/);
  const full = sampleModel();
  throwsCode(() => decodeModel(full.subarray(0, full.length - 5)), "INVALID_DATA", /truncated/);
  const badInit = new W().len(7, new W().len(5, tensorProto(1, [2]).float(4, 1))).bytes();
  throwsCode(() => decodeModel(badInit), "SHAPE_MISMATCH", /float_data holds 1 entries/);
  const external = new W().len(7, new W().len(5, tensorProto(1, [2], "big").int(14, 1))).bytes();
  throwsCode(() => decodeModel(external), "NOT_IMPLEMENTED", /tensor "big": external data is not supported yet/);
});
