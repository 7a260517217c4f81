/**
 * Bitcast: every case of TensorFlow's own tests and docs (test/fixtures/bitcast_vectors.json, a copy
 * of shared/spec/bitcast_vectors.json), the official ONNX BitCast-26 vectors, the types each rule set
 * refuses, zero copy (same ArrayBuffer, writes seen both ways), the little-endian fallback, and a
 * property test: bitcast there and back is the identity on the bytes.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import fc from "fast-check";
import { DTYPES, Tensor, TensorcastError, dtype, type DType, type DTypeName } from "../../src/index.js";
import { bitcast, copyLittleEndian, type BitcastOptions } from "../../src/ops/bitcast.js";
import { decodeModel, opsetVersion } from "../../src/io/onnx/model.js";
import { decodeTensorProto } from "../../src/io/onnx/tensorproto.js";
import { throwsCode } from "../support/assertions.js";
import { property } from "../support/suite.js";

// Compiled tests run from build/test/ops/; the fixtures stay in the source tree.
const FIXTURES = new URL("../../../test/fixtures/", import.meta.url);
const ONNX: BitcastOptions = { semantics: "onnx" };

/** The types tf.bitcast accepts (its 19 less the quantized ones, which tensorcast lacks). */
const TF_TYPES: DTypeName[] = [
  "bfloat16", "float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
  "uint64", "complex64", "complex128",
];
const TF_REFUSED = DTYPES.filter((t) => !TF_TYPES.includes(t.name));

interface VectorTensor { dtype: string; shape: (number | null)[] | null; values?: unknown[]; hex?: string }
interface Vector {
  source: string;
  test: string;
  kind: string;
  input: VectorTensor;
  type: string;
  expect: VectorTensor | { error: true; messages: { text: string }[] };
  note?: string;
}

const hexBytes = (hex: string): Uint8Array => Uint8Array.from(hex.match(/../g) ?? [], (h) => parseInt(h, 16));
const toHex = (bytes: Uint8Array): string => Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
const byteSize = (t: DType): number => t.bits / 8;

const vectors = JSON.parse(readFileSync(new URL("bitcast_vectors.json", FIXTURES), "utf8")) as Vector[];

test("the TensorFlow vector file holds its 43 cases", () => {
  assert.equal(vectors.length, 43);
  const kinds: Record<string, number> = {};
  for (const v of vectors) kinds[v.kind] = (kinds[v.kind] ?? 0) + 1;
  assert.deepEqual(kinds, { test: 13, shape_inference_test: 15, doc_example: 3, derived: 12 });
});

/**
 * Why a vector cannot run here: an unknown rank (tensorcast tensors always have a concrete shape)
 * or a quantized type (tensorcast has none).
 */
function skipReason(v: Vector): string | undefined {
  if (v.input.shape === null) return "unknown rank: a graph-mode placeholder, no tensorcast equivalent";
  if (v.type.startsWith("q") || v.input.dtype.startsWith("q")) return `TensorFlow's quantized ${v.type} has no tensorcast type`;
  return undefined;
}

vectors.forEach((v, k) => {
  const label = `TF vector ${k}: ${v.test} (${v.kind}) ${v.input.dtype} [${v.input.shape}] -> ${v.type}`;
  const reason = skipReason(v);
  test(label, reason ? { skip: reason } : {}, () => {
    const from = dtype(v.input.dtype);
    // An unknown last dim (shape-fn leniency) runs with the only size the kernel accepts: the ratio.
    const shape = v.input.shape!.map((d) => d ?? byteSize(dtype(v.type)) / byteSize(from));
    const x = v.input.hex !== undefined
      ? Tensor.fromBytes(hexBytes(v.input.hex), from, shape)
      : v.input.values !== undefined
        ? Tensor.fromValues(v.input.values as never[], from, shape)
        : Tensor.zeros(from, shape);
    const e = v.expect;
    if ("error" in e) {
      assert.throws(() => bitcast(x, v.type), (err: unknown) => {
        assert.ok(err instanceof TensorcastError, String(err));
        assert.ok(err.code === "SHAPE_MISMATCH" || err.code === "UNSUPPORTED_TYPE", err.code);
        // Both types by name (never TF's enum numbers), and the shape.
        assert.ok(err.message.startsWith(`cannot bitcast from ${from.name} to ${dtype(v.type).name}: shape [${shape.join(", ")}];`), err.message);
        return true;
      });
      return;
    }
    const y = bitcast(x, v.type);
    assert.equal(y.dtype, dtype(e.dtype));
    assert.deepEqual(y.shape, e.shape);
    assert.equal(toHex(y.bytes()), e.hex ?? toHex(x.bytes()), "the bytes are unchanged");
    if (e.hex !== undefined) assert.equal(toHex(x.bytes()), v.input.hex);
    // Values too, where JSON numbers are exact (not beyond 2^53).
    if (e.values && !(y.dtype.bits === 64 && y.dtype.kind !== "float" && y.dtype.kind !== "complex")) {
      assert.deepEqual(y.toValues(), e.values);
    }
    assert.equal((y.data as Uint8Array).buffer, (x.data as Uint8Array).buffer, "zero copy");
  });
});

