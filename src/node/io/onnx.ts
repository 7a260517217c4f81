/**
 * ONNX files read in place: a serialized TensorProto (.pb) or the initializers of a ModelProto
 * (.onnx), found by walking the protobuf tags on disk.
 *
 * A file is first validated whole (io/onnx/validate.ts, reading it in windows and jumping over
 * raw_data), so that corrupt bytes anywhere, nesting past protobuf's limit, non-UTF-8 strings and
 * tensors whose data disagrees with their dims are refused up front, not copied into an output.
 * Then only tags, lengths and small fields (dims, data_type, name) of the graph's initializers are
 * read; raw_data is located, not loaded, so a tensor's bytes are read when and as far as they are
 * needed, and so is float_data / double_data written as one packed run (the usual case), whose
 * bytes are the raw layout of float32, complex64, float64 and complex128. Any other typed tensor
 * (int32_data, int64_data, ...) is loaded whole and decoded by the library's own `readTensorProto`
 * when it is first read, and dropped once all of its elements have been read.
 *
 * The walk records where each initializer's message lies, so writer.ts can rewrite a model with
 * some initializers converted and every other byte copied as it was.
 *
 * Field numbers: onnx/onnx.in.proto. ModelProto.graph = 7; GraphProto.initializer = 5;
 * TensorProto: dims 1, data_type 2, segment 3, float_data 4, int32_data 5, string_data 6,
 * int64_data 7, name 8, raw_data 9, double_data 10, uint64_data 11, doc_string 12,
 * external_data 13, data_location 14, metadata_props 16.
 */
import { dtype, TensorcastError, type DType } from "../../index.js";
import { readTensorProto } from "../../io/onnx/tensorproto.js";
import { MessageValidator, type OnnxRoot } from "../../io/onnx/validate.js";
import { decodeUtf8, VARINT_INCOMPLETE, varintAt, WireReader } from "../../io/onnx/wire.js";
import { ExternalFiles, parseExternalData, type ExternalRef } from "./external-data.js";
import { fileError, RandomAccessFile } from "./file.js";
import { checkedSize, checkReadRange, rawByteLength, type FileTensor } from "./tensors.js";

const WINDOW = 64 * 1024;
/** The validator reads a file in windows of this size, and jumps over opaque values at least this long. */
const VALIDATE_WINDOW = 1 << 20;
/** Small fields (dims, name) longer than this are refused rather than read. */
const MAX_SMALL_FIELD = 1 << 20;
/** A tensor with more dims than this is refused rather than listed. */
const MAX_DIMS = 1 << 16;

/** A TensorProto found in a file. */
export interface ScannedTensor {
  readonly name: string;
  readonly dtype: DType;
  readonly shape: readonly number[];
  readonly size: number;
  /** The whole field in its parent (tag, length, message): [fieldStart, end). 0 for a .pb file. */
  readonly fieldStart: number;
  /** The message itself: [start, end). */
  readonly start: number;
  readonly end: number;
  /** Where raw_data's bytes are, when the tensor uses raw_data. */
  readonly raw?: { readonly offset: number; readonly length: number };
  /**
   * Where the elements are when they are typed but already in the raw layout: float32 / complex64
   * in float_data, float64 / complex128 in double_data, written as one packed run (or one value).
   */
  readonly inPlace?: { readonly offset: number; readonly length: number };
  /** Where its data is, when not raw_data. */
  readonly storage: "raw" | "typed" | "external" | "segment";
  /** Where its bytes are, as its external_data says, when its data is external. */
  readonly external?: ExternalRef;
  /**
   * Fields other than dims, data_type, name and the data (doc_string, metadata_props, ...), as
   * [start, end) ranges of the file, to be copied into a rewritten TensorProto.
   */
  readonly extras: readonly (readonly [number, number])[];
}

/** Where a model's main graph lies, and its initializers. */
export interface ScannedModel {
  /** The graph field: [fieldStart, end), its content starting at contentStart. */
  readonly graph: { readonly fieldStart: number; readonly contentStart: number; readonly end: number };
  readonly initializers: readonly OnnxFileTensor[];
  /** The side files of initializers with external data, open until the model is closed. */
  readonly externalFiles?: ExternalFiles;
}

/**
 * A field of a message: its number, wire type, where its value starts and where it ends. The
 * Walker reuses one, valid until its next call: a fresh object per field was most of the garbage
 * of a walk.
 */
