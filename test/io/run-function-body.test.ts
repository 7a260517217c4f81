/**
 * The runner's float32 operators of DynamicQuantizeLinear's function body: each against values
 * worked out by hand (ties of Round, -0, NaN, Clip's optional bounds, single-element operands), the
 * body itself against dynamicQuantizeLinear, and the forms it does not take refused by name.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { Tensor, TensorcastError, dynamicQuantizeLinear, runModel } from "../../src/index.js";
import { FUNCTION_BODY_KERNELS } from "../../src/io/onnx/run-function-body.js";
import type { OnnxAttribute, OnnxNode } from "../../src/io/onnx/model.js";
import { modelOf, type Attribute } from "../support/onnx-model.js";

const KERNEL = new Map(FUNCTION_BODY_KERNELS);
const node = (opType: string, attributes: OnnxAttribute[] = []): OnnxNode =>
  ({ opType, name: "", domain: "", inputs: [], outputs: ["y"], attributes }) as unknown as OnnxNode;
const f32 = (v: number[], shape = [v.length]): Tensor => Tensor.fromStorage(new Float32Array(v), "float32", shape);
const run = (op: string, inputs: (Tensor | undefined)[], attributes: OnnxAttribute[] = []): Tensor => KERNEL.get(op)!(node(op, attributes), inputs);
const values = (t: Tensor): number[] => Array.from(t.data as Float32Array);
const same = (a: number[], b: number[]): void => assert.ok(a.length === b.length && a.every((v, i) => Object.is(v, b[i])), `${a} vs ${b}`);

test("Round: half to even, the sign of -0.5 kept, NaN and Inf through", () => {
  same(values(run("Round", [f32([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 2.4999998, 8388609, NaN, -Infinity])])),
    [0, 2, 2, -0, -2, -2, 2, 8388609, NaN, -Infinity]);
});

test("Sub, Div, Min, Max: rounded once to float32, single elements broadcast, NaN propagates", () => {
  same(values(run("Div", [f32([1, 2, -3]), f32([3], [])])), [Math.fround(1 / 3), Math.fround(2 / 3), -1]);
  same(values(run("Sub", [f32([0], []), f32([16777217 - 1, 1e-45])])), [-16777216, -1e-45].map(Math.fround));
  same(values(run("Min", [f32([1, NaN, 0]), f32([0], [])])), [0, NaN, 0]);
  same(values(run("Min", [f32([0, -0]), f32([-0, 0])])), [-0, -0]);
  same(values(run("Max", [f32([-5, 7]), f32([0], [])])), [0, 7]);
  same(values(run("Div", [f32([0], []), f32([0], [])])), [NaN]);
});

test("ReduceMin / ReduceMax over every axis, keepdims 0 and the default 1; Clip with and without bounds", () => {
  const x = f32([3, -1, 4, 1, -5, 9], [2, 3]);
  const keep0: OnnxAttribute = { name: "keepdims", type: "INT", value: 0n } as OnnxAttribute;
  assert.deepEqual(run("ReduceMin", [x], [keep0]).shape, []);
  same(values(run("ReduceMin", [x], [keep0])), [-5]);
  const max = run("ReduceMax", [x]);
  assert.deepEqual(max.shape, [1, 1]);
  same(values(max), [9]);
  same(values(run("Clip", [f32([-300, 0.4, 300, NaN]), f32([0], []), f32([255], [])])), [0, 0.4, 255, NaN].map(Math.fround));
  same(values(run("Clip", [f32([-300, 300]), undefined, f32([255], [])])), [-300, 255]);
});

test("what the body does not need is NOT_IMPLEMENTED, named", () => {
  const refused = (f: () => unknown, pattern: RegExp): void =>
    assert.throws(f, (e: unknown) => e instanceof TensorcastError && e.code === "NOT_IMPLEMENTED" && pattern.test(e.message));
  refused(() => run("Sub", [f32([1, 2]), f32([1, 2, 3])]), /shapes \[2\] and \[3\]: the runner broadcasts single elements only/);
  refused(() => run("Round", [Tensor.fromValues([1], "float16")]), /input 0 is float16; the runner's Round takes float32 only/);
  refused(() => run("ReduceMin", [f32([1, 2])], [{ name: "axes", type: "INTS", value: [0n] } as OnnxAttribute]), /every axis only/);
  refused(() => run("ReduceMax", [f32([])]), /empty tensor/);
  refused(() => run("Clip", [f32([1])], [{ name: "min", type: "FLOAT", value: 0 } as OnnxAttribute]), /attribute min/);
});

test("the body run as a graph equals dynamicQuantizeLinear on random tensors", () => {
  const keepdims0: Attribute[] = [{ name: "keepdims", type: "INT", i: 0 }];
  const body: [string, string[], string[], Attribute[]?][] = [
    ["ReduceMin", ["x"], ["lo"], keepdims0], ["ReduceMax", ["x"], ["hi"], keepdims0],
    ["Min", ["lo", "zero"], ["lo0"]], ["Max", ["hi", "zero"], ["hi0"]], ["Sub", ["hi0", "lo0"], ["range"]],
    ["Div", ["range", "qmax"], ["scale"]], ["Div", ["lo0", "scale"], ["ls"]], ["Sub", ["zero", "ls"], ["zp0"]],
    ["Clip", ["zp0", "zero", "qmax"], ["zp1"]], ["Round", ["zp1"], ["zp2"]],
    ["Cast", ["zp2"], ["zp"], [{ name: "to", type: "INT", i: 2 }]],
    ["QuantizeLinear", ["x", "scale", "zp"], ["y"]],
  ];
  const scalar = (name: string) => ({ name, elemType: 1, shape: [] });
  const model = modelOf({
    opset: 11,
    inputs: [{ name: "x", elemType: 1, shape: ["n"] }, scalar("zero"), scalar("qmax")],
    outputs: [{ name: "y", elemType: 2, shape: ["n"] }, scalar("scale"), { name: "zp", elemType: 2, shape: [] }],
    nodes: body.map(([opType, inputs, outputs, attributes]) => ({ opType, inputs, outputs, attributes })),
  });
  const zero = f32([0], []);
  const qmax = f32([255], []);
  let seed = 7;
  for (let k = 0; k < 200; k++) {
    const n = 1 + (k % 37);
    const xs = Array.from({ length: n }, () => ((seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32 - 0.3) * 2 ** ((k % 20) - 10));
    const x = f32(xs);
    const [y, scale, zp] = runModel(model, { x, zero, qmax });
    const want = dynamicQuantizeLinear(x);
    assert.deepEqual(Array.from(y.data as Uint8Array), Array.from(want.y.data as Uint8Array), `case ${k}`);
    same(values(scale), values(want.scale));
    assert.equal((zp.data as Uint8Array)[0], (want.zeroPoint.data as Uint8Array)[0]);
  }
});
