/**
 * Splitting tensors into chunks, and running chunk jobs a bounded number at a time, so memory
 * stays bounded by (jobs in flight) x (chunk size) however large a file or a tensor is.
 */
import { TensorcastError, type DType } from "../../index.js";
import { fileError } from "../io/file.js";

/** Default chunk size: input bytes per job. */
export const DEFAULT_CHUNK_BYTES = 4 * 1024 * 1024;

/** A run of elements of one tensor. */
export interface Chunk {
  readonly start: number;
  readonly count: number;
}

/**
 * Elements per chunk for `t`: about `chunkBytes` of input, a multiple of 8 so that every chunk of
 * a packed type starts and ends on a byte (8 elements of 2, 4 or 6 bits are 2, 4 or 6 bytes).
 */
export function chunkElements(t: DType, chunkBytes: number): number {
  const bits = t.kind === "string" ? 8 : t.bits;
  return Math.max(8, Math.floor((chunkBytes * 8) / bits / 8) * 8);
}

/** The chunks of a tensor of `size` elements, in order. */
export function* chunksOf(size: number, perChunk: number): Generator<Chunk> {
  for (let start = 0; start < size; start += perChunk) yield { start, count: Math.min(perChunk, size - start) };
}

/** Thrown when a run is cancelled (Ctrl-C); nothing has been written under the output's name. */
export class Interrupted extends Error {
  constructor(message = "interrupted") {
    super(message);
    this.name = "Interrupted";
  }
}

/**
 * Runs `work` on every item, at most `limit` at a time, in order of start. Stops starting new
 * items at the first error (or when `signal` aborts), waits for those running, then throws.
 */
export async function runBounded<T>(items: Iterable<T>, limit: number, work: (item: T) => Promise<void>, signal?: AbortSignal): Promise<void> {
  const running = new Set<Promise<void>>();
  let failure: { error: unknown } | undefined;
  for (const item of items) {
    if (failure) break;
    if (signal?.aborted) {
      failure = { error: new Interrupted() };
      break;
    }
    const p: Promise<void> = work(item).then(
      () => {
        running.delete(p);
      },
      (error: unknown) => {
        running.delete(p);
        failure ??= { error };
      },
    );
    running.add(p);
    if (running.size >= limit) await Promise.race(running);
  }
  await Promise.all(running);
  if (!failure && signal?.aborted) failure = { error: new Interrupted() };
  if (failure) throw failure.error;
}

/** Parses a size such as "64MiB", "512k", "1G" or "1048576" (bytes). */
export function parseSize(text: string): number | undefined {
  const m = /^(\d+(?:\.\d+)?)\s*([kmgt]?)(i?b?)$/i.exec(text.trim());
  if (!m) return undefined;
  const scale = { "": 1, k: 1024, m: 1024 ** 2, g: 1024 ** 3, t: 1024 ** 4 }[m[2].toLowerCase() as "" | "k" | "m" | "g" | "t"];
  const n = Math.floor(Number(m[1]) * scale);
  return Number.isSafeInteger(n) && n > 0 ? n : undefined;
}

/**
 * Rewrites an error from reading or converting a chunk so that it names the file and the tensor
 * (once: a message that already names them is left as it is).
 */
export function inTensor(e: unknown, file: string, tensor: string): unknown {
  if (e instanceof TensorcastError && !e.message.startsWith(`${file}:`)) return fileError(e.code, file, e.message, tensor);
  return e;
}