interface Field {
  field: number;
  wire: number;
  /** Where the value starts (LEN values: after their length). */
  value: number;
  next: number;
  /** A varint value (wire type 0) cut to its low 32 bits, as protobuf reads int32 and enum fields. */
  int32: number;
  /** A varint value (wire type 0) as a number, exact up to 2^53. */
  number: number;
}

/** Any field's varint tag and length fit in this many bytes. */
const HEAD = 20;

/**
 * Reads tags and small fields through a window of the file. `fieldNow` parses a field
 * synchronously when its bytes are already in the window, which they are for all but the first
 * field after a long value: awaiting every field cost most of the time of listing 200,000 small
 * initializers. `field` loads what is missing.
 */
class Walker {
  private window: Uint8Array = new Uint8Array(0);
  private windowStart = 0;
  private readonly words = { lo: 0, hi: 0 };
  private readonly current: Field = { field: 0, wire: 0, value: 0, next: 0, int32: 0, number: 0 };

  constructor(readonly file: RandomAccessFile) {}

  fail(at: number, why: string, tensor?: string): TensorcastError {
    return fileError("INVALID_DATA", this.file.path, `${why} (at byte ${at}): the file is truncated or not ONNX protobuf`, tensor);
  }

  /** Bytes [pos, pos + n) when the window holds them. */
  private peek(pos: number, n: number): Uint8Array | undefined {
    const at = pos - this.windowStart;
    return at >= 0 && at + n <= this.window.length ? this.window.subarray(at, at + n) : undefined;
  }

  /** `n` bytes at `pos`, which must lie before `end`. */
  async bytes(pos: number, n: number, end: number, what: string, tensor?: string): Promise<Uint8Array> {
    if (pos + n > end) throw this.fail(pos, `${what} runs past the end of its message`, tensor);
    const held = this.peek(pos, n);
    if (held) return held;
    if (n > WINDOW) return this.file.read(pos, n);
    this.window = await this.file.read(pos, Math.min(WINDOW, this.file.size - pos));
    this.windowStart = pos;
    return this.window.subarray(0, n);
  }

  /** The varint at `pos` of `b` (whose byte 0 is the file's byte `base`), and where it ends. */
  private varint(b: Uint8Array, base: number, pos: number, what: string, tensor?: string): number {
    const next = varintAt(b, pos - base, b.length, this.words);
    if (next < 0) throw this.fail(pos, next === VARINT_INCOMPLETE ? `${what} is missing` : `${what} is a malformed varint`, tensor);
    return base + next;
  }

  /**
   * The field at `pos` of the message ending at `end`, when the window holds its head; undefined
   * when it does not, or the field is a group (whose end takes a walk). The result is valid until
   * the Walker's next call.
   */
  fieldNow(pos: number, end: number, context: string, tensor?: string): Field | undefined {
    if (pos >= end) throw this.fail(pos, `a ${context} tag is missing`, tensor);
    const b = this.peek(pos, Math.min(HEAD, end - pos));
    if (!b) return undefined;
    const afterTag = this.varint(b, pos, pos, `a ${context} tag`, tensor);
    const tag = this.words.hi * 2 ** 32 + (this.words.lo >>> 0);
    const field = Math.floor(tag / 8);
    const wire = tag % 8;
    if (field === 0 || field >= 2 ** 29) throw this.fail(pos, `${context} has an invalid field number ${field}`, tensor);
    switch (wire) {
      case 0: {
        const next = this.varint(b, pos, afterTag, `${context} field ${field}`, tensor);
        const { lo, hi } = this.words;
        return this.found(field, wire, afterTag, next, lo | 0, hi * 2 ** 32 + (lo >>> 0));
      }
      case 1:
      case 5: {
        const next = afterTag + (wire === 1 ? 8 : 4);
        if (next > end) throw this.fail(afterTag, `${context} field ${field} runs past the end of its message`, tensor);
        return this.found(field, wire, afterTag, next, 0, 0);
      }
      case 2: {
        const start = this.varint(b, pos, afterTag, `the length of ${context} field ${field}`, tensor);
        const length = this.words.hi * 2 ** 32 + (this.words.lo >>> 0);
        if (start + length > end) {
          throw this.fail(afterTag, `${context} field ${field} claims ${length} bytes, past the end of its message`, tensor);
        }
        return this.found(field, wire, start, start + length, 0, 0);
      }
      case 3:
        return undefined;
      default:
        throw this.fail(pos, `${context} field ${field} has wire type ${wire}, which ONNX never uses`, tensor);
    }
  }

