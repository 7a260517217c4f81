/**
 * A tensor over a resizable ArrayBuffer (or a growable SharedArrayBuffer) whose buffer is resized
 * after Tensor.fromStorage: every operation refuses it with INVALID_DATA (src/tensor.ts,
 * expectStorage) instead of reading past the view (cast gave invented zeros, toValues NaN).
 * Shrunk: a fixed-length view reads as empty, a length-tracking view shortens. Grown: a
 * length-tracking view lengthens (toValues would return more elements than the shape has).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import {
  bitcast, cast, castInto, castLike, convertPromoteTypes, createArena, encodeModel, encodeTensorProto, reshape, runModel,
  Tensor, toOrt, toTfjs, type DTypeName,
} from "../../src/index.js";
import { castAsync, castIntoAsync, closeCastAsyncPool } from "../../src/node/index.js";
import { throwsCode } from "../support/assertions.js";
import { modelOf } from "../support/onnx-model.js";
import { TensorcastError } from "../../src/errors.js";

type Resizable = ArrayBuffer & { resize(n: number): void };
type Growable = SharedArrayBuffer & { grow(n: number): void };
const resizable = (n: number, max: number): Resizable => new (ArrayBuffer as unknown as new (n: number, o: object) => Resizable)(n, { maxByteLength: max });
const growable = (n: number, max: number): Growable => new (SharedArrayBuffer as unknown as new (n: number, o: object) => Growable)(n, { maxByteLength: max });

/** Every way a resize leaves a float32 [4] tensor uncovered: [label, tensor]. */
function resized(): [string, Tensor<"float32">][] {
  const out: [string, Tensor<"float32">][] = [];
  for (const tracking of [false, true]) {
    for (const bytes of [0, 8, 12, 32]) {
      const buf = resizable(16, 64);
      const view = tracking ? new Float32Array(buf) : new Float32Array(buf, 0, 4);
      view.set([1.5, -2, 3, 65504]);
      const t = Tensor.fromStorage(view, "float32", [4]);
      buf.resize(bytes);
      // A fixed-length view is covered again when its buffer grows back: only shrinking hurts it.
      if (!tracking && bytes >= 16) continue;
      out.push([`${tracking ? "length-tracking" : "fixed"} view, buffer resized 16 -> ${bytes} bytes`, t]);
    }
  }
  const sab = growable(16, 64);
  const t = Tensor.fromStorage(new Float32Array(sab), "float32", [4]);
  sab.grow(32);
  out.push(["length-tracking view of a growable SharedArrayBuffer grown 16 -> 32 bytes", t]);
  return out;
}

const OPERATIONS: [string, (x: Tensor<"float32">) => unknown][] = [
  ["cast", (x) => cast(x, "float16")],
  ["castLike", (x) => castLike(x, Tensor.zeros("bfloat16", [1]))],
  ["castInto (input)", (x) => castInto(x, Tensor.zeros("float16", [4]))],
  ["castInto (output)", (x) => castInto(Tensor.zeros("float16", [4]), x)],
  ["reshape", (x) => reshape(x, [2, 2])],
  ["bitcast", (x) => bitcast(x, "int32")],
  ["convertPromoteTypes", (x) => convertPromoteTypes(x, Tensor.zeros("float16", [4]))],
  ["bytes", (x) => x.bytes()],
  ["toValues", (x) => x.toValues()],
  ["encodeTensorProto", (x) => encodeTensorProto(x)],
  ["encodeModel", (x) => {
    const m = modelOf({ inputs: [], outputs: [{ name: "w", elemType: 1 }], nodes: [], opset: 17 });
    return encodeModel({ ...m, graph: { ...m.graph, initializers: [{ name: "w", tensor: x }] } });
  }],
  ["toOrt", (x) => toOrt(x)],
  ["toTfjs", (x) => toTfjs(x)],
  ["arena.from", (x) => createArena(1024).from(x)],
  ["runModel", (x) => runModel(modelOf({ inputs: [{ name: "x", elemType: 1 }], outputs: [{ name: "y", elemType: 10 }], nodes: [{ opType: "Cast", inputs: ["x"], outputs: ["y"], attributes: [{ name: "to", type: "INT", i: 10 }] }], opset: 17 }), { x })],
];

test("every operation refuses a tensor whose resizable buffer was resized (INVALID_DATA), never reads zeros or NaN", () => {
  for (const [label, x] of resized()) {
    for (const [op, run] of OPERATIONS) {
      assert.throws(() => run(x), (e: unknown) => {
        assert.ok(e instanceof TensorcastError, `${op}, ${label}: ${String(e)}`);
        assert.equal(e.code, "INVALID_DATA", `${op}, ${label}: ${e.message}`);
        assert.match(e.message, /(resizable ArrayBuffer|growable SharedArrayBuffer) was resized to \d+ bytes: the storage holds \d+ of the 4 entries the shape \[4\] needs/, `${op}, ${label}`);
        return true;
      }, `${op}, ${label}`);
    }
  }
});

test("castAsync and castIntoAsync reject a resized tensor, on workers too", async () => {
  try {
    for (const [label, x] of resized()) {
      for (const run of [
        () => castAsync(x, "float16", { threads: 2, minElements: 0 }),
        () => castIntoAsync(x, Tensor.zeros("float16", [4]), { threads: 2, minElements: 0 }),
      ]) {
        await assert.rejects(run(), (e: unknown) => e instanceof TensorcastError && e.code === "INVALID_DATA" && /was resized/.test(e.message), label);
      }
    }
    // Large enough for the worker path.
    const buf = resizable(4 << 16, 8 << 16);
    const big = Tensor.fromStorage(new Float32Array(buf), "float32", [1 << 16]);
    buf.resize(4);
    await assert.rejects(castAsync(big, "float16", { threads: 2, minElements: 0 }), (e: unknown) => e instanceof TensorcastError && e.code === "INVALID_DATA");
  } finally {
    await closeCastAsyncPool();
  }
});

test("a resize that keeps the tensor covered changes nothing; a string array cut short is refused", () => {
  const buf = resizable(16, 64);
  const x = Tensor.fromStorage(new Float32Array(buf, 0, 4), "float32", [4]);
  x.data.set([1.5, -2, 3, 65504]);
  buf.resize(64);
  assert.deepEqual(x.toValues(), [1.5, -2, 3, 65504]);
  assert.deepEqual([...cast(x, "float16").data], [0x3e00, 0xc000, 0x4200, 0x7bff]);
  buf.resize(16);
  assert.deepEqual(x.toValues(), [1.5, -2, 3, 65504]);
  const s = Tensor.fromValues(["a", "b"], "string" as DTypeName as "string");
  (s.data as string[]).pop();
  throwsCode(() => s.toValues(), "INVALID_DATA", /string array holds 1 entries now, the shape \[2\] needs 2/);
  throwsCode(() => cast(s, "float32"), "INVALID_DATA", /string array holds 1/);
});
