/**
 * The converter's statistics: the float32 path of measureConversion (both types exact in float32,
 * decoded to float32 blocks, a float32 source read in place) gives the same numbers as the general
 * float64 path for every source and target it serves, on every code of the 8- and 16-bit sources,
 * random float32 bit patterns (NaN payloads, infinities, subnormals, every exponent) and the
 * values at each target's limits; and convertChunk into a reused buffer gives cast's bytes and
 * statistics, whatever garbage the buffer held. Both paths are also checked against the loop they
 * replaced (kept here as the reference), over the same inputs, and float64 sources and integer
 * targets (the general path only) too.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { cast, dtype, Tensor, type DTypeName } from "../../src/index.js";
import { convertChunk, measureConversion } from "../../src/node/convert/kernel.js";
import { everyCodeTensor } from "../support/cast-inputs.js";
import { random } from "./helpers.js";
import { referenceStats } from "./reference-stats.js";

const TARGETS: DTypeName[] = [
  "float16", "bfloat16", "float32", "float8e4m3fn", "float8e4m3fnuz", "float8e5m2", "float8e5m2fnuz", "float8e8m0",
];

/**
 * Float32 values: random bit patterns over two and a half blocks (so blocks and a partial last
 * one are crossed), then the limits, ties and overflow points of the targets.
 */
function float32s(): Tensor {
  const next = random(16);
  const n = 2 * 65536 + 4099;
  const bits = new Uint32Array(n + 64);
  for (let i = 0; i < n; i++) bits[i] = (next() * 2 ** 32) >>> 0;
  const f = new Float32Array(bits.buffer);
  // Ordinary weights too, so that the common both-finite branch dominates a block.
  for (let i = 0; i < 65536; i++) f[65536 + i] = (next() - 0.5) * 0.04;
  f.set([
    0, -0, Infinity, -Infinity, NaN, -NaN, 65504, 65519.996, 65520, -65520, 3.3895314e38, 3.4e38, 448, 464, 465, 480, 57344,
    61440, 61439.996, 2 ** -24, 2 ** -25, 2 ** -25 * 1.5, 2 ** -149, -(2 ** -149), 2 ** -127, 2 ** 127, 2 ** 128 - 2 ** 104,
    1.0009765625, 1.00048828125, 240, 248, 256, 1e-40, -1e-40, 0.1, -0.1,
  ], n);
  return Tensor.fromStorage(f, "float32", [f.length]);
}

const SOURCES: [string, () => Tensor][] = [
  ["float32 bit patterns and limits", float32s],
  ["every float16 code", () => everyCodeTensor(dtype("float16"))],
  ["every bfloat16 code", () => everyCodeTensor(dtype("bfloat16"))],
  ["every float8e4m3fn code", () => everyCodeTensor(dtype("float8e4m3fn"))],
  ["every float8e5m2 code", () => everyCodeTensor(dtype("float8e5m2"))],
  ["every float8e8m0 code", () => everyCodeTensor(dtype("float8e8m0"))],
];


for (const [what, make] of SOURCES) {
  test(`statistics: the float32 path equals the float64 path, ${what} to every 8- to 32-bit float`, () => {
    const x = make();
    for (const to of TARGETS) {
      if (to === x.dtype.name) continue;
      for (const saturate of [true, false]) {
        const y = cast(x, to, { saturate });
        const fast = measureConversion(x, y);
        const general = measureConversion(x, y, "float64");
        assert.deepEqual(fast, general, `${x.dtype.name} -> ${to}, saturate ${saturate}`);
        assert.deepEqual(general, referenceStats(x, y), `${x.dtype.name} -> ${to}, saturate ${saturate}: against the reference`);
      }
    }
  });
}

test("statistics: the float32 path counts what it should (float32 -> float16 and bfloat16)", () => {
  const x = Tensor.fromValues([1, 1.0009765625 + 2 ** -12, 70000, NaN, Infinity, -0, 65520, 3.4e38], "float32");
  assert.deepEqual(measureConversion(x, cast(x, "float16")), {
    // 1 + 2^-10 + 2^-12 rounds to 1 + 2^-10: error 2^-12. 70000, 65520 and 3.4e38 become Inf.
    count: 8, maxAbsError: 2 ** -12, maxRelError: 2 ** -12 / (1.0009765625 + 2 ** -12), changed: 4, outOfRange: 3, saturated: 0,
    nonFinite: 5, becameNonFinite: 3,
  });
  // 3.4e38 rounds past bfloat16's max: Inf; 70000 rounds to 70144 and 65520 to 65536 (8 bits of
  // precision); 1 + 2^-10 + 2^-12 to 1.
  const b = measureConversion(x, cast(x, "bfloat16"));
  assert.deepEqual([b.changed, b.outOfRange, b.nonFinite, b.becameNonFinite, b.maxAbsError], [4, 1, 3, 1, 144]);
});

test("convertChunk into a reused buffer: cast's bytes and statistics, whatever the buffer held", () => {
  const x = float32s();
  const raw = x.bytes();
  for (const [to, outBytes] of [["bfloat16", 2], ["float16", 2], ["float8e4m3fn", 1], ["float4e2m1", 0.5], ["int4", 0.5], ["int64", 8]] as const) {
    const expected = cast(x, to);
    const fresh = convertChunk(raw, "float32", to, x.size, true, "raw");
    const into = new Uint8Array(Math.ceil(x.size * outBytes)).fill(0xa5);
    const reused = convertChunk(raw, "float32", to, x.size, true, "raw", into);
    assert.equal(reused.bytes.buffer, into.buffer, `${to}: written into the buffer given`);
    assert.deepEqual(reused.bytes, expected.bytes(), to);
    assert.deepEqual(fresh.bytes, expected.bytes(), to);
    assert.deepEqual(reused.stats, fresh.stats, to);
    // A buffer of another length is not used.
    const wrong = new Uint8Array(into.length + 1);
    assert.notEqual(convertChunk(raw, "float32", to, x.size, true, "raw", wrong).bytes.buffer, wrong.buffer, to);
  }
});

test("statistics: the general path equals the reference for float64 sources and integer targets", () => {
  const next = random(17);
  const values = Array.from({ length: 5000 }, () => (next() - 0.5) * 2 ** Math.floor(next() * 80 - 20));
  values.push(0, -0, NaN, Infinity, -Infinity, 127.5, -128.5, 255.5, 65504, 65520, 1e300, -1e300, 2 ** -1074);
  const x = Tensor.fromValues(values, "float64");
  for (const to of ["float16", "bfloat16", "float32", "float8e4m3fn", "float8e5m2fnuz", "float8e8m0", "float4e2m1", "int8", "uint8", "int32", "uint4"] as DTypeName[]) {
    for (const saturate of [true, false]) {
      const y = cast(x, to, { saturate });
      assert.deepEqual(measureConversion(x, y), referenceStats(x, y), `float64 -> ${to}, saturate ${saturate}`);
    }
  }
  const f = float32s();
  for (const to of ["int8", "uint8", "int16", "float4e2m1", "float6e3m2"] as DTypeName[]) {
    const y = cast(f, to);
    assert.deepEqual(measureConversion(f, y), referenceStats(f, y), `float32 -> ${to}`);
  }
});
