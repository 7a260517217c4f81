/**
 * The WebAssembly SIMD quantization kernels beyond 8 bits (src/kernels/quant/simd.ts): float32 ->
 * int4 / uint4 / float8e4m3fn / float4e2m1 and back, float32 and e8m0 (MX) scales, against the
 * reference kernels bit for bit. Each case first asserts that the fast path took it (quantizeSimd /
 * dequantizeSimd returned true), so a declining kernel cannot pass by running the reference twice.
 * Exhaustive where small: every float16 value (as float32: ties, subnormals, Inf, NaN of both signs)
 * under edge scales; every byte under every zero point or scale. Then fast-check layouts (per
 * tensor, per axis, blocked with partial last blocks, odd counts), and the arena path (in place,
 * nothing written outside the output).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import {
  Tensor, cast, createArena, dequantizeLinear, dequantizeLinearInto, dtype, quantizeLinear, quantizeLinearInto, type DTypeName,
} from "../../src/index.js";
import { dequantizeLinearKernel, quantizeLinearKernel, type DequantizeArgs, type QuantizeArgs } from "../../src/kernels/quant/kernels.js";
import { axisLayout, blockLayout, tensorLayout, type QuantLayout } from "../../src/kernels/quant/layout.js";
import { dequantizeSimd, quantSimdInPlace, quantizeSimd } from "../../src/kernels/quant/simd.js";
import { allocateStorage } from "../../src/tensor.js";
import { canReleaseStorage } from "../../src/storage-pool.js";
import { withoutQuantSimd } from "../support/quant-simd.js";
import type { DType, Storage } from "../../src/dtype/table.js";
import { property } from "../support/suite.js";

const F32 = dtype("float32");
const E8M0 = dtype("float8e8m0");

/** Every float16 value as a float32 array (65536 values). */
const everyHalf = (): Float32Array => cast(Tensor.fromStorage(new Uint16Array(65536).map((_, i) => i), "float16", [65536]), "float32").data as Float32Array;

const bytes = (s: Storage): number[] => {
  const a = s as Uint8Array;
  return Array.from(new Uint8Array(a.buffer, a.byteOffset, a.byteLength));
};

/** The reference's bytes for the same arguments, the fast path switched off. */
function reference<T extends QuantizeArgs | DequantizeArgs>(a: T, run: (a: T) => void): Storage {
  const y = allocateStorage(a.yType, a.layout.count);
  withoutQuantSimd(() => run({ ...a, y }));
  return y;
}

function checkQuantize(a: Omit<QuantizeArgs, "y">, what: string): void {
  const y = allocateStorage(a.yType, a.layout.count);
  assert.ok(quantizeSimd({ ...a, y }), `the fast path declined: ${what}`);
  assert.deepEqual(bytes(y), bytes(reference({ ...a, y }, quantizeLinearKernel)), what);
}

function checkDequantize(a: Omit<DequantizeArgs, "y">, what: string): void {
  const y = allocateStorage(a.yType, a.layout.count);
  assert.ok(dequantizeSimd({ ...a, y }), `the fast path declined: ${what}`);
  assert.deepEqual(bytes(y), bytes(reference({ ...a, y }, dequantizeLinearKernel)), what);
}

/** Float32 scales at the edges: exact powers, inexact ones, subnormal, huge, zero, negative, Inf, NaN. */
const EDGE_SCALES = [1, 0.5, 2 ** -9, 0.1, 3, 1 / 3, 2 ** -140, 1e-40, 3e38, 0, -0, -0.75, Infinity, -Infinity, NaN, -NaN];
/** e8m0 codes: 2^-127 (an f32 subnormal), 2^-9, 1, 2^8, 2^127, NaN. */
const EDGE_E8M0 = [0, 118, 127, 135, 254, 0xff];

/** A float32 NaN with the sign bit set (-NaN in JS may or may not keep it). */
function negativeNaN(): Float32Array {
  const v = new Float32Array(1);
  new Uint32Array(v.buffer)[0] = 0xffc00000;
  return v;
}

test("quantize every float16 value into int4 / uint4: edge scales, zero points at both ends and between", () => {
  const x = everyHalf();
  const layout = tensorLayout([x.length]);
  for (const [t, zps] of [["int4", [0, -8, 7, 3]], ["uint4", [0, 15, 8]]] as [DTypeName, number[]][]) {
    for (const s of EDGE_SCALES) {
      for (const zp of [undefined, ...zps]) {
        const zero = zp === undefined ? undefined : Tensor.fromValues([zp], t, []).data;
        checkQuantize({ x, xType: F32, scale: Float32Array.of(s), scaleType: F32, zeroPoint: zero, yType: dtype(t), layout, precision: "float32", saturate: true }, `${t} scale ${s} zp ${zp}`);
      }
    }
  }
});

