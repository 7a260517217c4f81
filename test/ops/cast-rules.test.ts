/**
 * One test per row of DECISIONS.md (numeric Cast, float8/float4/e8m0), with the crafted values
 * that tell the rule apart from its plausible alternatives. docs/semantics.md points here.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { Tensor, cast, type CastOptions, type DTypeName, type InputOf } from "../../src/index.js";

function codes(values: number[], from: DTypeName, to: DTypeName, opts: CastOptions = {}): number[] {
  const t = cast(Tensor.fromValues(values as InputOf<DTypeName>[], from), to, opts);
  const bytes = t.bytes();
  if (t.dtype.bits === 16) return Array.from(new Uint16Array(bytes.buffer, bytes.byteOffset, t.size));
  if (t.dtype.bits === 32) return Array.from(new Uint32Array(bytes.buffer, bytes.byteOffset, t.size));
  return Array.from(bytes);
}
function values(input: InputOf<DTypeName>[], from: DTypeName, to: DTypeName, opts: CastOptions = {}): unknown[] {
  return cast(Tensor.fromValues(input, from), to, opts).toValues();
}

test("float -> float: one rounding to nearest even from the exact value; overflow to Inf", () => {
  // 1 + 2^-11 + 2^-40 is just above the f16 tie 1 + 2^-11: one rounding gives 0x3C01; via f32 it
  // would be the tie itself and round to even, 0x3C00.
  assert.deepEqual(codes([1 + 2 ** -11 + 2 ** -40], "float64", "float16"), [0x3c01]);
  assert.deepEqual(codes([65519, 65520, -65520], "float32", "float16"), [0x7bff, 0x7c00, 0xfc00]);
  assert.deepEqual(codes([2 ** -25, 2 ** -25 + 2 ** -40, 3 * 2 ** -25], "float64", "float16"), [0x0000, 0x0001, 0x0002]);
  assert.deepEqual(codes([1e39], "float64", "float32"), [0x7f800000]);
});

test("float64 -> bfloat16 / float8 / float4: one rounding, no detour through float32", () => {
  // bf16: 1 + 2^-8 is a tie (even: 1.0); 2^-40 above it must round up to 1 + 2^-7 = 0x3F81.
  assert.deepEqual(codes([1 + 2 ** -8 + 2 ** -40], "float64", "bfloat16"), [0x3f81]);
  // e4m3fn: 1 + 2^-4 is a tie (-> 1.0); 2^-30 above it must round up to 1.125 = 0x39.
  assert.deepEqual(codes([1 + 2 ** -4 + 2 ** -30], "float64", "float8e4m3fn"), [0x39]);
  // float4: 2.5 is a tie (-> 2); 2^-35 above it must round up to 3 = 0x5.
  assert.deepEqual(codes([2.5 + 2 ** -35, 2.5], "float64", "float4e2m1"), [0x45]); // codes 0x5, 0x4
});

test("int64 -> float32: one rounding from the exact 64-bit integer (round-to-odd intermediate)", () => {
  // 2^60 + 2^36 + 1: float32 ulp is 2^37, so this is just above a tie and rounds up to 2^60 + 2^37.
  // Through float64 first it would become the tie 2^60 + 2^36 and round to even, 2^60.
  const x = 2n ** 60n + 2n ** 36n + 1n;
  assert.deepEqual(values([x], "int64", "float32"), [2 ** 60 + 2 ** 37]);
  assert.deepEqual(values([2n ** 24n + 1n, -(2n ** 63n)], "int64", "float32"), [16777216, -(2 ** 63)]);
  assert.deepEqual(values([2n ** 64n - 1n], "uint64", "float32"), [2 ** 64]);
  assert.deepEqual(values([2n ** 53n + 1n, 2n ** 64n - 1n], "uint64", "float64"), [2 ** 53, 2 ** 64]);
});

test("float -> bool: only +/-0 are false; NaN is true", () => {
  assert.deepEqual(values([0, -0, NaN, 1e-45, -Infinity], "float32", "bool"), [false, false, true, true, true]);
  // Decoded by value, so the float8 -0 code is false (onnxruntime tests the raw byte and says true).
  assert.deepEqual(values([-0, 0.5], "float8e4m3fn", "bool"), [false, true]);
});

test("float -> int32/int64: truncate; out of range, NaN and Inf give INT_MIN", () => {
  assert.deepEqual(values([2.9, -2.9, 2147483647.9, 2147483648, NaN, Infinity, -Infinity, -2147483648.9], "float64", "int32"),
    [2, -2, 2147483647, -2147483648, -2147483648, -2147483648, -2147483648, -2147483648]);
  const min = -(2n ** 63n);
  assert.deepEqual(values([1e19, NaN, -Infinity, -9.5, 2 ** 62], "float64", "int64"), [min, min, min, -9n, 2n ** 62n]);
});

test("float -> int8/int16/uint8/uint16: the int32 result's low bits", () => {
  assert.deepEqual(values([300, -300, 3e9, NaN, Infinity], "float32", "int8"), [44, -44, 0, 0, 0]);
  assert.deepEqual(values([300, -300, -1.5], "float32", "uint8"), [44, 212, 255]);
  assert.deepEqual(values([65504], "float16", "int8"), [-32]);
  assert.deepEqual(values([65504], "float16", "uint8"), [224]);
  assert.deepEqual(values([70000.5, -1], "float64", "uint16"), [4464, 65535]);
});

test("float -> uint32 / uint64: the shifted x86-64 scheme", () => {
  assert.deepEqual(values([3e9, -3e9, 1e19, Infinity, NaN, -Infinity], "float64", "uint32"),
    [3000000000, 2147483648, 0, 0, 2147483648, 2147483648]);
  const top = 2n ** 63n;
  assert.deepEqual(values([-1e19, NaN, -Infinity, 1e30, Infinity, -3e9, 1.5e19], "float64", "uint64"),
    [top, top, top, 0n, 0n, 18446744070709551616n, 15000000000000000000n]);
});

test("float16 / bfloat16 / float8 -> int: exact decode, then the same x86-64 rule", () => {
  // e5m2 +Inf -> int8: INT_MIN's low bits, 0 (onnxruntime saturates to 127).
  assert.deepEqual(values([Infinity, NaN, -Infinity], "float8e5m2", "int8", {}), [0, 0, 0]);
  assert.deepEqual(values([Infinity, NaN], "float16", "int32"), [-2147483648, -2147483648]);
  assert.deepEqual(values([NaN], "bfloat16", "int64"), [-(2n ** 63n)]);
});

test("float -> int4/uint4/int2/uint2: truncate toward zero, then keep the low bits", () => {
  const xs = [0.5, 1.5, 2.5, -0.5, -2.5, 7.5, 8, 15.5, 300, -300, NaN];
  assert.deepEqual(values(xs, "float32", "int4"), [0, 1, 2, 0, -2, 7, -8, -1, -4, 4, 0]);
  assert.deepEqual(values(xs, "float32", "uint4"), [0, 1, 2, 0, 14, 7, 8, 15, 12, 4, 0]);
  assert.deepEqual(values(xs, "float32", "int2"), [0, 1, -2, 0, -2, -1, 0, -1, 0, 0, 0]);
  assert.deepEqual(values([1.5, -1.5, 3.9, 4], "float32", "uint2"), [1, 3, 3, 0]);
});

test("int -> int: two's-complement wrap, sub-byte types included", () => {
  assert.deepEqual(values([200n, -129n, 2n ** 40n + 5n], "int64", "int8"), [-56, 127, 5]);
  assert.deepEqual(values([2n ** 64n - 1n], "uint64", "int8"), [-1]);
  assert.deepEqual(values([-129n], "int64", "uint8"), [127]);
  assert.deepEqual(values([-9, 7, 8, -8], "int32", "int4"), [7, 7, -8, -8]);
  assert.deepEqual(values([-9], "int32", "uint4"), [7]);
  assert.deepEqual(values([-8, 7], "int4", "uint4"), [8, 7]);
  assert.deepEqual(values([7], "int4", "int2"), [-1]);
  assert.deepEqual(values([4294967295], "uint32", "int32"), [-1]);
  assert.deepEqual(values([-1], "int32", "uint64"), [2n ** 64n - 1n]);
  assert.deepEqual(values([-1], "int8", "int64"), [-1n]);
});

test("int -> float: round to nearest even, overflow to Inf; float8 targets saturate", () => {
  assert.deepEqual(values([16777217, 65520, 70000], "int32", "float32"), [16777216, 65520, 70000]);
  assert.deepEqual(codes([65520, 70000], "int32", "float16"), [0x7c00, 0x7c00]);
  assert.deepEqual(values([70000], "int32", "bfloat16"), [70144]);
  assert.deepEqual(codes([2147483647], "int32", "float8e4m3fn"), [0x7e]);
  assert.deepEqual(codes([2147483647], "int32", "float8e4m3fn", { saturate: false }), [0x7f]);
});

test("bool -> number: 1 / 0; bool -> float8e8m0: 0x7F / 0x00 whatever saturate says", () => {
  assert.deepEqual(values([true, false], "bool", "float32"), [1, 0]);
  assert.deepEqual(values([true, false], "bool", "int64"), [1n, 0n]);
  assert.deepEqual(codes([1, 0], "bool", "float8e8m0"), [0x7f, 0x00]);
  assert.deepEqual(codes([1, 0], "bool", "float8e8m0", { saturate: false }), [0x7f, 0x00]);
  assert.deepEqual(codes([1, 0], "bool", "float8e4m3fn"), [0x38, 0x00]);
});

test("NaN outputs: the target's quiet NaN with the input's sign", () => {
  const negNaN = Tensor.fromBytes(new Uint8Array([0x00, 0x00, 0xc0, 0xff]), "float32", [1]);
  const posNaN = Tensor.fromBytes(new Uint8Array([0x01, 0x00, 0x80, 0x7f]), "float32", [1]);
  const hex = (t: Tensor) => Array.from(t.bytes(), (b) => b.toString(16).padStart(2, "0")).reverse().join("");
  assert.equal(hex(cast(posNaN, "float16")), "7e00");
  assert.equal(hex(cast(negNaN, "float16")), "fe00");
  assert.equal(hex(cast(posNaN, "bfloat16")), "7fc0");
  assert.equal(hex(cast(negNaN, "bfloat16")), "ffc0");
  assert.equal(hex(cast(posNaN, "float8e4m3fn")), "7f");
  assert.equal(hex(cast(negNaN, "float8e4m3fn")), "ff");
  assert.equal(hex(cast(posNaN, "float8e5m2")), "7e");
  assert.equal(hex(cast(negNaN, "float8e4m3fnuz")), "80");
  assert.equal(hex(cast(posNaN, "float8e5m2fnuz")), "80");
  assert.equal(hex(cast(negNaN, "float8e8m0")), "ff");
  assert.equal(hex(cast(negNaN, "float64")), "fff8000000000000");
  assert.equal(hex(cast(posNaN, "float64")), "7ff8000000000000");
  // Same type: the bytes themselves, payload and all.
  assert.equal(hex(cast(posNaN, "float32")), "7f800001");
});

test("float8 saturate=true: Inf and overflow give +/-max for all four types, at every opset", () => {
  const xs = [Infinity, -Infinity, 1e6, -1e6];
  for (const opset of [19, 21, 23, 24, 25, 28]) {
    assert.deepEqual(codes(xs, "float32", "float8e4m3fn", { opset }), [0x7e, 0xfe, 0x7e, 0xfe]);
    assert.deepEqual(codes(xs, "float32", "float8e4m3fnuz", { opset }), [0x7f, 0xff, 0x7f, 0xff]);
    assert.deepEqual(codes(xs, "float32", "float8e5m2", { opset }), [0x7b, 0xfb, 0x7b, 0xfb]);
    assert.deepEqual(codes(xs, "float32", "float8e5m2fnuz", { opset }), [0x7f, 0xff, 0x7f, 0xff]);
  }
});

test("float8 saturate=false: e5m2 overflows to Inf, the others to NaN once the RNE result exceeds max", () => {
  const opts = { saturate: false };
  // e5m2: 61440 rounds to 65536 (beyond max 57344) and is Inf, not NaN.
  assert.deepEqual(codes([61440, 65535, -61440, Infinity], "float32", "float8e5m2", opts), [0x7c, 0x7c, 0xfc, 0x7c]);
  // e4m3fn: 464 is the tie that rounds down to 448; anything above is NaN (480..495 included).
  assert.deepEqual(codes([464, 464.00003, 480, 495, -500, Infinity], "float32", "float8e4m3fn", opts),
    [0x7e, 0x7f, 0x7f, 0x7f, 0xff, 0x7f]);
  assert.deepEqual(codes([464.00003], "float32", "float8e4m3fn"), [0x7e]);
  // e4m3fnuz: 248 ties to 256 (240 is odd), which overflows.
  assert.deepEqual(codes([248, 240], "float32", "float8e4m3fnuz", opts), [0x80, 0x7f]);
  assert.deepEqual(codes([248], "float32", "float8e4m3fnuz"), [0x7f]);
  assert.deepEqual(codes([61440, -Infinity], "float32", "float8e5m2fnuz", opts), [0x80, 0x80]);
  assert.deepEqual(codes([61440], "float32", "float8e5m2fnuz"), [0x7f]);
});

test("float8 to float8: a cast of the decoded value", () => {
  assert.deepEqual(codes([57344], "float8e5m2", "float8e4m3fn"), [0x7e]);
  assert.deepEqual(codes([57344], "float8e5m2", "float8e4m3fn", { saturate: false }), [0x7f]);
  assert.deepEqual(codes([448], "float8e4m3fn", "float8e4m3fnuz"), [0x7f]);
  assert.deepEqual(codes([448], "float8e4m3fn", "float8e4m3fnuz", { saturate: false }), [0x80]);
  assert.deepEqual(codes([Infinity], "float8e5m2", "float8e5m2fnuz", { saturate: false }), [0x80]);
});

test("-0 -> fnuz types is +0", () => {
  assert.deepEqual(codes([-0, -(2 ** -11)], "float32", "float8e4m3fnuz"), [0x00, 0x00]);
  assert.deepEqual(codes([-0], "float32", "float8e5m2fnuz"), [0x00]);
  assert.deepEqual(codes([-0, -(2 ** -10)], "float32", "float8e4m3fn"), [0x80, 0x80]);
});

test("float4e2m1: RNE within +/-6, always saturates, +/-Inf -> +/-6, NaN -> 0x8, -NaN -> 0x0", () => {
  const xs = [0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5, 5.0001, -1e-7, 1e-7, 7, -100, Infinity, -Infinity];
  const want = [0x0, 0x2, 0x2, 0x4, 0x4, 0x6, 0x6, 0x7, 0x8, 0x0, 0x7, 0xf, 0x7, 0xf];
  const t = cast(Tensor.fromValues(xs, "float64"), "float4e2m1", { saturate: false });
  const got = Array.from({ length: xs.length }, (_, i) => (t.bytes()[i >> 1] >> ((i & 1) * 4)) & 0xf);
  assert.deepEqual(got, want);
  const nans = Tensor.fromBytes(new Uint8Array([0, 0, 0xc0, 0x7f, 0, 0, 0xc0, 0xff]), "float32", [2]);
  assert.equal(cast(nans, "float4e2m1").bytes()[0], 0x08);
});

test("float6e2m3 / float6e3m2: RNE, always saturate to +/-7.5 / +/-28, +NaN -> 0x20, -NaN -> 0x00", () => {
  assert.deepEqual(values([7.6, -1e9, Infinity, 0.0625, 0.1875, 1.0625], "float64", "float6e2m3", { saturate: false }),
    [7.5, -7.5, 7.5, 0, 0.25, 1]);
  assert.deepEqual(values([29, -Infinity, 0.03125, 0.09375, 4.5], "float64", "float6e3m2"), [28, -28, 0, 0.125, 4]);
  const nans = Tensor.fromBytes(new Uint8Array([0, 0, 0xc0, 0x7f, 0, 0, 0xc0, 0xff, 0, 0, 0, 0, 0, 0, 0, 0]), "float32", [4]);
  const packed = cast(nans, "float6e2m3").bytes();
  // Four 6-bit codes in three bytes, element 0 in the low bits: 0x20, 0x00, 0x00, 0x00.
  assert.deepEqual(Array.from(packed), [0x20, 0x00, 0x00]);
});

test("float8e8m0: onnxruntime's value table for every round mode and saturate setting", () => {
  const bits = (w: number) => new Float32Array(new Uint32Array([w]).buffer)[0];
  const xs = [0, -2, Infinity, -Infinity, 1.5, 1.25, bits(0x00400000), bits(0x00200000), bits(0x00500000), bits(0x7f000001), 1.5 * 2 ** 127];
  const f32 = Tensor.fromValues(xs, "float32");
  const run = (roundMode: "up" | "down" | "nearest", saturate: boolean) =>
    Array.from(cast(f32, "float8e8m0", { roundMode, saturate }).bytes());
  // The ORT column of onnx.md 2.7, row by row.
  assert.deepEqual(run("up", true), [0x00, 0x00, 0xfe, 0x00, 0x80, 0x80, 0x00, 0x00, 0x01, 0xfe, 0xfe]);
  assert.deepEqual(run("up", false), [0xff, 0xff, 0xff, 0xff, 0x80, 0x80, 0x00, 0xff, 0x01, 0xff, 0xff]);
  assert.deepEqual(run("down", false), [0xff, 0xff, 0xff, 0xff, 0x7f, 0x7f, 0x00, 0xff, 0x00, 0xff, 0xff]);
  assert.deepEqual(run("nearest", true), [0x00, 0x00, 0xfe, 0x00, 0x80, 0x7f, 0x00, 0x00, 0x00, 0xfe, 0xfe]);
  assert.deepEqual(codes([NaN], "float32", "float8e8m0"), [0xff]);
});

test("same type: a conversion like any other; e5m2 +/-Inf saturates to +/-57344, every other code is kept", async () => {
  const { DTYPES, castInto, castLike, decodeFloat } = await import("../../src/index.js");
  // The known answer first: 0x7C / 0xFC are +/-Inf, 0x7B / 0xFB are +/-57344; NaN payloads stay.
  const e5m2 = Tensor.fromBytes(new Uint8Array([0x7c, 0xfc, 0x7d, 0xfe, 0x7b, 0x01, 0x80]), "float8e5m2", [7]);
  assert.deepEqual(Array.from(cast(e5m2, "float8e5m2").bytes()), [0x7b, 0xfb, 0x7d, 0xfe, 0x7b, 0x01, 0x80]);
  assert.deepEqual(cast(e5m2, "float8e5m2").toValues().slice(0, 2), [57344, -57344]);
  assert.deepEqual(Array.from(cast(e5m2, "float8e5m2", { saturate: false }).bytes()), Array.from(e5m2.bytes()));
  assert.deepEqual(Array.from(castLike(e5m2, e5m2).bytes().subarray(0, 2)), [0x7b, 0xfb]);
  const into = Tensor.zeros("float8e5m2", [7]);
  assert.deepEqual(Array.from(castInto(e5m2, into).bytes().subarray(0, 2)), [0x7b, 0xfb]);
  // In place (out is x): the same rule, applied to the caller's storage.
  const inPlace = Tensor.fromBytes(new Uint8Array([0x7c, 0x3c]), "float8e5m2", [2]);
  assert.deepEqual(Array.from(castInto(inPlace, inPlace).bytes()), [0x7b, 0x3c]);

  // Every code of every 8-bit type, both saturate settings, against the rule stated
  // from values: a code whose value is +/-Inf becomes the code of +/-max when the type saturates
  // (saturate=1 and a float8 overflow rule); any other code (NaN payloads too) comes back unchanged.
  for (const t of DTYPES.filter((d) => d.bits === 8)) {
    const n = 256;
    const x = Tensor.fromBytes(Uint8Array.from({ length: n }, (_, c) => c), t, [n]);
    for (const saturate of [true, false]) {
      const opts = t.name.startsWith("float8") ? { saturate } : {};
      const got = cast(x, t, opts).bytes();
      for (let c = 0; c < n; c++) {
        const v = t.format ? decodeFloat(t.format, c) : 0;
        const saturates = saturate && t.format?.overflow === "saturable" && Math.abs(v) === Infinity;
        const want = saturates ? (v < 0 ? 0x80 : 0) | t.format!.maxCode : c;
        assert.equal(got[c], want, `${t.name} code 0x${c.toString(16)} saturate=${saturate}`);
      }
    }
  }
  // Packed sub-byte types have no Inf: a same-type cast is byte-identical.
  for (const t of DTYPES.filter((d) => d.packed)) {
    const bytes = Uint8Array.from({ length: 64 }, (_, i) => (i * 37 + 11) & 0xff);
    const size = Math.floor((64 * 8) / t.bits);
    const x = Tensor.fromBytes(bytes, t, [size]);
    assert.deepEqual(Array.from(cast(x, t).bytes()), Array.from(x.bytes()), t.name);
  }
});
