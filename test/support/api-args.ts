/**
 * The API sweeps' arguments (test/entry-points.test.ts, test/entry-points-hostile.test.ts): for
 * every exported function of the core entry point, arguments with which the call succeeds, and the
 * plain wrong values each position is tried with.
 */
import * as tc from "../../src/index.js";
import { Tensor } from "../../src/index.js";

export const t = Tensor.fromValues([1, 2], "float32");
export const model = (): tc.OnnxModel => ({
  irVersion: 10, opsetImports: [{ domain: "", version: 21 }],
  graph: { name: "g", nodes: [], initializers: [], inputs: [], outputs: [] },
});

export const WRONG: readonly unknown[] = [null, undefined, {}, [], 5, -1, 1.5, 2 ** 40, NaN, "x", true, 5n, Symbol("s"), () => 1, new Uint8Array(3)];
export const GOOD: Readonly<Record<string, readonly unknown[]>> = {
  "Tensor.fromValues": [[1, 2], "float32", [2]],
  "Tensor.fromBytes": [new Uint8Array(8), "float32", [2]],
  "Tensor.fromStorage": [new Float32Array(2), "float32", [2]],
  "Tensor.zeros": ["float32", [2]],
  dtype: ["float32"], cast: [t, "float16", {}], castLike: [t, t, {}], castInto: [t, Tensor.zeros("float16", [2]), {}],
  createArena: [1024],
  reshape: [t, [2, 1], {}], reshapeVersion: [14], bitcast: [t, "int32", {}], promoteTypes: ["f16", "f32", {}],
  convertPromoteTypes: [t, t, {}], openvinoTypeName: ["float32"], operatorVersion: ["Cast", 21],
  decodeTensorProto: [tc.encodeTensorProto(t), {}], retag: [t, "int32"], decodeModel: [tc.encodeModel(model()), {}],
  opsetVersion: [model(), ""], findAttribute: [{ name: "", opType: "Cast", domain: "", inputs: [], outputs: [], attributes: [] }, "to"],
  attributeNumber: [{ name: "", opType: "Cast", domain: "", inputs: [], outputs: [], attributes: [] }, "to"],
  runModel: [model(), []], encodeTensorProto: [t, {}], encodeModel: [model(), {}],
  decodeFloat: [tc.dtype("float16").format, 1], encodeFloat: [tc.dtype("float16").format, 1, true],
  encodeE8M0: [1, true, "up"], nanCode: [tc.dtype("float16").format, false], isNegativeCode: [tc.dtype("float16").format, 1],
  overflowThreshold: [tc.dtype("float16").format], roundsPastMax: [tc.dtype("float16").format, 1],
  packedByteLength: [3, 4], isCodedFloat: [tc.dtype("float16")], bitFields: [tc.dtype("float16")],
  elementCode: [t, 0], readElement: [t, 0], formatHex: [1n, tc.dtype("float16")], formatBinary: [1n, tc.dtype("float16")],
  splitBits: [1n, tc.dtype("float16")], formatNumber: [1.5], formatError: [0.5], parseValue: ["1.5"],
  storeValue: [tc.parseValue("1.5"), tc.dtype("float16")],
  changedByStoring: [tc.parseValue("1.5"), tc.readElement(t, 0)],
  roundingError: [tc.readElement(t, 0), tc.readElement(t, 1)],
  classifyCast: [tc.readElement(t, 0), tc.readElement(t, 1), tc.dtype("float16")],
  fromOrt: [{ type: "float32", data: new Float32Array(2), dims: [2] }],
  toOrt: [t, class OrtTensor { constructor(readonly type: string, readonly data: unknown, readonly dims: readonly number[]) {} }],
  fromTfjs: [{ dtype: "float32", shape: [2], dataSync: () => new Float32Array(2) }], toTfjs: [t],
  quantizeLinear: [t, Tensor.fromValues([1], "float32", []), Tensor.fromValues([0], "int8", []), {}],
  dequantizeLinear: [Tensor.fromValues([1, 2], "int8"), Tensor.fromValues([1], "float32", []), Tensor.fromValues([0], "int8", []), {}],
  dynamicQuantizeLinear: [t, {}], quantizeOperatorVersion: ["QuantizeLinear", 21],
  quantizeLinearInto: [t, Tensor.fromValues([1], "float32", []), Tensor.fromValues([0], "int8", []), Tensor.zeros("int8", t.shape), {}],
  ggmlType: ["q8_0"], ggmlTypeOfId: [8], dequantizeGgml: ["Q8_0", new Uint8Array(34)],
  dequantizeLinearInto: [Tensor.fromValues([1, 2], "int8"), Tensor.fromValues([1], "float32", []), Tensor.fromValues([0], "int8", []), Tensor.zeros("float32", [2]), {}],
};

