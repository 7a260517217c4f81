/**
 * The protobuf wire writer, TensorProto encoding (raw_data and typed fields, every data type) and
 * the ModelProto writer: round trips through the reader of src/io/onnx, byte sequences computed by
 * hand from the protobuf encoding rules, every .pb and model of the ONNX node-test fixtures, and a
 * model built here loaded and run by onnxruntime-node.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync, existsSync } from "node:fs";
import { join } from "node:path";
import * as ort from "onnxruntime-node";
import { ortData } from "../support/ort.js";
import { DTYPES, Tensor, type DType } from "../../src/index.js";
import { storageLength } from "../../src/tensor.js";
import { WireReader, WIRE_FIXED32, WIRE_FIXED64, WIRE_VARINT } from "../../src/io/onnx/wire.js";
import { WireWriter, varintSize } from "../../src/io/onnx/wire-writer.js";
import { decodeTensorProto } from "../../src/io/onnx/tensorproto.js";
import { decodeModel, type OnnxModel } from "../../src/io/onnx/model.js";
import { encodeModel, encodeTensorProto, type TensorLayout } from "../../src/io/onnx/encode.js";
import { throwsCode } from "../support/assertions.js";

const hex = (b: Uint8Array): string => Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString("hex");
const fromHex = (s: string): Uint8Array => new Uint8Array(Buffer.from(s.replace(/\s+/g, ""), "hex"));
const LAYOUTS: readonly TensorLayout[] = ["raw", "typed"];

/** The field numbers of a message's top-level fields, in order. */
function fieldsOf(bytes: Uint8Array): number[] {
  const r = new WireReader(bytes);
  const out: number[] = [];
  for (let f = r.next(); f !== 0; f = r.next()) {
    out.push(f);
    r.skip();
  }
  return out;
}

/** A tensor's identity for comparisons: type, shape and exact bytes (strings: values). */
function summary(t: Tensor): { dtype: string; shape: number[]; data: string | string[] } {
  return {
    dtype: t.dtype.name,
    shape: [...t.shape],
    data: t.dtype.kind === "string" ? (t.data as string[]).slice() : hex(t.bytes()),
  };
}

/** Encodes with `opts`, decodes, and checks the tensor and name came back unchanged. */
function roundTrip(t: Tensor, layout: TensorLayout, name = ""): Uint8Array {
  const pb = encodeTensorProto(t, { name, layout });
  const back = decodeTensorProto(pb);
  assert.equal(back.name, name);
  assert.equal(back.tensor.dtype, t.dtype);
  assert.deepEqual(summary(back.tensor), summary(t), `${t.dtype.name} [${t.shape.join(", ")}] ${layout}`);
  return pb;
}

/** Deterministic bytes (xorshift32), so a failure names the same data every run. */
function pseudoRandomBytes(n: number, seed: number): Uint8Array {
  let s = seed >>> 0 || 1;
  const out = new Uint8Array(n);
  for (let i = 0; i < n; i++) {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    out[i] = s & 0xff;
  }
  return out;
}

/** A tensor of arbitrary valid storage: any code per element, padding bits of packed types zero. */
function sampleTensor(t: DType, shape: number[], seed: number): Tensor {
  const size = shape.reduce((a, b) => a * b, 1);
  if (t.kind === "string") {
    const pool = ["", "a", "ü", "日本語", "😀 emoji", "nul\u0000inside", "x".repeat(200)];
    return Tensor.fromValues(Array.from({ length: size }, (_, i) => pool[(i + seed) % pool.length]), t, shape);
  }
  const entries = storageLength(t, size);
  const width = t.packed ? 1 : t.kind === "complex" ? t.bits / 16 : t.bits / 8;
  const bytes = pseudoRandomBytes(entries * width, seed + t.onnx * 7919);
  if (t.kind === "bool") bytes.forEach((b, i) => (bytes[i] = b & 1));
  if (t.packed && bytes.length > 0) {
    const used = (size * t.bits) % 8;
    if (used !== 0) bytes[bytes.length - 1] &= (1 << used) - 1;
  }
  return Tensor.fromBytes(bytes, t, shape);
}

// ---- the wire writer ---------------------------------------------------------------------------