  /** The field at `pos` of the message ending at `end`, loading its head first. */
  async field(pos: number, end: number, context: string, tensor?: string): Promise<Field> {
    if (pos >= end) throw this.fail(pos, `a ${context} tag is missing`, tensor);
    await this.bytes(pos, Math.min(HEAD, end - pos), end, `a ${context} tag`, tensor);
    const f = this.fieldNow(pos, end, context, tensor);
    if (f) return f;
    // An unknown group, which protobuf skips and so the validator let through (its nesting is
    // within protobuf's limit, since the file passed).
    const afterTag = this.varint(this.window, this.windowStart, pos, `a ${context} tag`, tensor);
    const field = Math.floor((this.words.hi * 2 ** 32 + (this.words.lo >>> 0)) / 8);
    const next = await this.groupEnd(field, afterTag, end, context, tensor);
    return this.found(field, 3, afterTag, next, 0, 0);
  }

  private found(field: number, wire: number, value: number, next: number, int32: number, number: number): Field {
    const f = this.current;
    f.field = field;
    f.wire = wire;
    f.value = value;
    f.next = next;
    f.int32 = int32;
    f.number = number;
    return f;
  }

  /** Where the group of `field` whose contents start at `pos` ends, after its end-group tag. */
  private async groupEnd(field: number, pos: number, end: number, context: string, tensor?: string): Promise<number> {
    const open = [field];
    while (open.length > 0) {
      if (pos >= end) throw this.fail(pos, `a tag inside group ${open[open.length - 1]} is missing`, tensor);
      const head = await this.bytes(pos, Math.min(HEAD, end - pos), end, "a tag", tensor);
      const afterTag = this.varint(head, pos, pos, `a tag inside group ${open[open.length - 1]}`, tensor);
      const tag = this.words.hi * 2 ** 32 + (this.words.lo >>> 0);
      if (tag % 8 === 4) {
        if (Math.floor(tag / 8) !== open.pop()) throw this.fail(pos, `${context} has a group closed by the wrong end-group tag`, tensor);
        pos = afterTag;
      } else if (tag % 8 === 3) {
        open.push(Math.floor(tag / 8));
        pos = afterTag;
      } else {
        pos = (await this.field(pos, end, context, tensor)).next;
      }
    }
    return pos;
  }

  /** The varints of a packed run [pos, end), pushed onto `out` (at most `max` of them in all). */
  async packed(pos: number, end: number, out: number[], max: number, what: string, tensor: string): Promise<void> {
    const b = await this.bytes(pos, end - pos, end, what, tensor);
    for (let p = pos; p < end;) {
      if (out.length >= max) throw fileError("INVALID_SHAPE", this.file.path, `has more than ${max} dims`, tensor);
      p = this.varint(b, pos, p, what, tensor);
      out.push(this.words.hi * 2 ** 32 + (this.words.lo >>> 0));
    }
  }
}

const NO_EXTRAS: readonly (readonly [number, number])[] = Object.freeze([]);

