/**
 * Carrying out an output plan (writer.ts): its bytes written, its copied ranges copied, its tensors
 * read in chunks, converted on the worker threads and written at their planned offsets, a bounded
 * number of chunks at a time; then the files flushed, read back against the plan and renamed, the
 * side file first and the model last. Shared by the flat converter (convert.ts) and the
 * whole-model one (model-precision.ts), so both stream the same way.
 */
import { promises as fsp } from "node:fs";
import { TensorcastError } from "../../index.js";
import type { AtomicOutput, RandomAccessFile } from "../io/file.js";
import { rawToNpy } from "../io/npy.js";
import { verifyOutput } from "../io/verify.js";
import { encodedLength, type OutputPlan, type OutputTensor } from "../io/writer.js";
import { rawByteLength, type FileTensor } from "../io/tensors.js";
import { GgufFileTensor, type GgmlBlocks } from "../io/gguf.js";
import { ChunkBuffers } from "./buffers.js";
import { castTallyTarget, ResidentChunks } from "./cast-tally.js";
import { emptyConvertStats, mergeConvertStats, type ConvertStats } from "./kernel.js";
import type { TaskPool } from "./pool.js";
import { chunkElements, chunksOf, inTensor, Interrupted, runBounded, type Chunk } from "./schedule.js";

/**
 * What writePlan needs besides the plan.
 * @example { input: "in.onnx", output: "out.onnx", out, side, pool, inFlight: 4, chunkBytes: 4 << 20, saturate: true, weights: true }
 */
export interface PlanTarget {
  /** The input's path, as errors about its tensors name it. */
  input: string;
  output: string;
  out: AtomicOutput;
  /** The side file, when the plan has one. */
  side?: AtomicOutput;
  /** The file that "copy" segments copy from. */
  source?: RandomAccessFile;
  pool: TaskPool;
  /** Chunks in flight at once (at least 2). */
  inFlight: number;
  chunkBytes: number;
  saturate: boolean;
  /** Convert as the whole-model pass converts weights (float16 overflow clamped, see castWeights). */
  weights?: boolean;
  signal?: AbortSignal;
  /** Called with the input bytes done so far and their total. */
  onProgress?: (done: number, total: number) => void;
}

/** Whether a tensor's chunks are float32 cast to bfloat16 or float16 in the raw layout (castAndMeasure's pairs). */
function fusedPair(x: OutputTensor): boolean {
  return castTallyTarget(x.source.dtype, x.dtype) !== undefined && x.encoding === "raw";
}

/** The stored GGML blocks holding a chunk of a GGUF tensor of a block type, or undefined. */
export async function storedBlocks(t: FileTensor, start: number, count: number): Promise<{ raw: Uint8Array; ggml: GgmlBlocks } | undefined> {
  return t instanceof GgufFileTensor ? t.readBlocks(start, count) : undefined;
}

type Job = { kind: "bytes"; data: Uint8Array; at: number } | { kind: "copy"; from: number; length: number; at: number } | { kind: "tensor"; tensor: OutputTensor; chunk: Chunk };

/**
 * Writes every byte of `plan` into `t.out` (and `t.side`). Returns each converted tensor's
 * statistics (tensors copied unchanged have none).
 * @example
 * const stats = await writePlan(plan, { input, output, out, pool, inFlight: 4, chunkBytes: 4 << 20, saturate: true });
 * await commitPlan(plan, out, undefined, output, false);
 * @throws TensorcastError naming the input and tensor for a bad chunk, or the output for a write
 *         error; `Interrupted` when `t.signal` aborts.
 */
