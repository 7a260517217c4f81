/**
 * Builds single-purpose test graphs (a Cast, or a Cast between two helper Casts) for onnxruntime,
 * as serialized ModelProto bytes. A thin layer of defaults over src/io/onnx/encode.ts's
 * `encodeModel`: numbers instead of bigints for INT / INTS, a default node name, graph name, IR
 * version and producer. onnxruntime itself then checks the writer: a wrongly spelled model fails to
 * load or computes something else, and the differential test would say so.
 *
 * Field numbers are those of onnx/onnx.proto (IR version 10+); see encode.ts.
 */
import { encodeModel } from "../../src/io/onnx/encode.js";
import type { OnnxAttribute, OnnxModel, ValueInfo } from "../../src/io/onnx/model.js";

/** One node attribute. Only the kinds the Cast tests need (and FLOAT, which costs one line). */
export type Attribute =
  | { name: string; type: "INT"; i: number | bigint }
  | { name: string; type: "FLOAT"; f: number }
  | { name: string; type: "STRING"; s: string }
  | { name: string; type: "INTS"; ints: readonly (number | bigint)[] };

export interface NodeSpec {
  opType: string;
  inputs: readonly string[];
  outputs: readonly string[];
  attributes?: readonly Attribute[];
  name?: string;
  /** Operator domain; "" (the default ONNX domain) when omitted. */
  domain?: string;
}

/**
 * A graph input or output: a tensor of ONNX element type `elemType` (TensorProto.DataType number).
 * Each dimension is a fixed size or a symbolic name; `shape` undefined means unknown rank.
 */
export interface ValueSpec {
  name: string;
  elemType: number;
  shape?: readonly (number | string)[];
}

export interface ModelSpec {
  inputs: readonly ValueSpec[];
  outputs: readonly ValueSpec[];
  nodes: readonly NodeSpec[];
  /** Version of the default ("") domain. */
  opset: number;
  /** Default 10: the first IR version with int4/uint4. Types newer than the IR version may be refused. */
  irVersion?: number;
  graphName?: string;
}

function attribute(a: Attribute): OnnxAttribute {
  switch (a.type) {
    case "INT": return { name: a.name, type: "INT", value: BigInt(a.i) };
    case "FLOAT": return { name: a.name, type: "FLOAT", value: a.f };
    case "STRING": return { name: a.name, type: "STRING", value: a.s };
    case "INTS": return { name: a.name, type: "INTS", value: a.ints.map((v) => BigInt(v)) };
  }
}

function valueInfo(v: ValueSpec): ValueInfo {
  return { name: v.name, elemType: v.elemType, shape: v.shape?.slice() };
}

/** The OnnxModel `buildModel` serialises, for tests that want to inspect or alter it first. */
export function modelOf(spec: ModelSpec): OnnxModel {
  return {
    irVersion: spec.irVersion ?? 10,
    opsetImports: [{ domain: "", version: spec.opset }],
    graph: {
      name: spec.graphName ?? "tensorcast_test",
      nodes: spec.nodes.map((n, i) => ({
        name: n.name ?? `${n.opType}_${i}`,
        opType: n.opType,
        domain: n.domain ?? "",
        inputs: n.inputs.slice(),
        outputs: n.outputs.slice(),
        attributes: (n.attributes ?? []).map(attribute),
      })),
      initializers: [],
      inputs: spec.inputs.map(valueInfo),
      outputs: spec.outputs.map(valueInfo),
    },
  };
}

/** Serialises a ModelProto for `spec`; the bytes can be passed straight to `InferenceSession.create`. */
export function buildModel(spec: ModelSpec): Uint8Array {
  return encodeModel(modelOf(spec), { producerName: "tensorcast-test" });
}

/**
 * The common case: one input `x` of type `from`, a chain of Cast nodes through `chain` types (the
 * last one is the output `y`), each with its own attributes. Shapes are 1-D with a symbolic length
 * so one session serves any batch size.
 */
export function castChainModel(
  from: number,
  chain: readonly { to: number; attributes?: readonly Attribute[] }[],
  opset: number,
  irVersion?: number,
): Uint8Array {
  const nodes: NodeSpec[] = [];
  let previous = "x";
  chain.forEach((step, i) => {
    const out = i === chain.length - 1 ? "y" : `t${i}`;
    nodes.push({
      opType: "Cast",
      inputs: [previous],
      outputs: [out],
      attributes: [{ name: "to", type: "INT", i: step.to }, ...(step.attributes ?? [])],
    });
    previous = out;
  });
  return buildModel({
    inputs: [{ name: "x", elemType: from, shape: ["n"] }],
    outputs: [{ name: "y", elemType: chain[chain.length - 1].to, shape: ["n"] }],
    nodes,
    opset,
    irVersion,
  });
}
