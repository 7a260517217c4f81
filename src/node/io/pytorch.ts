/**
 * A PyTorch checkpoint (`.bin`, `.pt`, `.pth`, `.ckpt`: torch.save's zip or legacy format) opened
 * as a TensorFile: the state dict's tensors in its order, each read a run of elements at a time,
 * row-major, little-endian (src/io/pytorch/ does the reading; nothing in the file is executed).
 */
import { basename, extname } from "node:path";
import { dedupeTied, readPytorchCheckpoint, stateDictOf, type StateDictTensor } from "../../io/pytorch/checkpoint.js";
import { readStateDictTensor } from "../../io/pytorch/tensor-reader.js";
import type { DType } from "../../index.js";
import type { RandomAccessFile } from "./file.js";
import { checkReadRange, type FileTensor, type TensorFile } from "./tensors.js";

/** How a PyTorch checkpoint is read. */
export interface PytorchOptions {
  /** The entry of the top-level dict that holds the state dict (`{"model": {...}}`: "model"). */
  key?: string;
}

/** An open PyTorch checkpoint: a TensorFile and what tensorcast needs to write it as safetensors. */
export interface PytorchFile extends TensorFile {
  readonly format: "pytorch";
  readonly container: "zip" | "legacy";
  /**
   * Of tensors that are the same view of one storage (tied weights), the name kept (the first in
   * the state dict's order) -> the names dropped when writing a format that cannot alias.
   */
  readonly tied: ReadonlyMap<string, readonly string[]>;
  /**
   * What `safetensors.torch.save_file` stores for the state dict with the tied names dropped:
   * the tensors in its order (largest type first, then by name) and metadata {"format": "pt"}.
   */
  asSafetensors(): TensorFile;
}

class PytorchTensor implements FileTensor {
  readonly name: string;
  readonly dtype: DType;
  readonly shape: readonly number[];
  readonly size: number;
  readonly byteLength: number;
  readonly #file: RandomAccessFile;
  readonly #t: StateDictTensor;
  readonly #bigEndian: boolean;

  constructor(t: StateDictTensor, file: RandomAccessFile, bigEndian: boolean) {
    this.name = t.name;
    this.dtype = t.dtype;
    this.shape = t.tensor.shape;
    this.size = t.tensor.shape.reduce((a, b) => a * b, 1);
    this.byteLength = (this.size * t.dtype.bits) / 8;
    this.#file = file;
    this.#t = t;
    this.#bigEndian = bigEndian;
  }

  read(start: number, count: number, into?: Uint8Array): Promise<Uint8Array> {
    checkReadRange(this, start, count, into);
    return readStateDictTensor(this.#file, this.#t, start, count, this.#bigEndian, into);
  }
}

/**
 * The order safetensors' Rust writer gives tensors: by type, largest first (its Dtype enum's
 * order, descending), then by name; measured with safetensors 0.8's save().
 */
const SAFETENSORS_ORDER = [
  "bool", "float4e2m1", "float6e2m3", "float6e3m2", "uint8", "int8", "float8e5m2", "float8e4m3fn", "float8e8m0",
  "float8e4m3fnuz", "float8e5m2fnuz", "int16", "uint16", "float16", "bfloat16", "int32", "uint32", "float32",
  "complex64", "float64", "int64", "uint64",
];

/**
 * The order safetensors' save_file gives tensors of these types and names (largest type first, then by name).
 * @example [{ name: "b", dtype: "float16" }, { name: "a", dtype: "int64" }].sort(saveFileOrder) // int64 "a" first
 */
export function saveFileOrder(a: { readonly name: string; readonly dtype: string }, b: { readonly name: string; readonly dtype: string }): number {
  return SAFETENSORS_ORDER.indexOf(b.dtype) - SAFETENSORS_ORDER.indexOf(a.dtype) || byUtf8(a.name, b.name);
}

/** Compares names as Rust's String::cmp does: by UTF-8 bytes, which UTF-16 order differs from past U+FFFF. */
function byUtf8(a: string, b: string): number {
  const x = new TextEncoder().encode(a);
  const y = new TextEncoder().encode(b);
  for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return x[i] - y[i];
  return x.length - y.length;
}

/**
 * Opens the checkpoint in `file` (already open; it is closed with the TensorFile).
 * @throws TensorcastError INVALID_DATA for anything the checkpoint gets wrong (a global outside
 *         weights_only's allow-list, a bad zip, a storage out of bounds); UNSUPPORTED_TYPE for a
 *         tensor of a type not read; INVALID_ATTRIBUTE when the state dict must be picked by a key.
 */
export async function openPytorch(file: RandomAccessFile, opts: PytorchOptions = {}): Promise<PytorchFile> {
  const cp = await readPytorchCheckpoint(file, file.path);
  const stem = basename(file.path, extname(file.path));
  const all = stateDictOf(cp, file.path, stem, opts.key);
  const tensors = all.map((t) => new PytorchTensor(t, file, cp.bigEndian));
  const { kept, dropped } = dedupeTied(all);
  const keptNames = new Set(kept.map((t) => t.name));
  const close = (): Promise<void> => file.close();
  return {
    path: file.path, format: "pytorch", size: file.size, tensors, container: cp.container, tied: dropped, close,
    asSafetensors(): TensorFile {
      const list = tensors.filter((t) => keptNames.has(t.name)).sort((a, b) => saveFileOrder({ name: a.name, dtype: a.dtype.name }, { name: b.name, dtype: b.dtype.name }));
      return { path: file.path, format: "pytorch", size: file.size, tensors: list, metadata: { format: "pt" }, close };
    },
  };
}
