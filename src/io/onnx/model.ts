/**
 * Enough of ONNX's ModelProto to run a test model: the opset imports, and the main graph's nodes,
 * initializers, inputs and outputs. Fields this reader does not know (doc strings, metadata,
 * value_info, local functions, training info) are skipped, not rejected, so newer models still load.
 * Field numbers are those of onnx/onnx.in.proto.
 */
import { describe, expectArray, expectBytes, expectObject, expectOptions } from "../../args.js";
import { TensorcastError } from "../../errors.js";
import type { Tensor } from "../../tensor.js";
import { checkTensorProtoOptions, readTensorProto, type NamedTensor, type TensorProtoOptions } from "./tensorproto.js";
import { ATTRIBUTE_TYPE } from "./fields.js";
import { WIRE_FIXED32, WIRE_LEN, WIRE_VARINT, WireReader, decodeUtf8 } from "./wire.js";
import { validateMessage } from "./validate.js";

export interface OnnxModel {
  irVersion: number;
  /** `domain` is "" for the default ONNX operator set ("ai.onnx"). */
  opsetImports: OpsetImport[];
  graph: OnnxGraph;
}

export interface OpsetImport {
  domain: string;
  version: number;
}

export interface OnnxGraph {
  name: string;
  /** In file order, which ONNX requires to be a topological order. */
  nodes: OnnxNode[];
  initializers: NamedTensor[];
  inputs: ValueInfo[];
  outputs: ValueInfo[];
}

export interface OnnxNode {
  name: string;
  opType: string;
  domain: string;
  /** "" marks an omitted optional input or output. */
  inputs: string[];
  outputs: string[];
  attributes: OnnxAttribute[];
}

/**
 * A node attribute. INT and INTS are int64 in the format, so they are bigints here (Slice's
 * INT64_MAX must survive); `attributeNumber` converts the common small ones. Types this reader does
 * not decode (GRAPH, SPARSE_TENSOR, TYPE_PROTO and their lists) keep their number in `onnxType`.
 */
export type OnnxAttribute =
  | { name: string; type: "FLOAT"; value: number }
  | { name: string; type: "INT"; value: bigint }
  | { name: string; type: "STRING"; value: string }
  | { name: string; type: "TENSOR"; value: Tensor }
  | { name: string; type: "FLOATS"; value: number[] }
  | { name: string; type: "INTS"; value: bigint[] }
  | { name: string; type: "STRINGS"; value: string[] }
  | { name: string; type: "UNSUPPORTED"; onnxType: number };

export interface ValueInfo {
  name: string;
  /** TensorProto.DataType of a tensor type; 0 when absent or not a tensor (sequence, map, ...). */
  elemType: number;
  /** Per dimension: its size, its symbolic name, or null when unknown. Undefined when no shape is given. */
  shape?: (number | string | null)[];
}

export interface ModelOptions {
  /** Passed to every initializer and TENSOR attribute. */
  tensor?: TensorProtoOptions;
}


/**
 * Decodes a serialized ModelProto (a .onnx file).
 *
 * @example decodeModel(bytes).graph.nodes[0].opType  // "Cast"
 * @throws TensorcastError INVALID_DATA for malformed protobuf anywhere in the model (see
 *         validate.ts: nesting deeper than 100 levels, a field with the wrong wire type, a string
 *         that is not UTF-8) or a model without a graph; the errors of `decodeTensorProto` for any
 *         TensorProto in it.
 */
export function decodeModel(bytes: Uint8Array, opts: ModelOptions = {}): OnnxModel {
  expectBytes(bytes, "decodeModel's input");
  expectOptions(opts, "decodeModel", { tensor: (v) => typeof v === "object" && v !== null }, { tensor: "an object of decodeTensorProto's options" });
  if (opts.tensor !== undefined) checkTensorProtoOptions(opts.tensor, "decodeModel's tensor option");
  const r = new WireReader(bytes, "ModelProto");

  // All of it, not only the parts read below: a model protobuf or onnx.checker would refuse
  // (corrupt bytes in a subgraph, nesting past protobuf's limit, a tensor whose data disagrees
  // with its dims) is refused here too, rather than half read.
  validateMessage("ModelProto", r.buf);
  let irVersion = 0;
  const opsetImports: OpsetImport[] = [];
  let graph: OnnxGraph | undefined;
  for (let field = r.next(); field !== 0; field = r.next()) {
    switch (field) {
      case 1:
        r.expect(WIRE_VARINT, "ir_version");
        irVersion = r.int64Number("ir_version");
        break;
      case 7:
        r.expect(WIRE_LEN, "graph");
        // protobuf merges repeated message fields; reading only the last would drop the first's
        // initializers, so two graphs are refused, as the file reader does.
        if (graph) throw new TensorcastError("NOT_IMPLEMENTED", "ModelProto has two graph fields (protobuf would merge them); tensorcast reads one");
        graph = readGraph(r.message("GraphProto"), opts);
        break;
      case 8:
        r.expect(WIRE_LEN, "opset_import");
        opsetImports.push(readOpset(r.message("OperatorSetIdProto")));
        break;
      default:
        r.skip();
    }
  }
  if (!graph) throw new TensorcastError("INVALID_DATA", "ModelProto has no graph");
  // onnx.checker refuses a name defined twice; the file reader does too (scanModelFile).
  const names = new Set<string>();
  for (const init of graph.initializers) {
    if (names.has(init.name)) throw new TensorcastError("INVALID_DATA", `GraphProto: ${JSON.stringify(init.name.slice(0, 64))} is the name of two initializers`);
    names.add(init.name);
  }
  return { irVersion, opsetImports, graph };
}

