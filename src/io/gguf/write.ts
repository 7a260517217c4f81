/**
 * The GGUF writer: the layout of llama.cpp's `gguf_write_to_file` (gguf.cpp), to any sink that
 * takes bytes at positions (a Node file, a page's FileSystemWritableFileStream, memory).
 *
 * magic "GGUF", version, tensor count, key-value count (both 64-bit), the key-value pairs (key,
 * value type, value; an array: GGUF_TYPE_ARRAY, item type, 64-bit count, items), the tensor infos
 * (name, dimension count, dimensions fastest first, GGML type id, offset in the data section), zero
 * padding to the alignment, then each tensor's bytes followed by zeros to the next multiple of the
 * alignment, the last one included. The alignment is general.alignment (uint32, a power of two)
 * when the metadata has it, else 32. Arrays of arrays, which gguf.cpp cannot write, are written as
 * gguf-py writes them: each item an array with its own item type and count.
 *
 * The dimensions are written as given, so their count is the caller's: gguf-py writes every one of
 * a NumPy shape, llama.cpp `ggml_n_dims` (trailing 1s dropped, at least one), ggmlDims gives both.
 */
import { describe } from "../../args.js";
import { TensorcastError } from "../../errors.js";
import { utf8Bytes } from "../onnx/precision/pb.js";
import { ggmlType, ggmlTypeOfId, type GgmlType } from "../../ggml/types.js";
import { GGUF_DEFAULT_ALIGNMENT } from "./header.js";
import { GGML_MAX_DIMS, GGML_MAX_NAME } from "./tensor-info.js";
import { GGUF_VALUE_TYPES, type GgufArray, type GgufMetadataEntry, type GgufValue, type GgufValueType } from "./values.js";

/** A tensor's place in the file to write: the data comes with writeGguf. */
export interface GgufTensorSpec {
  readonly name: string;
  /** A row of GGML_TYPES or a type name in any case ("q4_k"). */
  readonly ggmlType: GgmlType | string;
  /** GGML's order, fastest-varying first: a row-major shape reversed (see ggmlDims). */
  readonly dims: readonly number[];
}

/** The bytes of a tensor: all at once, or pieces in order. */
export type GgufTensorData = Uint8Array | Iterable<Uint8Array> | AsyncIterable<Uint8Array>;

export interface GgufTensorToWrite extends GgufTensorSpec {
  readonly data: GgufTensorData;
}

export interface GgufLayoutOptions {
  /** 3 (default) or 2: the same layout, as llama.cpp reads both. */
  readonly version?: 2 | 3;
  /** Default true; false writes a big-endian file as gguf-py's `endianess=BIG` does (tensor bytes as given). */
  readonly littleEndian?: boolean;
}

/** Where everything goes in the file. */
export interface GgufLayout {
  /** The bytes before the data section: header, metadata, tensor infos and the padding after them. */
  readonly header: Uint8Array;
  readonly alignment: number;
  /** Each tensor's offset within the data section, as its info says. */
  readonly offsets: readonly number[];
  /** Each tensor's bytes (without its padding). */
  readonly byteLengths: readonly number[];
  /** The file's size. */
  readonly size: number;
}

/** Where bytes go: `write(bytes, position)`; positions come in increasing order, without gaps. */
export interface GgufSink {
  write(bytes: Uint8Array, position: number): void | Promise<void>;
}

function bad(message: string): TensorcastError {
  return new TensorcastError("INVALID_ATTRIBUTE", `GGUF writer: ${message}`);
}

/**
 * GGML dimensions (fastest first) of a row-major shape: all of them (gguf-py's rule), or with
 * `drop` the trailing 1s dropped as llama.cpp's ggml_n_dims drops them (at least one kept).
 * @example ggmlDims([1, 64]) // [64, 1];  ggmlDims([1, 64], true) // [64]
 */
export function ggmlDims(shape: readonly number[], drop = false): number[] {
  const dims = shape.length === 0 ? [1] : shape.slice().reverse();
  if (drop) while (dims.length > 1 && dims[dims.length - 1] === 1) dims.pop();
  return dims;
}