test("TF vectors: 40 of 43 run; the 3 skipped are 2 of unknown rank and 1 quantized", () => {
  const skipped = vectors.filter((v) => skipReason(v) !== undefined);
  assert.equal(skipped.length, 3);
  assert.equal(skipped.filter((v) => v.input.shape === null).length, 2);
});

test("TensorFlow's examples and rules, spelled out", () => {
  const f32 = Tensor.fromValues([0, 1, 1], "float32");
  const u8 = bitcast(f32, "uint8");
  assert.deepEqual(u8.shape, [3, 4]);
  assert.deepEqual(u8.toValues(), [0, 0, 0, 0, 0, 0, 128, 63, 0, 0, 128, 63]);
  assert.deepEqual(bitcast(Tensor.fromValues([0xffffffff], "uint32", []), "uint8").toValues(), [255, 255, 255, 255]);
  // Upcast: the last dim must equal the ratio, and is removed; a scalar can come out.
  assert.deepEqual(bitcast(Tensor.fromValues([1, 1, 1, 1, 1, 1, 1, 1], "uint8"), "uint64").toValues(), [0x0101010101010101n]);
  assert.deepEqual(bitcast(Tensor.fromValues([1, 1, 1, 1, 1, 1, 1, 1], "uint8"), "uint64").shape, []);
  throwsCode(() => bitcast(Tensor.fromValues([1, 2, 3], "float32"), "complex128"), "SHAPE_MISMATCH",
    /^cannot bitcast from float32 to complex128: shape \[3\]; an upcast from 4 to 16 bytes needs a last dimension of exactly 4, got 3$/);
  throwsCode(() => bitcast(Tensor.fromValues([7], "int32", []), "int64"), "SHAPE_MISMATCH",
    /^cannot bitcast from int32 to int64: shape \[\]; an upcast from 4 to 8 bytes needs a last dimension of exactly 2, and a scalar has no dimension$/);
  throwsCode(() => bitcast(Tensor.zeros("int8", [6]), "int16"), "SHAPE_MISMATCH", /got 6$/);
  throwsCode(() => bitcast(Tensor.zeros("int8", [4, 0]), "int32"), "SHAPE_MISMATCH", /shape \[4, 0\];.*got 0$/);
  assert.deepEqual(bitcast(Tensor.zeros("int8", [0, 4]), "int32").shape, [0]);
  assert.deepEqual(bitcast(Tensor.zeros("float32", [3, 0]), "int8").shape, [3, 0, 4]);
  // complex: (re, im), real first; complex128 to complex64 halves each part's bytes.
  const c = Tensor.fromValues([[1, 2]], "complex64", []);
  assert.deepEqual(bitcast(c, "float32").toValues(), [1, 2]);
  assert.deepEqual(bitcast(Tensor.fromValues([1, 2], "float32"), "complex64").toValues(), [[1, 2]]);
  const c128 = Tensor.fromValues([[1, -2]], "complex128", [1]);
  assert.deepEqual(bitcast(c128, "complex64").shape, [1, 2]);
  assert.deepEqual(bitcast(bitcast(c128, "complex64"), "complex128").toValues(), [[1, -2]]);
  assert.deepEqual(bitcast(c128, "float64").toValues(), [1, -2]);
  assert.deepEqual(bitcast(c128, "int64").shape, [1, 2]);
  // NaN payloads and -0 pass through untouched.
  const nan = Tensor.fromBytes(new Uint8Array([0x01, 0x00, 0xa0, 0x7f, 0x00, 0x00, 0x00, 0x80]), "float32", [2]);
  assert.deepEqual(bitcast(nan, "uint32").toValues(), [0x7fa00001, 0x80000000]);
  assert.deepEqual(bitcast(bitcast(nan, "uint16"), "float32").bytes(), nan.bytes());
  // Aliases are TensorFlow's spellings too.
  assert.equal(bitcast(Tensor.zeros("float64", [1]), "half").dtype.name, "float16");
});

