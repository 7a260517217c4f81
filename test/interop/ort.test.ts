/**
 * fromOrt / toOrt against the real onnxruntime-node: every type its binding carries goes through
 * `toOrt(t, ort.Tensor)` (and the plain `toOrt(t)`) into an Identity model and back through
 * `fromOrt`, bit for bit (every float16 code including each NaN payload, 64-bit extremes, strings,
 * bool bytes, empty and scalar shapes); a Cast model per pair of numeric types is checked against
 * tensorcast's cast; int4/uint4, which the binding cannot carry, are checked against
 * onnxruntime-common's Tensor constructor and, for their nibble order, against onnxruntime's own
 * reading of the same bytes as an initializer.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { assertSame } from "../support/assertions.js";
import * as ort from "onnxruntime-node";
import {
  cast, dtype, fromOrt, ORT_TYPES, Tensor, toOrt,
  type DTypeName, type OrtTypeName,
} from "../../src/index.js";
import { buildModel, modelOf } from "../support/onnx-model.js";
import { encodeModel } from "../../src/io/onnx/encode.js";
import { throwsCode } from "../support/assertions.js";

/** The types onnxruntime-node 1.30's binding takes and returns (not int4/uint4: see below). */
const CARRIED = ORT_TYPES.filter((n) => n !== "int4" && n !== "uint4");
const NUMERIC = CARRIED.filter((n) => n !== "string");
const HAS_F16ARRAY = typeof (globalThis as { Float16Array?: unknown }).Float16Array === "function";

const sessions = new Map<string, Promise<ort.InferenceSession>>();
function session(key: string, model: () => Uint8Array): Promise<ort.InferenceSession> {
  let s = sessions.get(key);
  if (!s) {
    s = ort.InferenceSession.create(model());
    sessions.set(key, s);
  }
  return s;
}

/** Identity with an input of unknown rank, so one session serves every shape. */
function identity(type: DTypeName): Promise<ort.InferenceSession> {
  const elemType = dtype(type).onnx;
  return session(`id ${type}`, () => buildModel({
    inputs: [{ name: "x", elemType }], outputs: [{ name: "y", elemType }],
    nodes: [{ opType: "Identity", inputs: ["x"], outputs: ["y"] }], opset: 21,
  }));
}

function castSession(from: DTypeName, to: DTypeName): Promise<ort.InferenceSession> {
  return session(`cast ${from} ${to}`, () => buildModel({
    inputs: [{ name: "x", elemType: dtype(from).onnx }], outputs: [{ name: "y", elemType: dtype(to).onnx }],
    nodes: [{ opType: "Cast", inputs: ["x"], outputs: ["y"], attributes: [{ name: "to", type: "INT", i: dtype(to).onnx }] }],
    opset: 21,
  }));
}

/** Deterministic bytes (xorshift32), so a failure names the same data every run. */
function pseudoRandomBytes(n: number, seed: number): Uint8Array {
  let s = seed >>> 0 || 1;
  const out = new Uint8Array(n);
  for (let i = 0; i < n; i++) {
    s ^= s << 13; s >>>= 0; s ^= s >>> 17; s ^= s << 5; s >>>= 0;
    out[i] = s & 0xff;
  }
  return out;
}

const hex = (t: Tensor): string => Buffer.from(t.bytes()).toString("hex");


