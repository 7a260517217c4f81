/**
 * GGUF files (llama.cpp's models) opened from a path, as the core reader (src/io/gguf) reads them
 * from a RandomAccessFile: a split model's parts are found beside the first by llama.cpp's names
 * (`NAME-00001-of-00003.gguf`) and read as one model.
 *
 * As a TensorFile, each tensor is listed with its row-major shape. Plain GGML types keep their
 * own type (F16 is float16, I32 is int32, ...), so nothing is rounded twice; block-quantized ones
 * (Q4_K, IQ2_XS, MXFP4, ...) are float32, dequantized by src/ggml bit for bit as ggml's
 * to_float, a run of whole blocks at a time: memory follows the chunk read, never the tensor.
 */
import { basename, dirname, join } from "node:path";
import { dtype, TensorcastError, type DType } from "../../index.js";
import { dequantizeBlocks } from "../../ggml/dequantize.js";
import type { GgmlType, GgmlTypeName } from "../../ggml/types.js";
import { readGguf, type GgufFile } from "../../io/gguf/header.js";
import { ggufModel, splitCountOf, splitNameOf, splitPaths, type GgufModel, type GgufModelTensor } from "../../io/gguf/split.js";
import { ggufRecords, readGgufBlocks, type GgufRecord } from "../../io/gguf/records.js";
import { RandomAccessFile } from "./file.js";
import { checkReadRange, type FileTensor, type TensorFile } from "./tensors.js";
import { expectPath } from "../args.js";

/** The tensorcast type a plain GGML type is read as; block types are float32. */
const PLAIN: Partial<Record<GgmlTypeName, string>> = {
  F32: "float32", F16: "float16", BF16: "bfloat16", F64: "float64", I8: "int8", I16: "int16", I32: "int32", I64: "int64",
};

/** The type a tensor of GGML type `t` is listed as. */
export function listedType(t: GgmlType): DType {
  return dtype(PLAIN[t.name] ?? "float32");
}

/**
 * A chunk given as the GGML blocks that hold it: whoever takes it (convert's and inspect's
 * workers) decodes them to float32, so the decoding runs on every core. The chunk's values start
 * `skip` values into the first block.
 */
export interface GgmlBlocks {
  readonly type: GgmlTypeName;
  readonly skip: number;
}

/** What a GGUF tensor was stored as: its GGML type, its stored bytes and bits per weight. */
export interface GgmlStorage {
  readonly type: GgmlTypeName;
  readonly bytes: number;
  readonly bitsPerWeight: number;
}

/** A GGUF tensor as a FileTensor: plain types as they are, block types dequantized to float32. */
export class GgufFileTensor implements FileTensor {
  readonly name: string;
  readonly dtype: DType;
  readonly shape: readonly number[];
  readonly size: number;
  readonly byteLength: number;
  readonly ggml: GgmlStorage;
  readonly #model: GgufModel;
  readonly #t: GgufModelTensor;

  constructor(model: GgufModel, t: GgufModelTensor) {
    this.name = t.name;
    this.dtype = listedType(t.ggmlType);
    this.shape = t.shape;
    this.size = t.elements;
    this.byteLength = (t.elements * this.dtype.bits) / 8;
    this.ggml = { type: t.ggmlType.name, bytes: t.byteLength, bitsPerWeight: t.ggmlType.bitsPerWeight };
    this.#model = model;
    this.#t = t;
  }

