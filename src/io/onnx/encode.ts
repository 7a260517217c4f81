/**
 * Tensor -> ONNX TensorProto, and a minimal ModelProto writer: the inverse of tensorproto.ts and
 * model.ts, for every data type of dtype/table.ts.
 *
 * Storage rules (onnx.md section 1): raw_data is the tensor's little-endian bytes, sub-byte types
 * packed from the low bits (exactly `Tensor.bytes()`). The typed layout puts the same elements in
 * float_data (float32, complex64 as re, im pairs), double_data (float64, complex128), int64_data
 * (int64), uint64_data (uint32, uint64), string_data (string, which is never raw) or int32_data
 * (everything else: one entry per element, as a signed value for int8/16/32 and as the unsigned
 * bit pattern or code otherwise; sub-byte and float6 types one already-packed byte per entry).
 *
 * Fields are written in field-number order, repeated numeric data fields packed and dims not, as
 * onnx.proto declares them (`repeated int64 dims = 1;` has no `[packed = true]`). So a tensor that
 * the onnx Python package serialised with raw_data comes out byte for byte the same.
 */
import { expectOptions, isString } from "../../args.js";
import { TensorcastError } from "../../errors.js";
import type { DType } from "../../dtype/table.js";
import { expectTensor, type Tensor } from "../../tensor.js";
import type { OnnxAttribute, OnnxGraph, OnnxModel, OnnxNode, OpsetImport, ValueInfo } from "./model.js";
import { checkModel } from "./model-check.js";
import { WireWriter } from "./wire-writer.js";
import { ATTRIBUTE_TYPE, TENSOR_FIELD } from "./fields.js";

/** "raw": raw_data (the default; what onnx's numpy_helper writes). "typed": the typed fields. */
export type TensorLayout = "raw" | "typed";

export interface EncodeTensorOptions {
  /** The TensorProto's `name`; omitted from the output when "" or undefined. */
  name?: string;
  /** Ignored for strings, which are always string_data. Default "raw". */
  layout?: TensorLayout;
}


/**
 * Encodes a tensor as a serialized TensorProto (the format of a test suite's .pb files).
 *
 * Every bit is kept: NaN payloads, -0 and float8 / sub-byte codes are copied, never converted
 * through a JS number. A bool element is written as 0 / 1 in int32_data (any non-zero byte as 1);
 * raw_data copies the byte as is. An empty tensor gets an empty raw_data in the raw layout (as
 * onnx's numpy_helper.from_array writes it) and no data field in the typed one (as helper.make_tensor
 * and protobuf's empty packed fields have it); both decode to the same empty tensor.
 *
 * @example encodeTensorProto(Tensor.fromValues([1.5], "float32"))
 *          // Uint8Array [0x08, 0x01, 0x10, 0x01, 0x4a, 0x04, 0x00, 0x00, 0xc0, 0x3f]
 * @throws TensorcastError INVALID_VALUE when a string element or the name has a lone surrogate
 *         (UTF-8 cannot hold it); INVALID_DATA when `tensor` is not a Tensor.
 */
export function encodeTensorProto(tensor: Tensor, opts: EncodeTensorOptions = {}): Uint8Array {
  expectTensor(tensor, "encodeTensorProto's input");
  expectOptions(opts, "encodeTensorProto", { name: isString, layout: isLayout }, { name: "a string", layout: '"raw" or "typed"' });
  const w = new WireWriter(sizeHint(tensor, opts.name));
  writeTensorProto(w, tensor, opts);
  return w.finish();
}

/**
 * Writes the fields of one TensorProto into `w` (no enclosing tag: wrap it in `fork` / `join` to
 * nest it, as encodeModel does for initializers).
 */
export function writeTensorProto(w: WireWriter, tensor: Tensor, opts: EncodeTensorOptions = {}): void {
  expectTensor(tensor, "writeTensorProto's input");
  if (opts.layout !== undefined && opts.layout !== "raw" && opts.layout !== "typed") {
    throw new TensorcastError("INVALID_ATTRIBUTE", `layout ${JSON.stringify(opts.layout)} is neither "raw" nor "typed"`);
  }
  const t: DType = tensor.dtype;
  const typed = t.kind === "string" || opts.layout === "typed";
  for (const d of tensor.shape) w.int64Field(TENSOR_FIELD.dims, d);
  w.uint32Field(TENSOR_FIELD.dataType, t.onnx);
  const field = typed ? typedFieldOf(t) : TENSOR_FIELD.rawData;
  // Field-number order: the typed fields 4..7 come before name (8), raw_data and 10, 11 after it.
  if (typed && field < TENSOR_FIELD.name) writeTyped(w, tensor, field);
  if (opts.name) w.stringField(TENSOR_FIELD.name, opts.name, "tensor name");
  // Written even when empty, as numpy_helper.from_array does: it says which layout was chosen.
  if (!typed) w.bytesField(TENSOR_FIELD.rawData, tensor.bytes());
  if (typed && field > TENSOR_FIELD.name) writeTyped(w, tensor, field);
}