/** Test tensors of one type: every bit pattern that matters, in a few shapes. */
function samples(type: OrtTypeName): Tensor[] {
  const t = dtype(type);
  if (type === "string") {
    const words = ["", "a", "tensorcast", "é", "日本語", "😀 emoji", "\ufeffBOM first", "tab\tand\nnewline", "x".repeat(10000)];
    return [
      Tensor.fromValues(words, "string"),
      Tensor.fromValues(["scalar"], "string", []),
      Tensor.fromValues(words.slice(0, 6), "string", [2, 3]),
      Tensor.fromValues([], "string", [0]),
    ];
  }
  if (type === "float16") {
    // Every code: each NaN payload, both infinities, both zeros, every subnormal.
    const codes = Uint16Array.from({ length: 65536 }, (_, i) => i);
    return [
      Tensor.fromStorage(codes, "float16", [65536]),
      Tensor.fromStorage(new Uint16Array([0x7e01]), "float16", []),
      Tensor.fromStorage(codes.subarray(0x7c00, 0x7c00 + 24), "float16", [2, 3, 4]),
      Tensor.zeros("float16", [3, 0]),
    ];
  }
  const extremes: Record<string, (number | bigint | boolean)[]> = {
    int64: [-(2n ** 63n), 2n ** 63n - 1n, -1n, 0n, 1n, 2n ** 53n + 1n],
    uint64: [0n, 1n, 2n ** 63n, 2n ** 64n - 1n, 2n ** 53n + 1n],
    bool: [false, true],
  };
  const out: Tensor[] = [];
  if (type === "bool") {
    out.push(Tensor.fromValues([true, false, true, true], "bool"));
    // A byte other than 0 / 1: onnxruntime passes it through, and so must both conversions.
    out.push(Tensor.fromStorage(new Uint8Array([0, 1, 2, 255]), "bool", [2, 2]));
  } else {
    const width = t.bits / 8;
    out.push(Tensor.fromBytes(pseudoRandomBytes(4096 * width, t.onnx), type, [4096]));
    const x = extremes[type];
    if (x) out.push(Tensor.fromValues(x as never, type));
    else out.push(Tensor.fromValues([t.min as number, t.max as number, 0], type));
  }
  out.push(Tensor.fromBytes(pseudoRandomBytes(6 * (t.bits / 8), 7), type, [1, 2, 3]));
  out.push(Tensor.fromBytes(pseudoRandomBytes(t.bits / 8, 9), type, []));
  out.push(Tensor.zeros(type, [0, 4]));
  return out;
}

for (const type of CARRIED) {
  test(`${type}: toOrt(t, ort.Tensor) -> Identity in onnxruntime-node -> fromOrt, bit for bit`, async () => {
    const s = await identity(type);
    for (const x of samples(type)) {
      const what = `${type} [${x.shape.join(", ")}]`;
      const feed = toOrt(x, ort.Tensor);
      assert.ok(feed instanceof ort.Tensor, what);
      assert.equal(feed.type, type, what);
      assert.deepEqual(feed.dims, [...x.shape], what);
      // No copy on the way in: onnxruntime's tensor holds tensorcast's own storage.
      assert.ok(feed.data === x.data, `${what}: the feed holds a copy`);
      const out = (await s.run({ x: feed }))["y"];
      const back = fromOrt(out);
      assertSame(back, x, what);
      // No copy on the way out either.
      if (type !== "string") {
        const d = out.data as ArrayBufferView;
        const b = back.data as ArrayBufferView;
        assert.ok(b.buffer === d.buffer, `${what}: fromOrt copied`);
        assert.equal(b.byteOffset, d.byteOffset, what);
      } else {
        assert.ok(back.data === out.data, `${what}: fromOrt copied`);
      }
    }
  });

  test(`${type}: the plain toOrt(t) is a feed onnxruntime-node runs as it is`, async () => {
    const s = await identity(type);
    for (const x of samples(type)) {
      const plain = toOrt(x);
      assert.deepEqual(Object.keys(plain).sort(), ["data", "dims", "location", "type"]);
      assert.ok(plain.data === x.data, "toOrt copied");
      const out = (await s.run({ x: plain as unknown as ort.Tensor }))["y"];
      assertSame(fromOrt(out), x, `${type} [${x.shape.join(", ")}]`);
    }
  });
}