/** Little- or big-endian fields into a growing buffer (each place is taken before the buffer is read, as taking it may grow it). */
class Out {
  private buf = new Uint8Array(1024);
  private view = new DataView(this.buf.buffer);
  length = 0;
  constructor(private readonly le: boolean) {}

  private room(n: number): number {
    if (this.length + n > this.buf.length) {
      let size = this.buf.length * 2;
      while (size < this.length + n) size *= 2;
      const next = new Uint8Array(size);
      next.set(this.buf.subarray(0, this.length));
      this.buf = next;
      this.view = new DataView(next.buffer);
    }
    const at = this.length;
    this.length += n;
    return at;
  }
  u8(v: number): void {
    const at = this.room(1);
    this.view.setUint8(at, v);
  }
  i8(v: number): void {
    const at = this.room(1);
    this.view.setInt8(at, v);
  }
  u16(v: number): void {
    const at = this.room(2);
    this.view.setUint16(at, v, this.le);
  }
  i16(v: number): void {
    const at = this.room(2);
    this.view.setInt16(at, v, this.le);
  }
  u32(v: number): void {
    const at = this.room(4);
    this.view.setUint32(at, v, this.le);
  }
  i32(v: number): void {
    const at = this.room(4);
    this.view.setInt32(at, v, this.le);
  }
  f32(v: number): void {
    const at = this.room(4);
    this.view.setFloat32(at, v, this.le);
  }
  f64(v: number): void {
    const at = this.room(8);
    this.view.setFloat64(at, v, this.le);
  }
  u64(v: bigint): void {
    const at = this.room(8);
    this.view.setBigUint64(at, v, this.le);
  }
  i64(v: bigint): void {
    const at = this.room(8);
    this.view.setBigInt64(at, v, this.le);
  }
  raw(b: Uint8Array): void {
    const at = this.room(b.length);
    this.buf.set(b, at);
  }
  string(s: string): void {
    const b = utf8Bytes(s);
    this.u64(BigInt(b.length));
    this.raw(b);
  }
  zeros(n: number): void { this.room(n); }
  bytes(): Uint8Array { return this.buf.slice(0, this.length); }
}

const INT_RANGES: Partial<Record<GgufValueType, readonly [number, number]>> = {
  uint8: [0, 0xff], int8: [-0x80, 0x7f], uint16: [0, 0xffff], int16: [-0x8000, 0x7fff], uint32: [0, 0xffffffff], int32: [-0x80000000, 0x7fffffff],
};

function scalar(o: Out, t: GgufValueType, v: unknown, where: string): void {
  const range = INT_RANGES[t];
  if (range !== undefined) {
    if (typeof v !== "number" || !Number.isInteger(v) || v < range[0] || v > range[1]) throw bad(`${where}: ${describe(v)} is not a ${t} (integers ${range[0]} to ${range[1]})`);
  }
  switch (t) {
    case "uint8": return o.u8(v as number);
    case "int8": return o.i8(v as number);
    case "uint16": return o.u16(v as number);
    case "int16": return o.i16(v as number);
    case "uint32": return o.u32(v as number);
    case "int32": return o.i32(v as number);
    case "float32":
    case "float64":
      if (typeof v !== "number") throw bad(`${where}: ${describe(v)} is not a number for ${t}`);
      return t === "float32" ? o.f32(v) : o.f64(v);
    case "bool":
      if (typeof v !== "boolean" && v !== 0 && v !== 1) throw bad(`${where}: ${describe(v)} is not a bool`);
      return o.u8(v === true || v === 1 ? 1 : 0);
    case "uint64":
    case "int64": {
      const big = typeof v === "bigint" ? v : typeof v === "number" && Number.isSafeInteger(v) ? BigInt(v) : undefined;
      const ok = big !== undefined && (t === "uint64" ? big >= 0n && big < 1n << 64n : big >= -(1n << 63n) && big < 1n << 63n);
      if (!ok) throw bad(`${where}: ${describe(v)} is not a ${t}`);
      return t === "uint64" ? o.u64(big) : o.i64(big);
    }
    case "string":
      if (typeof v !== "string") throw bad(`${where}: ${describe(v)} is not a string`);
      return o.string(v);
    case "array":
      throw bad(`${where}: an array where a single value was expected`);
  }
}

