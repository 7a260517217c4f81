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
import { expectBytes, expectOptions, isBoolean } from "../../args.js";
import { TensorcastError } from "../../errors.js";
import { dtype, type DType, type DTypeLike, type Storage } from "../../dtype/table.js";
import { expectTensor, storageLength, Tensor, TYPED_ARRAYS } from "../../tensor.js";
import { WIRE_VARINT, WireReader, decodeUtf8 } from "./wire.js";
import { TENSOR_FIELD } from "./fields.js";
import { typedFieldOf } from "./tensor-data.js";
import { validateTensorProto } from "./validate.js";

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

/** What the decoding reads besides the elements: dims, name and raw_data. */
interface Fields {
  dims: number[];
  name: string;
  raw?: Uint8Array;
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
  expectBytes(bytes, "decodeTensorProto's input");
  checkTensorProtoOptions(opts, "decodeTensorProto");
  return readTensorProto(new WireReader(bytes, "TensorProto"), opts);
}

/** Decodes the TensorProto that `reader` spans (model.ts passes nested messages here). */
export function readTensorProto(reader: WireReader, opts: TensorProtoOptions = {}): NamedTensor {
  // The validator refuses what protobuf and onnx.checker refuse and checks the data against
  // data_type and dims; what it learnt (the type, the counts) lets the decoding below write each
  // element straight into a storage of the right size, with nothing in between.
  const facts = validateTensorProto(reader.buf, reader.pos, reader.end, reader.depth);
  if (facts.segment) {
    throw new TensorcastError("NOT_IMPLEMENTED", `${facts.label}: segmented tensors (TensorProto.segment) are not supported`);
  }
  if (facts.external) {
    throw new TensorcastError("NOT_IMPLEMENTED", `${facts.label}: external data is not supported yet`);
  }
  const t = dtype(facts.dataType);
  const sink = facts.raw === undefined ? new ElementSink(t, storageLength(t, facts.size), facts.label) : undefined;
  const f = readFields(reader, sink);
  const shape = f.dims;
  const copy = opts.copy ?? true;
  const tensor = f.raw
    ? Tensor.fromBytes(copy ? f.raw.slice() : f.raw, t, shape)
    : Tensor.fromStorage(sink!.storage, t, shape);
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
  expectTensor(tensor, "retag's input");
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

/** Reads dims, name and raw_data, and hands the elements of the typed field to `sink`. */
function readFields(r: WireReader, sink: ElementSink | undefined): Fields {
  const f: Fields = { dims: [], name: "" };
  for (let field = r.next(); field !== 0; field = r.next()) {
    switch (field) {
      case TENSOR_FIELD.dims:
        r.repeated(WIRE_VARINT, "dims", () => f.dims.push(r.int64Number("dimension")));
        break;
      case TENSOR_FIELD.name:
        f.name = r.string("name");
        break;
      case TENSOR_FIELD.rawData:
        f.raw = r.bytes();
        break;
      case TENSOR_FIELD.floatData:
      case TENSOR_FIELD.doubleData:
        sink!.fixed(field === TENSOR_FIELD.floatData ? r.fixedChunk(4, "float_data") : r.fixedChunk(8, "double_data"));
        break;
      case TENSOR_FIELD.int32Data:
      case TENSOR_FIELD.int64Data:
      case TENSOR_FIELD.uint64Data:
        r.repeated(WIRE_VARINT, "data", () => sink!.varint(r));
        break;
      case TENSOR_FIELD.stringData:
        sink!.string(r.bytes());
        break;
      default:
        // data_type, segment and the location were read by the validator; doc_string,
        // metadata_props and fields newer than this reader carry no element data.
        r.skip();
    }
  }
  return f;
}

type Lanes = Exclude<Storage, string[] | BigInt64Array | BigUint64Array>;

/**
 * The storage of a typed tensor, filled element by element as its typed field is read (the
 * validator checked that the field is the type's and that the count is the storage's).
 *
 * int32_data entries are assigned to the type's container, which keeps their low bits: numpy's
 * int32 -> uint32 -> narrower astype; bool is any non-zero entry (numpy's astype(bool)). uint32
 * keeps the low word of its uint64_data entries, as numpy's astype(uint32) does.
 */
class ElementSink {
  readonly storage: Storage;
  private readonly t: DType;
  /** float_data / double_data: the storage's bytes, filled a run at a time. */
  private readonly bytes: Uint8Array | undefined;
  /** int64 / uint64: the storage as (lo, hi) 32-bit words. */
  private readonly words: Uint32Array | undefined;
  /** Any other fixed-width type: the storage, an entry at a time. */
  private readonly lanes: Lanes | undefined;
  private readonly strings: string[] | undefined;
  private readonly label: string;
  private n = 0;

  constructor(t: DType, entries: number, label: string) {
    this.t = t;
    this.label = label;
    const field = typedFieldOf(t);
    if (field === "string_data") {
      this.storage = this.strings = [];
      return;
    }
    if (field === "int64_data" || (field === "uint64_data" && t.name !== "uint32")) {
      const big = t.name === "int64" ? new BigInt64Array(entries) : new BigUint64Array(entries);
      // Written as (lo, hi) word pairs: the little-endian layout every typed array here has.
      this.words = new Uint32Array(big.buffer);
      this.storage = big;
      return;
    }
    const lanes = new TYPED_ARRAYS[t.array as keyof typeof TYPED_ARRAYS](entries) as Lanes;
    this.storage = this.lanes = lanes;
    if (field === "float_data" || field === "double_data") this.bytes = new Uint8Array(lanes.buffer);
  }

  /** A run of float_data / double_data bytes. */
  fixed(chunk: Uint8Array): void {
    this.bytes!.set(chunk, this.n);
    this.n += chunk.length;
  }

  /** One int32_data, int64_data or uint64_data entry. */
  varint(r: WireReader): void {
    r.varint64();
    if (this.words) {
      this.words[2 * this.n] = r.lo;
      this.words[2 * this.n + 1] = r.hi;
    } else {
      this.lanes![this.n] = this.t.kind === "bool" ? (r.lo !== 0 ? 1 : 0) : r.lo;
    }
    this.n++;
  }

  /** One string_data entry. */
  string(bytes: Uint8Array): void {
    this.strings!.push(decodeUtf8(bytes, `${this.label}: string_data[${this.n++}]`));
  }
}

/** decodeTensorProto's options (also decodeModel's `tensor` option): retag and copy only. */
export function checkTensorProtoOptions(opts: unknown, fn: string): void {
  expectOptions(opts, fn, { retag: (v) => typeof v === "string" || typeof v === "number" || typeof v === "object", copy: isBoolean }, {
    retag: "a data type", copy: "true or false",
  });
}