test("float16 outputs: a Float16Array on Node 24+, a Uint16Array before; fromOrt reads both as bit patterns", async () => {
  const s = await identity("float16");
  const x = Tensor.fromStorage(new Uint16Array([0x3c00, 0x7e01, 0xfc00, 0x8001, 0x7c01]), "float16", [5]);
  const out = (await s.run({ x: toOrt(x, ort.Tensor) }))["y"];
  assert.equal((out.data as object).constructor.name, HAS_F16ARRAY ? "Float16Array" : "Uint16Array");
  const back = fromOrt(out);
  assert.ok(back.data instanceof Uint16Array);
  assert.deepEqual(Array.from(back.data as Uint16Array), [0x3c00, 0x7e01, 0xfc00, 0x8001, 0x7c01]);
});

test("the quirk toOrt works around: where Float16Array exists, new ort.Tensor('float16', Uint16Array) is read as 0 bytes", async (t) => {
  if (!HAS_F16ARRAY) {
    t.skip("no Float16Array on this runtime: onnxruntime-common keeps the Uint16Array");
    return;
  }
  const s = await identity("float16");
  const codes = new Uint16Array([0x3c00, 0x4000]);
  const naive = new ort.Tensor("float16", codes, [2]);
  assert.equal((naive.data as object).constructor.name, "Float16Array");
  // If this starts passing, onnxruntime-node reads Float16Array and toOrt's fix-up can go.
  await assert.rejects(s.run({ x: naive }), /expected 4, got 0/);
  const fixed = toOrt(Tensor.fromStorage(codes, "float16", [2]), ort.Tensor);
  assert.ok(fixed.data instanceof Uint16Array);
  assert.ok(fixed.data === codes, "toOrt copied");
  assert.equal(fixed.location, "cpu");
  assert.equal(fixed.size, 2);
  // dispose() still works on the fixed tensor (it clears the field the data now lives in).
  fixed.dispose();
  assert.equal(fixed.location, "none");
});

/** Values per source type for the Cast comparison: edge values of the type plus pseudo-random bits. */
function castInputs(type: OrtTypeName): Tensor {
  const t = dtype(type);
  if (type === "bool") return Tensor.fromValues([true, false, true], "bool");
  if (t.kind === "float") {
    const values = [0, -0, 0.5, -0.5, 1, -1, 1.5, 2.5, -2.5, 3.5, 100.75, -100.75, 127, 128, 255, 256, -129, 65504, 65519, 65520, 1e6,
      2 ** -24, 2 ** -25, 3 * 2 ** -26, 1e-40, 2147483520, -2147483648, 4294967040, NaN, -NaN, Infinity, -Infinity, 3.4e38];
    return cast(Tensor.fromValues(values, "float64"), type);
  }
  return Tensor.fromBytes(pseudoRandomBytes(512 * (t.bits / 8), t.onnx * 31), type, [512]);
}

/**
 * Pairs where tensorcast deliberately differs from onnxruntime (DECISIONS.md), left to the
 * differential test, which names each difference: float -> integer of NaN, infinities and
 * out-of-range values (compared here only where the truncated value fits the target), and
 * float64 -> float16 (onnxruntime rounds twice, through float32).
 */
function comparable(from: DTypeName, to: DTypeName, x: number): boolean {
  const f = dtype(from);
  const g = dtype(to);
  if (f.kind === "float" && (g.kind === "int" || g.kind === "uint")) {
    const v = Math.trunc(x);
    return Number.isFinite(x) && v >= Number(g.min) && v <= Number(g.max);
  }
  return !(from === "float64" && to === "float16");
}

