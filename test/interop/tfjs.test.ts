/**
 * fromTfjs / toTfjs with duck-typed TensorFlow.js tensors (tensorcast does not depend on tfjs):
 * `{ dtype, shape, dataSync() }` objects holding what tfjs's `dataSync()` returns for each dtype
 * (typed arrays, interleaved complex, decoded strings) or plain arrays, round trips bit for bit,
 * sharing memory where the storage matches, and every error path.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { assertSame } from "../support/assertions.js";
import {
  cast, DTYPES, fromTfjs, Tensor, TFJS_DTYPES, toTfjs,
  type TfjsData, type TfjsTensorLike,
} from "../../src/index.js";
import { throwsCode } from "../support/assertions.js";

/** A tfjs tensor as far as fromTfjs can tell. */
function fake(dtype: string, shape: number[], data: unknown, extra: Partial<TfjsTensorLike> = {}): TfjsTensorLike {
  return { dtype, shape, dataSync: () => data, isDisposed: false, ...extra };
}

/** What tfjs's dataSync() would give for the tensor `tf.tensor(...)` builds from toTfjs's result. */
function asTfjs(d: TfjsData): TfjsTensorLike {
  if (d.dtype === "complex64") {
    const merged = new Float32Array(2 * d.real.length);
    d.real.forEach((re, i) => { merged[2 * i] = re; merged[2 * i + 1] = d.imag[i]; });
    return fake("complex64", d.shape, merged);
  }
  return fake(d.dtype, d.shape, d.values);
}


test("float32: NaN payloads, -0, subnormals and infinities survive both ways, and memory is shared", () => {
  const bits = new Uint32Array([0x7fc00001, 0xffbfffff, 0x80000000, 0x00000001, 0x7f800000, 0xff800000, 0x3f800000]);
  const data = new Float32Array(bits.buffer);
  const x = fromTfjs(fake("float32", [7], data));
  assert.equal(x.dtype.name, "float32");
  assert.ok(x.data === data, "fromTfjs copied");
  const out = toTfjs(x);
  assert.equal(out.dtype, "float32");
  assert.ok(out.dtype === "float32" && out.values === data);
  assert.deepEqual(Array.from(new Uint32Array((fromTfjs(asTfjs(out)).data as Float32Array).buffer)), Array.from(bits));
});

test("each tfjs dtype: toTfjs then fromTfjs gives the same tensor, in several shapes", () => {
  const cases: Tensor[] = [
    Tensor.fromValues([1.5, -0, NaN, Infinity, 3.4028234663852886e38, 1e-45], "float32", [2, 3]),
    Tensor.fromValues([-2147483648, 2147483647, 0, -1], "int32", [4]),
    Tensor.fromValues([7], "int32", []),
    Tensor.fromValues([true, false, true], "bool", [3, 1]),
    Tensor.fromValues(["", "a", "日本語", "😀", "\ufeffBOM"], "string"),
    Tensor.fromValues([[1, -2], [NaN, -0], [Infinity, 1e-45]], "complex64", [3]),
    Tensor.fromValues([[0.5, 0.25]], "complex64", []),
    Tensor.zeros("float32", [0, 3]),
    Tensor.zeros("complex64", [2, 0]),
    Tensor.fromValues([], "string", [0]),
  ];
  for (const x of cases) {
    const what = `${x.dtype.name} [${x.shape.join(", ")}]`;
    const d = toTfjs(x);
    assert.equal(d.dtype, x.dtype.name, what);
    assert.deepEqual(d.shape, [...x.shape], what);
    assertSame(fromTfjs(asTfjs(d)), x, what);
  }
});

test("toTfjs shares storage for float32, int32, bool and string; complex64 splits into real and imag", () => {
  const i = Tensor.fromValues([1, 2], "int32");
  assert.ok((toTfjs(i) as { values: unknown }).values === i.data);
  const b = Tensor.fromValues([true, false], "bool");
  assert.ok((toTfjs(b) as { values: unknown }).values === b.data);
  const s = Tensor.fromValues(["x"], "string");
  assert.ok((toTfjs(s) as { values: unknown }).values === s.data);
  const c = toTfjs(Tensor.fromValues([[1, 2], [3, 4]], "complex64"));
  assert.ok(c.dtype === "complex64");
  assert.deepEqual([Array.from(c.real), Array.from(c.imag)], [[1, 3], [2, 4]]);
});

test("toTfjs: bool bytes other than 0 / 1 (from onnxruntime, say) become 1 in a copy; tensorcast's tensor is untouched", () => {
  const t = Tensor.fromStorage(new Uint8Array([0, 1, 2, 255]), "bool", [4]);
  const d = toTfjs(t);
  assert.ok(d.dtype === "bool");
  assert.deepEqual(Array.from(d.values), [0, 1, 1, 1]);
  assert.notEqual(d.values, t.data);
  assert.deepEqual(Array.from(t.data as Uint8Array), [0, 1, 2, 255]);
});