function typeId(t: GgufValueType, where: string): number {
  const id = GGUF_VALUE_TYPES.indexOf(t);
  if (id < 0) throw bad(`${where}: value type ${describe(t)} is not a GGUF type (${GGUF_VALUE_TYPES.join(", ")})`);
  return id;
}

/** An array's item type, count and items (arrays of arrays recursively, as gguf-py writes them). */
function array(o: Out, a: GgufArray, where: string, depth: number): void {
  if (depth > 64) throw bad(`${where}: arrays nested more than 64 deep`);
  const items = a.items as ArrayLike<unknown>;
  o.u32(typeId(a.itemType, where));
  o.u64(BigInt(items.length));
  for (let i = 0; i < items.length; i++) {
    if (a.itemType === "array") array(o, items[i] as GgufArray, `${where}[${i}]`, depth + 1);
    else scalar(o, a.itemType, items[i], `${where}[${i}]`);
  }
}

function value(o: Out, e: GgufMetadataEntry): void {
  const where = `key ${JSON.stringify(e.key)}`;
  o.string(e.key);
  o.u32(typeId(e.type, where));
  if (e.type === "array") {
    const a = e.value as GgufArray;
    if (typeof a !== "object" || a === null || !("itemType" in a)) throw bad(`${where}: type array needs { itemType, items }`);
    array(o, a, where, 1);
  } else scalar(o, e.type, e.value as GgufValue, where);
}

const pad = (x: number, a: number): number => Math.ceil(x / a) * a;

function typeOf(t: GgmlType | string): GgmlType {
  if (typeof t === "string") return ggmlType(t);
  if (ggmlTypeOfId(t.id) !== t) throw bad(`${describe((t as GgmlType).name)} is not a row of GGML_TYPES`);
  return t;
}

/**
 * The layout of a GGUF file holding `metadata` (in order) and `tensors` (in order): the header
 * bytes and every tensor's offset. Checks what gguf.cpp's reader would refuse.
 * @throws TensorcastError INVALID_ATTRIBUTE for an empty or repeated key, a value that is not of
 *         its type, general.alignment not a uint32 power of two, a key or tensor name holding a
 *         NUL, a tensor name of 64 bytes or more or repeated, more than 4 or negative dimensions,
 *         or rows not whole blocks of the type.
 */