/** Walks the TensorProto in [start, end) of the file. */
async function scanTensor(w: Walker, start: number, end: number, fieldStart: number, index: number): Promise<OnnxFileTensor> {
  let name = "";
  let dataType = 0;
  const dims: number[] = [];
  let raw: { offset: number; length: number } | undefined;
  let typed = 0;
  let lastTyped: { field: number; offset: number; length: number } | undefined;
  let external = false;
  let externalData: Uint8Array[] | undefined;
  let segment = false;
  let extras: [number, number][] | undefined;
  const label = (): string => name || `#${index}`;
  for (let pos = start; pos < end;) {
    const f = w.fieldNow(pos, end, "TensorProto", name || undefined) ?? (await w.field(pos, end, "TensorProto", name || undefined));
    switch (f.field) {
      case 1:
        if (f.wire === 0) {
          if (dims.length >= MAX_DIMS) throw fileError("INVALID_SHAPE", w.file.path, `has more than ${MAX_DIMS} dims`, label());
          dims.push(f.number);
        } else if (f.wire === 2) {
          if (f.next - f.value > MAX_SMALL_FIELD) throw w.fail(pos, "dims has over a million entries", label());
          await w.packed(f.value, f.next, dims, MAX_DIMS, "a dimension", label());
        } else throw w.fail(pos, `dims has wire type ${f.wire}`, label());
        break;
      case 2:
        if (f.wire !== 0) throw w.fail(pos, `data_type has wire type ${f.wire}`, label());
        dataType = f.int32;
        break;
      case 3:
        segment = true;
        break;
      case 4: case 5: case 6: case 7: case 10: case 11:
        typed++;
        lastTyped = { field: f.field, offset: f.value, length: f.next - f.value };
        break;
      case 8: {
        if (f.wire !== 2) throw w.fail(pos, `name has wire type ${f.wire}`, label());
        if (f.next - f.value > MAX_SMALL_FIELD) throw w.fail(pos, `name is ${f.next - f.value} bytes long`, label());
        const bytes = await w.bytes(f.value, f.next - f.value, end, "name", label());
        name = decodeUtf8(bytes, `${w.file.path}: the name of tensor #${index}`);
        break;
      }
      case 9:
        if (f.wire !== 2) throw w.fail(pos, `raw_data has wire type ${f.wire}`, label());
        raw = { offset: f.value, length: f.next - f.value };
        break;
      case 13: {
        if (f.wire !== 2) throw w.fail(pos, `external_data has wire type ${f.wire}`, label());
        if (f.next - f.value > MAX_SMALL_FIELD) throw w.fail(pos, `an external_data entry is ${f.next - f.value} bytes long`, label());
        const entry = (await w.bytes(f.value, f.next - f.value, end, "external_data", label())).slice();
        (externalData ??= []).push(entry);
        break;
      }
      case 14:
        if (f.wire === 0 && f.int32 === 1) external = true;
        break;
      default:
        (extras ??= []).push([pos, f.next]);
    }
    pos = f.next;
  }
  // The validator checked data_type, dims and the data against them; what is left is to say
  // where the data is.
  const t = dtype(dataType);
  const size = checkedSize(dims)!;
  const storage = external ? "external" : segment ? "segment" : raw ? "raw" : "typed";
  const inPlace = storage === "typed" && typed === 1 && lastTyped && inPlaceField(t) === lastTyped.field
    ? { offset: lastTyped.offset, length: lastTyped.length } : undefined;
  const data = inPlace ?? raw;
  const ref = storage === "external" ? parseExternalData(externalData ?? [], w.file.path, label()) : undefined;
  return new OnnxFileTensor(w.file, {
    externalRef: ref,
    // A copy of exactly its length: a pushed-to array keeps room for 16 more.
    name: label(), dtype: t, shape: dims.slice(), size, fieldStart, start, end, storage, extras: extras ?? NO_EXTRAS,
    dataAt: data?.offset ?? 0, dataLength: data?.length ?? 0, inPlace: inPlace !== undefined,
  });
}

/** The typed field whose packed bytes are `t`'s raw layout, if there is one. */
function inPlaceField(t: DType): number | undefined {
  switch (t.name) {
    case "float32":
    case "complex64":
      return 4;
    case "float64":
    case "complex128":
      return 10;
    default:
      return undefined;
  }
}

/**
 * Validates the whole file as one `root` message (see io/onnx/validate.ts), reading it in windows
 * and jumping over long values the validator need not see (raw_data, packed float_data, ...).
 * Errors name the file as `name`.
 */
async function validateFile(file: RandomAccessFile, root: OnnxRoot, name: string): Promise<void> {
  const v = new MessageValidator(root, file.size);
  const window = new Uint8Array(Math.min(VALIDATE_WINDOW, file.size));
  const check = (step: () => void): void => {
    try {
      step();
    } catch (e) {
      if (e instanceof TensorcastError) throw fileError(e.code, name, e.message);
      throw e;
    }
  };
  while (v.position < file.size) {
    const skip = v.skippable;
    if (skip >= VALIDATE_WINDOW) {
      check(() => v.skip(skip));
      continue;
    }
    const n = Math.min(window.length, file.size - v.position);
    const piece = await file.read(v.position, n, window.subarray(0, n));
    check(() => v.push(piece));
  }
  check(() => v.finish());
}

/**
 * Checks that a whole .onnx (ModelProto) or .pb (TensorProto) file is one protobuf and onnx would
 * accept: the wire format, nesting within protobuf's 100 levels, every field of onnx.proto with its
 * wire type, UTF-8 strings, and every tensor's data against its dims. Memory stays bounded (a
 * 1 MiB window) whatever the file's size. The scans below run the same check before listing the
 * initializers, and the converter's read-back (verify.ts) goes through them; this is the check
 * alone, for a caller that needs no listing.
 *
 * @param file a path, or an open file (left open).
 * @param name how errors name the file (default: its path), e.g. the final name of a temporary.
 * @throws TensorcastError INVALID_DATA, UNKNOWN_DTYPE, INVALID_SHAPE or SHAPE_MISMATCH, the message
 *         starting with the file's name.
 */