/**
 * The opset version a model imports for `domain` ("" and "ai.onnx" both name the default set), or
 * undefined when it imports none.
 */
export function opsetVersion(model: OnnxModel, domain = ""): number | undefined {
  expectObject(model, "opsetVersion's model");
  expectArray(model.opsetImports, "model.opsetImports");
  if (typeof domain !== "string") throw new TensorcastError("INVALID_ATTRIBUTE", `opsetVersion's domain must be a string, got ${describe(domain)}`);
  const canonical = (d: string): string => (d === "ai.onnx" ? "" : d);
  return model.opsetImports.find((o) => canonical(o.domain) === canonical(domain))?.version;
}

/** A node's attribute by name, or undefined. */
export function findAttribute(node: OnnxNode, name: string): OnnxAttribute | undefined {
  expectObject(node, "findAttribute's node");
  expectArray(node.attributes, "node.attributes");
  if (typeof name !== "string") throw new TensorcastError("INVALID_ATTRIBUTE", `findAttribute's name must be a string, got ${describe(name)}`);
  return node.attributes.find((a) => a.name === name);
}

/**
 * An INT attribute as a number, or undefined when absent.
 * @throws TensorcastError INVALID_ATTRIBUTE when it is not an INT or not a safe integer.
 */
export function attributeNumber(node: OnnxNode, name: string): number | undefined {
  const a = findAttribute(node, name);
  if (!a) return undefined;
  if (a.type !== "INT") {
    throw new TensorcastError("INVALID_ATTRIBUTE", `${node.opType} attribute ${name} is ${a.type}, expected INT`);
  }
  const n = Number(a.value);
  if (!Number.isSafeInteger(n)) {
    throw new TensorcastError("INVALID_ATTRIBUTE", `${node.opType} attribute ${name} = ${a.value} is beyond 2^53 - 1`);
  }
  return n;
}

function readOpset(r: WireReader): OpsetImport {
  let domain = "";
  let version = 0;
  for (let field = r.next(); field !== 0; field = r.next()) {
    if (field === 1) {
      r.expect(WIRE_LEN, "domain");
      domain = r.string("domain");
    } else if (field === 2) {
      r.expect(WIRE_VARINT, "version");
      version = r.int64Number("version");
    } else r.skip();
  }
  return { domain, version };
}

function readGraph(r: WireReader, opts: ModelOptions): OnnxGraph {
  const g: OnnxGraph = { name: "", nodes: [], initializers: [], inputs: [], outputs: [] };
  for (let field = r.next(); field !== 0; field = r.next()) {
    switch (field) {
      case 1:
        r.expect(WIRE_LEN, "node");
        g.nodes.push(readNode(r.message("NodeProto"), opts));
        break;
      case 2:
        r.expect(WIRE_LEN, "name");
        g.name = r.string("name");
        break;
      case 5:
        r.expect(WIRE_LEN, "initializer");
        g.initializers.push(readTensorProto(r.message("TensorProto"), opts.tensor));
        break;
      case 11:
        r.expect(WIRE_LEN, "input");
        g.inputs.push(readValueInfo(r.message("ValueInfoProto")));
        break;
      case 12:
        r.expect(WIRE_LEN, "output");
        g.outputs.push(readValueInfo(r.message("ValueInfoProto")));
        break;
      default:
        r.skip();
    }
  }
  return g;
}

function readNode(r: WireReader, opts: ModelOptions): OnnxNode {
  const n: OnnxNode = { name: "", opType: "", domain: "", inputs: [], outputs: [], attributes: [] };
  for (let field = r.next(); field !== 0; field = r.next()) {
    switch (field) {
      case 1:
        r.expect(WIRE_LEN, "input");
        n.inputs.push(r.string("input"));
        break;
      case 2:
        r.expect(WIRE_LEN, "output");
        n.outputs.push(r.string("output"));
        break;
      case 3:
        r.expect(WIRE_LEN, "name");
        n.name = r.string("name");
        break;
      case 4:
        r.expect(WIRE_LEN, "op_type");
        n.opType = r.string("op_type");
        break;
      case 5:
        r.expect(WIRE_LEN, "attribute");
        n.attributes.push(readAttribute(r.message("AttributeProto"), opts));
        break;
      case 7:
        r.expect(WIRE_LEN, "domain");
        n.domain = r.string("domain");
        break;
      default:
        r.skip();
    }
  }
  return n;
}

