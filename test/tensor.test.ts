import { test } from "node:test";
import assert from "node:assert/strict";
import { throwsCode } from "./support/assertions.js";
import { DTYPES, Tensor, dtype } from "../src/index.js";


test("dtype() accepts ONNX, OpenVINO, TensorFlow and ml_dtypes spellings", () => {
  const cases: [string | number, string][] = [
    ["FLOAT16", "float16"], [10, "float16"], ["f16", "float16"], ["half", "float16"], ["float", "float32"],
    ["double", "float64"], ["bf16", "bfloat16"], ["f8e4m3", "float8e4m3fn"], ["f8e5m2", "float8e5m2"],
    ["f8e8m0", "float8e8m0"], ["f4e2m1", "float4e2m1"], ["i4", "int4"], ["u4", "uint4"], ["boolean", "bool"],
    ["float8_e4m3fn", "float8e4m3fn"], ["float8_e4m3fnuz", "float8e4m3fnuz"], ["float8_e5m2fnuz", "float8e5m2fnuz"],
    ["float4_e2m1fn", "float4e2m1"], ["float8_e8m0fnu", "float8e8m0"], ["float6_e2m3fn", "float6e2m3"],
    ["float6_e3m2fn", "float6e3m2"], ["FLOAT8E4M3FN", "float8e4m3fn"], [17, "float8e4m3fn"], [28, "float6e3m2"],
    ["DOUBLE", "float64"], ["BOOL", "bool"], ["STRING", "string"], ["COMPLEX64", "complex64"], ["i64", "int64"],
    ["u8", "uint8"], ["int2", "int2"], ["UINT2", "uint2"],
  ];
  for (const [alias, name] of cases) assert.equal(dtype(alias).name, name, String(alias));
  for (const t of DTYPES) {
    assert.equal(dtype(t.name), t);
    assert.equal(dtype(t.onnx), t);
    assert.equal(dtype(t.onnxName), t);
    assert.equal(dtype(t), t);
  }
  throwsCode(() => dtype("nf4"), "UNKNOWN_DTYPE", /unknown data type "nf4"/);
  throwsCode(() => dtype(29), "UNKNOWN_DTYPE");
  throwsCode(() => dtype(0), "UNKNOWN_DTYPE");
});

test("each type records its bit width, kind and storage", () => {
  const row = (n: string) => { const t = dtype(n); return [t.bits, t.kind, t.array, t.packed]; };
  assert.deepEqual(row("int64"), [64, "int", "BigInt64Array", false]);
  assert.deepEqual(row("float16"), [16, "float", "Uint16Array", false]);
  assert.deepEqual(row("bfloat16"), [16, "float", "Uint16Array", false]);
  assert.deepEqual(row("float8e5m2"), [8, "float", "Uint8Array", false]);
  assert.deepEqual(row("int4"), [4, "int", "Uint8Array", true]);
  assert.deepEqual(row("float6e2m3"), [6, "float", "Uint8Array", true]);
  assert.deepEqual(row("uint2"), [2, "uint", "Uint8Array", true]);
  assert.deepEqual(row("string"), [0, "string", "Array", false]);
  assert.deepEqual(row("complex64"), [64, "complex", "Float32Array", false]);
});

test("fromValues / toValues round-trip for every type", () => {
  const samples: Record<string, unknown[]> = {
    float32: [1.5, -0, Infinity, NaN], uint8: [0, 255], int8: [-128, 127], uint16: [65535], int16: [-32768],
    int32: [-2147483648, 7], int64: [-(2n ** 63n), 5n], string: ["a", ""], bool: [true, false],
    float16: [65504, -0.5, Infinity], float64: [0.1, -1e300], uint32: [4294967295], uint64: [2n ** 64n - 1n],
    complex64: [[1, -2]], complex128: [[0.1, 0.2]], bfloat16: [1.5, -Infinity], float8e4m3fn: [448, -0.001953125],
    float8e4m3fnuz: [240, NaN], float8e5m2: [57344, -Infinity], float8e5m2fnuz: [-57344], uint4: [0, 15, 3],
    int4: [-8, 7, -1], float4e2m1: [6, -0.5, 1.5], float8e8m0: [2 ** -127, 2 ** 127, 1], uint2: [3, 0, 1, 2, 1],
    int2: [-2, 1, -1], float6e2m3: [7.5, -0.125, 1, 2, 3], float6e3m2: [28, -0.0625, 4],
  };
  assert.equal(Object.keys(samples).length, DTYPES.length);
  for (const t of DTYPES) {
    const v = samples[t.name];
    const back = Tensor.fromValues(v as never[], t).toValues();
    assert.deepEqual(back, v, t.name);
  }
});

