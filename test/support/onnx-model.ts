/**
 * A tiny ONNX ModelProto *writer*, just enough to build single-purpose test graphs (a Cast, or a
 * Cast between two helper Casts) for onnxruntime. No dependencies: the differential test must not
 * trust a third-party ONNX library to spell the model it is checking us against, and the subset of
 * protobuf needed here (varints and length-delimited fields) is a few lines.
 *
 * Field numbers are those of onnx/onnx.proto (IR version 10+):
 * - ModelProto { ir_version = 1 (int64), producer_name = 2, graph = 7, opset_import = 8 }
 * - OperatorSetIdProto { domain = 1, version = 2 }
 * - GraphProto { node = 1, name = 2, initializer = 5, input = 11, output = 12 }
 * - NodeProto { input = 1, output = 2, name = 3, op_type = 4, attribute = 5, domain = 7 }
 * - AttributeProto { name = 1, f = 2, i = 3, s = 4, floats = 7, ints = 8, type = 20 }
 * - ValueInfoProto { name = 1, type = 2 }; TypeProto { tensor_type = 1 }
 * - TypeProto.Tensor { elem_type = 1, shape = 2 }; TensorShapeProto { dim = 1 }
 * - TensorShapeProto.Dimension { dim_value = 1, dim_param = 2 }
 * Initializers (TensorProto) are not needed by the tests and not written.
 */

/** Protobuf wire types used here. */
const VARINT = 0;
const FIXED32 = 5;
const LEN = 2;

/**
 * An append-only byte buffer with protobuf primitives. Messages are built inside-out: a nested
 * message is written into its own Writer first, then embedded as a length-delimited field, which
 * avoids having to precompute sizes.
 */
class Writer {
  private chunks: number[] = [];

  /** A base-128 varint. Negative int64 values take the full 10 bytes (two's complement), as protobuf says. */
  varint(value: number | bigint): this {
    let v = BigInt.asUintN(64, BigInt(value));
    do {
      let byte = Number(v & 0x7fn);
      v >>= 7n;
      if (v !== 0n) byte |= 0x80;
      this.chunks.push(byte);
    } while (v !== 0n);
    return this;
  }

  private tag(field: number, wire: number): this {
    return this.varint((field << 3) | wire);
  }

  int(field: number, value: number | bigint): this {
    return this.tag(field, VARINT).varint(value);
  }

  float(field: number, value: number): this {
    this.tag(field, FIXED32);
    const b = new Uint8Array(new Float32Array([value]).buffer); // little-endian on every host we run on
    for (const x of b) this.chunks.push(x);
    return this;
  }

  bytes(field: number, data: Uint8Array): this {
    this.tag(field, LEN).varint(data.length);
    for (const x of data) this.chunks.push(x);
    return this;
  }

  string(field: number, s: string): this {
    return this.bytes(field, new TextEncoder().encode(s));
  }

  message(field: number, inner: Writer): this {
    return this.bytes(field, inner.finish());
  }

  finish(): Uint8Array {
    return Uint8Array.from(this.chunks);
  }
}

/** One node attribute. Only the kinds the Cast tests need (and FLOAT, which costs one line). */
export type Attribute =
  | { name: string; type: "INT"; i: number | bigint }
  | { name: string; type: "FLOAT"; f: number }
  | { name: string; type: "STRING"; s: string }
  | { name: string; type: "INTS"; ints: readonly (number | bigint)[] };

/** AttributeProto.AttributeType numbers. */
const ATTRIBUTE_TYPE = { FLOAT: 1, INT: 2, STRING: 3, TENSOR: 4, INTS: 7 } as const;

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

function attribute(a: Attribute): Writer {
  const w = new Writer().string(1, a.name);
  switch (a.type) {
    case "INT": w.int(3, a.i); break;
    case "FLOAT": w.float(2, a.f); break;
    case "STRING": w.string(4, a.s); break;
    // Repeated scalars written unpacked (one tag per element): every protobuf parser accepts both.
    case "INTS": for (const v of a.ints) w.int(8, v); break;
  }
  // The type field is required by ONNX checkers (and onnxruntime) to tell e.g. INT from INTS.
  return w.int(20, ATTRIBUTE_TYPE[a.type]);
}

function node(n: NodeSpec, index: number): Writer {
  const w = new Writer();
  for (const i of n.inputs) w.string(1, i);
  for (const o of n.outputs) w.string(2, o);
  w.string(3, n.name ?? `${n.opType}_${index}`);
  w.string(4, n.opType);
  for (const a of n.attributes ?? []) w.message(5, attribute(a));
  if (n.domain) w.string(7, n.domain);
  return w;
}

function valueInfo(v: ValueSpec): Writer {
  const tensor = new Writer().int(1, v.elemType);
  if (v.shape) {
    const shape = new Writer();
    for (const d of v.shape) {
      shape.message(1, typeof d === "number" ? new Writer().int(1, d) : new Writer().string(2, d));
    }
    tensor.message(2, shape);
  }
  const type = new Writer().message(1, tensor);
  return new Writer().string(1, v.name).message(2, type);
}

/** Serialises a ModelProto for `spec`; the bytes can be passed straight to `InferenceSession.create`. */
export function buildModel(spec: ModelSpec): Uint8Array {
  const graph = new Writer();
  spec.nodes.forEach((n, i) => graph.message(1, node(n, i)));
  graph.string(2, spec.graphName ?? "tensorcast_test");
  for (const v of spec.inputs) graph.message(11, valueInfo(v));
  for (const v of spec.outputs) graph.message(12, valueInfo(v));

  return new Writer()
    .int(1, spec.irVersion ?? 10)
    .string(2, "tensorcast-test")
    .message(7, graph)
    .message(8, new Writer().string(1, "").int(2, spec.opset))
    .finish();
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