test("quantize every float16 value into float8e4m3fn (saturate 1 and 0) and float4e2m1: float32 and e8m0 scales, zero point absent, +0, -0", () => {
  const x = everyHalf();
  const layout = tensorLayout([x.length]);
  const scales: [Storage, DType][] = [
    ...EDGE_SCALES.map((s) => [Float32Array.of(s), F32] as [Storage, DType]),
    [negativeNaN(), F32],
    ...EDGE_E8M0.map((c) => [Uint8Array.of(c), E8M0] as [Storage, DType]),
  ];
  for (const t of ["float8e4m3fn", "float4e2m1"] as DTypeName[]) {
    for (const [scale, scaleType] of scales) {
      for (const zp of [undefined, 0, -0]) {
        for (const saturate of t === "float8e4m3fn" ? [true, false] : [true]) {
          const zero = zp === undefined ? undefined : Tensor.fromValues([zp], t, []).data;
          const what = `${t} scale ${scaleType.name} ${bytes(scale).join(",")} zp ${Object.is(zp, -0) ? "-0" : zp} saturate ${saturate}`;
          checkQuantize({ x, xType: F32, scale, scaleType, zeroPoint: zero, yType: dtype(t), layout, precision: "float32", saturate }, what);
        }
      }
    }
  }
});

test("dequantize every code of int4 / uint4 / float8e4m3fn / float4e2m1 to float32: every zero point (integers), edge float32 and e8m0 scales", () => {
  const all = Uint8Array.from({ length: 256 }, (_, i) => i);
  for (const t of ["int4", "uint4", "float8e4m3fn", "float4e2m1"] as DTypeName[]) {
    const type = dtype(t);
    const layout = tensorLayout([type.bits === 4 ? 512 : 256]);
    const zps: (number | undefined)[] = type.kind === "float" ? [undefined, 0] : Array.from({ length: 16 }, (_, i) => (t === "int4" ? i - 8 : i));
    const scales: [Storage, DType][] = [
      ...[1, 0.1, -3, 2 ** -140, 3e38, -3e38, 0, -0, 1 / 3].map((s) => [Float32Array.of(s), F32] as [Storage, DType]),
      ...[0, 1, 118, 127, 200, 254].map((c) => [Uint8Array.of(c), E8M0] as [Storage, DType]),
    ];
    for (const [scale, scaleType] of scales) {
      for (const zp of zps) {
        const zero = zp === undefined ? undefined : Tensor.fromValues([zp], t, []).data;
        checkDequantize({ x: all, xType: type, scale, scaleType, zeroPoint: zero, yType: F32, layout }, `${t} scale ${scaleType.name} ${bytes(scale).join(",")} zp ${zp}`);
      }
    }
  }
});

type How = "tensor" | "axis0" | "axis1" | "block";

function layoutOf(how: How, rows: number, cols: number, block: number): { layout: QuantLayout; scaleShape: number[] } {
  if (how === "tensor") return { layout: tensorLayout([rows, cols]), scaleShape: [] };
  if (how === "axis0") return { layout: axisLayout([rows, cols], 0), scaleShape: [rows] };
  if (how === "axis1") return { layout: axisLayout([rows, cols], 1), scaleShape: [cols] };
  return { layout: blockLayout([rows, cols], 1, block), scaleShape: [rows, Math.ceil(cols / block)] };
}

const OUTPUTS: DTypeName[] = ["int8", "uint8", "int4", "uint4", "float8e4m3fn", "float4e2m1"];
const special = fc.constantFrom(NaN, Infinity, -Infinity, 0, -0, 0.5, -0.5, 7.5, -8.5, 464, -464, 1e-45, 2 ** -10);
const value = fc.oneof(fc.float({ noDefaultInfinity: false }), special, fc.integer({ min: -300, max: 300 }).map((k) => k / 4));