test("a Cast run in onnxruntime-node, fed by toOrt and read by fromOrt, gives tensorcast's cast bit for bit", async () => {
  let compared = 0;
  for (const from of NUMERIC) {
    const x = castInputs(from);
    const xs = x.toValues().map(Number);
    for (const to of NUMERIC) {
      if (from === to) continue;
      const s = await castSession(from, to);
      const got = fromOrt((await s.run({ x: toOrt(x, ort.Tensor) }))["y"]);
      const want = cast(x, to);
      assert.equal(got.dtype.name, to);
      const g = got.toValues();
      const w = want.toValues();
      const gb = got.bytes();
      const wb = want.bytes();
      const width = dtype(to).bits / 8;
      for (let i = 0; i < x.size; i++) {
        if (!comparable(from, to, xs[i])) continue;
        compared++;
        const gv = g[i];
        const wv = w[i];
        // Every NaN code of a format is the same NaN (DECISIONS.md); everything else bit for bit.
        if (typeof gv === "number" && Number.isNaN(gv) && Number.isNaN(wv as number)) continue;
        const gbits = Buffer.from(gb.subarray(i * width, (i + 1) * width)).toString("hex");
        const wbits = Buffer.from(wb.subarray(i * width, (i + 1) * width)).toString("hex");
        assert.equal(gbits, wbits, `Cast ${from} -> ${to} of ${String(x.toValues()[i])}: onnxruntime ${String(gv)}, tensorcast ${String(wv)}`);
      }
    }
  }
  assert.ok(compared > 40000, `compared ${compared} elements`);
});

test("int4 / uint4: onnxruntime-common's Tensor takes toOrt's packed bytes, and fromOrt reads its tensors", () => {
  for (const type of ["int4", "uint4"] as const) {
    const values = type === "int4" ? [1, -1, 7, -8, 0] : [1, 15, 7, 8, 0];
    const x = Tensor.fromValues(values, type);
    const o = toOrt(x, ort.Tensor);
    assert.equal(o.type, type);
    assert.deepEqual(o.dims, [5]);
    assert.ok(o.data === x.data, "toOrt copied");
    // Element 0 in the low nibble; 5 elements in 3 bytes, the last high nibble padding.
    assert.deepEqual(Array.from(o.data as Uint8Array), [0xf1, 0x87, 0x00]);
    assert.deepEqual(fromOrt(o).toValues(), values);
    // onnxruntime-common's own tensor, built from bytes; the padding nibble (0xA) is kept as it is.
    const theirs = new ort.Tensor(type, new Uint8Array([0x21, 0x43, 0xa5]), [5]);
    const back = fromOrt(theirs);
    assert.deepEqual(back.toValues(), [1, 2, 3, 4, 5]);
    assert.ok(back.data === theirs.data, "fromOrt copied");
    assert.equal(hex(back), "2143a5");
  }
  // int4 in an Int8Array, as onnxruntime-common's type declaration has it: viewed, not copied.
  const i8 = new Int8Array([0x21, -8]);
  const v = fromOrt({ type: "int4", data: i8, dims: [3] });
  assert.deepEqual(v.toValues(), [1, 2, -8]);
  assert.ok((v.data as Uint8Array).buffer === i8.buffer, "fromOrt copied");
});

test("int4 / uint4 nibble order: onnxruntime reads toOrt's bytes as the same values (initializer -> Cast -> int8)", async () => {
  // onnxruntime-node cannot carry int4 (it refuses the input and crashes returning one), but the
  // bytes onnxruntime-web hands to its core are read as onnxruntime's own int4 layout, which is the
  // layout of raw_data: an initializer holding toOrt's bytes checks the order and the odd length.
  for (const type of ["int4", "uint4"] as const) {
    const values = type === "int4" ? [-8, -7, -1, 0, 1, 6, 7] : [0, 1, 7, 8, 9, 14, 15];
    const x = Tensor.fromValues(values, type);
    const bytes = toOrt(x).data as Uint8Array;
    assert.equal(bytes.length, 4);
    const model = modelOf({
      inputs: [], outputs: [{ name: "y", elemType: dtype("int16").onnx, shape: [7] }],
      nodes: [{ opType: "Cast", inputs: ["w"], outputs: ["y"], attributes: [{ name: "to", type: "INT", i: dtype("int16").onnx }] }],
      opset: 21,
    });
    model.graph.initializers.push({ name: "w", tensor: Tensor.fromBytes(bytes, type, [7]) });
    const s = await ort.InferenceSession.create(encodeModel(model, { producerName: "tensorcast-test" }));
    const y = fromOrt((await s.run({}))["y"]);
    assert.deepEqual(y.toValues(), values, type);
  }
});

