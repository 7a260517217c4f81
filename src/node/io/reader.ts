/**
 * `openTensorFile(path)`: opens a safetensors, .npy, .onnx, .pb, GGUF or PyTorch (.bin, .pt, .pth) file, validates its header and
 * lists its tensors, each readable a run of elements at a time. Nothing but the header is read
 * up front, so opening a file larger than memory is cheap.
 */
import { extname } from "node:path";
import { fileError, RandomAccessFile } from "./file.js";
import { isNpy, npyPrefix, npyToRaw, parseNpyHeader, type NpyOptions } from "./npy.js";
import { scanModelFile, scanTensorProtoFile, type ScannedModel } from "./onnx.js";
import type { DType } from "../../index.js";
import { readHeaderLength, readSafetensorsHeader, type SafetensorsTensor } from "./safetensors.js";
import { checkReadRange, FILE_FORMATS, PYTORCH_EXTENSIONS, rawByteLength, type FileFormat, type FileTensor, type TensorFile } from "./tensors.js";
import { openPytorch, type PytorchOptions } from "./pytorch.js";
import { isPytorchCheckpoint } from "../../io/pytorch/checkpoint.js";
import { isGguf } from "../../io/gguf/header.js";
import { openGguf } from "./gguf.js";
import { expectOptionsObject, expectPath } from "../args.js";

export interface OpenOptions {
  /** The format, when the file name does not say it. */
  format?: FileFormat;
  /** How .npy files are read (Fortran order, raw '|V2' data). */
  npy?: NpyOptions;
  /** How a PyTorch checkpoint is read (which entry holds the state dict). */
  pytorch?: PytorchOptions;
}

/** An open ONNX model: also where its graph and initializers lie, for rewriting it. */
export interface OnnxModelFile extends TensorFile {
  readonly format: "onnx";
  readonly layout: ScannedModel;
  /** The underlying file, for copying the bytes around the initializers. */
  readonly file: RandomAccessFile;
}

/** The format a path names by its extension, or undefined. */
export function formatOfPath(path: string): FileFormat | undefined {
  expectPath(path, "formatOfPath's path");
  const ext = extname(path).toLowerCase().slice(1);
  if (PYTORCH_EXTENSIONS.includes(ext)) return "pytorch";
  return (FILE_FORMATS as readonly string[]).includes(ext) ? (ext as FileFormat) : undefined;
}

/**
 * Opens `path` and reads its header. The format comes from `opts.format`, else the extension
 * (.safetensors, .npy, .onnx, .pb, .gguf; .bin, .pt, .pth, .ckpt for PyTorch), else the first bytes (the
 * .npy magic, a safetensors length followed by "{", GGUF's magic, a zip or a pickle for PyTorch).
 * @throws TensorcastError naming the file (and the tensor) for anything the header gets wrong.
 */
export async function openTensorFile(path: string, opts: OpenOptions = {}): Promise<TensorFile> {
  expectPath(path, "openTensorFile's path");
  expectOptionsObject(opts, "openTensorFile");
  const file = await RandomAccessFile.open(path);
  try {
    const format = opts.format ?? formatOfPath(path) ?? (await sniff(file));
    switch (format) {
      case "safetensors":
        return await openSafetensors(file);
      case "npy":
        return await openNpy(file, opts.npy ?? {});
      case "pb": {
        return tensorFile(file, "pb", [await scanTensorProtoFile(file)]);
      }
      case "pytorch":
        return await openPytorch(file, opts.pytorch ?? {});
      case "gguf":
        return await openGguf(path, file);
      case "onnx": {
        const layout = await scanModelFile(file);
        const base = tensorFile(file, "onnx", layout.initializers.slice());
        const close = async (): Promise<void> => {
          await layout.externalFiles?.close();
          await file.close();
        };
        const model: OnnxModelFile = { ...base, format: "onnx", layout, file, close };
        return model;
      }
    }
  } catch (e) {
    await file.close();
    throw e;
  }
}

