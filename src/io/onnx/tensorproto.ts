/**
 * ONNX TensorProto -> Tensor, for every data type of dtype/table.ts.
 *
 * Storage rules (docs: /onnx.in.proto comments, numpy_helper.to_array; digest: onnx.md section 1):
 * - raw_data: fixed width, little-endian; sub-byte types packed from the low bits; bool 1 byte.
 * - Typed fields when raw_data is absent:
 *   float32 / complex64 -> float_data (complex as re, im pairs); float64 / complex128 -> double_data;
 *   int64 -> int64_data; uint32 / uint64 -> uint64_data; string -> string_data (UTF-8);
 *   everything else -> int32_data, one entry per element, except sub-byte types, where each entry is
 *   one already-packed byte. Entries are cut to the element's width the way numpy's astype does
 *   (int32 -> uint32 -> uint8/uint16), so sign- and zero-extended 16-bit patterns both decode.
 * Segmented and external tensors are refused: neither appears in test vectors, and external data
 * needs file access that a browser-safe module does not have.
 */
import { TensorcastError } from "../../errors.js";
import { dtype, type DType, type DTypeLike, type Storage } from "../../dtype/table.js";
import { shapeSize, storageLength, Tensor } from "../../tensor.js";
import { WIRE_LEN, WIRE_VARINT, WireReader, WordList, decodeUtf8 } from "./wire.js";
import { TENSOR_FIELD } from "./fields.js";
import { typedFieldOf } from "./tensor-data.js";
import { validateMessage } from "./validate.js";

/** A decoded TensorProto: its `name` field ("" when absent) and its contents. */
export interface NamedTensor {
  name: string;
  tensor: Tensor;
}

export interface TensorProtoOptions {
  /**
   * Reinterpret the decoded bits as this type (same width only), as `retag` does. For test data
   * whose .pb is tagged UINT16 while the model says BFLOAT16 (libonnx-testdata 1.12, onnx.md 7).
   */
  retag?: DTypeLike;
  /**
   * Copy raw_data out of the input (the default), so the tensor neither aliases nor keeps alive
   * the caller's whole buffer. `false` shares it when aligned, which suits a one-shot read of a
   * large file.
   */
  copy?: boolean;
}

const DATA_LOCATION_EXTERNAL = 1;

/** Everything read from the wire, before the type is known to be consistent with it. */
interface Fields {
  dims: number[];
  dataType: number;
  name: string;
  raw?: Uint8Array;
  /** Chunks of little-endian float32 / float64 bytes, in order. */
  floatChunks: Uint8Array[];
  doubleChunks: Uint8Array[];
  int32: WordList;
  /** lo, hi word pairs. */
  int64: WordList;
  uint64: WordList;
  strings: Uint8Array[];
  external: boolean;
  segment: boolean;
}

/**
 * Decodes a serialized TensorProto (a .pb file of the ONNX test suites, or an initializer).
 *
 * @example decodeTensorProto(bytes).tensor.toValues()  // e.g. [1, 2, 3]
 * @throws TensorcastError INVALID_DATA for malformed protobuf, invalid UTF-8, or a typed field the
 *         data type does not use; SHAPE_MISMATCH when the element count disagrees with dims;
 *         UNKNOWN_DTYPE for an unknown data_type; NOT_IMPLEMENTED for external or segmented data.
 */
export function decodeTensorProto(bytes: Uint8Array, opts: TensorProtoOptions = {}): NamedTensor {
  return readTensorProto(new WireReader(bytes, "TensorProto"), opts);
}

/** Decodes the TensorProto that `reader` spans (model.ts passes nested messages here). */
export function readTensorProto(reader: WireReader, opts: TensorProtoOptions = {}): NamedTensor {
  // The validator refuses what protobuf and onnx.checker refuse and checks the data against
  // data_type and dims, so what follows can trust the counts.
  validateMessage("TensorProto", reader.buf, reader.pos, reader.end, reader.depth);
  const f = readFields(reader);
  const label = f.name ? `tensor "${f.name}"` : "tensor";
  if (f.segment) {
    throw new TensorcastError("NOT_IMPLEMENTED", `${label}: segmented tensors (TensorProto.segment) are not supported`);
  }
  if (f.external) {
    throw new TensorcastError("NOT_IMPLEMENTED", `${label}: external data is not supported yet`);
  }
  const t = dtype(f.dataType);
  const shape = f.dims;
  const size = shapeSize(shape);
  const copy = opts.copy ?? true;
  const tensor = f.raw
    ? Tensor.fromBytes(copy ? f.raw.slice() : f.raw, t, shape)
    : Tensor.fromStorage(typedStorage(f, t, size), t, shape);
  return { name: f.name, tensor: opts.retag === undefined ? tensor : retag(tensor, opts.retag) };
}

/**
 * The same bits under another data type of the same width, sharing memory; the shape is kept.
 * Used when a file's tag is wrong, e.g. BFLOAT16 data tagged UINT16 in libonnx-testdata 1.12.
 *
 * @example retag(uint16Tensor, "bfloat16").toValues()  // 0x3f80 reads as 1
 * @throws TensorcastError UNSUPPORTED_TYPE when the widths differ or either type is string.
 */