test("strings: what onnxruntime-node does to a NUL and a lone surrogate (its binding's C strings)", async () => {
  const s = await identity("string");
  const x = Tensor.fromValues(["x\u0000y", "\ud800", "ok"], "string");
  const back = fromOrt((await s.run({ x: toOrt(x, ort.Tensor) }))["y"]);
  // Not a tensorcast conversion: onnxruntime-node's binding truncates at NUL and writes a lone
  // surrogate as U+FFFD. Recorded so that docs/interop.md stays true.
  assert.deepEqual(back.toValues(), ["x", "\ufffd", "ok"]);
});

test("fromOrt: errors", () => {
  throwsCode(() => fromOrt(null as never), "INVALID_DATA", /fromOrt's input must be an object, got null/);
  throwsCode(() => fromOrt({ type: "bfloat16", data: new Uint16Array(1), dims: [1] }), "UNSUPPORTED_TYPE",
    /"bfloat16" is not one of float32, uint8, int8, uint16, int16, int32, int64, string, bool, float16, float64, uint32, uint64, uint4, int4/);
  throwsCode(() => fromOrt({ type: "float32", data: new Float64Array(1), dims: [1] }), "INVALID_DATA", /float32 data must be a Float32Array, got a Float64Array/);
  throwsCode(() => fromOrt({ type: "uint8", data: new Int8Array(1), dims: [1] }), "INVALID_DATA", /uint8 data must be a Uint8Array, got a Int8Array/);
  throwsCode(() => fromOrt({ type: "int64", data: [1, 2], dims: [2] }), "INVALID_DATA", /int64 data must be a BigInt64Array/);
  throwsCode(() => fromOrt({ type: "float16", data: new Float32Array(1), dims: [1] }), "INVALID_DATA", /Uint16Array or Float16Array/);
  throwsCode(() => fromOrt({ type: "string", data: ["a", 1], dims: [2] }), "INVALID_DATA", /string storage entry 1 is 1/);
  throwsCode(() => fromOrt({ type: "float32", data: new Float32Array(3), dims: [2, 2] }), "SHAPE_MISMATCH", /needs 4 storage entries, got 3/);
  throwsCode(() => fromOrt({ type: "float32", data: new Float32Array(3), dims: "3" as never }), "INVALID_SHAPE", /dims must be an array/);
  throwsCode(() => fromOrt({ type: "float32", data: new Float32Array(3), dims: [-3] }), "INVALID_SHAPE");
  // One element per byte is not onnxruntime's int4 layout (onnxruntime-common lets it through).
  throwsCode(() => fromOrt({ type: "int4", data: new Uint8Array(4), dims: [4] }), "SHAPE_MISMATCH",
    /dims \[4\] of int4 need 2 bytes \(two elements per byte, element 0 in the low nibble\), got 4/);
  throwsCode(() => fromOrt({ type: "uint4", data: new Uint8Array(1), dims: [3] }), "SHAPE_MISMATCH", /need 2 bytes/);
});

test("fromOrt: a tensor on a GPU is an error that says to download it, and its data is never touched", () => {
  for (const location of ["gpu-buffer", "texture", "ml-tensor"]) {
    const gpu = {
      type: "float32", dims: [2], location,
      get data(): never { throw new Error("data read from a GPU tensor"); },
    };
    throwsCode(() => fromOrt(gpu), "UNSUPPORTED_PLATFORM", new RegExp(`data is in "${location}", not in memory; download it first \\(\`const data = await t.getData\\(\\)\`\\)`));
  }
  const disposed = new ort.Tensor("float32", new Float32Array(2), [2]);
  disposed.dispose();
  throwsCode(() => fromOrt(disposed), "INVALID_DATA", /disposed \(location "none"\)/);
  // cpu-pinned is in memory.
  assert.deepEqual(fromOrt({ type: "int32", data: new Int32Array([5]), dims: [1], location: "cpu-pinned" }).toValues(), [5]);
});

test("toOrt: types onnxruntime has no name for are errors naming its types and the exact cast to make", () => {
  const list = /it has float32, uint8, int8, uint16, int16, int32, int64, string, bool, float16, float64, uint32, uint64, uint4, int4/;
  for (const name of ["bfloat16", "float8e4m3fn", "float8e4m3fnuz", "float8e5m2", "float8e5m2fnuz", "float8e8m0", "float4e2m1", "float6e2m3", "float6e3m2"] as const) {
    throwsCode(() => toOrt(Tensor.zeros(name, [1])), "UNSUPPORTED_TYPE", new RegExp(`no tensor type for ${name}; ${list.source}\\. cast\\(t, "float32"\\) first: every ${name} value is exact in float32`));
  }
  throwsCode(() => toOrt(Tensor.zeros("int2", [1])), "UNSUPPORTED_TYPE", /cast\(t, "int8"\) \(or "int4"\) first: exact/);
  throwsCode(() => toOrt(Tensor.zeros("uint2", [1])), "UNSUPPORTED_TYPE", /cast\(t, "uint8"\) \(or "uint4"\) first: exact/);
  throwsCode(() => toOrt(Tensor.zeros("complex64", [1])), "UNSUPPORTED_TYPE", /no complex tensors/);
  throwsCode(() => toOrt(Tensor.zeros("complex128", [1]), ort.Tensor), "UNSUPPORTED_TYPE", /no complex tensors/);
  throwsCode(() => toOrt(new Float32Array(1) as never), "INVALID_DATA", /toOrt's input: expected a Tensor, got a Float32Array/);
  throwsCode(() => toOrt(Tensor.zeros("float32", [1]), "Tensor" as never), "INVALID_ATTRIBUTE", /onnxruntime's Tensor class, got "Tensor"/);
  class Refuses {
    constructor() { throw new TypeError("no thanks"); }
  }
  throwsCode(() => toOrt(Tensor.zeros("float32", [1]), Refuses as never), "INVALID_DATA", /new Refuses\("float32", \.\.\.\) threw: no thanks/);
});

test("the bfloat16 advice holds: cast to float32, then toOrt, then fromOrt and back is exact for every code", () => {
  const codes = Tensor.fromStorage(Uint16Array.from({ length: 65536 }, (_, i) => i), "bfloat16", [65536]);
  const back = cast(fromOrt(toOrt(cast(codes, "float32"))), "bfloat16");
  const a = codes.toValues();
  const b = back.toValues();
  for (let i = 0; i < a.length; i++) {
    if (Number.isNaN(a[i])) assert.ok(Number.isNaN(b[i]));
    else assert.ok(Object.is(a[i], b[i]), `code ${i}`);
  }
});

test("docs/interop.md's onnxruntime example gives what the page prints", async () => {
  const s = await castSession("float16", "float32");
  const x = Tensor.fromValues([1.5, 65504, -Infinity, NaN], "float16");
  const feed = toOrt(x, ort.Tensor);
  assert.deepEqual([feed.type, [...feed.dims]], ["float16", [4]]);
  assert.ok(feed.data instanceof Uint16Array);
  assert.deepEqual(Array.from(feed.data), [15872, 31743, 64512, 32256]);
  const { y } = await s.run({ x: feed });
  assert.deepEqual(fromOrt(y).toValues(), [1.5, 65504, -Infinity, NaN]);
  const s16 = await castSession("float32", "float16");
  const y16 = (await s16.run({ x: toOrt(Tensor.fromValues([0.1, 70000], "float32"), ort.Tensor) }))["y"];
  assert.deepEqual(Array.from(fromOrt(y16).data as Uint16Array), [11878, 31744]);
  assert.deepEqual(fromOrt(y16).toValues(), [0.0999755859375, Infinity]);
  const i4 = toOrt(Tensor.fromValues([1, -1, 7], "int4"));
  assert.deepEqual({ ...i4, data: Array.from(i4.data as Uint8Array) }, { type: "int4", data: [0xf1, 0x07], dims: [3], location: "cpu" });
});