export async function verifyOnnxFile(file: RandomAccessFile | string, format: "onnx" | "pb", name?: string): Promise<void> {
  if (format !== "onnx" && format !== "pb") {
    throw new TensorcastError("INVALID_ATTRIBUTE", `verifyOnnxFile: format ${JSON.stringify(format)} is not "onnx" or "pb"`);
  }
  const root = format === "onnx" ? "ModelProto" : "TensorProto";
  if (typeof file !== "string") return validateFile(file, root, name ?? file.path);
  const opened = await RandomAccessFile.open(file);
  try {
    await validateFile(opened, root, name ?? file);
  } finally {
    await opened.close();
  }
}

/** Walks a .pb file holding one TensorProto. */
export async function scanTensorProtoFile(file: RandomAccessFile): Promise<OnnxFileTensor> {
  await validateFile(file, "TensorProto", file.path);
  return scanTensor(new Walker(file), 0, file.size, 0, 0);
}

/**
 * Walks a .onnx file: finds the graph and walks each of its initializers. `redirect` maps an
 * external data location to the file to open instead (see ExternalFiles).
 */
export async function scanModelFile(file: RandomAccessFile, redirect?: ReadonlyMap<string, string>): Promise<ScannedModel> {
  await validateFile(file, "ModelProto", file.path);
  const w = new Walker(file);
  let graph: ScannedModel["graph"] | undefined;
  for (let pos = 0; pos < file.size;) {
    const f = w.fieldNow(pos, file.size, "ModelProto") ?? (await w.field(pos, file.size, "ModelProto"));
    if (f.field === 7) {
      if (f.wire !== 2) throw w.fail(pos, `graph has wire type ${f.wire}`);
      if (graph) throw fileError("NOT_IMPLEMENTED", file.path, "has two graph fields (protobuf would merge them); tensorcast reads one");
      graph = { fieldStart: pos, contentStart: f.value, end: f.next };
    }
    pos = f.next;
  }
  if (!graph) throw fileError("INVALID_DATA", file.path, "is not an ONNX model: its ModelProto has no graph");
  const initializers: OnnxFileTensor[] = [];
  for (let pos = graph.contentStart; pos < graph.end;) {
    const f = w.fieldNow(pos, graph.end, "GraphProto") ?? (await w.field(pos, graph.end, "GraphProto"));
    // Taken before scanTensor, which reuses the Walker's field.
    const { field, wire, value, next } = f;
    if (field === 5) {
      if (wire !== 2) throw w.fail(pos, `initializer has wire type ${wire}`);
      initializers.push(await scanTensor(w, value, next, pos, initializers.length));
    }
    pos = next;
  }
  const seen = new Set<string>();
  for (const t of initializers) {
    if (seen.has(t.name)) throw fileError("INVALID_DATA", file.path, "is the name of two initializers", t.name);
    seen.add(t.name);
  }
  const external = initializers.filter((t) => t.storage === "external");
  if (external.length === 0) return { graph, initializers };
  // Every side file is found and checked now, so a bad reference is an error before any output is
  // made; each stays open until the model is closed.
  const files = new ExternalFiles(file.path, redirect);
  try {
    for (const t of external) {
      t.externalFiles = files;
      await t.locate();
    }
  } catch (e) {
    await files.close();
    throw e;
  }
  return { graph, initializers, externalFiles: files };
}

/** What scanTensor found, handed to OnnxFileTensor: where the data is, flat. */
interface Found extends Omit<ScannedTensor, "raw" | "inPlace" | "external"> {
  /** raw_data's bytes, or the typed field read in place: where they are. */
  readonly dataAt: number;
  readonly dataLength: number;
  readonly inPlace: boolean;
  /** Where its bytes are, when its data is external. */
  readonly externalRef: ExternalRef | undefined;
}

/**
 * A scanned TensorProto, readable as a FileTensor: raw_data, and float_data / double_data in one
 * run, read in place; other typed data decoded whole on the first read and dropped once every
 * element has been read (a later read decodes it again), so a model of many typed tensors never
 * holds more than the ones being converted.
 *
 * A class with flat fields, so each of a model's initializers is one object: a model can list
 * hundreds of thousands, and closures and nested objects each tripled what they took.
 */
