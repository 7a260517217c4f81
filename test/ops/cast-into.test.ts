/**
 * castInto: the bytes of `cast` for every pair, whatever the output held before (every kernel
 * either overwrites each element or gets a zeroed output); reuse across calls; its own errors
 * (shape, aliasing) and cast's.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { cast, castInto, DTYPES, Tensor, type CastOptions, type DType } from "../../src/index.js";
import { storageLength, TYPED_ARRAYS } from "../../src/tensor.js";
import { throwsCode } from "../support/assertions.js";
import { Rng } from "../support/rng.js";

const NUMERIC = DTYPES.filter((t) => t.kind !== "string" && t.kind !== "complex");

/** Random bit patterns (bool 0 / 1; half the float32 / float64 elements moderate values). */
function randomStorage(t: DType, size: number, rng: Rng): Exclude<Tensor["data"], string[]> {
  const ctor = TYPED_ARRAYS[t.array as Exclude<DType["array"], "Array">];
  const data = new ctor(storageLength(t, size));
  const u8 = new Uint8Array(data.buffer);
  for (let i = 0; i < u8.length; i++) u8[i] = t.kind === "bool" ? rng.u32() & 1 : rng.u32();
  if (data instanceof Float32Array || data instanceof Float64Array) {
    for (let i = 0; i < data.length; i += 2) data[i] = ((rng.u32() / 2 ** 32) * 2 - 1) * 2 ** (rng.below(40) - 20);
  }
  return data;
}

function optionSets(to: DType): CastOptions[] {
  if (to.name === "float8e8m0") return (["up", "down", "nearest"] as const).flatMap((roundMode) => [{ roundMode }, { roundMode, saturate: false }]);
  if (to.format && to.bits <= 8) return [{}, { saturate: false }];
  return [{}];
}

function sameBytes(got: Tensor, want: Tensor, what: string): void {
  assert.ok(Buffer.from(got.bytes()).equals(Buffer.from(want.bytes())), `${what}: bytes differ from cast()`);
}

test("every numeric pair and option set: castInto over a garbage-filled output gives cast's bytes", () => {
  const rng = new Rng(2026);
  let checked = 0;
  for (const from of NUMERIC) {
    // 8 * 37 + 5 elements: the packed targets end mid-byte, so a stale high nibble would show.
    const x = Tensor.fromStorage(randomStorage(from, 301, rng) as never, from, [7, 43]);
    for (const to of NUMERIC) {
      for (const opts of optionSets(to)) {
        const out = Tensor.fromStorage(randomStorage(to, 301, rng) as never, to, [7, 43]);
        const result = castInto(x, out, opts);
        assert.equal(result, out);
        sameBytes(out, cast(x, to, opts), `${from.name} -> ${to.name} ${JSON.stringify(opts)}`);
        checked++;
      }
    }
  }
  assert.ok(checked > 700, `${checked} configurations`);
});

test("large tensors: every WebAssembly and fast kernel chunk boundary, output reused across calls", () => {
  const rng = new Rng(7);
  const size = 3 * 16384 + 11;
  const pairs: [string, string][] = [
    ["float32", "float16"], ["float16", "float32"], ["float32", "bfloat16"], ["bfloat16", "float32"],
    ["float32", "int8"], ["float32", "uint8"], ["float64", "float32"], ["int64", "int32"],
    ["float8e4m3fn", "float32"], ["float32", "float8e4m3fn"], ["float32", "uint4"], ["float16", "float4e2m1"],
  ];
  for (const [a, b] of pairs) {
    const from = DTYPES.find((t) => t.name === a)!;
    const to = DTYPES.find((t) => t.name === b)!;
    const out = Tensor.zeros(to, [size]);
    for (let round = 0; round < 2; round++) {
      const x = Tensor.fromStorage(randomStorage(from, size, rng) as never, from, [size]);
      castInto(x, out);
      sameBytes(out, cast(x, to), `${a} -> ${b}, call ${round + 1}`);
    }
  }
});

test("string sides and same-type casts write into the output", () => {
  const x = Tensor.fromValues([1.5, -0.1, 1e-5, NaN], "float32");
  const strings = Tensor.fromValues(["x", "y", "z", "w"], "string");
  castInto(x, strings);
  assert.deepEqual(strings.data, ["1.5", "-0.1", "1e-05", "nan"]);
  const back = Tensor.fromValues([0, 0, 0, 0], "float16");
  castInto(strings, back);
  sameBytes(back, cast(strings, "float16"), "string -> float16");
  const copy = Tensor.zeros("float32", [4]);
  castInto(x, copy);
  sameBytes(copy, x, "same type");
  assert.notEqual(copy.data, x.data);
  assert.equal(castInto(x, x), x, "the same storage and type: nothing to do");
});

test("errors: shape, aliasing, a non-tensor output, and cast's own rules", () => {
  const x = Tensor.fromValues([1, 2, 3, 4], "float32", [2, 2]);
  throwsCode(() => castInto(x, Tensor.zeros("float16", [4])), "SHAPE_MISMATCH", /\[4\] differs from the input's \[2, 2\]/);
  throwsCode(() => castInto(x, Tensor.zeros("float16", [2, 3])), "SHAPE_MISMATCH");
  // Overlapping bytes: the output a view of the input's buffer.
  const u16 = new Uint16Array(x.data.buffer, 0, 4);
  throwsCode(() => castInto(x, Tensor.fromStorage(u16, "float16", [2, 2])), "ALIASED_OUTPUT", /float32 -> float16/);
  const bits = new Int32Array(x.data.buffer);
  throwsCode(() => castInto(x, Tensor.fromStorage(bits, "int32", [2, 2])), "ALIASED_OUTPUT");
  // Disjoint parts of one buffer are fine.
  const buffer = new ArrayBuffer(24);
  const input = Tensor.fromStorage(new Float32Array(buffer, 0, 4), "float32", [2, 2]);
  input.data.set([1, 2, 3, 4]);
  const output = Tensor.fromStorage(new Uint16Array(buffer, 16, 4), "float16", [2, 2]);
  castInto(input, output);
  sameBytes(output, cast(input, "float16"), "disjoint views of one buffer");
  throwsCode(() => castInto(x, new Uint16Array(4) as never), "INVALID_DATA", /expects a Tensor as output/);
  throwsCode(() => castInto(new Float32Array(4) as never, Tensor.zeros("float16", [4])), "INVALID_DATA", /expects a Tensor as input/);
  throwsCode(() => castInto(x, Tensor.zeros("float8e4m3fn", [2, 2]), { opset: 13 }), "UNSUPPORTED_TYPE", /Cast-13/);
  throwsCode(() => castInto(x, Tensor.zeros("float16", [2, 2]), { saturate: false, opset: 13 }), "INVALID_ATTRIBUTE");
  throwsCode(() => castInto(x, Tensor.zeros("float16", [2, 2]), { bogus: 1 } as never), "INVALID_ATTRIBUTE", /unknown option/);
  throwsCode(() => castInto(x, Tensor.zeros("complex64", [2, 2])), "UNSUPPORTED_TYPE");
});