test("random layouts (per tensor, per axis, blocked with partial last blocks, odd counts), every fast type both ways, float32 and e8m0 scales", () => {
  fc.assert(
    fc.property(
      fc.constantFrom(...OUTPUTS), fc.integer({ min: 1, max: 24 }), fc.integer({ min: 1, max: 150 }),
      fc.constantFrom<How>("tensor", "axis0", "axis1", "block"), fc.constantFrom(16, 32, 32, 34, 50, 64), fc.boolean(), fc.boolean(), fc.integer(),
      (t, rows, cols, how, block, e8m0, saturate, seed) => {
        const type = dtype(t);
        const { layout, scaleShape } = layoutOf(how, rows, cols, block);
        const x = Float32Array.from(fc.sample(value, { numRuns: layout.count, seed }));
        const n = layout.scaleCount;
        const scale = e8m0
          ? Uint8Array.from(fc.sample(fc.integer({ min: 100, max: 140 }), { numRuns: n, seed: seed + 1 }))
          : Float32Array.from(fc.sample(fc.oneof(fc.float({ min: Math.fround(1e-3), max: 10, noNaN: true }), fc.constantFrom(1, 0.5, 2 ** -9)), { numRuns: n, seed: seed + 1 }));
        const scaleType = e8m0 ? E8M0 : F32;
        const zeroPoint = type.kind === "float" ? undefined
          : Tensor.fromValues(fc.sample(fc.integer({ min: type.min as number, max: type.max as number }), { numRuns: n, seed: seed + 2 }), t, scaleShape).data;
        const q = { x, xType: F32, scale, scaleType, zeroPoint, yType: type, layout, precision: "float32" as const, saturate };
        const y = allocateStorage(type, layout.count);
        const fast = quantizeSimd({ ...q, y });
        // Runs shorter than 16 on average, or 4-bit runs starting mid-byte, go to the reference.
        if (fast) assert.deepEqual(bytes(y), bytes(reference({ ...q, y }, quantizeLinearKernel)));
        const back = { x: y, xType: type, scale, scaleType, zeroPoint, yType: F32, layout };
        const d = allocateStorage(F32, layout.count);
        if (dequantizeSimd({ ...back, y: d })) assert.deepEqual(bytes(d), bytes(reference({ ...back, y: d }, dequantizeLinearKernel)));
        return true;
      },
    ),
    property(400, 20261202),
  );
});

test("the fast paths take the common layouts: per tensor, per axis with long rows, blocked by 32 (odd 4-bit counts too)", () => {
  const x = Float32Array.from({ length: 33 * 64 + 1 }, (_, i) => (i % 37) - 18.25);
  for (const t of OUTPUTS) {
    const type = dtype(t);
    for (const [layout, n] of [[tensorLayout([x.length]), 1], [axisLayout([33, 64], 0), 33], [blockLayout([33, 64], 1, 32), 66]] as [QuantLayout, number][]) {
      const xs = x.subarray(0, layout.count);
      checkQuantize({ x: xs, xType: F32, scale: new Float32Array(n).fill(0.37), scaleType: F32, yType: type, layout, precision: "float32", saturate: true }, `${t} ${n} scales`);
    }
  }
});