export async function writePlan(plan: OutputPlan, t: PlanTarget): Promise<Map<OutputTensor, ConvertStats>> {
  const stats = new Map<OutputTensor, ConvertStats>();
  // Progress counts input bytes: copied ranges, and the tensors' bytes as they are converted.
  const total = plan.segments.reduce((n, s) => n + (s.kind === "copy" ? s.length : s.kind === "tensor" ? s.tensor.source.byteLength : 0), 0) +
    (plan.external?.tensors.reduce((n, x) => n + x.source.byteLength, 0) ?? 0);
  let done = 0;
  const progress = (n: number): void => {
    done += n;
    t.onProgress?.(done, total);
  };
  const chunkBytes = t.chunkBytes;
  const jobList = function* (): Generator<Job> {
    let at = 0;
    for (const s of plan.segments) {
      if (s.kind === "bytes") {
        yield { kind: "bytes", data: s.data, at };
        at += s.data.length;
      } else if (s.kind === "copy") {
        for (let k = 0; k < s.length; k += chunkBytes) yield { kind: "copy", from: s.from + k, length: Math.min(chunkBytes, s.length - k), at: at + k };
        at += s.length;
      } else {
        const x = s.tensor;
        for (const chunk of chunksOf(x.size, chunkElements(x.source.dtype, chunkBytes))) yield { kind: "tensor", tensor: x, chunk };
        at += x.byteLength;
      }
    }
    // Side-file tensors are placed by their offsets in it.
    for (const x of plan.external?.tensors ?? []) {
      for (const chunk of chunksOf(x.size, chunkElements(x.source.dtype, chunkBytes))) yield { kind: "tensor", tensor: x, chunk };
    }
  };
  const { out, side, source, pool } = t;
  // Without worker threads, chunks of the checkpoint pairs are read into and converted in
  // WebAssembly memory (cast-tally.ts): no copy between the file's bytes and the kernels. Two
  // slots (input, output) per chunk in flight. With workers, buffers are transferred to them,
  // which a WebAssembly memory's cannot be.
  const fused = pool.size === 0 && !t.weights && [...plan.tensors, ...(plan.external?.tensors ?? [])].some((x) => fusedPair(x));
  const buffers = new ChunkBuffers(fused ? new ResidentChunks(chunkBytes, 2 * Math.max(2, t.inFlight)) : undefined);
  await runBounded(jobList(), Math.max(2, t.inFlight), async (job) => {
    if (job.kind === "bytes") return out.write(job.data, job.at);
    if (job.kind === "copy") {
      if (!source) throw new TensorcastError("INTERNAL", "a copy from a file that is not a model");
      await out.write(await source.read(job.from, job.length), job.at);
      return progress(job.length);
    }
    const x = job.tensor;
    const { start, count } = job.chunk;
    let bytes: Uint8Array;
    let inBytes: number;
    // Buffers this job may hand back for the next chunks once written: its own, never a view of
    // the reader's.
    const reusable: Uint8Array[] = [];
    try {
      // GGML blocks go to the workers as they are stored, so the decoding is spread too.
      const blocks = pool.size > 0 && x.dtype !== x.source.dtype ? await storedBlocks(x.source, start, count) : undefined;
      const buffer = blocks ? new Uint8Array(0) : buffers.take(rawByteLength(x.source.dtype, count));
      const raw = blocks ? blocks.raw : await x.source.read(start, count, buffer);
      // A reader that did not use the buffer (it returned bytes of its own) leaves it untouched.
      if (!blocks && raw.buffer !== buffer.buffer) buffers.give(buffer);
      inBytes = blocks ? rawByteLength(x.source.dtype, count) : raw.length;
      if (x.dtype === x.source.dtype) {
        bytes = x.encoding === "npy" ? rawToNpy(x.dtype, raw, count) : raw;
        if (raw === buffer) reusable.push(raw);
      } else {
        // castWeights makes a fresh output, so weights get no buffer to write into.
        const into = x.encoding === "raw" && !t.weights ? buffers.take(rawByteLength(x.dtype, count)) : undefined;
        const result = await pool.run({
          op: "convert", raw, from: x.source.dtype.name, to: x.dtype.name, count, saturate: t.saturate, encoding: x.encoding, weights: t.weights, into, ggml: blocks?.ggml,
        });
        if (result.op !== "convert") throw new Error("internal: wrong task result");
        bytes = result.bytes;
        // The converted bytes are always this job's: into itself, or what the worker allocated.
        reusable.push(bytes);
        if (raw === buffer) reusable.push(result.raw);
        let s = stats.get(x);
        if (!s) stats.set(x, (s = emptyConvertStats()));
        mergeConvertStats(s, result.stats);
      }
    } catch (e) {
      throw inTensor(e, t.input, x.name);
    }
    // Not inside the try: a write error is about OUT (a full disk), not about IN's tensor.
    const into = x.side ? side : out;
    if (!into) throw new TensorcastError("INTERNAL", `${t.output}: a side-file tensor without a side file`);
    await into.write(bytes, x.offset + encodedLength(x.dtype, start, x.encoding));
    for (const b of reusable) buffers.give(b);
    progress(inBytes);
  }, t.signal);
  // An empty tensor has no chunk, and its conversion changed nothing.
  for (const x of plan.tensors) if (x.dtype !== x.source.dtype && !stats.has(x)) stats.set(x, emptyConvertStats());
  return stats;
}

/**
 * Flushes the written files, reads them back against `plan` (and, for files created with
 * `digests`, every write byte for byte) and renames them into place: the side file first, the
 * model last, so a model under its final name always finds its data. On success the caller must
 * not abort them any more.
 * @example await commitPlan(plan, out, side, "out.onnx", false, signal)  // out.onnx.data, then out.onnx
 * @throws TensorcastError INTERNAL when a file does not read back as planned; `Interrupted` when
 *         `signal` aborted meanwhile (nothing renamed).
 */
export async function commitPlan(plan: OutputPlan, out: AtomicOutput, side: AtomicOutput | undefined, output: string, force: boolean, signal?: AbortSignal): Promise<void> {
  if (side && plan.external) await side.finish(plan.external.size);
  await out.finish(plan.size);
  await verifyOutput(plan, out.temporary, output, side);
  if (out.digests) {
    const differs = await out.checkWritten();
    if (differs !== undefined) throw new TensorcastError("INTERNAL", `${output}: did not read back as written (${differs}), so it was removed and nothing was written`);
  }
  // A signal that came while the files were flushed and checked still means "do not write OUT".
  if (signal?.aborted) throw new Interrupted();
  if (!side) return out.commit(force);
  await side.commit(force);
  try {
    await out.commit(force);
  } catch (e) {
    // Without its model the side file is of no use to anyone.
    await fsp.unlink(side.path).catch(() => undefined);
    throw e;
  }
}