/**
 * Which typed field holds a type's elements (the same table as tensorproto.ts's reader, which
 * rejects any other field, so a mismatch here fails the round-trip tests).
 */
function typedFieldOf(t: DType): number {
  switch (t.name) {
    case "float32":
    case "complex64":
      return TENSOR_FIELD.floatData;
    case "float64":
    case "complex128":
      return TENSOR_FIELD.doubleData;
    case "int64":
      return TENSOR_FIELD.int64Data;
    case "uint32":
    case "uint64":
      return TENSOR_FIELD.uint64Data;
    case "string":
      return TENSOR_FIELD.stringData;
    default:
      return TENSOR_FIELD.int32Data;
  }
}

function writeTyped(w: WireWriter, tensor: Tensor, field: number): void {
  const t: DType = tensor.dtype;
  if (field === TENSOR_FIELD.stringData) {
    const strings = tensor.data as string[];
    for (let i = 0; i < strings.length; i++) w.stringField(TENSOR_FIELD.stringData, strings[i], `string element ${i}`);
    return;
  }
  const bytes = tensor.bytes();
  // protobuf writes no packed field at all for an empty repeated field.
  if (bytes.length === 0) return;
  switch (field) {
    case TENSOR_FIELD.floatData:
    case TENSOR_FIELD.doubleData:
      // A packed run of floats / doubles is their little-endian bytes: the raw_data bytes, copied
      // rather than read into numbers, which could quiet a signalling NaN.
      w.bytesField(field, bytes);
      return;
    case TENSOR_FIELD.int64Data:
    case TENSOR_FIELD.uint64Data: {
      w.fork(field);
      const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
      if (t.name === "uint32") {
        for (let at = 0; at < bytes.length; at += 4) w.uint32(view.getUint32(at, true));
      } else {
        // int64 and uint64 alike: the varint of the 64 bits, read as two little-endian words so no
        // element becomes a BigInt. A negative int64 takes 10 bytes, as protobuf writes it.
        for (let at = 0; at < bytes.length; at += 8) w.varint64(view.getUint32(at, true), view.getUint32(at + 4, true));
      }
      w.join();
      return;
    }
    case TENSOR_FIELD.int32Data: {
      w.fork(field);
      const data = tensor.data as Int8Array | Int16Array | Int32Array | Uint8Array | Uint16Array;
      if (t.kind === "int" && !t.packed) {
        // int8 / int16 / int32: the signed value, sign-extended as protobuf's int32 (make_tensor).
        for (let i = 0; i < data.length; i++) w.int32(data[i]);
      } else if (t.kind === "bool") {
        for (let i = 0; i < data.length; i++) w.uint32(data[i] !== 0 ? 1 : 0);
      } else {
        // uint8 / uint16 values, float16 / bfloat16 bit patterns, float8 / e8m0 codes, and for
        // sub-byte and float6 types the packed storage bytes themselves, one per entry.
        for (let i = 0; i < data.length; i++) w.uint32(data[i]);
      }
      w.join();
      return;
    }
  }
}

/** A buffer size that fits most tensors without growing: raw bytes plus generous overhead. */
function sizeHint(tensor: Tensor, name: string | undefined): number {
  const strings = tensor.dtype.kind === "string" ? (tensor.data as string[]) : undefined;
  let body = 0;
  if (strings) for (const s of strings) body += 3 * s.length + 6;
  else body = tensor.bytes().length;
  return 32 + 11 * tensor.shape.length + 3 * (name?.length ?? 0) + body;
}



// ---- ModelProto --------------------------------------------------------------------------------

export interface EncodeModelOptions {
  /** ModelProto.producer_name; omitted when undefined. */
  producerName?: string;
  /** Layout of initializers and TENSOR attributes. Default "raw". */
  layout?: TensorLayout;
}

/**
 * Encodes the subset of ModelProto that `decodeModel` reads, so `decodeModel(encodeModel(m))`
 * gives `m` back: ir_version, opset imports, and the graph's name, nodes (with FLOAT, INT, STRING,
 * TENSOR, FLOATS, INTS and STRINGS attributes), initializers, inputs and outputs. Empty node names
 * and domains are left out (they read back as ""); a ValueInfo with elemType 0 and no shape gets
 * no type. FLOAT and FLOATS are rounded to float32, the format's width.
 *
 * @example decodeModel(encodeModel(model)).graph.nodes[0].opType  // "Cast"
 * @throws TensorcastError NOT_IMPLEMENTED for an UNSUPPORTED attribute (its value was never
 *         decoded, so there is nothing to write); INVALID_VALUE for INT / INTS outside int64 or a
 *         lone surrogate in a string; the errors of `encodeTensorProto`.
 */