  async read(start: number, count: number, into?: Uint8Array): Promise<Uint8Array> {
    checkReadRange(this, start, count, into);
    const type = this.#t.ggmlType;
    if (count === 0) return new Uint8Array(0);
    if (PLAIN[type.name] !== undefined) {
      const bytes = await readGgufBlocks(this.#model, this.#t, start, count);
      if (into && into.length === bytes.length) {
        into.set(bytes);
        return into;
      }
      return bytes;
    }
    const { raw: blocks, ggml } = (await this.readBlocks(start, count))!;
    const first = Math.floor(start / type.blockSize);
    const last = Math.ceil((start + count) / type.blockSize);
    const values = new Float32Array((last - first) * type.blockSize);
    try {
      dequantizeBlocks(type, blocks, 0, values, 0, last - first);
    } catch (e) {
      if (e instanceof TensorcastError) throw new TensorcastError(e.code, `${this.#model.files[this.#t.split].name}: tensor ${JSON.stringify(this.name)}: ${e.message}`);
      throw e;
    }
    return new Uint8Array(values.buffer, ggml.skip * 4, count * 4);
  }

  /**
   * For a block type, the whole blocks holding values [start, start + count) as stored (decoded
   * by whoever takes them: convert's and inspect's workers), and where the run starts in them;
   * undefined for a plain type, whose bytes read() gives as they are.
   */
  async readBlocks(start: number, count: number): Promise<{ raw: Uint8Array; ggml: GgmlBlocks } | undefined> {
    checkReadRange(this, start, count);
    const type = this.#t.ggmlType;
    if (PLAIN[type.name] !== undefined || count === 0) return undefined;
    const first = Math.floor(start / type.blockSize);
    const last = Math.ceil((start + count) / type.blockSize);
    const raw = await readGgufBlocks(this.#model, this.#t, first, last - first);
    return { raw, ggml: { type: type.name, skip: start - first * type.blockSize } };
  }
}

/** An open GGUF model (all of its parts): a TensorFile and the model the core read. */
export interface GgufTensorFile extends TensorFile {
  readonly format: "gguf";
  readonly model: GgufModel;
  /** Every part's path, the first one first. */
  readonly parts: readonly string[];
}

/**
 * Opens the GGUF file at `path` and, when its split.count says the model has more parts, those
 * parts beside it (found by llama.cpp's `NAME-0000K-of-0000N.gguf` names; `path` may be any of
 * them). `first` is `path` already open, when the caller has it.
 * @throws TensorcastError INVALID_DATA for anything gguf.cpp or llama.cpp's loader would refuse; IO_ERROR for a part that cannot be opened.
 */
export async function openGguf(path: string, first?: RandomAccessFile): Promise<GgufTensorFile> {
  expectPath(path, "openGguf's path");
  if (first !== undefined && !(first instanceof RandomAccessFile)) {
    throw new TensorcastError("INVALID_ATTRIBUTE", `openGguf's second argument is the file already opened at path (a RandomAccessFile) or nothing; got ${typeof first}`);
  }
  const opened: RandomAccessFile[] = [];
  try {
    const f0 = first ?? (await RandomAccessFile.open(path));
    opened.push(f0);
    const g0 = await readGguf(f0, { name: path });
    let files: GgufFile[] = [g0];
    let parts = [path];
    const split = splitNameOf(basename(path));
    const count = splitCountOf(g0);
    if (count > 1 || (split && split.count > 1)) {
      if (!split) throw new TensorcastError("INVALID_DATA", `${path}: gguf: split.count is ${count}, but the name is not llama.cpp's NAME-0000K-of-0000N.gguf, so its other parts cannot be found`);
      parts = splitPaths(join(dirname(path), split.prefix), split.count);
      files = [];
      for (let i = 0; i < parts.length; i++) {
        const isGiven = i === split.no - 1;
        const f = isGiven ? f0 : await RandomAccessFile.open(parts[i]);
        if (!isGiven) opened.push(f);
        files.push(isGiven ? g0 : await readGguf(f, { name: parts[i] }));
      }
    }
    const model = ggufModel(files, parts[0]);
    const tensors = model.tensors.map((t) => new GgufFileTensor(model, t));
    return {
      path, format: "gguf", size: opened.reduce((n, f) => n + f.size, 0), tensors, model, parts,
      close: async () => {
        await Promise.all(opened.map((f) => f.close()));
      },
    };
  } catch (e) {
    await Promise.all(opened.map((f) => f.close()));
    throw e;
  }
}

/**
 * A GGUF model's metadata and records from a path, for code that wants the core's view:
 * `records()` yields each tensor's (name, GGML type, shape, little-endian bytes) in order.
 * Close it when done.
 * @example const m = await readGgufFile("model.gguf"); for await (const r of m.records()) ...; await m.close()
 */
export async function readGgufFile(path: string): Promise<{ model: GgufModel; records(): AsyncGenerator<GgufRecord>; close(): Promise<void> }> {
  const f = await openGguf(path);
  return { model: f.model, records: () => ggufRecords(f.model), close: () => f.close() };
}