test("WireWriter varints: sizes, 32-bit, 64-bit from words, bigints and safe integers", () => {
  const w = new WireWriter(4);
  w.uint32(0).uint32(1).uint32(127).uint32(128).uint32(300).uint32(0xffffffff);
  w.int32(-1).int32(-2147483648).int32(2147483647);
  w.varint64(5, 1).varint64(0xffffffff, 0xffffffff);
  w.int64(-(2n ** 63n)).int64(2n ** 63n - 1n).int64(-1).int64(Number.MIN_SAFE_INTEGER).int64(Number.MAX_SAFE_INTEGER);
  w.uint64(2n ** 64n - 1n).uint64(2 ** 53 - 1).uint64(0n);
  const bytes = w.finish();
  // Hand-computed: 300 = 0b10_0101100 -> 0xac 0x02; 2^32 - 1 -> ff ff ff ff 0f; -1 as int32 -> 10 bytes.
  assert.equal(hex(bytes.subarray(0, 14)), "00017f8001ac02ffffffff0f" + "ffff");
  const r = new WireReader(bytes);
  assert.deepEqual([r.uint32(), r.uint32(), r.uint32(), r.uint32(), r.uint32(), r.uint32()], [0, 1, 127, 128, 300, 0xffffffff]);
  assert.deepEqual([r.int32(), r.int32(), r.int32()], [-1, -2147483648, 2147483647]);
  r.varint64();
  assert.deepEqual([r.lo, r.hi], [5, 1]);
  assert.equal(r.uint64(), 2n ** 64n - 1n);
  assert.deepEqual([r.int64(), r.int64(), r.int64(), r.int64(), r.int64()],
    [-(2n ** 63n), 2n ** 63n - 1n, -1n, BigInt(Number.MIN_SAFE_INTEGER), BigInt(Number.MAX_SAFE_INTEGER)]);
  assert.deepEqual([r.uint64(), r.uint64(), r.uint64()], [2n ** 64n - 1n, 2n ** 53n - 1n, 0n]);
  assert.ok(r.done);
  assert.deepEqual([0, 127, 128, 16383, 16384, 2 ** 32, 2 ** 53 - 1].map(varintSize), [1, 1, 2, 2, 3, 5, 8]);
});

test("WireWriter varints agree with a bigint reference on every bit length", () => {
  const reference = (v: bigint): string => {
    const out: number[] = [];
    do {
      const low = Number(v & 0x7fn);
      v >>= 7n;
      out.push(v !== 0n ? low | 0x80 : low);
    } while (v !== 0n);
    return hex(new Uint8Array(out));
  };
  for (let bit = 0; bit < 64; bit++) {
    for (const v of [1n << BigInt(bit), (1n << BigInt(bit)) - 1n, (1n << BigInt(bit)) | 0x55n]) {
      assert.equal(hex(new WireWriter().uint64(v).finish()), reference(v), `2^${bit} variant ${v}`);
      const signed = BigInt.asIntN(64, v);
      assert.equal(hex(new WireWriter().int64(signed).finish()), reference(v), `int64 ${signed}`);
    }
  }
});