export function encodeModel(model: OnnxModel, opts: EncodeModelOptions = {}): Uint8Array {
  checkModel(model);
  expectOptions(opts, "encodeModel", { producerName: isString, layout: isLayout }, { producerName: "a string", layout: '"raw" or "typed"' });
  // Room for the initializers up front, so large weights are not copied by the buffer's growth.
  let hint = 64 * 1024;
  for (const init of model.graph.initializers) hint += sizeHint(init.tensor, init.name);
  const w = new WireWriter(hint);
  // ModelProto { ir_version = 1, producer_name = 2, graph = 7, opset_import = 8 }.
  w.int64Field(1, model.irVersion);
  if (opts.producerName !== undefined) w.stringField(2, opts.producerName, "producer_name");
  w.fork(7);
  writeGraph(w, model.graph, opts);
  w.join();
  for (const o of model.opsetImports) writeOpset(w, o);
  return w.finish();
}

function writeOpset(w: WireWriter, o: OpsetImport): void {
  // OperatorSetIdProto { domain = 1, version = 2 }; domain "" is written, as onnx.helper does.
  w.fork(8).stringField(1, o.domain, "opset domain").int64Field(2, o.version).join();
}

function writeGraph(w: WireWriter, g: OnnxGraph, opts: EncodeModelOptions): void {
  // GraphProto { node = 1, name = 2, initializer = 5, input = 11, output = 12 }.
  for (const n of g.nodes) {
    w.fork(1);
    writeNode(w, n, opts);
    w.join();
  }
  w.stringField(2, g.name, "graph name");
  for (const init of g.initializers) {
    w.fork(5);
    writeTensorProto(w, init.tensor, { name: init.name, layout: opts.layout });
    w.join();
  }
  for (const v of g.inputs) writeValueInfo(w, 11, v);
  for (const v of g.outputs) writeValueInfo(w, 12, v);
}

function writeNode(w: WireWriter, n: OnnxNode, opts: EncodeModelOptions): void {
  // NodeProto { input = 1, output = 2, name = 3, op_type = 4, attribute = 5, domain = 7 }.
  // Inputs are written even when "": an empty name marks an omitted optional input by position.
  for (const s of n.inputs) w.stringField(1, s, "node input");
  for (const s of n.outputs) w.stringField(2, s, "node output");
  if (n.name) w.stringField(3, n.name, "node name");
  w.stringField(4, n.opType, "op_type");
  for (const a of n.attributes) {
    w.fork(5);
    writeAttribute(w, a, n, opts);
    w.join();
  }
  if (n.domain) w.stringField(7, n.domain, "node domain");
}

function writeAttribute(w: WireWriter, a: OnnxAttribute, n: OnnxNode, opts: EncodeModelOptions): void {
  // AttributeProto { name = 1, f = 2, i = 3, s = 4, t = 5, floats = 7, ints = 8, strings = 9,
  // type = 20 }. floats and ints are not [packed = true] in onnx.proto, so one tag per element.
  if (a.type === "UNSUPPORTED") {
    throw new TensorcastError(
      "NOT_IMPLEMENTED",
      `${n.opType} attribute "${a.name}" has attribute type ${a.onnxType}, which decodeModel keeps no value for; ` +
        "encodeModel writes FLOAT, INT, STRING, TENSOR, FLOATS, INTS and STRINGS",
    );
  }
  const what = `attribute "${a.name}"`;
  w.stringField(1, a.name, "attribute name");
  switch (a.type) {
    case "FLOAT":
      w.floatField(2, a.value);
      break;
    case "INT":
      w.int64Field(3, a.value);
      break;
    case "STRING":
      w.stringField(4, a.value, what);
      break;
    case "TENSOR":
      w.fork(5);
      writeTensorProto(w, a.value, { layout: opts.layout });
      w.join();
      break;
    case "FLOATS":
      for (const f of a.value) w.floatField(7, f);
      break;
    case "INTS":
      for (const i of a.value) w.int64Field(8, i);
      break;
    case "STRINGS":
      for (const s of a.value) w.stringField(9, s, what);
      break;
    default:
      throw new TensorcastError("INVALID_ATTRIBUTE", `${what} has unknown type ${JSON.stringify((a as { type: unknown }).type)}`);
  }
  // Required since IR version 2; onnxruntime uses it to tell INT from INTS.
  w.uint32Field(20, ATTRIBUTE_TYPE[a.type]);
}

function writeValueInfo(w: WireWriter, field: number, v: ValueInfo): void {
  // ValueInfoProto { name = 1, type = 2 } -> TypeProto { tensor_type = 1 } -> TypeProto.Tensor
  // { elem_type = 1, shape = 2 } -> TensorShapeProto { dim = 1 } -> Dimension { dim_value = 1,
  // dim_param = 2 }, and null as a Dimension with neither (an unknown size).
  w.fork(field).stringField(1, v.name, "value name");
  if (v.elemType !== 0 || v.shape !== undefined) {
    w.fork(2).fork(1);
    if (v.elemType !== 0) w.int32Field(1, v.elemType);
    if (v.shape !== undefined) {
      w.fork(2);
      for (const d of v.shape) {
        w.fork(1);
        if (typeof d === "number") w.int64Field(1, d);
        else if (typeof d === "string") w.stringField(2, d, "dim_param");
        w.join();
      }
      w.join();
    }
    w.join().join();
  }
  w.join();
}

const isLayout = (v: unknown): boolean => v === "raw" || v === "typed";