test("TensorFlow refuses bool, string, float8, e8m0 and the sub-byte types, in either position, by name", () => {
  assert.deepEqual(TF_REFUSED.map((t) => t.name).sort(), [
    "bool", "float4e2m1", "float6e2m3", "float6e3m2", "float8e4m3fn", "float8e4m3fnuz", "float8e5m2", "float8e5m2fnuz",
    "float8e8m0", "int2", "int4", "string", "uint2", "uint4",
  ]);
  for (const t of TF_REFUSED) {
    const x = Tensor.zeros(t, [2, 4]);
    const sub = t.kind === "string" ? "string has no fixed byte size" : `tf.bitcast does not accept ${t.name} \\(it accepts bfloat16, `;
    throwsCode(() => bitcast(x, "uint8"), "UNSUPPORTED_TYPE", new RegExp(`^cannot bitcast from ${t.name} to uint8: shape \\[2, 4\\]; ${sub}`));
    throwsCode(() => bitcast(Tensor.zeros("int32", [3]), t), "UNSUPPORTED_TYPE", new RegExp(`^cannot bitcast from int32 to ${t.name}: shape \\[3\\]; ${sub}`));
  }
  throwsCode(() => bitcast(Tensor.fromValues([true, false], "bool"), "uint8"), "UNSUPPORTED_TYPE",
    /ONNX BitCast-26 \(\{ semantics: "onnx" \}\) accepts it between types of equal width/);
});

test("TensorFlow: every pair of accepted types follows the size rule and shares the buffer", () => {
  for (const a of TF_TYPES) {
    for (const b of TF_TYPES) {
      const from = dtype(a);
      const to = dtype(b);
      const ratio = byteSize(from) / byteSize(to);
      const shape = ratio < 1 ? [2, 1 / ratio] : [2, 3];
      const x = randomTensor(from, shape, 7);
      const y = bitcast(x, to);
      const expected = ratio === 1 ? shape : ratio > 1 ? [...shape, ratio] : [2];
      assert.deepEqual(y.shape, expected, `${a} -> ${b}`);
      assert.deepEqual(y.bytes(), x.bytes(), `${a} -> ${b}: bytes`);
      const xs = x.data as Uint8Array;
      const ys = y.data as Uint8Array;
      assert.equal(ys.buffer, xs.buffer, `${a} -> ${b}: same ArrayBuffer`);
      assert.equal(ys.byteOffset, xs.byteOffset);
      assert.equal(ys.byteLength, xs.byteLength);
    }
  }
});