test("quantizeLinearInto / dequantizeLinearInto in an arena run in place, equal quantizeLinear / dequantizeLinear, and write nothing outside the output", () => {
  const arena = createArena(4 << 20);
  const values = Float32Array.from({ length: 7 * 1000 + 7 }, (_, i) => ((i * 7919) % 2001) / 40 - 25 + (i % 5 === 0 ? 0.5 : 0));
  values[3] = NaN;
  values[10] = -Infinity;
  const x = Tensor.fromStorage(values, "float32", [values.length]);
  const xa = arena.from(x);
  for (const t of OUTPUTS) {
    const type = dtype(t);
    for (const e8m0 of [false, true]) {
      const scale = e8m0 ? Tensor.fromStorage(Uint8Array.of(124), "float8e8m0", []) : Tensor.fromValues([0.37], "float32", []);
      const zp = type.kind === "float" ? undefined : Tensor.fromValues([type.min === 0 ? 3 : -2], t, []);
      const opts = { outputDtype: t };
      const before = arena.zeros("uint8", [64]);
      const out = arena.zeros(t, x.shape);
      const after = arena.zeros("uint8", [64]);
      before.bytes().fill(0xa5);
      after.bytes().fill(0x5a);
      out.bytes().fill(0xff); // stale bytes: every one must be overwritten
      assert.ok(quantSimdInPlace(xa.data, out.data), "not in place");
      quantizeLinearInto(xa, scale, zp, out, zp ? {} : opts);
      const want = withoutQuantSimd(() => quantizeLinear(x, scale, zp, zp ? {} : opts));
      assert.deepEqual(Array.from(out.bytes()), Array.from(want.bytes()), `${t} e8m0 ${e8m0}`);
      assert.ok(before.bytes().every((b) => b === 0xa5) && after.bytes().every((b) => b === 0x5a), `${t}: bytes outside the output changed`);
      const back = arena.zeros("float32", x.shape);
      const after2 = arena.zeros("uint8", [64]);
      after2.bytes().fill(0x5a);
      dequantizeLinearInto(out, scale, zp, back, { outputDtype: "float32" });
      assert.deepEqual(Array.from(back.bytes()), Array.from(withoutQuantSimd(() => dequantizeLinear(want, scale, zp, { outputDtype: "float32" })).bytes()), `${t} back`);
      assert.ok(after2.bytes().every((b) => b === 0x5a), `${t} back: bytes outside the output changed`);
    }
  }
  // Per axis and blocked (whole blocks: a record per block, one call; a partial last block: per run, tails through the scratch).
  for (const [shape, opts] of [[[101, 64], { axis: 0 }], [[101, 64], { axis: 1, blockSize: 32 }], [[101, 50], { axis: 1, blockSize: 32 }], [[7, 3, 48], { axis: 1 }]] as [number[], { axis: number; blockSize?: number }][]) {
    const count = shape.reduce((p, d) => p * d, 1);
    const xs = Tensor.fromStorage(values.slice(0, count), "float32", shape);
    const scaleShape = opts.blockSize ? [shape[0], Math.ceil(shape[1] / opts.blockSize)] : [shape[opts.axis]];
    const scaleCount = scaleShape.reduce((p, d) => p * d, 1);
    const scale = Tensor.fromValues(Array.from({ length: scaleCount }, (_, i) => 0.1 + (i % 7) * 0.13), "float32", scaleShape);
    for (const t of OUTPUTS) {
      const type = dtype(t);
      const zp = type.kind === "float" ? undefined : Tensor.fromValues(Array.from({ length: scaleCount }, (_, i) => (i % 5) + (type.min as number)), t, scaleShape);
      const xa = arena.from(xs);
      const out = arena.zeros(t, shape);
      out.bytes().fill(0xff);
      const guard = arena.zeros("uint8", [64]);
      quantizeLinearInto(xa, scale, zp, out, { ...opts, outputDtype: t });
      const want = withoutQuantSimd(() => quantizeLinear(xs, scale, zp, { ...opts, outputDtype: t }));
      assert.deepEqual(Array.from(out.bytes()), Array.from(want.bytes()), `${t} ${JSON.stringify(shape)} ${JSON.stringify(opts)}`);
      const back = arena.zeros("float32", shape);
      dequantizeLinearInto(out, scale, zp, back, opts);
      assert.deepEqual(Array.from(back.bytes()), Array.from(withoutQuantSimd(() => dequantizeLinear(want, scale, zp, opts)).bytes()), `${t} back ${JSON.stringify(shape)}`);
      assert.ok(guard.bytes().every((b) => b === 0), "bytes after the output changed");
    }
  }
  // After a reset the arena's buffer is new: the kernels follow it.
  arena.reset();
  const xb = arena.from(x);
  const q = arena.zeros("int8", x.shape);
  quantizeLinearInto(xb, Tensor.fromValues([0.5], "float32", []), undefined, q, { outputDtype: "int8" });
  assert.deepEqual(Array.from(q.bytes()), Array.from(withoutQuantSimd(() => quantizeLinear(x, Tensor.fromValues([0.5], "float32", []), undefined, { outputDtype: "int8" })).bytes()));
});

