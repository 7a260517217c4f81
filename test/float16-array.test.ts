/**
 * The platform's Float16Array in and out of tensorcast: `t.toFloat16Array()` is a view of the same
 * memory, `Tensor.fromValues(aFloat16Array, "float16")` copies exact bit patterns (NaN payloads,
 * -0), and castInto into a tensor wrapping a user's Float16Array writes through to it. These need
 * Float16Array (Node 24+, Bun, Deno); Node 20 and 22 skip them, saying so. The UNSUPPORTED_PLATFORM
 * error runs everywhere: the test hides the global where there is one.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { throwsCode } from "./support/assertions.js";
import { Tensor, cast, castInto } from "../src/index.js";

interface F16Array {
  readonly length: number;
  [i: number]: number;
  readonly buffer: ArrayBuffer;
  readonly byteOffset: number;
  subarray(a: number, b?: number): F16Array;
}
type F16Ctor = {
  new (n: number): F16Array;
  new (values: ArrayLike<number>): F16Array;
  new (buffer: ArrayBuffer, byteOffset: number, length: number): F16Array;
};

const F16 = (globalThis as unknown as { Float16Array?: F16Ctor }).Float16Array;
const SKIP = F16 === undefined ? "no Float16Array on this runtime (Node 20 and 22 lack it)" : false;

/** The bit patterns of a Float16Array, read through a Uint16Array over its memory. */
function bitsOf(h: F16Array): number[] {
  return Array.from(new Uint16Array(h.buffer, h.byteOffset, h.length));
}

function hex(codes: ArrayLike<number>): string[] {
  return Array.from(codes, (c) => `0x${c.toString(16).padStart(4, "0")}`);
}

test("toFloat16Array is a view of the tensor's memory, no copy, writes showing both ways", { skip: SKIP }, () => {
  const t = Tensor.fromValues([1.5, -0, 65504, -Infinity, 2 ** -24], "float16");
  const h = t.toFloat16Array() as unknown as F16Array;
  assert.ok(h instanceof F16!);
  assert.equal(h.buffer, (t.data as Uint16Array).buffer);
  assert.equal(h.length, 5);
  assert.deepEqual(Array.from({ length: 5 }, (_, i) => h[i]), [1.5, -0, 65504, -Infinity, 2 ** -24]);
  assert.ok(Object.is(h[1], -0));
  h[0] = 0.1;
  assert.equal((t.data as Uint16Array)[0], 0x2e66);
  (t.data as Uint16Array)[2] = 0x7bfe;
  assert.equal(h[2], 65472);
});

test("toFloat16Array keeps the view's offset: a tensor over part of a buffer gives a Float16Array over the same part", { skip: SKIP }, () => {
  const whole = new Uint16Array([0x3c00, 0x4000, 0x4200, 0x4400, 0x7e01]);
  const t = Tensor.fromStorage(whole.subarray(1, 4), "float16", [3]);
  const h = t.toFloat16Array() as unknown as F16Array;
  assert.equal(h.byteOffset, 2);
  assert.equal(h.length, 3);
  assert.deepEqual([h[0], h[1], h[2]], [2, 3, 4]);
  h[2] = -1;
  assert.deepEqual(hex(whole), hex([0x3c00, 0x4000, 0x4200, 0xbc00, 0x7e01]));
});

test("toFloat16Array round-trips a user's Float16Array through fromStorage to the same memory", { skip: SKIP }, () => {
  const user = new F16!([1, 2, 3, 4, 5, 6]);
  const t = Tensor.fromStorage(user as never, "float16", [2, 3]);
  const back = t.toFloat16Array() as unknown as F16Array;
  assert.equal(back.buffer, user.buffer);
  assert.equal(back.byteOffset, user.byteOffset);
  assert.equal(back.length, 6);
});

test("toFloat16Array on another type says to cast first (UNSUPPORTED_TYPE)", () => {
  throwsCode(() => Tensor.fromValues([1], "float32").toFloat16Array(), "UNSUPPORTED_TYPE",
    /toFloat16Array needs a float16 tensor, got float32; cast it first: cast\(t, "float16"\)/);
  throwsCode(() => Tensor.fromValues([1], "bfloat16").toFloat16Array(), "UNSUPPORTED_TYPE", /got bfloat16/);
});