test("fromTfjs: plain arrays are copied and checked as fromValues checks them", () => {
  assert.deepEqual(fromTfjs(fake("bool", [3], [1, 0, 1])).toValues(), [true, false, true]);
  assert.deepEqual(fromTfjs(fake("bool", [2], [false, true])).toValues(), [false, true]);
  assert.deepEqual(fromTfjs(fake("int32", [2, 1], [-5, 2147483647])).toValues(), [-5, 2147483647]);
  // float32 rounds a number to nearest even, as Float32Array would.
  assert.deepEqual(Array.from(fromTfjs(fake("float32", [1], [0.1])).data as Float32Array), [Math.fround(0.1)]);
  assert.deepEqual(fromTfjs(fake("complex64", [2], [1, 2, 3, 4])).toValues(), [[1, 2], [3, 4]]);
  // tfjs's dataSync() of a bool tensor is a Uint8Array: shared.
  const u8 = new Uint8Array([1, 0]);
  assert.ok(fromTfjs(fake("bool", [2], u8)).data === u8);
});

test("fromTfjs: string elements as UTF-8 bytes (what tensor.bytes() gives) are decoded strictly, a leading BOM kept", () => {
  const enc = new TextEncoder();
  const x = fromTfjs(fake("string", [3], [enc.encode("\ufeffa"), "b", enc.encode("日本")]));
  assert.deepEqual(x.toValues(), ["\ufeffa", "b", "日本"]);
  throwsCode(() => fromTfjs(fake("string", [1], [new Uint8Array([0xc0, 0x80])])), "INVALID_DATA", /string element 0 is 2 bytes that are not UTF-8/);
  throwsCode(() => fromTfjs(fake("string", [2], ["a", 5])), "INVALID_DATA", /string element 1 is 5, not a string or UTF-8 bytes/);
});