test("ONNX BitCast-26: equal widths only, shape kept, every non-string type", () => {
  const nonString = DTYPES.filter((t) => t.kind !== "string");
  let pairs = 0;
  for (const from of nonString) {
    for (const to of nonString) {
      const x = randomTensor(from, [3, 2], 11);
      if (from.bits !== to.bits) {
        throwsCode(() => bitcast(x, to, ONNX), "UNSUPPORTED_TYPE", new RegExp(
          `^cannot bitcast from ${from.name} to ${to.name}: shape \\[3, 2\\]; BitCast-26 requires input and output types ` +
            `to have the same bit-width, but ${from.name} has ${from.bits} bits and ${to.name} has ${to.bits} bits`));
        continue;
      }
      pairs++;
      const y = bitcast(x, to, ONNX);
      assert.equal(y.dtype, to);
      assert.deepEqual(y.shape, [3, 2], `${from.name} -> ${to.name}`);
      assert.deepEqual(y.bytes(), x.bytes(), `${from.name} -> ${to.name}: bytes`);
      assert.equal((y.data as Uint8Array).buffer, (x.data as Uint8Array).buffer, `${from.name} -> ${to.name}: zero copy`);
    }
  }
  // 32 bits: f32 i32 u32; 64: f64 i64 u64 c64; 16: f16 bf16 i16 u16; 8: u8 i8 bool 4xf8 e8m0; 4: 3; 2: 2; 6: 2; 128: 1.
  assert.equal(pairs, 9 + 16 + 16 + 64 + 9 + 4 + 4 + 1);
  for (const t of [dtype("string")]) {
    throwsCode(() => bitcast(Tensor.zeros(t, [1]), "uint8", ONNX), "UNSUPPORTED_TYPE", /^cannot bitcast from string to uint8: shape \[1\]; BitCast-26 does not accept string/);
    throwsCode(() => bitcast(Tensor.zeros("uint8", [1]), t, ONNX), "UNSUPPORTED_TYPE", /does not accept string/);
  }
});

test("ONNX BitCast-26: the cases of onnx.md section 6", () => {
  const onnx = (values: unknown[], from: DTypeName, to: DTypeName, shape?: number[]): unknown[] =>
    bitcast(Tensor.fromValues(values as never[], from, shape), to, ONNX).toValues();
  assert.deepEqual(onnx([-1], "int4", "uint4"), [15]);
  assert.deepEqual(onnx([15], "uint4", "int4"), [-1]);
  assert.deepEqual(onnx([1.5, -6], "float4e2m1", "int4"), [3, -1]);
  assert.deepEqual(onnx([-1, 1, -2], "int2", "uint2"), [3, 1, 2]);
  assert.deepEqual(onnx([true, false, true, false], "bool", "uint8"), [1, 0, 1, 0]);
  assert.deepEqual(onnx([2, 0, 255], "uint8", "bool"), [true, false, true]);
  assert.deepEqual(bitcast(bitcast(Tensor.fromValues([2, 0], "uint8"), "bool", ONNX), "uint8", ONNX).toValues(), [2, 0]);
  assert.deepEqual(onnx([1, 448], "float8e4m3fn", "uint8"), [0x38, 0x7e]);
  assert.deepEqual(onnx([0x7f], "uint8", "float8e8m0"), [1]);
  assert.deepEqual(onnx([0x7f], "uint8", "float8e4m3fnuz"), [240]);
  assert.deepEqual(onnx([[1, 2]], "complex64", "uint64"), [0x400000003f800000n]);
  assert.deepEqual(onnx([7.5, 1], "float6e2m3", "float6e3m2"), [28, 0.5]); // codes 0x1f (both maxima), 0x08 (0_01_000 = 1, 0_010_00 = 2^(2-3))
  assert.deepEqual(onnx([1], "float32", "int32", []), [1065353216]);
  throwsCode(() => bitcast(Tensor.zeros("int4", [2]), "int8", ONNX), "UNSUPPORTED_TYPE", /int4 has 4 bits and int8 has 8 bits/);
  throwsCode(() => bitcast(Tensor.zeros("float32", [2]), "float64", ONNX), "UNSUPPORTED_TYPE",
    /tf\.bitcast, the default semantics, changes the shape instead/);
});