async function sniff(file: RandomAccessFile): Promise<FileFormat> {
  const first = await file.read(0, Math.min(16, file.size));
  if (isNpy(first)) return "npy";
  // A safetensors length (its top bytes 0: at most 100 MB), then "{" after any JSON whitespace.
  let at = 8;
  while (at < first.length && (first[at] === 0x20 || first[at] === 0x09 || first[at] === 0x0a || first[at] === 0x0d)) at++;
  if (first[at] === 0x7b /* { */ && first[6] === 0 && first[7] === 0) return "safetensors";
  if (isPytorchCheckpoint(first)) return "pytorch";
  if (isGguf(first)) return "gguf";
  throw fileError(
    "INVALID_DATA", file.path,
    "is neither safetensors, .npy, GGUF nor a PyTorch checkpoint by its first bytes, and its name does not end in .safetensors, .npy, .onnx, .pb, .gguf, .bin, .pt or .pth; " +
      "say which format it is with --format",
  );
}

function tensorFile(file: RandomAccessFile, format: FileFormat, tensors: FileTensor[], metadata?: Readonly<Record<string, string>>): TensorFile {
  return { path: file.path, format, size: file.size, tensors, metadata, close: () => file.close() };
}

/**
 * A tensor of an open safetensors file. A class, so that `read` lives on the prototype: a header
 * can list millions of tensors, and a closure each would double what they take.
 */
class SafetensorsFileTensor implements FileTensor {
  readonly name: string;
  readonly dtype: DType;
  readonly shape: readonly number[];
  readonly size: number;
  readonly byteLength: number;
  readonly #file: RandomAccessFile;
  /** Where its bytes start in the file. */
  readonly #at: number;

  constructor(t: SafetensorsTensor, file: RandomAccessFile, dataStart: number) {
    this.name = t.name;
    this.dtype = t.dtype;
    this.shape = t.shape;
    this.size = t.size;
    this.byteLength = t.byteLength;
    this.#file = file;
    this.#at = dataStart + t.begin;
  }

  async read(start: number, count: number, into?: Uint8Array): Promise<Uint8Array> {
    checkReadRange(this, start, count, into);
    const from = rawByteLength(this.dtype, start);
    const to = rawByteLength(this.dtype, start + count);
    return this.#file.read(this.#at + from, to - from, into?.length === to - from ? into : undefined);
  }
}

async function openSafetensors(file: RandomAccessFile): Promise<TensorFile> {
  const n = readHeaderLength(await file.read(0, Math.min(8, file.size)), file.size, file.path);
  const header = readSafetensorsHeader(await file.read(8, n), file.size, file.path, (t) => new SafetensorsFileTensor(t, file, 8 + n));
  return tensorFile(file, "safetensors", header.tensors, header.metadata);
}

async function openNpy(file: RandomAccessFile, opts: NpyOptions): Promise<TensorFile> {
  const prefix = npyPrefix(await file.read(0, Math.min(12, file.size)), file.size, file.path);
  const headerBytes = await file.read(prefix.headerStart, prefix.headerLength);
  const name = basenameWithoutExtension(file.path);
  const h = parseNpyHeader(headerBytes, prefix, file.size, file.path, name, opts);
  const tensor: FileTensor = {
    name: h.name, dtype: h.dtype, shape: h.shape, size: h.size, byteLength: h.byteLength,
    async read(start: number, count: number, into?: Uint8Array): Promise<Uint8Array> {
      checkReadRange(h, start, count, into);
      const stored = await file.read(h.dataStart + start * h.itemSize, count * h.itemSize);
      return npyToRaw(h, stored, count);
    },
  };
  return tensorFile(file, "npy", [tensor]);
}

/** "weights" for "/a/b/weights.npy": the name a .npy file's one tensor goes by. */
export function basenameWithoutExtension(path: string): string {
  const base = path.split(/[\\/]/).pop() ?? path;
  const ext = extname(base);
  return ext ? base.slice(0, -ext.length) : base;
}