test("WireWriter range errors: int64, uint64, non-integers, field numbers, unbalanced forks", () => {
  throwsCode(() => new WireWriter().int64(2n ** 63n), "INVALID_VALUE", /outside int64's range/);
  throwsCode(() => new WireWriter().int64(-(2n ** 63n) - 1n), "INVALID_VALUE", /outside int64's range/);
  throwsCode(() => new WireWriter().uint64(-1n), "INVALID_VALUE", /outside uint64's range/);
  throwsCode(() => new WireWriter().uint64(2n ** 64n), "INVALID_VALUE", /outside uint64's range/);
  throwsCode(() => new WireWriter().int64(2 ** 53), "INVALID_VALUE", /not a safe integer/);
  throwsCode(() => new WireWriter().int64(1.5), "INVALID_VALUE", /not a safe integer/);
  throwsCode(() => new WireWriter().uint64(-1), "INVALID_VALUE", /non-negative safe integer/);
  throwsCode(() => new WireWriter().tag(0, WIRE_VARINT), "INVALID_DATA", /field number 0/);
  throwsCode(() => new WireWriter().tag(2 ** 29, WIRE_VARINT), "INVALID_DATA", /outside 1..2\^29 - 1/);
  throwsCode(() => new WireWriter().fork(1).finish(), "INVALID_DATA", /not joined/);
  throwsCode(() => new WireWriter().join(), "INVALID_DATA", /join\(\) without fork\(\)/);
  // The largest field number still makes a valid 5-byte tag.
  const r = new WireReader(new WireWriter().uint32Field(2 ** 29 - 1, 7).finish());
  assert.equal(r.next(), 2 ** 29 - 1);
  assert.equal(r.uint32(), 7);
});

test("WireWriter fixed32, fixed64, float and double are little-endian", () => {
  const w = new WireWriter().fixed32(0x12345678).fixed64(1, 0x80000000).float(1.5).double(-0.1);
  assert.equal(hex(w.finish()), "78563412" + "0100000000000080" + "0000c03f" + "9a9999999999b9bf");
  const fields = new WireWriter().floatField(1, 2).doubleField(2, 3).finish();
  const r = new WireReader(fields);
  assert.deepEqual([r.next(), r.wireType, r.float()], [1, WIRE_FIXED32, 2]);
  assert.deepEqual([r.next(), r.wireType, r.double()], [2, WIRE_FIXED64, 3]);
});

test("WireWriter nested forks: length prefixes of 1, 2 and 3 bytes move the body correctly", () => {
  for (const n of [0, 1, 127, 128, 300, 16383, 16384, 70000]) {
    const body = pseudoRandomBytes(n, n + 1);
    // Start tiny so the buffer grows while a fork is open and again when join() widens the prefix.
    const w = new WireWriter(1);
    w.uint32Field(1, 9).fork(2).fork(3).raw(body).join().uint32Field(4, n).join().uint32Field(5, 1);
    const bytes = w.finish();
    const r = new WireReader(bytes);
    assert.deepEqual([r.next(), r.uint32()], [1, 9]);
    assert.equal(r.next(), 2);
    const outer = r.message("Outer");
    assert.equal(outer.next(), 3);
    assert.equal(hex(outer.bytes()), hex(body), `body of ${n} bytes`);
    assert.deepEqual([outer.next(), outer.uint32(), outer.next()], [4, n, 0]);
    assert.deepEqual([r.next(), r.uint32(), r.next()], [5, 1, 0]);
    // Same bytes as writing the body with a length known up front.
    const inner = new WireWriter().bytesField(3, body).uint32Field(4, n).finish();
    const direct = new WireWriter().uint32Field(1, 9).bytesField(2, inner).uint32Field(5, 1).finish();
    assert.equal(hex(bytes), hex(direct));
  }
});

test("WireWriter strings are UTF-8 like TextEncoder; lone surrogates are INVALID_VALUE", () => {
  const samples = ["", "ascii", "ü", "\u07ff\u0800", "日本語", "😀", "a😀b\uffff\ud7ff\ue000", "\u0000", "x".repeat(1000) + "é"];
  for (const s of samples) {
    const ours = new WireWriter(1).utf8(s).finish();
    assert.equal(hex(ours), hex(new TextEncoder().encode(s)), JSON.stringify(s));
    const r = new WireReader(new WireWriter().stringField(1, s).finish());
    r.next();
    assert.equal(r.string("s"), s);
  }
  throwsCode(() => new WireWriter().utf8("a\ud800"), "INVALID_VALUE", /lone surrogate U\+D800 at index 1/);
  throwsCode(() => new WireWriter().utf8("\udc00a"), "INVALID_VALUE", /lone surrogate U\+DC00 at index 0/);
  throwsCode(() => new WireWriter().utf8("\ud800\ud800\udc00", "tensor name"), "INVALID_VALUE", /tensor name has a lone surrogate U\+D800 at index 0/);
});

// ---- TensorProto: bytes by hand ----------------------------------------------------------------

test("TensorProto bytes by hand: float32 [1.5] raw and typed, with and without a name", () => {
  const t = Tensor.fromValues([1.5], "float32");
  // dims (1, varint) = 1: 08 01; data_type (2) = FLOAT 1: 10 01; raw_data (9, length-delimited):
  // tag 9 << 3 | 2 = 0x4a, length 4, then 1.5f little-endian = 0x3fc00000 -> 00 00 c0 3f.
  assert.equal(hex(encodeTensorProto(t)), "0801" + "1001" + "4a04" + "0000c03f");
  // float_data (4, packed): tag 0x22, length 4; name (8): tag 0x42, length 1, "w" = 0x77.
  assert.equal(hex(encodeTensorProto(t, { name: "w", layout: "typed" })), "0801" + "1001" + "2204" + "0000c03f" + "4201" + "77");
  // raw_data (9) comes after name (8).
  assert.equal(hex(encodeTensorProto(t, { name: "w" })), "0801" + "1001" + "420177" + "4a04" + "0000c03f");
});

test("TensorProto bytes by hand: scalars, empty tensors, multi-byte dims", () => {
  // A scalar has no dims field.
  assert.equal(hex(encodeTensorProto(Tensor.fromValues([7], "uint8", []))), "1002" + "4a01" + "07");
  // dims 300 = ac 02, then dims 0. An empty tensor keeps an empty raw_data (4a 00) in the raw layout,
  // as numpy_helper.from_array writes it, and has no data field in the typed one, as make_tensor.
  const empty = Tensor.zeros("float32", [300, 0]);
  assert.equal(hex(encodeTensorProto(empty)), "08ac02" + "0800" + "1001" + "4a00");
  assert.equal(hex(encodeTensorProto(empty, { layout: "typed" })), "08ac02" + "0800" + "1001");
});

test("TensorProto bytes by hand: typed int32_data, int64_data, uint64_data, double_data, string_data", () => {
  // INT8 [-1, 2]: int32_data (5) packed, tag 0x2a; -1 sign-extended to ten bytes, then 02: length 11.
  assert.equal(hex(encodeTensorProto(Tensor.fromValues([-1, 2], "int8"), { layout: "typed" })),
    "0802" + "1003" + "2a0b" + "ffffffffffffffffff01" + "02");
  // FLOAT16 [1, -2]: bit patterns 0x3c00 = 80 78, 0xc000 = 80 80 03 (unsigned, not sign-extended).
  assert.equal(hex(encodeTensorProto(Tensor.fromValues([1, -2], "float16"), { layout: "typed" })),
    "0802" + "100a" + "2a05" + "8078" + "808003");
  // INT4 [-1, 2, 7]: packed bytes 0x2f, 0x07, one per int32_data entry.
  assert.equal(hex(encodeTensorProto(Tensor.fromValues([-1, 2, 7], "int4"), { layout: "typed" })), "0803" + "1016" + "2a02" + "2f07");
  // INT64 [-2^63]: int64_data (7) tag 0x3a: 80 80 80 80 80 80 80 80 80 01.
  assert.equal(hex(encodeTensorProto(Tensor.fromValues([-(2n ** 63n)], "int64"), { layout: "typed" })),
    "0801" + "1007" + "3a0a" + "80808080808080808001");
  // UINT32 [2^32 - 1] in uint64_data (11), tag 0x5a, after the name.
  assert.equal(hex(encodeTensorProto(Tensor.fromValues([4294967295], "uint32"), { name: "u", layout: "typed" })),
    "0801" + "100c" + "420175" + "5a05" + "ffffffff0f");
  // DOUBLE [0.5]: double_data (10) packed, tag 0x52, 0x3fe0000000000000 little-endian.
  assert.equal(hex(encodeTensorProto(Tensor.fromValues([0.5], "float64"), { layout: "typed" })),
    "0801" + "100b" + "5208" + "000000000000e03f");
  // STRING ["ü", ""]: one string_data (6) field each, tag 0x32; ü = c3 bc. Strings ignore layout.
  const s = Tensor.fromValues(["ü", ""], "string");
  assert.equal(hex(encodeTensorProto(s)), "0802" + "1008" + "3202c3bc" + "3200");
  assert.equal(hex(encodeTensorProto(s, { layout: "typed" })), hex(encodeTensorProto(s)));
});

// ---- TensorProto: round trips ------------------------------------------------------------------

/** The typed field each type must use (onnx.md section 1), or raw_data (9). */
function expectedField(t: DType, layout: TensorLayout): number {
  if (t.kind === "string") return 6;
  if (layout === "raw") return 9;
  if (t.name === "float32" || t.name === "complex64") return 4;
  if (t.name === "float64" || t.name === "complex128") return 10;
  if (t.name === "int64") return 7;
  if (t.name === "uint32" || t.name === "uint64") return 11;
  return 5;
}

const SHAPES: readonly number[][] = [[], [0], [2, 0, 3], [1], [3], [5], [7], [2, 3], [4, 4, 3], [1, 1, 1, 9]];

test("every data type, both layouts: dtype, shape, name and bytes survive; the right field is used", () => {
  let cases = 0;
  for (const t of DTYPES) {
    for (const layout of LAYOUTS) {
      SHAPES.forEach((shape, k) => {
        const tensor = sampleTensor(t, shape, k + 1);
        const name = k % 2 === 0 ? "" : `t_${t.name}_${k}_ü`;
        const pb = roundTrip(tensor, layout, name);
        const fields = fieldsOf(pb);
        const data = fields.filter((f) => f !== 1 && f !== 2 && f !== 8);
        const want = expectedField(t, layout);
        // No packed field for an empty run (raw_data is kept, empty, to mark the layout); strings
        // have one string_data field per element.
        const count = want === 9 ? 1 : tensor.size === 0 ? 0 : want === 6 ? tensor.size : 1;
        assert.deepEqual(data, Array(count).fill(want), `${t.name} [${shape.join(", ")}] ${layout}`);
        // Field-number order, as protobuf serialisers write it.
        assert.deepEqual(fields, [...fields].sort((a, b) => a - b), `${t.name} field order`);
        cases++;
      });
    }
  }
  assert.equal(cases, DTYPES.length * LAYOUTS.length * SHAPES.length);
});

test("odd element counts of sub-byte types: packed bytes, padding, one int32_data entry per byte", () => {
  for (const t of DTYPES.filter((d) => d.packed)) {
    for (let n = 0; n <= 13; n++) {
      const tensor = sampleTensor(t, [n], n * 31 + 5);
      for (const layout of LAYOUTS) roundTrip(tensor, layout);
      const r = new WireReader(encodeTensorProto(tensor, { layout: "typed" }));
      const entries: number[] = [];
      for (let f = r.next(); f !== 0; f = r.next()) {
        if (f === 5) r.repeated(WIRE_VARINT, "int32_data", () => entries.push(r.uint32()));
        else r.skip();
      }
      assert.deepEqual(entries, Array.from(tensor.bytes()), `${t.name} x${n}`);
    }
  }
});

test("NaN payloads, signalling NaNs, -0 and every small-float code keep their exact bits", () => {
  const f32 = new Uint32Array([0x7f800001, 0xff800001, 0x7fc00000, 0xffc12345, 0x7fbfffff, 0x80000000, 0x00000001, 0x7f800000]);
  const f64 = new BigUint64Array([0x7ff0000000000001n, 0xfff8000000000abcn, 0x7ff7ffffffffffffn, 0x8000000000000000n]);
  const tensors: Tensor[] = [
    Tensor.fromBytes(new Uint8Array(f32.buffer), "float32", [f32.length]),
    Tensor.fromBytes(new Uint8Array(f32.buffer), "complex64", [f32.length / 2]),
    Tensor.fromBytes(new Uint8Array(f64.buffer), "float64", [f64.length]),
    Tensor.fromBytes(new Uint8Array(f64.buffer), "complex128", [f64.length / 2]),
    Tensor.fromStorage(new Uint16Array([0x7c01, 0xfe00, 0x7dff, 0x8000]), "float16", [4]),
    Tensor.fromStorage(new Uint16Array([0x7f81, 0xffc1, 0xff80, 0x8000]), "bfloat16", [4]),
  ];
  // Every code of every 8-bit float.
  for (const t of DTYPES.filter((d) => d.kind === "float" && d.bits === 8)) {
    tensors.push(Tensor.fromStorage(Uint8Array.from({ length: 256 }, (_, i) => i), t, [256]));
  }
  for (const tensor of tensors) for (const layout of LAYOUTS) roundTrip(tensor, layout, "nan");
});

test("integer extremes, both layouts", () => {
  const cases: Tensor[] = [
    Tensor.fromValues([-(2n ** 63n), 2n ** 63n - 1n, -1n, 0n, 1n, -(2n ** 31n), 2n ** 32n], "int64"),
    Tensor.fromValues([0n, 2n ** 64n - 1n, 2n ** 63n, 2n ** 32n - 1n], "uint64"),
    Tensor.fromValues([0, 4294967295, 2147483648], "uint32"),
    Tensor.fromValues([-2147483648, 2147483647, -1, 0], "int32"),
    Tensor.fromValues([-32768, 32767, -1], "int16"),
    Tensor.fromValues([0, 65535, 32768], "uint16"),
    Tensor.fromValues([-128, 127, -1], "int8"),
    Tensor.fromValues([0, 255, 128], "uint8"),
    Tensor.fromValues([-8, 7, -1], "int4"),
    Tensor.fromValues([-2, 1, -1, 0, 1], "int2"),
    Tensor.fromValues([true, false, true], "bool"),
  ];
  for (const t of cases) {
    for (const layout of LAYOUTS) {
      const back = decodeTensorProto(encodeTensorProto(t, { layout })).tensor;
      assert.deepEqual(back.toValues(), t.toValues(), `${t.dtype.name} ${layout}`);
      assert.equal(hex(back.bytes()), hex(t.bytes()));
    }
  }
});

test("a non-canonical bool byte stays as is in raw_data and becomes 1 in int32_data", () => {
  const t = Tensor.fromBytes(new Uint8Array([0, 2, 1]), "bool", [3]);
  assert.equal(hex(decodeTensorProto(encodeTensorProto(t)).tensor.bytes()), "000201");
  assert.equal(hex(decodeTensorProto(encodeTensorProto(t, { layout: "typed" })).tensor.bytes()), "000101");
});

test("strings: non-ASCII, astral, NUL, long, empty; names likewise; lone surrogates refused", () => {
  const values = ["", "plain", "naïve café", "Ελληνικά", "中文", "😀👍🏽", "a\u0000b", "\u{10ffff}", "x".repeat(5000)];
  const t = Tensor.fromValues(values, "string", [3, 3]);
  for (const layout of LAYOUTS) {
    const back = decodeTensorProto(encodeTensorProto(t, { name: "名前 😀", layout }));
    assert.equal(back.name, "名前 😀");
    assert.deepEqual(back.tensor.shape, [3, 3]);
    assert.deepEqual(back.tensor.toValues(), values);
  }
  throwsCode(() => encodeTensorProto(Tensor.fromValues(["ok", "bad\udfff"], "string")), "INVALID_VALUE", /string element 1 has a lone surrogate U\+DFFF/);
  throwsCode(() => encodeTensorProto(Tensor.fromValues([1], "float32"), { name: "\ud83d" }), "INVALID_VALUE", /tensor name/);
});

test("encodeTensorProto input errors", () => {
  throwsCode(() => encodeTensorProto({ dtype: "float32" } as unknown as Tensor), "INVALID_DATA", /expected a Tensor/);
  throwsCode(() => encodeTensorProto(Tensor.fromValues([1], "float32"), { layout: "packed" as TensorLayout }), "INVALID_ATTRIBUTE", /option layout must be "raw" or "typed", got "packed"/);
});

test("a tensor whose storage is a view into a larger buffer encodes only its own bytes", () => {
  const backing = new Float32Array([9, 1, 2, 3, 9]);
  const t = Tensor.fromStorage(backing.subarray(1, 4), "float32", [3]);
  for (const layout of LAYOUTS) assert.deepEqual(decodeTensorProto(encodeTensorProto(t, { layout })).tensor.toValues(), [1, 2, 3]);
  const big = Tensor.fromStorage(new BigInt64Array([5n, -6n, 7n]).subarray(1), "int64", [2]);
  assert.deepEqual(decodeTensorProto(encodeTensorProto(big, { layout: "typed" })).tensor.toValues(), [-6n, 7n]);
});

// ---- the ONNX node-test fixtures ---------------------------------------------------------------

const FIXTURES = join(process.cwd(), "test", "fixtures", "onnx-node");
const fixtureDirs = existsSync(FIXTURES)
  ? readdirSync(FIXTURES).filter((d) => existsSync(join(FIXTURES, d, "test_data_set_0"))).sort()
  : [];

test("every fixture .pb: decode, encode (both layouts), decode again gives identical tensors", () => {
  assert.ok(fixtureDirs.length > 0, `no fixtures under ${FIXTURES}`);
  let files = 0;
  let sameBytes = 0;
  for (const dir of fixtureDirs) {
    const set = join(FIXTURES, dir, "test_data_set_0");
    for (const file of readdirSync(set).filter((f) => f.endsWith(".pb")).sort()) {
      const original = new Uint8Array(readFileSync(join(set, file)));
      const first = decodeTensorProto(original);
      for (const layout of LAYOUTS) {
        const again = decodeTensorProto(encodeTensorProto(first.tensor, { name: first.name, layout }));
        assert.equal(again.name, first.name, `${dir}/${file}`);
        assert.deepEqual(summary(again.tensor), summary(first.tensor), `${dir}/${file} ${layout}`);
      }
      // onnx's Python package wrote these: fields in number order, dims unpacked, raw_data from
      // numpy_helper.from_array, or for some empty tensors make_tensor's no data field at all. The
      // same layout reproduces each byte for byte.
      const layout = fieldsOf(original).includes(9) ? "raw" : "typed";
      if (hex(encodeTensorProto(first.tensor, { name: first.name, layout })) === hex(original)) sameBytes++;
      else assert.fail(`${dir}/${file} re-encodes to different bytes`);
      files++;
    }
  }
  assert.ok(files >= 100, `only ${files} .pb files`);
  assert.equal(sameBytes, files);
});

test("every fixture model.onnx: decodeModel, encodeModel, decodeModel gives the same model", () => {
  let models = 0;
  let sameBytes = 0;
  for (const dir of fixtureDirs) {
    const path = join(FIXTURES, dir, "model.onnx");
    if (!existsSync(path)) continue;
    const m = decodeModel(new Uint8Array(readFileSync(path)));
    if (m.graph.nodes.some((n) => n.attributes.some((a) => a.type === "UNSUPPORTED"))) continue;
    assert.deepEqual(normalize(decodeModel(encodeModel(m))), normalize(m), dir);
    // The models of single operators hold nothing decodeModel drops, so they come back byte for
    // byte; the "_expanded" ones have fields it skips (function-body details) and are only compared
    // after decoding.
    if (!dir.endsWith("_expanded")) {
      const original = new Uint8Array(readFileSync(path));
      assert.equal(hex(encodeModel(m, { producerName: "backend-test" })), hex(original), `${dir}/model.onnx bytes`);
      sameBytes++;
    }
    models++;
  }
  assert.ok(models >= 100, `only ${models} models`);
  assert.ok(sameBytes >= 50, `only ${sameBytes} models compared byte for byte`);
});

// ---- ModelProto --------------------------------------------------------------------------------

/** A model with tensors replaced by their summaries, so deepEqual compares bits, not objects. */
function normalize(m: OnnxModel): unknown {
  return {
    ...m,
    graph: {
      ...m.graph,
      initializers: m.graph.initializers.map((i) => ({ name: i.name, tensor: summary(i.tensor) })),
      nodes: m.graph.nodes.map((n) => ({
        ...n,
        attributes: n.attributes.map((a) => (a.type === "TENSOR" ? { ...a, value: summary(a.value) } : a)),
      })),
    },
  };
}

function sampleModel(): OnnxModel {
  return {
    irVersion: 13,
    opsetImports: [{ domain: "", version: 25 }, { domain: "com.example", version: 1 }],
    graph: {
      name: "g ü",
      nodes: [
        {
          name: "cast0", opType: "Cast", domain: "", inputs: ["x", ""], outputs: ["y"],
          attributes: [
            { name: "to", type: "INT", value: 17n },
            { name: "big", type: "INT", value: -(2n ** 63n) },
            { name: "alpha", type: "FLOAT", value: -0.25 },
            { name: "zero", type: "FLOAT", value: 0 },
            { name: "round_mode", type: "STRING", value: "nearest" },
            { name: "empty", type: "STRING", value: "" },
            { name: "value", type: "TENSOR", value: Tensor.fromValues([-1, 2], "int32") },
            { name: "codes", type: "TENSOR", value: Tensor.fromValues([1, -4, 6], "float4e2m1", [3]) },
            { name: "floats", type: "FLOATS", value: [1, -2, 0.5] },
            { name: "ints", type: "INTS", value: [1n, -1n, 2n ** 63n - 1n] },
            { name: "strings", type: "STRINGS", value: ["a", "ü", ""] },
          ],
        },
        { name: "", opType: "Custom", domain: "com.example", inputs: ["y"], outputs: ["z", ""], attributes: [] },
      ],
      initializers: [
        { name: "bias", tensor: Tensor.fromValues([0.5, -0], "float32") },
        { name: "ids", tensor: Tensor.fromValues([-(2n ** 63n), 7n], "int64", [1, 2]) },
        { name: "labels", tensor: Tensor.fromValues(["α", "β"], "string") },
        { name: "", tensor: Tensor.fromValues([1, -2, -1], "int2", [3]) },
      ],
      inputs: [
        { name: "x", elemType: 1, shape: [3, "N", null] },
        { name: "scalar", elemType: 7, shape: [] },
        { name: "unranked", elemType: 10 },
        { name: "opaque", elemType: 0 },
      ],
      outputs: [{ name: "z", elemType: 17, shape: [3] }],
    },
  };
}

test("encodeModel / decodeModel round trip: every attribute type, initializers, value infos", () => {
  const m = sampleModel();
  for (const layout of LAYOUTS) {
    const bytes = encodeModel(m, { layout, producerName: "tensorcast" });
    assert.deepEqual(normalize(decodeModel(bytes)), normalize(m), layout);
    // ModelProto fields in number order: ir_version (1), producer_name (2), graph (7), opset_import (8).
    assert.deepEqual(fieldsOf(bytes), [1, 2, 7, 8, 8]);
  }
  assert.deepEqual(fieldsOf(encodeModel(m)), [1, 7, 8, 8]);
});

test("encodeModel bytes by hand: an empty graph and one opset import", () => {
  const m: OnnxModel = {
    irVersion: 10,
    opsetImports: [{ domain: "", version: 21 }],
    graph: { name: "", nodes: [], initializers: [], inputs: [], outputs: [] },
  };
  // ir_version: 08 0a; graph (7): tag 0x3a, length 2, holding name (2) "": 12 00;
  // opset_import (8): tag 0x42, length 4: domain "" (0a 00), version 21 (10 15).
  assert.equal(hex(encodeModel(m)), "080a" + "3a02" + "1200" + "4204" + "0a00" + "1015");
  const back = decodeModel(fromHex("080a 3a02 1200 4204 0a00 1015"));
  assert.deepEqual(back, m);
});

test("encodeModel errors: UNSUPPORTED attributes, int64 range", () => {
  const m = sampleModel();
  m.graph.nodes[0].attributes.push({ name: "body", type: "UNSUPPORTED", onnxType: 5 });
  throwsCode(() => encodeModel(m), "NOT_IMPLEMENTED", /Cast attribute "body" has attribute type 5/);
  const big = sampleModel();
  big.graph.nodes[0].attributes = [{ name: "i", type: "INT", value: 2n ** 63n }];
  throwsCode(() => encodeModel(big), "INVALID_VALUE", /outside int64's range/);
});

// ---- onnxruntime-node --------------------------------------------------------------------------

test("onnxruntime-node loads and runs models built by encodeModel", async () => {
  const cast: OnnxModel = {
    irVersion: 10,
    opsetImports: [{ domain: "", version: 21 }],
    graph: {
      name: "cast",
      nodes: [{ name: "c", opType: "Cast", domain: "", inputs: ["x"], outputs: ["y"], attributes: [{ name: "to", type: "INT", value: 10n }] }],
      initializers: [],
      inputs: [{ name: "x", elemType: 1, shape: ["n"] }],
      outputs: [{ name: "y", elemType: 10, shape: ["n"] }],
    },
  };
  const session = await ort.InferenceSession.create(encodeModel(cast));
  const out = await session.run({ x: new ort.Tensor("float32", new Float32Array([1, -2, 65504, 1e5, 2 ** -24]), [5]) });
  // float16 bits: 1 = 3c00, -2 = c000, 65504 = 7bff (max), 1e5 overflows to +Inf 7c00, 2^-24 = 0001.
  assert.deepEqual(Array.from(ortData(out.y) as Uint16Array), [0x3c00, 0xc000, 0x7bff, 0x7c00, 0x0001]);

  // Initializers and a Constant's TENSOR attribute, in both layouts: float32 through Add, int64
  // extremes and strings through Identity.
  for (const layout of LAYOUTS) {
    const m: OnnxModel = {
      irVersion: 10,
      opsetImports: [{ domain: "", version: 21 }],
      graph: {
        name: "tensors",
        nodes: [
          { name: "add", opType: "Add", domain: "", inputs: ["x", "w"], outputs: ["sum"], attributes: [] },
          {
            name: "k", opType: "Constant", domain: "", inputs: [], outputs: ["ints"],
            attributes: [{ name: "value", type: "TENSOR", value: Tensor.fromValues([-(2n ** 63n), 2n ** 63n - 1n, -1n], "int64") }],
          },
          { name: "id", opType: "Identity", domain: "", inputs: ["labels"], outputs: ["words"], attributes: [] },
        ],
        initializers: [
          { name: "w", tensor: Tensor.fromValues([0.5, -1, 2], "float32") },
          { name: "labels", tensor: Tensor.fromValues(["ü", "", "日本"], "string") },
        ],
        inputs: [{ name: "x", elemType: 1, shape: [3] }],
        outputs: [
          { name: "sum", elemType: 1, shape: [3] },
          { name: "ints", elemType: 7, shape: [3] },
          { name: "words", elemType: 8, shape: [3] },
        ],
      },
    };
    const s = await ort.InferenceSession.create(encodeModel(m, { layout }));
    const r = await s.run({ x: new ort.Tensor("float32", new Float32Array([1, 2, 3]), [3]) });
    assert.deepEqual(Array.from(r.sum.data as Float32Array), [1.5, 1, 5], layout);
    assert.deepEqual(Array.from(r.ints.data as BigInt64Array), [-(2n ** 63n), 2n ** 63n - 1n, -1n], layout);
    assert.deepEqual(r.words.data, ["ü", "", "日本"], layout);
  }
});