test("options: semantics, opset (ONNX only, 26 and later), nothing else", () => {
  const x = Tensor.zeros("float32", [2]);
  assert.equal(bitcast(x, "int32", { semantics: "onnx", opset: 26 }).dtype.name, "int32");
  assert.equal(bitcast(x, "int32", { semantics: "onnx", opset: 28 }).dtype.name, "int32");
  assert.equal(bitcast(x, "int32", { semantics: "tensorflow" }).dtype.name, "int32");
  throwsCode(() => bitcast(x, "int32", { semantics: "onnx", opset: 25 }), "INVALID_OPSET",
    /BitCast does not exist at opset 25; its only version is 26/);
  throwsCode(() => bitcast(x, "int32", { opset: 26 }), "INVALID_ATTRIBUTE", /opset applies to ONNX BitCast only/);
  throwsCode(() => bitcast(x, "int32", { semantics: "numpy" } as never), "INVALID_ATTRIBUTE", /semantics must be one of tensorflow, onnx; got "numpy"/);
  throwsCode(() => bitcast(x, "int32", { to: "int8" } as never), "INVALID_ATTRIBUTE", /unknown option "to"/);
  throwsCode(() => bitcast(x, "int32", null as never), "INVALID_ATTRIBUTE");
  throwsCode(() => bitcast(x, "quint16"), "UNKNOWN_DTYPE");
  throwsCode(() => bitcast([1] as never, "int32"), "INVALID_DATA");
});

test("zero copy: a write to either tensor is seen through the other", () => {
  const x = Tensor.fromValues([0, 1, 1], "float32");
  const y = bitcast(x, "uint8");
  const xs = x.data as Float32Array;
  const ys = y.data as Uint8Array;
  assert.equal(ys.buffer, xs.buffer);
  assert.equal(ys.byteOffset, xs.byteOffset);
  ys[3] = 0x40; // the high byte of element 0: 0x40000000 is 2
  assert.equal(x.toValues()[0], 2);
  xs[2] = -2; // 0xc0000000
  assert.deepEqual(y.toValues().slice(8), [0, 0, 0, 0xc0]);
  // Through an offset view of a larger buffer, and when both types share a container.
  const buffer = new ArrayBuffer(32);
  const offset = Tensor.fromStorage(new Int32Array(buffer, 8, 4), "int32", [4]);
  const asF32 = bitcast(offset, "float32");
  assert.equal((asF32.data as Float32Array).byteOffset, 8);
  const c = Tensor.fromValues([[1, 2]], "complex64", []);
  const re = bitcast(c, "float32");
  assert.equal(re.data, c.data, "same container: the very same typed array");
  const u4 = Tensor.fromValues([1, 2, 3], "uint4");
  const i4 = bitcast(u4, "int4", ONNX);
  u4.data[1] = 0x0f; // element 2 becomes 15: int4 -1
  assert.deepEqual(i4.toValues(), [1, 2, -1]);
});

test("a misaligned input is copied, with the same answer", () => {
  const buffer = new ArrayBuffer(16);
  const bytes = new Uint8Array(buffer, 1, 8);
  bytes.set([1, 0, 0, 0, 2, 0, 0, 0]);
  const x = Tensor.fromStorage(bytes, "uint8", [2, 4]);
  const y = bitcast(x, "int32");
  assert.deepEqual(y.toValues(), [1, 2]);
  assert.notEqual((y.data as Int32Array).buffer, buffer, "copied: a view at byte 1 cannot hold int32");
  assert.deepEqual(y.bytes(), x.bytes());
  const aligned = Tensor.fromStorage(new Uint8Array(buffer, 4, 8), "uint8", [2, 4]);
  assert.equal((bitcast(aligned, "int32").data as Int32Array).buffer, buffer, "aligned: shared");
});

test("the little-endian copy (the big-endian host path) agrees with a view on this host", () => {
  assert.equal(new Uint8Array(new Uint32Array([1]).buffer)[0], 1, "these tests expect a little-endian host");
  const kinds = [...new Set(DTYPES.filter((t) => t.array !== "Array").map((t) => t.array))];
  assert.equal(kinds.length, 10);
  for (const a of kinds) {
    for (const b of kinds) {
      const src = randomTensor(DTYPES.find((t) => t.array === a && !t.packed && t.kind !== "complex")!, [16], 3);
      const data = src.data as Uint8Array;
      const bpe = (globalThis as unknown as Record<string, { BYTES_PER_ELEMENT: number }>)[b].BYTES_PER_ELEMENT;
      const ctor = (globalThis as unknown as Record<string, never>)[b];
      const copy = copyLittleEndian(data, ctor, data.byteLength / bpe) as Uint8Array;
      assert.equal(copy.constructor.name, b);
      assert.notEqual(copy.buffer, data.buffer);
      assert.deepEqual(new Uint8Array(copy.buffer), new Uint8Array(data.buffer, data.byteOffset, data.byteLength), `${a} -> ${b}`);
    }
  }
});

