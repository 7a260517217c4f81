/**
 * Every public function checks its arguments before allocating (issue 13, defect 8): whatever a
 * JavaScript caller passes, the answer is a result or a TensorcastError with a stable code, never
 * a TypeError or RangeError from inside. The named cases from the issue assert their exact code;
 * a sweep calls every exported function with wrong values in every argument position.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as tc from "../src/index.js";
import { Tensor, TensorcastError, type ErrorCode } from "../src/index.js";
import { GOOD, model, t, WRONG } from "./support/api-args.js";

function code(f: () => unknown): ErrorCode | string {
  try {
    f();
    return "no error";
  } catch (e) {
    if (e instanceof TensorcastError) return e.code;
    return `${(e as Error).name}: ${(e as Error).message}`;
  }
}

test("the issue's cases: each is a TensorcastError with its code", () => {
  const any = (x: unknown): never => x as never;
  assert.equal(code(() => Tensor.fromValues(any(null), "float32")), "INVALID_DATA");
  assert.equal(code(() => tc.decodeTensorProto(any(null))), "INVALID_DATA");
  assert.equal(code(() => tc.decodeModel(any(null))), "INVALID_DATA");
  assert.equal(code(() => tc.runModel(any(null), [])), "INVALID_DATA");
  assert.equal(code(() => tc.encodeModel(any(null))), "INVALID_DATA");
  assert.equal(code(() => Tensor.zeros("float32", [2 ** 40])), "INVALID_SHAPE");
  assert.equal(code(() => Tensor.fromValues(any({ length: 2 ** 40 }), "float32")), "INVALID_SHAPE");
  assert.equal(code(() => tc.encodeTensorProto(t, any({ name: 5 }))), "INVALID_ATTRIBUTE");
  assert.equal(code(() => Tensor.fromStorage(any([1, 2]), "string", [2])), "INVALID_DATA");
  assert.equal(code(() => Tensor.zeros("float32", [0, 2 ** 1000])), "INVALID_SHAPE");
  assert.equal(code(() => Tensor.fromValues([], "float32", [0, 2 ** 1000])), "INVALID_SHAPE");
  // A value nested 100,000 deep is described by its kind, not spelled out recursively.
  let deep: unknown = [];
  for (let i = 0; i < 100_000; i++) deep = [deep];
  assert.equal(code(() => Tensor.fromValues([deep] as never, "complex64")), "INVALID_VALUE");
  for (const [name, f] of [
    ["decodeTensorProto", () => tc.decodeTensorProto(tc.encodeTensorProto(t), any({ copy: false, nope: 1 }))],
    ["decodeModel", () => tc.decodeModel(tc.encodeModel(model()), any({ tensr: {} }))],
    ["decodeModel tensor", () => tc.decodeModel(tc.encodeModel(model()), any({ tensor: { copi: true } }))],
    ["encodeTensorProto", () => tc.encodeTensorProto(t, any({ layot: "raw" }))],
    ["encodeModel", () => tc.encodeModel(model(), any({ producer: "x" }))],
    ["encodeModel layout", () => tc.encodeModel(model(), any({ layout: "packed" }))],
  ] as const) {
    assert.equal(code(f), "INVALID_ATTRIBUTE", name);
  }
});

test("fromBytes takes any typed array as its bytes, never as values", () => {
  const f = new Float32Array([1.5, 2, 3, 4]);
  // The call: 16 bytes are not 4 uint8 elements.
  assert.equal(code(() => Tensor.fromBytes(f, "uint8", [4])), "SHAPE_MISMATCH");
  assert.deepEqual(Tensor.fromBytes(f, "uint8", [16]).toValues().slice(0, 4), [0, 0, 0xc0, 0x3f]);
  assert.deepEqual(Tensor.fromBytes(new DataView(f.buffer, 4, 4), "float32", [1]).toValues(), [2]);
  assert.deepEqual(Tensor.fromBytes(f.subarray(1, 2), "float32", [1]).toValues(), [2]);
  assert.equal(code(() => Tensor.fromBytes([1, 2] as never, "uint8", [2])), "INVALID_DATA");
});

test("fromStorage takes a Float16Array as float16 storage, without a copy, where the platform has one", { skip: typeof (globalThis as Record<string, unknown>).Float16Array !== "function" && "no Float16Array on this runtime (Node 20)" }, () => {
  const F16 = (globalThis as unknown as { Float16Array: new (v: number[]) => Uint16Array }).Float16Array;
  const h = new F16([1, -2, 65504, Infinity]);
  const x = Tensor.fromStorage(h as never, "float16", [4]);
  assert.deepEqual(x.toValues(), [1, -2, 65504, Infinity]);
  assert.ok(x.data instanceof Uint16Array);
  assert.equal(x.data.buffer, h.buffer);
  assert.deepEqual(Array.from(x.data as Uint16Array), [0x3c00, 0xc000, 0x7bff, 0x7c00]);
  assert.equal(code(() => Tensor.fromStorage(h as never, "bfloat16", [4])), "INVALID_DATA");
});

// ---- The sweep: every exported function, every argument position, wrong values ------------------

function exportedFunctions(): [string, (...a: unknown[]) => unknown][] {
  const out: [string, (...a: unknown[]) => unknown][] = [];
  for (const [name, v] of Object.entries(tc)) {
    if (typeof v !== "function" || name === "TensorcastError") continue;
    if (name === "Tensor") {
      for (const m of ["fromValues", "fromBytes", "fromStorage", "zeros"] as const) {
        out.push([`Tensor.${m}`, (...a: unknown[]) => (Tensor[m] as (...b: unknown[]) => unknown)(...a)]);
      }
    } else out.push([name, v as (...a: unknown[]) => unknown]);
  }
  return out;
}

test("the sweep lists every exported function (a new export must be added to it)", () => {
  assert.deepEqual(exportedFunctions().map(([n]) => n).filter((n) => !(n in GOOD)), []);
  // And the good arguments are good: each call succeeds as given.
  for (const [name, f] of exportedFunctions()) assert.equal(code(() => f(...GOOD[name])), "no error", name);
});

test("every exported function, given a wrong value in any argument, returns or throws a TensorcastError", () => {
  const escaped: string[] = [];
  let calls = 0;
  for (const [name, f] of exportedFunctions()) {
    const good = GOOD[name];
    for (let k = 0; k < good.length; k++) {
      for (const w of WRONG) {
        const args = good.slice();
        args[k] = w;
        calls++;
        const c = code(() => f(...args));
        if (c.includes(":")) escaped.push(`${name} argument ${k} = ${typeof w === "symbol" ? "Symbol" : String(w)}: ${c.slice(0, 100)}`);
      }
    }
  }
  assert.ok(calls > 1000, `${calls} calls`);
  assert.deepEqual(escaped, []);
});
