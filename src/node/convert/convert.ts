/**
 * `convertFile(IN, OUT, { to })`: changes the type of a checkpoint's tensors, streaming.
 *
 * 1. IN's header is read and validated; the tensors to convert are chosen (floating-point ones by
 *    default; `only` / `skip` filter by name; `names` lists them exactly).
 * 2. OUT's layout is decided up front (every size follows from the types), and OUT is created
 *    under a hidden temporary name beside it.
 * 3. Each tensor is read in chunks, converted by `cast` in a pool of worker threads, measured, and
 *    written at its final position; at most a few chunks are in memory at once.
 * 4. OUT is flushed, read back and checked against the plan (verify.ts), and renamed into place.
 *    An .onnx OUT may keep its initializers' data in a side file (see `externalData`), written
 *    under a temporary name too, read back byte for byte, and renamed first, so the model never
 *    appears under its final name before its data.
 *    On any error or interruption the temporary file is removed and OUT is not created; IN is only
 *    ever opened for reading.
 *
 * Everything wrong with OUT's path (a directory, a device, a missing folder, ...) is found before
 * IN is opened, so a bad -o never costs a conversion.
 */
import { promises as fsp } from "node:fs";
import { availableParallelism } from "node:os";
import { dirname, join } from "node:path";
import { cast, dtype, Tensor, TensorcastError, type DType, type DTypeLike, type DTypeName } from "../../index.js";
import { sideFilePath } from "../io/external-data.js";
import { AtomicOutput, checkOutput, removeStaleTemporaries, sameFile } from "../io/file.js";
import { rawToNpy, type NpyOptions } from "../io/npy.js";
import { formatOfPath, openTensorFile, type OnnxModelFile } from "../io/reader.js";
import { rawByteLength, type FileFormat, type FileTensor, type TensorFile } from "../io/tensors.js";
import { verifyOutput } from "../io/verify.js";
import { encodedLength, planOutput, type OutputTensor } from "../io/writer.js";
import { emptyConvertStats, mergeConvertStats, type ConvertStats } from "./kernel.js";
import { ChunkBuffers } from "./buffers.js";
import { TaskPool } from "./pool.js";
import { chunkElements, chunksOf, DEFAULT_CHUNK_BYTES, inTensor, Interrupted, runBounded, type Chunk } from "./schedule.js";

export interface ConvertOptions {
  /** The target type of the converted tensors. */
  to: DTypeLike;
  /** Float8 and e8m0 targets: clamp out-of-range values to +/-max (default true) or follow Cast's non-saturating rules. */
  saturate?: boolean;
  /** Convert only tensors whose name matches. */
  only?: RegExp;
  /** Never convert tensors whose name matches. */
  skip?: RegExp;
  /** Convert exactly these tensors (any type but string and complex). Required to write an .onnx model back. */
  names?: readonly string[];
  /** Also convert integer and bool tensors (by default only floating-point ones are). */
  includeIntegers?: boolean;
  /** IN's format, when its name does not say it. */
  inputFormat?: FileFormat;
  /** OUT's format; default: from OUT's extension, else IN's format. */
  outputFormat?: FileFormat;
  npy?: NpyOptions;
  /**
   * Replace an existing OUT (a regular file, or a symbolic link: the link itself, never its target).
   * IN itself, directories, devices, FIFOs and sockets are never replaced.
   */
  force?: boolean;
  /** Worker threads; default: up to the number of cores when there is enough work, else none. */
  jobs?: number;
  /** Input bytes per chunk (default 4 MiB). */
  chunkBytes?: number;
  /**
   * An .onnx output's side file, relative to OUT's folder: every initializer of
   * `externalThreshold` bytes or more (default 1024, as onnx) is written there and OUT refers to
   * it. `false`: every initializer inline (refused when OUT would be over 2 GiB). Default: inline,
   * unless OUT would be over 2 GiB; then `<OUT>.data`.
   */
  externalData?: string | false;
  externalThreshold?: number;
  signal?: AbortSignal;
  /** Called as input bytes are done (throttle it yourself). */
  onProgress?: (done: number, total: number) => void;
}

/** What happened to one tensor. */
export interface TensorReport {
  name: string;
  shape: number[];
  from: DTypeName;
  to: DTypeName;
  converted: boolean;
  /** Why it was kept as it was. */
  reason?: string;
  bytesIn: number;
  bytesOut: number;
  /** For converted tensors. */
  stats?: ConvertStats;
}