test("the official ONNX BitCast vectors, through the .onnx / .pb reader", () => {
  const dir = new URL("onnx-node/", FIXTURES);
  const folders = readdirSync(dir).filter((f) => f.startsWith("test_bitcast_")).sort();
  assert.equal(folders.length, 10);
  for (const folder of folders) {
    const base = new URL(`${folder}/`, dir);
    const model = decodeModel(readFileSync(new URL("model.onnx", base)));
    const opset = opsetVersion(model, "");
    assert.equal(opset, 26, folder);
    const [node] = model.graph.nodes;
    assert.equal(node.opType, "BitCast");
    assert.equal(node.attributes.length, 1);
    const to = node.attributes[0];
    assert.ok(to.name === "to" && to.type === "INT", `${folder}: a single INT attribute \`to\``);
    for (const set of readdirSync(base).filter((n) => n.startsWith("test_data_set_"))) {
      const pb = (name: string): Tensor => decodeTensorProto(readFileSync(new URL(`${set}/${name}`, base))).tensor;
      const x = pb("input_0.pb");
      const expected = pb("output_0.pb");
      const y: Tensor = bitcast(x, Number(to.value), { semantics: "onnx", opset });
      assert.equal(y.dtype, expected.dtype, folder);
      assert.deepEqual(y.shape, expected.shape, folder);
      assert.deepEqual(y.bytes(), expected.bytes(), folder);
      assert.equal((y.data as Uint8Array).buffer, (x.data as Uint8Array).buffer, `${folder}: zero copy`);
    }
  }
});

/** A tensor of type `t` with pseudo-random bytes (bool bytes 0 / 1), from a fixed seed. */
function randomTensor(t: DType, shape: number[], seed: number): Tensor {
  const bytes = Tensor.zeros(t, shape).bytes().length;
  const raw = new Uint8Array(bytes);
  let s = seed;
  for (let i = 0; i < bytes; i++) {
    s = (s * 1103515245 + 12345) >>> 0;
    raw[i] = t.kind === "bool" ? (s >>> 16) & 1 : s >>> 24;
  }
  return Tensor.fromBytes(raw, t, shape);
}

const tfPairs = fc.tuple(fc.constantFrom(...TF_TYPES), fc.constantFrom(...TF_TYPES));
const onnxPairs = fc.constantFrom(
  ...DTYPES.flatMap((a) => DTYPES.filter((b) => a.kind !== "string" && b.kind !== "string" && a.bits === b.bits).map((b) => [a, b] as const)),
);
const prefix = fc.array(fc.integer({ min: 0, max: 4 }), { maxLength: 3 });
const RUNS = property(400, 20261122);

test("property: TensorFlow bitcast there and back is the identity on the bytes and the shape", () => {
  fc.assert(
    fc.property(tfPairs, prefix, fc.nat(), ([a, b], dims, seed) => {
      const from = dtype(a);
      const to = dtype(b);
      const ratio = byteSize(to) / byteSize(from);
      const shape = ratio > 1 ? [...dims, ratio] : dims;
      const x = randomTensor(from, shape, seed);
      const there = bitcast(x, to);
      const back = bitcast(there, from);
      assert.deepEqual(back.shape, x.shape);
      assert.deepEqual(back.bytes(), x.bytes());
      assert.equal((back.data as Uint8Array).buffer, (x.data as Uint8Array).buffer);
    }),
    RUNS,
  );
});

test("property: ONNX bitcast there and back is the identity on the bytes and the shape", () => {
  fc.assert(
    fc.property(onnxPairs, prefix, fc.nat(), ([from, to], dims, seed) => {
      const x = randomTensor(from, dims, seed);
      const back = bitcast(bitcast(x, to, ONNX), from, ONNX);
      assert.deepEqual(back.shape, x.shape);
      assert.deepEqual(back.bytes(), x.bytes());
      assert.equal((back.data as Uint8Array).buffer, (x.data as Uint8Array).buffer);
    }),
    RUNS,
  );
});