test("fromTfjs: errors", () => {
  throwsCode(() => fromTfjs(undefined as never), "INVALID_DATA", /fromTfjs's input must be an object, got undefined/);
  throwsCode(() => fromTfjs(fake("int64", [1], [1])), "UNSUPPORTED_TYPE", /tfjs dtype "int64" is not one of float32, int32, bool, complex64, string/);
  throwsCode(() => fromTfjs(fake("float32", "2" as never, [1, 2])), "INVALID_SHAPE", /shape must be an array/);
  throwsCode(() => fromTfjs(fake("float32", [1.5], [1])), "INVALID_SHAPE");
  throwsCode(() => fromTfjs(fake("float32", [1], new Float32Array(1), { isDisposed: true })), "INVALID_DATA", /disposed/);
  throwsCode(() => fromTfjs({ dtype: "float32", shape: [1] } as never), "INVALID_DATA", /dataSync must be a function, got undefined/);
  throwsCode(() => fromTfjs({ dtype: "float32", shape: [1], dataSync: () => { throw new Error("Tensor is disposed."); } }),
    "INVALID_DATA", /dataSync\(\) threw: Tensor is disposed\./);
  throwsCode(() => fromTfjs(fake("float32", [1], new Float64Array(1))), "INVALID_DATA", /dataSync\(\) of a float32 tensor must give a Float32Array or an Array, got a Float64Array/);
  throwsCode(() => fromTfjs(fake("int32", [1], new Float32Array(1))), "INVALID_DATA", /must give a Int32Array or an Array/);
  throwsCode(() => fromTfjs(fake("string", [1], "a")), "INVALID_DATA", /must give an Array of strings, got "a"/);
  throwsCode(() => fromTfjs(fake("float32", [3], new Float32Array(2))), "SHAPE_MISMATCH", /needs 3 storage entries, got 2/);
  throwsCode(() => fromTfjs(fake("float32", [2], [1])), "SHAPE_MISMATCH", /needs 2 values, got 1/);
  throwsCode(() => fromTfjs(fake("complex64", [2], new Float32Array(2))), "SHAPE_MISMATCH", /needs 4 storage entries/);
  throwsCode(() => fromTfjs(fake("complex64", [2], [1, 2, 3])), "SHAPE_MISMATCH", /needs 4 interleaved numbers, got 3/);
  throwsCode(() => fromTfjs(fake("int32", [1], [2147483648])), "INVALID_VALUE", /outside int32's range/);
  throwsCode(() => fromTfjs(fake("int32", [1], [1.5])), "INVALID_VALUE", /not an integer/);
  throwsCode(() => fromTfjs(fake("float32", [1], ["1"])), "INVALID_VALUE", /not a number/);
  throwsCode(() => fromTfjs(fake("bool", [1], [2])), "INVALID_VALUE", /not a boolean/);
});

test("toTfjs: every type tfjs lacks is an error naming tfjs's dtypes and the cast to make first", () => {
  const tfjsNames = new Set<string>(TFJS_DTYPES);
  let refused = 0;
  for (const t of DTYPES) {
    if (tfjsNames.has(t.name)) continue;
    refused++;
    throwsCode(() => toTfjs(Tensor.zeros(t, [1])), "UNSUPPORTED_TYPE", new RegExp(`tfjs has no ${t.name} dtype; it has float32, int32, bool, complex64, string\\. `));
  }
  assert.equal(refused, 23);
  throwsCode(() => toTfjs(Tensor.zeros("int8", [1])), "UNSUPPORTED_TYPE", /cast\(t, "int32"\) first: exact$/);
  throwsCode(() => toTfjs(Tensor.zeros("float8e5m2", [1])), "UNSUPPORTED_TYPE", /cast\(t, "float32"\) first: exact$/);
  throwsCode(() => toTfjs(Tensor.zeros("float64", [1])), "UNSUPPORTED_TYPE", /rounds to nearest even/);
  throwsCode(() => toTfjs(Tensor.zeros("int64", [1])), "UNSUPPORTED_TYPE", /wraps values outside int32's range .* and cast\(t, "float32"\) rounds them/);
  throwsCode(() => toTfjs(Tensor.zeros("complex128", [1])), "UNSUPPORTED_TYPE", /tfjs has only complex64/);
  throwsCode(() => toTfjs({} as never), "INVALID_DATA", /toTfjs's input: expected a Tensor/);
});

test("the advice is true: each type called exact comes back from int32 / float32 unchanged, every code", () => {
  for (const t of DTYPES) {
    if (t.bits > 16 || t.kind === "string" || t.kind === "complex" || t.kind === "bool") continue;
    const via = t.kind === "float" ? "float32" : "int32";
    let message: string | undefined;
    try {
      toTfjs(Tensor.zeros(t, [1]));
    } catch (e) {
      message = (e as Error).message;
    }
    assert.match(message ?? "", new RegExp(`cast\\(t, "${via}"\\) first: exact$`), t.name);
    // Every code of the type, each once, packed as the type packs (element 0 in the low bits).
    const n = 2 ** t.bits;
    const bytes = new Uint8Array(Math.ceil((n * t.bits) / 8));
    let x: Tensor;
    if (t.bits === 16) x = Tensor.fromBytes(Uint16Array.from({ length: n }, (_, i) => i), t, [n]);
    else {
      for (let k = 0; k < n; k++) {
        for (let bit = 0; bit < t.bits; bit++) {
          const at = k * t.bits + bit;
          if ((k >> bit) & 1) bytes[at >> 3] |= 1 << (at & 7);
        }
      }
      x = Tensor.fromBytes(bytes, t, [n]);
    }
    assert.equal(new Set(x.toValues().map((v, i) => (Number.isNaN(v) ? `NaN${i}` : Object.is(v, -0) ? "-0" : String(v)))).size, n, `${t.name}: ${n} distinct codes`);
    // saturate: false on the way back, or float8 infinities would come back as their max.
    const back = cast(fromTfjs(asTfjs(toTfjs(cast(x, via)))), t, { saturate: false });
    const a = x.toValues();
    const b = back.toValues();
    for (let i = 0; i < n; i++) {
      if (Number.isNaN(a[i])) assert.ok(Number.isNaN(b[i]), `${t.name} element ${i}`);
      else assert.ok(Object.is(a[i], b[i]), `${t.name} element ${i}: ${String(a[i])} -> ${String(b[i])}`);
    }
  }
});

test("docs/interop.md's TensorFlow.js example gives what the page prints", () => {
  assert.deepEqual(fromTfjs(fake("bool", [3], new Uint8Array([1, 0, 1]))).toValues(), [true, false, true]);
  const d = toTfjs(Tensor.fromValues([1, 2, 3, 4], "int32", [2, 2]));
  assert.ok(d.dtype === "int32");
  assert.deepEqual([Array.from(d.values), d.shape], [[1, 2, 3, 4], [2, 2]]);
  const f = toTfjs(cast(Tensor.fromValues([0.5, -2], "bfloat16"), "float32"));
  assert.ok(f.dtype === "float32");
  assert.deepEqual([Array.from(f.values), f.shape], [[0.5, -2], [2]]);
  const c = toTfjs(Tensor.fromValues([[1, 2]], "complex64"));
  assert.ok(c.dtype === "complex64");
  assert.deepEqual([Array.from(c.real), Array.from(c.imag), c.shape], [[1], [2], [1]]);
});