test("fromValues rounds floats to nearest even and refuses what a type cannot hold", () => {
  assert.deepEqual(Tensor.fromValues([0.1], "float16").toValues(), [0.0999755859375]);
  assert.deepEqual(Tensor.fromValues([1e6], "float16").toValues(), [Infinity]);
  assert.deepEqual(Tensor.fromValues([1.4, 1.6], "float8e8m0").toValues(), [1, 2]);
  throwsCode(() => Tensor.fromValues([1000], "float8e4m3fn"), "INVALID_VALUE", /value 0 \(1000\) is outside float8e4m3fn's range \[-448, 448\]/);
  throwsCode(() => Tensor.fromValues([Infinity], "float8e4m3fn"), "INVALID_VALUE", /float8e4m3fn has no infinity/);
  throwsCode(() => Tensor.fromValues([NaN], "float4e2m1"), "INVALID_VALUE", /float4e2m1 has no NaN/);
  throwsCode(() => Tensor.fromValues([7], "float4e2m1"), "INVALID_VALUE", /outside/);
  assert.deepEqual(Tensor.fromValues([6.9], "float4e2m1").toValues(), [6]);
  throwsCode(() => Tensor.fromValues([248], "float8e4m3fnuz"), "INVALID_VALUE");
  throwsCode(() => Tensor.fromValues([0], "float8e8m0"), "INVALID_VALUE");
  throwsCode(() => Tensor.fromValues([300], "int8"), "INVALID_VALUE", /value 0 \(300\) is outside int8's range \[-128, 127\]/);
  throwsCode(() => Tensor.fromValues([1.5], "int32"), "INVALID_VALUE", /is not an integer for int32/);
  throwsCode(() => Tensor.fromValues([8], "int4"), "INVALID_VALUE", /\[-8, 7\]/);
  throwsCode(() => Tensor.fromValues([2 ** 53], "int64"), "INVALID_VALUE", /not a bigint or safe integer/);
  throwsCode(() => Tensor.fromValues([2], "bool"), "INVALID_VALUE", /not a boolean/);
  throwsCode(() => Tensor.fromValues(["1"] as never[], "float32"), "INVALID_VALUE", /value 0 \("1"\) is not a number for float32/);
  throwsCode(() => Tensor.fromValues([1] as never[], "string"), "INVALID_VALUE");
});

test("shapes: scalars, empty tensors, mismatches and bad dimensions", () => {
  const s = Tensor.fromValues([3], "float32", []);
  assert.deepEqual([s.shape, s.size], [[], 1]);
  const e = Tensor.fromValues([], "int4", [0, 5]);
  assert.deepEqual([e.shape, e.size, e.bytes().length], [[0, 5], 0, 0]);
  throwsCode(() => Tensor.fromValues([1, 2, 3], "float32", [2, 2]), "SHAPE_MISMATCH", /shape \[2, 2\] needs 4 values, got 3/);
  throwsCode(() => Tensor.fromValues([1], "float32", [-1]), "INVALID_SHAPE", /dimension 0 of shape \[-1\] is -1/);
  throwsCode(() => Tensor.fromValues([1], "float32", [0.5, 2]), "INVALID_SHAPE", /is 0.5; dimensions must be integers in \[0, 2\^53 - 1\]/);
  throwsCode(() => Tensor.zeros("float32", [2 ** 30, 2 ** 30]), "INVALID_SHAPE", /more than 2\^53 - 1 elements/);
  throwsCode(() => Tensor.fromValues([1] as never[], "float9" as never), "UNKNOWN_DTYPE");
});

test("bytes() is ONNX raw_data: little-endian, sub-byte types packed from the low bits", () => {
  assert.deepEqual(Array.from(Tensor.fromValues([1.5], "float16").bytes()), [0x00, 0x3e]);
  assert.deepEqual(Array.from(Tensor.fromValues([1n], "int64").bytes()), [1, 0, 0, 0, 0, 0, 0, 0]);
  // int4: element 0 in the low nibble; an odd count leaves the last high nibble zero.
  assert.deepEqual(Array.from(Tensor.fromValues([1, -1, 7], "int4").bytes()), [0xf1, 0x07]);
  // int2: x0 | x1 << 2 | x2 << 4 | x3 << 6.
  assert.deepEqual(Array.from(Tensor.fromValues([1, -1, -2, 0, 1], "int2").bytes()), [0b00_10_11_01, 0b01]);
  // float6: four codes in three bytes, as one little-endian bit stream.
  const f6 = Tensor.fromValues([1, -0.125, 7.5, 0.5], "float6e2m3"); // codes 0x08, 0x21, 0x1f, 0x04
  assert.deepEqual(Array.from(f6.bytes()), [0x08 | (0x21 << 6) & 0xff, (0x21 >> 2) | ((0x1f << 4) & 0xff), (0x1f >> 4) | (0x04 << 2)]);
  assert.equal(Tensor.fromValues([1, 1, 1, 1, 1], "float6e3m2").bytes().length, 4);
});

test("fromBytes shares aligned memory, copies unaligned, and checks the length", () => {
  const buf = new Uint8Array(12);
  const t = Tensor.fromBytes(buf.subarray(4), "float32", [2]);
  buf[7] = 0x3f; buf[6] = 0x80;
  assert.deepEqual(t.toValues(), [1, 0]);
  assert.equal(t.bytes().buffer, buf.buffer);
  const u = Tensor.fromBytes(buf.subarray(1, 9), "float32", [2]);
  assert.notEqual(u.bytes().buffer, buf.buffer);
  // A Node Buffer at an odd offset (readFileSync gives those) is copied too.
  assert.deepEqual(Tensor.fromBytes(Buffer.alloc(9).subarray(1), "float32", [2]).toValues(), [0, 0]);
  throwsCode(() => Tensor.fromBytes(new Uint8Array(3), "float32", [1]), "SHAPE_MISMATCH", /needs 4 bytes, got 3/);
  throwsCode(() => Tensor.fromBytes(new Uint8Array(2), "int4", [5]), "SHAPE_MISMATCH", /needs 3 bytes, got 2/);
  throwsCode(() => Tensor.fromBytes(new Uint8Array(0), "string", [0]), "UNSUPPORTED_TYPE");
});

test("fromStorage wraps without copying and checks container and length", () => {
  const a = new Uint16Array([0x3c00]);
  const t = Tensor.fromStorage(a, "float16", [1]);
  assert.equal(t.data, a);
  throwsCode(() => Tensor.fromStorage(new Float32Array(1) as never, "float16", [1]), "INVALID_DATA", /float16 is stored in a Uint16Array \(or a Float16Array\), got a Float32Array/);
  throwsCode(() => Tensor.fromStorage(new Uint16Array(2), "float16", [1]), "SHAPE_MISMATCH");
});