export interface ConvertReport {
  input: string;
  output: string;
  inputFormat: FileFormat;
  outputFormat: FileFormat;
  to: DTypeName;
  saturate: boolean;
  tensors: TensorReport[];
  /** File sizes (bytesOut: OUT's, without its side file). */
  bytesIn: number;
  bytesOut: number;
  /** OUT's side file, when initializers were written to one. */
  externalData?: { path: string; location: string; tensors: number; bytes: number; automatic: boolean };
  seconds: number;
  workers: number;
}

/** Below this much tensor data, threads cost more than they save. */
const THREADS_FROM = 8 * 1024 * 1024;

/** Worker threads for `bytes` of tensor data to convert: `asked`, else two from THREADS_FROM, else none. */
export function defaultJobs(bytes: number, asked: number | undefined): number {
  return asked ?? (bytes >= THREADS_FROM ? Math.min(2, availableParallelism()) : 0);
}

/**
 * The target type of `opts`, checked with the options once, before any file work.
 * @throws TensorcastError UNSUPPORTED_TYPE for a string or complex target; Cast's errors for the options.
 */
export function checkTarget(opts: Pick<ConvertOptions, "to" | "saturate">): DType {
  const to = dtype(opts.to);
  if (to.kind === "string" || to.kind === "complex") {
    throw new TensorcastError("UNSUPPORTED_TYPE", `cannot convert to ${to.name}: Cast has no ${to.kind} target for tensors read from files`);
  }
  // Cast-28 accepts every other pair.
  cast(Tensor.zeros("float32", [0]), to, { saturate: opts.saturate ?? true });
  return to;
}

/** The tensors to convert, and why each other one is kept. */
export function selectTensors(file: TensorFile, to: DType, opts: Pick<ConvertOptions, "only" | "skip" | "names" | "includeIntegers">): {
  targets: Map<FileTensor, DType>;
  reasons: Map<FileTensor, string>;
} {
  const targets = new Map<FileTensor, DType>();
  const reasons = new Map<FileTensor, string>();
  const names = opts.names ? new Set(opts.names) : undefined;
  if (names) {
    const missing = [...names].filter((n) => !file.tensors.some((t) => t.name === n));
    if (missing.length > 0) {
      const known = file.tensors.slice(0, 8).map((t) => JSON.stringify(t.name)).join(", ");
      throw new TensorcastError(
        "INVALID_ATTRIBUTE",
        `${file.path}: has no tensor named ${missing.map((n) => JSON.stringify(n)).join(", ")}; its tensors are ${known}${file.tensors.length > 8 ? ", ..." : ""}`,
      );
    }
  }
  for (const t of file.tensors) {
    let reason: string | undefined;
    if (names && !names.has(t.name)) reason = "not listed";
    else if (opts.only && !opts.only.test(t.name)) reason = "not matched by --only";
    else if (opts.skip?.test(t.name)) reason = "matched by --skip";
    else if (t.dtype === to) reason = `already ${to.name}`;
    else if (t.dtype.kind === "string" || t.dtype.kind === "complex") {
      if (names) throw new TensorcastError("UNSUPPORTED_TYPE", `${file.path}: tensor ${JSON.stringify(t.name)}: ${t.dtype.name} tensors cannot be cast`);
      reason = `${t.dtype.name} cannot be cast`;
    } else if (t.dtype.kind !== "float" && !opts.includeIntegers && !names) reason = "not floating-point";
    if (reason) reasons.set(t, reason);
    else targets.set(t, to);
  }
  return { targets, reasons };
}

/**
 * Refuses a side file that is the output, the input, or one of the input's own side files (which
 * converting in place with the same names would otherwise replace), then checks it as an output.
 */
async function checkSideFile(path: string, file: TensorFile, output: string, force: boolean | undefined): Promise<void> {
  const refuse = (what: string): TensorcastError =>
    new TensorcastError("INVALID_ATTRIBUTE", `${path}: the side file to write is ${what}; tensorcast never overwrites its input (name another file with --external-data)`);
  if (await sameFile(path, output)) throw refuse("the output model itself");
  if (await sameFile(path, file.path)) throw refuse(`the input ${file.path}`);
  if (file.format === "onnx") {
    const folder = dirname(file.path);
    const seen = new Set<string>();
    for (const t of (file as OnnxModelFile).layout.initializers) {
      const location = t.external?.location;
      if (location === undefined || seen.has(location)) continue;
      seen.add(location);
      if (await sameFile(path, join(folder, location))) throw refuse(`${file.path}'s own external data file ${location}`);
    }
  }
  await checkOutput(path, { input: file.path, force });
}

