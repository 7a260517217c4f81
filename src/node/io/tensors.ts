/**
 * What every file format reader hands the converter: a list of tensors, each with its name, type,
 * shape and a way to read any run of its elements as raw bytes, without loading the whole file.
 */
import { describe } from "../../args.js";
import { TensorcastError } from "../../index.js";
import { rawByteLength, type TensorInfo } from "../../io/tensor-info.js";

export { rawByteLength, type TensorInfo };

/** The formats tensorcast reads and writes ("pytorch": torch.save checkpoints, and "gguf": llama.cpp's models, read only). */
export type FileFormat = "safetensors" | "npy" | "onnx" | "pb" | "pytorch" | "gguf";

export const FILE_FORMATS: readonly FileFormat[] = ["safetensors", "npy", "onnx", "pb", "pytorch", "gguf"];

/** The extensions of PyTorch checkpoints: pytorch_model.bin, model.pt, model.pth, Lightning's .ckpt. */
export const PYTORCH_EXTENSIONS: readonly string[] = ["bin", "pt", "pth", "ckpt"];

/** A tensor inside an open file. */
export interface FileTensor extends TensorInfo {
  /**
   * The raw bytes of elements [start, start + count): little-endian, sub-byte types packed from the
   * low bits (ONNX raw_data, which is also the safetensors layout), whatever the file stores.
   * `start` must be a multiple of 8 (so packed runs start on a byte).
   *
   * `into`, when given, is a buffer of exactly the run's byte length that the reader may fill and
   * return instead of allocating one (a converter reuses its chunk buffers: a fresh 4 MiB buffer
   * per chunk costs 1,024 page faults and leaves garbage the collector frees late). A reader that
   * has to decode or reorder the stored bytes may ignore it: callers use what is returned.
   */
  read(start: number, count: number, into?: Uint8Array): Promise<Uint8Array>;
}

/**
 * Checks the arguments of a FileTensor's `read` (a public method: JavaScript callers may pass
 * anything): integers with 0 <= start, start + count <= the tensor's size, start a multiple of 8
 * for packed types (so a run starts on a byte),
 * and `into` a Uint8Array when given.
 * @throws TensorcastError INVALID_ATTRIBUTE naming the tensor and the range.
 */
export function checkReadRange(t: Pick<TensorInfo, "name" | "size" | "dtype">, start: unknown, count: unknown, into?: unknown): void {
  const ok = (x: unknown): x is number => typeof x === "number" && Number.isSafeInteger(x) && x >= 0;
  if (!ok(start) || !ok(count) || (t.dtype.packed && start % 8 !== 0) || start + count > t.size || (into !== undefined && !(into instanceof Uint8Array))) {
    throw new TensorcastError(
      "INVALID_ATTRIBUTE",
      `tensor ${JSON.stringify(t.name.slice(0, 200))}: read(start, count${into === undefined ? "" : ", into"}) takes integers with ` +
        `0 <= start <= start + count <= ${t.size} (its size)${into === undefined ? "" : " and a Uint8Array"}, got start ${describe(start)}, count ${describe(count)}`,
    );
  }
}

/** An open tensor file. */
export interface TensorFile {
  readonly path: string;
  readonly format: FileFormat;
  /** The file's size in bytes. */
  readonly size: number;
  /** In file order. */
  readonly tensors: readonly FileTensor[];
  /** safetensors' `__metadata__` (string to string), kept through a conversion. */
  readonly metadata?: Readonly<Record<string, string>>;
  close(): Promise<void>;
}

/** The product of `shape`, or undefined when it is not a list of safe non-negative integers or overflows. */
export function checkedSize(shape: readonly unknown[]): number | undefined {
  let size = 1;
  for (const d of shape) {
    if (typeof d !== "number" || !Number.isSafeInteger(d) || d < 0) return undefined;
    size *= d;
  }
  return Number.isSafeInteger(size) ? size : undefined;
}

/**
 * A short human spelling of a byte count or rate: 512 B, 677 B (a rate of 676.66), 1.50 KiB, 3.20 GiB.
 * Whole byte counts print exactly; anything else to 3 significant digits (at most 2 decimals).
 */
export function formatBytes(n: number): string {
  const short = (v: number): string => (v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2));
  if (n < 1024) return `${Number.isInteger(n) ? n : short(n)} B`;
  const units = ["KiB", "MiB", "GiB", "TiB"];
  let v = n / 1024;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return `${short(v)} ${units[u]}`;
}