export function retag(tensor: Tensor, to: DTypeLike): Tensor {
  const t = dtype(to);
  const from = tensor.dtype;
  if (t === from) return tensor;
  if (t.kind === "string" || from.kind === "string" || t.bits !== from.bits) {
    throw new TensorcastError(
      "UNSUPPORTED_TYPE",
      `cannot retag ${from.name} (${from.bits} bits) as ${t.name} (${t.bits} bits): ` +
        "only non-string types of the same width share a layout",
    );
  }
  return Tensor.fromBytes(tensor.bytes(), t, tensor.shape);
}

function readFields(r: WireReader): Fields {
  const f: Fields = {
    dims: [], dataType: 0, name: "", floatChunks: [], doubleChunks: [], int32: new WordList(),
    int64: new WordList(), uint64: new WordList(), strings: [], external: false, segment: false,
  };
  for (let field = r.next(); field !== 0; field = r.next()) {
    switch (field) {
      case TENSOR_FIELD.dims:
        r.repeated(WIRE_VARINT, "dims", () => f.dims.push(r.int64Number("dimension")));
        break;
      case TENSOR_FIELD.dataType:
        r.expect(WIRE_VARINT, "data_type");
        f.dataType = r.int32();
        break;
      case TENSOR_FIELD.segment:
        f.segment = true;
        r.skip();
        break;
      case TENSOR_FIELD.floatData:
        f.floatChunks.push(r.fixedChunk(4, "float_data"));
        break;
      case TENSOR_FIELD.int32Data:
        r.repeated(WIRE_VARINT, "int32_data", () => f.int32.push(r.uint32()));
        break;
      case TENSOR_FIELD.stringData:
        r.expect(WIRE_LEN, "string_data");
        f.strings.push(r.bytes());
        break;
      case TENSOR_FIELD.int64Data:
        r.repeated(WIRE_VARINT, "int64_data", () => pushWords(r, f.int64));
        break;
      case TENSOR_FIELD.name:
        r.expect(WIRE_LEN, "name");
        f.name = r.string("name");
        break;
      case TENSOR_FIELD.rawData:
        r.expect(WIRE_LEN, "raw_data");
        f.raw = r.bytes();
        break;
      case TENSOR_FIELD.doubleData:
        f.doubleChunks.push(r.fixedChunk(8, "double_data"));
        break;
      case TENSOR_FIELD.uint64Data:
        r.repeated(WIRE_VARINT, "uint64_data", () => pushWords(r, f.uint64));
        break;
      case TENSOR_FIELD.externalData:
        f.external = true;
        r.skip();
        break;
      case TENSOR_FIELD.dataLocation:
        r.expect(WIRE_VARINT, "data_location");
        if (r.int32() === DATA_LOCATION_EXTERNAL) f.external = true;
        break;
      default:
        // doc_string, metadata_props and fields newer than this reader carry no element data.
        r.skip();
    }
  }
  return f;
}

function pushWords(r: WireReader, list: WordList): void {
  r.varint64();
  list.push(r.lo);
  list.push(r.hi);
}

/** Builds the storage of `t` from its typed field (the validator checked the field and its count). */
function typedStorage(f: Fields, t: DType, size: number): Storage {
  const entries = storageLength(t, size);
  switch (typedFieldOf(t)) {
    case "float_data":
      return new Float32Array(concat(f.floatChunks).buffer, 0, entries);
    case "double_data":
      return new Float64Array(concat(f.doubleChunks).buffer, 0, entries);
    case "int64_data":
    case "uint64_data": {
      const words = (t.name === "int64" ? f.int64 : f.uint64).view();
      if (t.name === "uint32") {
        // numpy's astype(uint32) keeps the low word.
        const out = new Uint32Array(entries);
        for (let i = 0; i < entries; i++) out[i] = words[2 * i];
        return out;
      }
      const buffer = words.slice().buffer;
      return t.name === "int64" ? new BigInt64Array(buffer) : new BigUint64Array(buffer);
    }
    case "string_data":
      return f.strings.map((s, i) => decodeUtf8(s, `tensor${f.name ? ` "${f.name}"` : ""}: string_data[${i}]`));
    case "int32_data":
      return int32Storage(t, f.int32.view(), entries);
  }
}

/**
 * int32_data entries to the type's container. Assigning to a typed array keeps the low bits, which
 * is numpy's int32 -> uint32 -> narrower cast; bool is any non-zero entry (numpy's astype(bool)).
 */
function int32Storage(t: DType, words: Uint32Array, n: number): Storage {
  switch (t.array) {
    case "Int8Array":
      return Int8Array.from(words);
    case "Int16Array":
      return Int16Array.from(words);
    case "Uint16Array":
      return Uint16Array.from(words);
    case "Int32Array":
      return Int32Array.from(words);
    case "Uint8Array": {
      if (t.kind === "bool") {
        const out = new Uint8Array(n);
        for (let i = 0; i < n; i++) out[i] = words[i] !== 0 ? 1 : 0;
        return out;
      }
      return Uint8Array.from(words);
    }
    default:
      throw new TensorcastError("INVALID_DATA", `${t.onnxName} is not stored in int32_data`);
  }
}

/** Concatenates byte chunks into a fresh, aligned buffer. */
function concat(chunks: Uint8Array[]): Uint8Array {
  let n = 0;
  for (const c of chunks) n += c.length;
  const out = new Uint8Array(n);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.length;
  }
  return out;
}
