/**
 * Property tests (fast-check): casting to a wider type and back is the identity, and float-to-float
 * casts are monotonic. Small types are covered exhaustively elsewhere; these sample the 32- and
 * 64-bit domains, bit patterns included, with a fixed seed so a failure reproduces.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { Tensor, cast, type DTypeName } from "../../src/index.js";
import { property } from "../support/suite.js";

const RUNS = property(300, 20261122);
const BATCH = 64;

/** Same bytes, except that any NaN equals any NaN of the type. */
function sameValues(a: Tensor, b: Tensor): boolean {
  const x = a.toValues();
  const y = b.toValues();
  return x.length === y.length && x.every((v, i) => Object.is(v, y[i]) || (Number.isNaN(v) && Number.isNaN(y[i])));
}

const f32Bits = fc.integer({ min: 0, max: 0xffffffff });
const f64Words = fc.tuple(fc.integer({ min: 0, max: 0xffffffff }), fc.integer({ min: 0, max: 0xffffffff }));

function float32From(bits: number[]): Tensor {
  return Tensor.fromBytes(new Uint8Array(new Uint32Array(bits).buffer), "float32", [bits.length]);
}
function float64From(words: [number, number][]): Tensor {
  return Tensor.fromBytes(new Uint8Array(new Uint32Array(words.flat()).buffer), "float64", [words.length]);
}

/** Pairs (narrow, wide) where every value of narrow is a value of wide. */
const WIDENINGS: [DTypeName, DTypeName][] = [
  ["float32", "float64"], ["int32", "float64"], ["uint32", "float64"], ["int32", "int64"], ["uint32", "int64"],
  ["uint32", "uint64"], ["int16", "float32"], ["int8", "int32"], ["uint16", "int32"], ["float16", "float32"],
  ["bfloat16", "float32"], ["float8e4m3fn", "float16"], ["float8e5m2", "float16"], ["float8e8m0", "float32"],
  ["float4e2m1", "float8e4m3fn"], ["float6e2m3", "float16"], ["float6e3m2", "bfloat16"], ["int4", "int8"],
  ["uint2", "uint4"], ["float8e4m3fnuz", "float32"], ["float8e5m2fnuz", "float64"], ["bool", "int8"],
];

for (const [narrow, wide] of WIDENINGS) {
  test(`${narrow} -> ${wide} -> ${narrow} is the identity`, () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 0xffffffff }), { minLength: 1, maxLength: BATCH }), (raw) => {
        // Random bit patterns reinterpreted as the narrow type's storage.
        const n = raw.length;
        const width = Tensor.zeros(narrow, [n]).bytes().length;
        const bytes = new Uint8Array(width);
        for (let i = 0; i < width; i++) bytes[i] = raw[i % n] >>> ((i % 4) * 8);
        if (narrow === "bool") bytes.forEach((b, i) => (bytes[i] = b & 1));
        const x = Tensor.fromBytes(bytes, narrow, [n]);
        const back = cast(cast(x, wide), narrow, { saturate: false });
        assert.ok(sameValues(x, back), `${x.toValues()} came back as ${back.toValues()}`);
      }),
      RUNS,
    );
  });
}

test("float32 -> float64 -> float32 keeps the exact bits of every non-NaN float32", () => {
  fc.assert(
    fc.property(fc.array(f32Bits, { minLength: 1, maxLength: BATCH }), (bits) => {
      const x = float32From(bits);
      const back = new Uint32Array(cast(cast(x, "float64"), "float32").bytes().buffer);
      bits.forEach((b, i) => {
        const nan = (b & 0x7f800000) === 0x7f800000 && (b & 0x7fffff) !== 0;
        assert.equal(back[i], (nan ? (b & 0x80000000) | 0x7fc00000 : b) >>> 0);
      });
    }),
    RUNS,
  );
});

const FLOAT_TARGETS: DTypeName[] = [
  "float32", "float16", "bfloat16", "float8e4m3fn", "float8e4m3fnuz", "float8e5m2", "float8e5m2fnuz",
  "float8e8m0", "float4e2m1", "float6e2m3", "float6e3m2",
];

for (const to of FLOAT_TARGETS) {
  for (const saturate of [true, false]) {
    test(`float64 -> ${to} (saturate=${saturate}) is monotonic`, () => {
      fc.assert(
        fc.property(fc.array(f64Words, { minLength: 2, maxLength: BATCH }), fc.array(fc.double({ noNaN: true }), { minLength: 2, maxLength: BATCH }), (words, doubles) => {
          // Bit patterns cover every exponent; fc.double adds human-scale values and infinities.
          const mixed = [...(float64From(words).toValues() as number[]), ...doubles].filter((v) => !Number.isNaN(v));
          const scaled = mixed.map((v, i) => (i % 3 === 0 ? v * 2 ** -1000 : v));
          const sorted = [...mixed, ...scaled].sort((p, q) => p - q);
          const y = cast(Tensor.fromValues(sorted, "float64"), to, { saturate }).toValues() as number[];
          for (let i = 1; i < y.length; i++) {
            if (Number.isNaN(y[i - 1]) || Number.isNaN(y[i])) continue;
            if (!(y[i - 1] <= y[i])) assert.fail(`${sorted[i - 1]} -> ${y[i - 1]} but ${sorted[i]} -> ${y[i]}`);
          }
        }),
        RUNS,
      );
    });
  }
}