export class OnnxFileTensor implements ScannedTensor, FileTensor {
  readonly name: string;
  readonly dtype: DType;
  readonly shape: readonly number[];
  readonly size: number;
  readonly byteLength: number;
  readonly fieldStart: number;
  readonly start: number;
  readonly end: number;
  readonly storage: ScannedTensor["storage"];
  readonly extras: ScannedTensor["extras"];
  readonly #file: RandomAccessFile;
  readonly #dataAt: number;
  readonly #dataLength: number;
  readonly #inPlace: boolean;
  readonly #externalRef: ExternalRef | undefined;
  /** The model's side files, set by scanModelFile for a model that has external data. */
  externalFiles: ExternalFiles | undefined;
  /** The typed data decoded, while elements of it remain unread; shared by concurrent reads. */
  #decoded: Promise<Uint8Array> | undefined;
  #unread: number;

  constructor(file: RandomAccessFile, f: Found) {
    this.name = f.name;
    this.dtype = f.dtype;
    this.shape = f.shape;
    this.size = f.size;
    this.byteLength = f.dtype.kind === "string" ? f.end - f.start : rawByteLength(f.dtype, f.size);
    this.fieldStart = f.fieldStart;
    this.start = f.start;
    this.end = f.end;
    this.storage = f.storage;
    this.extras = f.extras;
    this.#file = file;
    this.#dataAt = f.dataAt;
    this.#dataLength = f.dataLength;
    this.#inPlace = f.inPlace;
    this.#externalRef = f.externalRef;
    this.externalFiles = undefined;
    this.#decoded = undefined;
    this.#unread = f.size;
  }

  get raw(): ScannedTensor["raw"] {
    return this.storage === "raw" ? { offset: this.#dataAt, length: this.#dataLength } : undefined;
  }

  get external(): ExternalRef | undefined {
    return this.#externalRef;
  }

  get inPlace(): ScannedTensor["inPlace"] {
    return this.#inPlace ? { offset: this.#dataAt, length: this.#dataLength } : undefined;
  }

  async read(start: number, count: number, into?: Uint8Array): Promise<Uint8Array> {
    checkReadRange(this, start, count, into);
    const file = this.#file;
    if (this.dtype.kind === "string") throw fileError("UNSUPPORTED_TYPE", file.path, "is a STRING tensor, which has no raw bytes to convert", this.name);
    const from = rawByteLength(this.dtype, start);
    const to = rawByteLength(this.dtype, start + count);
    const reuse = into?.length === to - from ? into : undefined;
    if (this.storage === "raw" || this.#inPlace) return file.read(this.#dataAt + from, to - from, reuse);
    if (this.storage === "external") {
      const { file: side, start: at } = await this.locate();
      return side.read(at + from, to - from, reuse);
    }
    if (this.storage === "segment") throw fileError("NOT_IMPLEMENTED", file.path, "is a segmented tensor, which tensorcast does not read", this.name);
    const pending = (this.#decoded ??= this.#decode());
    let bytes: Uint8Array;
    try {
      bytes = await pending;
    } catch (e) {
      if (this.#decoded === pending) this.#decoded = undefined;
      throw e;
    }
    const out = bytes.slice(from, to);
    this.#unread -= count;
    if (this.#unread <= 0 && this.#decoded === pending) {
      this.#decoded = undefined;
      this.#unread = this.size;
    }
    return out;
  }

  /**
   * Where its external bytes are, checked (see external-data.ts).
   * @throws TensorcastError naming the model and the tensor when the side file is refused.
   */
  locate(): Promise<{ file: RandomAccessFile; start: number }> {
    if (!this.#externalRef || !this.externalFiles) {
      throw fileError("NOT_IMPLEMENTED", this.#file.path, "its data is external, which only an initializer of a model file can be", this.name);
    }
    if (this.dtype.kind === "string") throw fileError("NOT_IMPLEMENTED", this.#file.path, "is a STRING tensor with external data, which tensorcast does not read", this.name);
    return this.externalFiles.locate(this.#externalRef, this.byteLength, this.name);
  }

  async #decode(): Promise<Uint8Array> {
    // The message is garbage once decoded: only the decoded bytes outlive this call.
    const message = await this.#file.read(this.start, this.end - this.start);
    try {
      return readTensorProto(new WireReader(message, "TensorProto"), { copy: false }).tensor.bytes();
    } catch (e) {
      // The core's messages name the tensor themselves.
      if (e instanceof TensorcastError) throw fileError(e.code, this.#file.path, e.message);
      throw e;
    }
  }
}