test("quantizeLinearInto / dequantizeLinearInto refuse a wrong shape, a type that contradicts the zero point, and aliasing", () => {
  const x = Tensor.fromValues([1, 2, 3, 4], "float32");
  const s = Tensor.fromValues([0.5], "float32", []);
  const zp = Tensor.fromValues([1], "int8", []);
  assert.throws(() => quantizeLinearInto(x, s, zp, Tensor.zeros("int8", [3])), { code: "SHAPE_MISMATCH" });
  assert.throws(() => quantizeLinearInto(x, s, zp, Tensor.zeros("uint8", [4])), { code: "INVALID_ATTRIBUTE" });
  assert.throws(() => quantizeLinearInto(x, s, undefined, Tensor.zeros("int8", [4]), { outputDtype: "uint8" }), { code: "INVALID_ATTRIBUTE" });
  const buffer = new Float32Array(8);
  const xs = Tensor.fromStorage(buffer.subarray(0, 4), "float32", [4]);
  assert.throws(() => quantizeLinearInto(xs, s, undefined, Tensor.fromStorage(new Uint8Array(buffer.buffer, 4, 4), "uint8", [4])), { code: "ALIASED_OUTPUT" });
  // DequantizeLinear-21 has no output_dtype: the output is the scale's type.
  assert.throws(() => dequantizeLinearInto(Tensor.fromValues([1, 2], "int8"), s, undefined, Tensor.zeros("float16", [2]), { opset: 21 }), { code: "INVALID_ATTRIBUTE" });
  // From 23 the output tensor's type is the output_dtype.
  assert.deepEqual(dequantizeLinearInto(Tensor.fromValues([1, 2], "int8"), s, undefined, Tensor.zeros("float16", [2])).toValues(), [0.5, 1]);
  const y = quantizeLinearInto(x, s, undefined, Tensor.zeros("uint8", [4]));
  assert.deepEqual(y.toValues(), [2, 4, 6, 8]);
  // An older version without output_dtype: the output type is uint8 or the zero point's.
  assert.throws(() => quantizeLinearInto(x, s, undefined, Tensor.zeros("int8", [4]), { opset: 13 }), { code: "INVALID_ATTRIBUTE" });
});

test("quantizeLinear reuses a disposed output's memory (no page faults) and still gives the reference's bytes on the packed reference path", { skip: !canReleaseStorage() && "no ArrayBuffer.prototype.transfer here (Node 20): dispose() pools nothing" }, () => {
  const n = 1 << 22; // 4 Mi int2 codes: 1 MiB, the pool's smallest size
  const s = Tensor.fromValues([1], "float32", []);
  const full = quantizeLinear(Tensor.fromStorage(new Float32Array(n >> 2).fill(1e9), "float32", [n >> 2]), s, undefined, { outputDtype: "uint8" });
  assert.equal(full.bytes()[0], 0xff);
  full.dispose(); // 1 MiB of 0xFF bytes now in the pool
  // The reference kernel (int2 has no SIMD path) merges packed codes into its output: the pooled
  // buffer must be cleared first.
  const y = quantizeLinear(Tensor.fromStorage(new Float32Array(n), "float32", [n]), s, undefined, { outputDtype: "int2" });
  assert.ok(y.bytes().every((b) => b === 0), "stale bytes of the pooled buffer leaked into the output");
  y.dispose();
  const minus = quantizeLinear(Tensor.fromStorage(new Float32Array(n).fill(-1), "float32", [n]), s, undefined, { outputDtype: "int2" });
  assert.ok(minus.bytes().every((b) => b === 0xff), "int2 -1 is 0b11 in each of four places");
});

/** Why a shared arena cannot be made here (a page without cross-origin isolation), or false. */
function sharedMemoryMissing(): string | false {
  try {
    new (globalThis as unknown as { WebAssembly: { Memory: new (d: object) => unknown } }).WebAssembly.Memory({ initial: 1, maximum: 1, shared: true });
    return typeof SharedArrayBuffer === "function" ? false : "no SharedArrayBuffer here (a page needs cross-origin isolation)";
  } catch {
    return "no shared WebAssembly memory here (a page needs cross-origin isolation)";
  }
}

test("a shared arena: quantizeLinearInto / dequantizeLinearInto stream through the private memory (no in-place instance on shared memory) and give the reference's bytes", { skip: sharedMemoryMissing() }, () => {
  const arena = createArena(1 << 20, { shared: true });
  const values = Float32Array.from({ length: 4099 }, (_, i) => (i % 301) / 7 - 21.5);
  const xa = arena.from(Tensor.fromStorage(values, "float32", [values.length]));
  const scale = Tensor.fromValues([0.25], "float32", []);
  for (const t of OUTPUTS) {
    const out = arena.zeros(t, xa.shape);
    assert.equal(quantSimdInPlace(xa.data, out.data), false);
    quantizeLinearInto(xa, scale, undefined, out, { outputDtype: t });
    const want = withoutQuantSimd(() => quantizeLinear(xa, scale, undefined, { outputDtype: t }));
    assert.deepEqual(Array.from(out.bytes()), Array.from(want.bytes()), t);
    const back = arena.zeros("float32", xa.shape);
    dequantizeLinearInto(out, scale, undefined, back, { outputDtype: "float32" });
    assert.deepEqual(Array.from(back.bytes()), Array.from(withoutQuantSimd(() => dequantizeLinear(want, scale, undefined, { outputDtype: "float32" })).bytes()), `${t} back`);
  }
});