function readAttribute(r: WireReader, opts: ModelOptions): OnnxAttribute {
  let name = "";
  let type = 0;
  let f: number | undefined;
  let i: bigint | undefined;
  let s: Uint8Array | undefined;
  let t: Tensor | undefined;
  const floats: number[] = [];
  const ints: bigint[] = [];
  const strings: Uint8Array[] = [];
  for (let field = r.next(); field !== 0; field = r.next()) {
    switch (field) {
      case 1:
        r.expect(WIRE_LEN, "name");
        name = r.string("name");
        break;
      case 2:
        r.expect(WIRE_FIXED32, "f");
        f = r.float();
        break;
      case 3:
        r.expect(WIRE_VARINT, "i");
        i = r.int64();
        break;
      case 4:
        r.expect(WIRE_LEN, "s");
        s = r.bytes();
        break;
      case 5:
        r.expect(WIRE_LEN, "t");
        t = readTensorProto(r.message("TensorProto"), opts.tensor).tensor;
        break;
      case 7:
        r.repeated(WIRE_FIXED32, "floats", () => floats.push(r.float()));
        break;
      case 8:
        r.repeated(WIRE_VARINT, "ints", () => ints.push(r.int64()));
        break;
      case 9:
        r.expect(WIRE_LEN, "strings");
        strings.push(r.bytes());
        break;
      case 20:
        r.expect(WIRE_VARINT, "type");
        type = r.int32();
        break;
      default:
        // g, graphs, tensors, sparse tensors, type protos, ref_attr_name, doc_string.
        r.skip();
    }
  }
  // IR version 1 models may omit `type`; the field that is set then says what the attribute is.
  if (type === 0) {
    const A = ATTRIBUTE_TYPE;
    type = f !== undefined ? A.FLOAT : i !== undefined ? A.INT : s !== undefined ? A.STRING : t !== undefined ? A.TENSOR
      : floats.length ? A.FLOATS : ints.length ? A.INTS : strings.length ? A.STRINGS : 0;
  }
  const text = (b: Uint8Array, what: string): string => decodeUtf8(b, `AttributeProto: attribute "${name}" ${what}`);
  switch (type) {
    case ATTRIBUTE_TYPE.FLOAT:
      return { name, type: "FLOAT", value: f ?? 0 };
    case ATTRIBUTE_TYPE.INT:
      return { name, type: "INT", value: i ?? 0n };
    case ATTRIBUTE_TYPE.STRING:
      return { name, type: "STRING", value: s ? text(s, "s") : "" };
    case ATTRIBUTE_TYPE.TENSOR:
      if (!t) throw new TensorcastError("INVALID_DATA", `AttributeProto: TENSOR attribute "${name}" has no t`);
      return { name, type: "TENSOR", value: t };
    case ATTRIBUTE_TYPE.FLOATS:
      return { name, type: "FLOATS", value: floats };
    case ATTRIBUTE_TYPE.INTS:
      return { name, type: "INTS", value: ints };
    case ATTRIBUTE_TYPE.STRINGS:
      return { name, type: "STRINGS", value: strings.map((b, k) => text(b, `strings[${k}]`)) };
    default:
      return { name, type: "UNSUPPORTED", onnxType: type };
  }
}

function readValueInfo(r: WireReader): ValueInfo {
  const v: ValueInfo = { name: "", elemType: 0 };
  for (let field = r.next(); field !== 0; field = r.next()) {
    if (field === 1) {
      r.expect(WIRE_LEN, "name");
      v.name = r.string("name");
    } else if (field === 2) {
      r.expect(WIRE_LEN, "type");
      readType(r.message("TypeProto"), v);
    } else r.skip();
  }
  return v;
}

/** TypeProto: only tensor_type (1) is read; sequence, map, optional and sparse types leave elemType 0. */
function readType(r: WireReader, v: ValueInfo): void {
  for (let field = r.next(); field !== 0; field = r.next()) {
    if (field !== 1) {
      r.skip();
      continue;
    }
    r.expect(WIRE_LEN, "tensor_type");
    const tensor = r.message("TypeProto.Tensor");
    for (let inner = tensor.next(); inner !== 0; inner = tensor.next()) {
      if (inner === 1) {
        tensor.expect(WIRE_VARINT, "elem_type");
        v.elemType = tensor.int32();
      } else if (inner === 2) {
        tensor.expect(WIRE_LEN, "shape");
        v.shape = readShape(tensor.message("TensorShapeProto"));
      } else tensor.skip();
    }
  }
}

function readShape(r: WireReader): (number | string | null)[] {
  const dims: (number | string | null)[] = [];
  for (let field = r.next(); field !== 0; field = r.next()) {
    if (field !== 1) {
      r.skip();
      continue;
    }
    r.expect(WIRE_LEN, "dim");
    const d = r.message("TensorShapeProto.Dimension");
    let dim: number | string | null = null;
    for (let inner = d.next(); inner !== 0; inner = d.next()) {
      if (inner === 1) {
        d.expect(WIRE_VARINT, "dim_value");
        dim = d.int64Number("dim_value");
      } else if (inner === 2) {
        d.expect(WIRE_LEN, "dim_param");
        dim = d.string("dim_param");
      } else d.skip();
    }
    dims.push(dim);
  }
  return dims;
}