export function layoutGguf(metadata: readonly GgufMetadataEntry[], tensors: readonly GgufTensorSpec[], opts: GgufLayoutOptions = {}): GgufLayout {
  const version = opts.version ?? 3;
  if (version !== 2 && version !== 3) throw bad(`version ${describe(version)}: 2 or 3`);
  const o = new Out(opts.littleEndian ?? true);
  o.raw(new Uint8Array([0x47, 0x47, 0x55, 0x46]));
  o.u32(version);
  o.u64(BigInt(tensors.length));
  o.u64(BigInt(metadata.length));
  const keys = new Set<string>();
  let alignment = GGUF_DEFAULT_ALIGNMENT;
  for (const e of metadata) {
    if (e.key === "") throw bad("a key is empty");
    // What the reader refuses: llama.cpp would read the key only up to its NUL.
    if (e.key.includes("\0")) throw bad(`key ${JSON.stringify(e.key)} holds a NUL, where gguf.cpp's C strings end`);
    if (keys.has(e.key)) throw bad(`key ${JSON.stringify(e.key)} is given twice`);
    keys.add(e.key);
    if (e.key === "general.alignment") {
      const a = e.value;
      if (e.type !== "uint32" || typeof a !== "number" || a <= 0 || (a & (a - 1)) !== 0) throw bad(`general.alignment must be a uint32 power of two, not ${e.type} ${describe(a)}`);
      alignment = a;
    }
    value(o, e);
  }
  const names = new Set<string>();
  const offsets: number[] = [];
  const byteLengths: number[] = [];
  let offset = 0;
  for (const t of tensors) {
    const label = `tensor ${JSON.stringify(t.name)}`;
    const nameBytes = utf8Bytes(t.name).length;
    if (nameBytes >= GGML_MAX_NAME) throw bad(`${label}: its name is ${nameBytes} bytes, GGML allows at most ${GGML_MAX_NAME - 1}`);
    if (t.name.includes("\0")) throw bad(`${label}: its name holds a NUL, where ggml's C string names end`);
    if (names.has(t.name)) throw bad(`${label} is given twice`);
    names.add(t.name);
    const type = typeOf(t.ggmlType);
    if (t.dims.length < 1 || t.dims.length > GGML_MAX_DIMS) throw bad(`${label}: ${t.dims.length} dimensions, GGUF takes 1 to ${GGML_MAX_DIMS}`);
    if (t.dims.some((d) => !Number.isSafeInteger(d) || d < 0)) throw bad(`${label}: dimensions (${t.dims.join(", ")}) must be counts`);
    if (t.dims[0] % type.blockSize !== 0) throw bad(`${label}: its rows hold ${t.dims[0]} elements, not a multiple of ${type.name}'s block of ${type.blockSize}`);
    const bytes = (t.dims.reduce((a, b) => a * b, 1) / type.blockSize) * type.typeSize;
    if (!Number.isSafeInteger(bytes)) throw bad(`${label}: ${bytes} bytes is past 2^53`);
    o.string(t.name);
    o.u32(t.dims.length);
    for (const d of t.dims) o.i64(BigInt(d));
    o.i32(type.id);
    o.u64(BigInt(offset));
    offsets.push(offset);
    byteLengths.push(bytes);
    offset = pad(offset + bytes, alignment);
  }
  o.zeros(pad(o.length, alignment) - o.length);
  return { header: o.bytes(), alignment, offsets, byteLengths, size: o.length + offset };
}

async function* pieces(data: GgufTensorData): AsyncIterable<Uint8Array> {
  if (data instanceof Uint8Array) yield data;
  else if (Symbol.asyncIterator in data) yield* data as AsyncIterable<Uint8Array>;
  else yield* data as Iterable<Uint8Array>;
}

/**
 * Writes a GGUF file to `sink`: `layoutGguf`'s header, then each tensor's data (streamed, piece by
 * piece, never gathered) and its padding. Returns the layout.
 * @example await writeGguf(sink, [{ key: "general.architecture", type: "string", value: "llama" }], [{ name: "w", ggmlType: "F32", dims: [2], data: new Uint8Array(8) }])
 * @throws TensorcastError as layoutGguf, and SHAPE_MISMATCH when a tensor's data is not its size.
 */
export async function writeGguf(sink: GgufSink, metadata: readonly GgufMetadataEntry[], tensors: readonly GgufTensorToWrite[], opts: GgufLayoutOptions = {}): Promise<GgufLayout> {
  const layout = layoutGguf(metadata, tensors, opts);
  await sink.write(layout.header, 0);
  let at = layout.header.length;
  const zeros = new Uint8Array(layout.alignment);
  for (let i = 0; i < tensors.length; i++) {
    const want = layout.byteLengths[i];
    let got = 0;
    let more = false;
    for await (const piece of pieces(tensors[i].data)) {
      if (got + piece.length > want) {
        more = true;
        break;
      }
      if (piece.length > 0) await sink.write(piece, at + got);
      got += piece.length;
    }
    if (got !== want || more) {
      throw new TensorcastError("SHAPE_MISMATCH", `GGUF writer: tensor ${JSON.stringify(tensors[i].name)} needs ${want} bytes (${tensors[i].dims.join(" x ")} of ${typeOf(tensors[i].ggmlType).name}) but its data ${more ? "has more" : `has ${got}`}`);
    }
    at += want;
    const padding = pad(at, layout.alignment) - at;
    if (padding > 0) await sink.write(zeros.subarray(0, padding), at);
    at += padding;
  }
  return layout;
}