test("toFloat16Array without a Float16Array in the runtime is UNSUPPORTED_PLATFORM, pointing at t.data", () => {
  const g = globalThis as Record<string, unknown>;
  const had = Object.prototype.hasOwnProperty.call(g, "Float16Array");
  const saved = g.Float16Array;
  try {
    delete g.Float16Array;
    throwsCode(() => Tensor.fromValues([1], "float16").toFloat16Array(), "UNSUPPORTED_PLATFORM",
      /this runtime has no Float16Array .*use t\.data, the Uint16Array of float16 bit patterns/);
    // The type check comes first: a float32 tensor is told to cast, whatever the runtime.
    throwsCode(() => Tensor.fromValues([1], "float32").toFloat16Array(), "UNSUPPORTED_TYPE");
  } finally {
    if (had) g.Float16Array = saved;
  }
});

test("fromValues(Float16Array, float16) copies every one of the 65,536 bit patterns exactly (NaN payloads, -0)", { skip: SKIP }, () => {
  const codes = new Uint16Array(0x10000);
  for (let c = 0; c < codes.length; c++) codes[c] = c;
  const h = new F16!(codes.buffer, 0, codes.length);
  const t = Tensor.fromValues(h as never, "float16", [256, 256]);
  assert.deepEqual(t.shape, [256, 256]);
  const got = t.data as Uint16Array;
  assert.notEqual(got.buffer, codes.buffer, "fromValues copies; fromStorage is the no-copy way");
  for (let c = 0; c < codes.length; c++) if (got[c] !== c) assert.fail(`code 0x${c.toString(16)} came back as 0x${got[c].toString(16)}`);
  codes[0] = 0x3c00;
  assert.equal(got[0], 0, "the tensor must not share the Float16Array's memory");
});

test("fromValues(Float16Array, float16) reads a view at an offset and checks the shape", { skip: SKIP }, () => {
  const bits = new Uint16Array([0x1111, 0x7c01, 0xfe00, 0x8000, 0x2222]);
  const h = new F16!(bits.buffer, 2, 3);
  assert.deepEqual(hex(Tensor.fromValues(h as never, "float16").data as Uint16Array), hex([0x7c01, 0xfe00, 0x8000]));
  throwsCode(() => Tensor.fromValues(h as never, "float16", [2]), "SHAPE_MISMATCH", /shape \[2\] needs 2 values, got 3/);
});

test("fromValues(Float16Array) for another type takes its elements as numbers", { skip: SKIP }, () => {
  const h = new F16!([1.5, -0, 65504, NaN]);
  const t = Tensor.fromValues(h as never, "float32");
  assert.deepEqual(hex(new Uint16Array((t.data as Float32Array).buffer).filter((_, i) => i % 2 === 1)), hex([0x3fc0, 0x8000, 0x477f, 0x7fc0]));
  // Numbers are checked as numbers: float16's max is beyond float8e4m3fn's.
  throwsCode(() => Tensor.fromValues(new F16!([65504]) as never, "float8e4m3fn"), "INVALID_VALUE", /outside float8e4m3fn's range/);
});

test("castInto a tensor wrapping a user's Float16Array writes through to it, bit for bit like cast", { skip: SKIP }, () => {
  const values = [0.1, -0, 65519.99, 65520, -1e-8, 2 ** -25, 3 * 2 ** -25, NaN, -Infinity, 1 + 2 ** -11];
  for (const from of ["float32", "float64", "bfloat16", "int32"] as const) {
    const x = cast(Tensor.fromValues(values, "float64"), from);
    const user = new F16!(values.length);
    const out = Tensor.fromStorage(user as never, "float16", [values.length]);
    assert.equal(castInto(x, out), out);
    assert.deepEqual(hex(bitsOf(user)), hex(cast(x, "float16").data as Uint16Array), from);
  }
  // And back out of one: a float16 input that wraps a Float16Array.
  const user = new F16!([0.5, -2, 65504, -0]);
  const f32 = Tensor.zeros("float32", [4]);
  castInto(Tensor.fromStorage(user as never, "float16", [4]), f32);
  assert.deepEqual(Array.from(f32.data as Float32Array), [0.5, -2, 65504, -0]);
  assert.ok(Object.is((f32.data as Float32Array)[3], -0));
});

test("castInto refuses an output over the input's own Float16Array memory (ALIASED_OUTPUT)", { skip: SKIP }, () => {
  const user = new F16!([1, 2, 3, 4]);
  const x = Tensor.fromStorage(user as never, "float16", [4]);
  const out = Tensor.fromBytes(new Uint8Array(user.buffer), "int16", [4]);
  throwsCode(() => castInto(x, out), "ALIASED_OUTPUT");
  assert.deepEqual(bitsOf(user), [0x3c00, 0x4000, 0x4200, 0x4400]);
});