/**
 * Converts IN to OUT. See the file comment for the steps.
 * @throws TensorcastError naming the file and tensor for bad input (INVALID_ATTRIBUTE or IO_ERROR
 *         for OUT's path, before IN is opened; IO_ERROR when the disk is full); INTERNAL when OUT
 *         does not read back as planned; `Interrupted` when `signal` aborts.
 */
export async function convertFile(input: string, output: string, opts: ConvertOptions): Promise<ConvertReport> {
  return convertFileOn(input, output, opts);
}

/**
 * convertFile on the worker threads of `shared` when given (left open: a sharded checkpoint's
 * shards share one pool), else on a pool of its own.
 */
export async function convertFileOn(input: string, output: string, opts: ConvertOptions, shared?: TaskPool): Promise<ConvertReport> {
  const started = performance.now();
  const to = checkTarget(opts);
  await checkOutput(output, { input, force: opts.force });
  if (typeof opts.externalData === "string") await checkOutput(sideFilePath(output, opts.externalData), { input, force: opts.force });
  const saturate = opts.saturate ?? true;
  const file = await openTensorFile(input, { format: opts.inputFormat, npy: opts.npy });
  let out: AtomicOutput | undefined;
  let side: AtomicOutput | undefined;
  let pool: TaskPool | undefined;
  try {
    const outputFormat = opts.outputFormat ?? formatOfPath(output) ?? file.format;
    if (outputFormat === "onnx" && file.format === "onnx" && !opts.names) {
      throw new TensorcastError(
        "INVALID_ATTRIBUTE",
        `${input}: converting an ONNX model's initializers changes the types its nodes receive, and tensorcast does not ` +
          "rewrite the graph; name the initializers to convert (--initializers a,b) or write another format (-o out.safetensors)",
      );
    }
    const { targets, reasons } = selectTensors(file, to, opts);
    const plan = await planOutput(file, outputFormat, targets, output, { externalData: opts.externalData, threshold: opts.externalThreshold });
    if (plan.external) await checkSideFile(plan.external.path, file, output, opts.force);

    await removeStaleTemporaries(output);
    if (plan.external) {
      await removeStaleTemporaries(plan.external.path);
      side = await AtomicOutput.create(plan.external.path, { digests: true });
    }
    out = await AtomicOutput.create(output);

    const convertBytes = [...targets.keys()].reduce((n, t) => n + t.byteLength, 0);
    const jobs = shared ? shared.size : defaultJobs(convertBytes, opts.jobs);
    if (!shared) pool = new TaskPool(jobs);
    const chunkBytes = opts.chunkBytes ?? DEFAULT_CHUNK_BYTES;
    const stats = new Map<OutputTensor, ConvertStats>();

    // Progress counts input bytes: copied ranges, and the tensors' bytes as they are converted.
    const total = plan.segments.reduce((n, s) => n + (s.kind === "copy" ? s.length : s.kind === "tensor" ? s.tensor.source.byteLength : 0), 0) +
      (plan.external?.tensors.reduce((n, t) => n + t.source.byteLength, 0) ?? 0);
    let done = 0;
    const progress = (n: number): void => {
      done += n;
      opts.onProgress?.(done, total);
    };

    type Job = { kind: "bytes"; data: Uint8Array; at: number } | { kind: "copy"; from: number; length: number; at: number } | { kind: "tensor"; tensor: OutputTensor; chunk: Chunk };
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
          const t = s.tensor;
          stats.set(t, emptyConvertStats());
          for (const chunk of chunksOf(t.size, chunkElements(t.source.dtype, chunkBytes))) yield { kind: "tensor", tensor: t, chunk };
          at += t.byteLength;
        }
      }
      // Side-file tensors are placed by their offsets in it.
      for (const t of plan.external?.tensors ?? []) {
        stats.set(t, emptyConvertStats());
        for (const chunk of chunksOf(t.size, chunkElements(t.source.dtype, chunkBytes))) yield { kind: "tensor", tensor: t, chunk };
      }
    };
    // Copied ranges only occur in models: the bytes around the rewritten initializers.
    const modelFile = file.format === "onnx" ? (file as OnnxModelFile).file : undefined;
    const target = out;
    const sideTarget = side;
    const activePool = shared ?? pool!;
    const buffers = new ChunkBuffers();
    await runBounded(jobList(), Math.max(2, 2 * jobs), async (job) => {
      if (job.kind === "bytes") return target.write(job.data, job.at);
      if (job.kind === "copy") {
        if (!modelFile) throw new TensorcastError("INTERNAL", "a copy from a file that is not a model");
        await target.write(await modelFile.read(job.from, job.length), job.at);
        return progress(job.length);
      }
      const t = job.tensor;
      const { start, count } = job.chunk;
      let bytes: Uint8Array;
      let inBytes: number;
      // Buffers this job may hand back for the next chunks once written: its own, never a view of
      // the reader's.
      const reusable: Uint8Array[] = [];
      try {
        const buffer = buffers.take(rawByteLength(t.source.dtype, count));
        const raw = await t.source.read(start, count, buffer);
        inBytes = raw.length;
        if (t.dtype === t.source.dtype) {
          bytes = t.encoding === "npy" ? rawToNpy(t.dtype, raw, count) : raw;
          if (raw === buffer) reusable.push(raw);
        } else {
          const into = t.encoding === "raw" ? buffers.take(rawByteLength(t.dtype, count)) : undefined;
          const result = await activePool.run({ op: "convert", raw, from: t.source.dtype.name, to: t.dtype.name, count, saturate, encoding: t.encoding, into });
          if (result.op !== "convert") throw new Error("internal: wrong task result");
          bytes = result.bytes;
          // The converted bytes are always this job's: into itself, or what the worker allocated.
          reusable.push(bytes);
          if (raw === buffer) reusable.push(result.raw);
          mergeConvertStats(stats.get(t)!, result.stats);
        }
      } catch (e) {
        throw inTensor(e, input, t.name);
      }
      // Not inside the try: a write error is about OUT (a full disk), not about IN's tensor.
      const into = t.side ? sideTarget : target;
      if (!into) throw new TensorcastError("INTERNAL", `${output}: a side-file tensor without a side file`);
      await into.write(bytes, t.offset + encodedLength(t.dtype, start, t.encoding));
      for (const b of reusable) buffers.give(b);
      progress(inBytes);
    }, opts.signal);

    if (side && plan.external) await side.finish(plan.external.size);
    await out.finish(plan.size);
    await verifyOutput(plan, out.temporary, output, side);
    // A signal that came while the files were flushed and checked still means "do not write OUT".
    if (opts.signal?.aborted) throw new Interrupted();
    // The side file first, the model last: a model under its final name always finds its data.
    if (side) {
      await side.commit(opts.force ?? false);
      const committed = side.path;
      side = undefined;
      try {
        await out.commit(opts.force ?? false);
      } catch (e) {
        // Without its model the side file is of no use to anyone.
        await fsp.unlink(committed).catch(() => undefined);
        throw e;
      }
    } else {
      await out.commit(opts.force ?? false);
    }
    out = undefined;

    const written = new Map(plan.tensors.map((t) => [t.source, t]));
    const tensors = file.tensors.map((t): TensorReport => {
      const o = written.get(t);
      const converted = targets.has(t);
      const newType = converted ? to : t.dtype;
      return {
        name: t.name, shape: [...t.shape], from: t.dtype.name, to: newType.name, converted,
        reason: reasons.get(t), bytesIn: t.byteLength,
        bytesOut: o ? o.byteLength : converted ? rawByteLength(newType, t.size) : t.byteLength,
        stats: o && converted ? stats.get(o) : undefined,
      };
    });
    return {
      input, output, inputFormat: file.format, outputFormat, to: to.name, saturate, tensors,
      bytesIn: file.size, bytesOut: plan.size, seconds: (performance.now() - started) / 1000, workers: jobs,
      externalData: plan.external && {
        path: plan.external.path, location: plan.external.location, tensors: plan.external.tensors.length,
        bytes: plan.external.size, automatic: plan.external.automatic,
      },
    };
  } finally {
    if (out) await out.abort();
    if (side) await side.abort();
    if (pool) await pool.close();
    await file.close();
  }
}
