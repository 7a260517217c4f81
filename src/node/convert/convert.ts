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
import { cast, dtype, Tensor, TensorcastError, type DType, type DTypeLike, type DTypeName } from "../../index.js";
import { describe, expectObject } from "../../args.js";
import { sideFilePath } from "../io/external-data.js";
import { AtomicOutput, checkOutput, removeStaleTemporaries, sameFile } from "../io/file.js";
import { inputFilesOf, type InputFiles } from "../io/input-files.js";
import type { NpyOptions } from "../io/npy.js";
import type { PytorchOptions } from "../io/pytorch.js";
import { formatOfPath, openTensorFile, type OnnxModelFile } from "../io/reader.js";
import { rawByteLength, type FileFormat, type FileTensor, type TensorFile, type TensorInfo } from "../io/tensors.js";
import { planOutput, type OutputPlan } from "../io/writer.js";
import { GgufFileTensor } from "../io/gguf.js";
import { castTallyTarget } from "./cast-tally.js";
import type { ConvertStats } from "./kernel.js";
import { TaskPool } from "./pool.js";
import { DEFAULT_CHUNK_BYTES } from "./schedule.js";
import { commitPlan, writePlan } from "./write-plan.js";
import { expectPath, isDType } from "../args.js";

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
  /** A PyTorch checkpoint's reading options (the key of the dict holding the state dict). */
  pytorch?: PytorchOptions;
  /**
   * Replace an existing OUT (a regular file, or a symbolic link: the link itself, never its target).
   * IN itself, directories, devices, FIFOs and sockets are never replaced.
   */
  force?: boolean;
  /**
   * Worker threads at most; default: two when there is enough work, else none. Workers start as
   * chunks wait for them, never more than there are cores or room under `ulimit -v` (pool.ts).
   */
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
  /** The bytes of every file read (IN and the side files of its external data) and written (OUT and its side file). */
  bytesIn: number;
  bytesOut: number;
  /** OUT's side file, when initializers were written to one. */
  externalData?: { path: string; location: string; tensors: number; bytes: number; automatic: boolean };
  seconds: number;
  /** The worker threads that took part (0: the calling thread did the work). */
  workers: number;
}

/** Below this much tensor data, threads cost more than they save. */
const THREADS_FROM = 8 * 1024 * 1024;

/**
 * Worker threads for `bytes` of tensor data to convert: `asked`; else none below THREADS_FROM, or
 * when `inThread` (every conversion has the in-thread path, see inThreadOnly); else two.
 * @example defaultJobs(1 << 30, undefined, true) // 0
 */
export function defaultJobs(bytes: number, asked: number | undefined, inThread = false): number {
  return asked ?? (bytes >= THREADS_FROM && !inThread ? Math.min(2, availableParallelism()) : 0);
}

/**
 * Whether every conversion (source type, target type) is float32 -> bfloat16 / float16, which the
 * calling thread casts and measures in place in WebAssembly memory (kernel.ts castAndMeasure) and
 * workers cannot (a chunk sent to one is copied): without workers a 1 GiB float32 -> bfloat16
 * conversion takes 0.58-0.64 s here, with two 0.70-0.77 s (docs/performance.md). Other
 * pairs cost more per element than the I/O, and two workers win (float8e4m3fn: 1.55-1.70 s
 * against 2.02-2.10 s).
 * @example inThreadOnly([[dtype("float32"), dtype("bfloat16")]]) // true
 */
export function inThreadOnly(pairs: Iterable<readonly [DType, DType]>): boolean {
  for (const [from, to] of pairs) if (!castTallyTarget(from, to)) return false;
  return true;
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

/**
 * Why the tensor `name` is kept by the name filters of `opts` (`names` being opts.names as a set),
 * or undefined when they let it through.
 * @example nameFilterReason("lm_head.weight", { skip: /lm_head/ }) // "matched by --skip"
 */
export function nameFilterReason(name: string, opts: Pick<ConvertOptions, "only" | "skip">, names?: ReadonlySet<string>): string | undefined {
  if (names && !names.has(name)) return "not listed";
  if (opts.only && !opts.only.test(name)) return "not matched by --only";
  if (opts.skip?.test(name)) return "matched by --skip";
  return undefined;
}

/** selectTensors' arguments, checked for JavaScript callers. */
function checkSelectArguments(file: unknown, to: unknown, opts: unknown): void {
  expectObject(file, "selectTensors' file");
  expectObject(opts, "selectTensors' options", "INVALID_ATTRIBUTE");
  if (!Array.isArray(file.tensors)) throw new TensorcastError("INVALID_DATA", `selectTensors' file must be an open TensorFile (openTensorFile), its tensors are ${describe(file.tensors)}`);
  for (const t of file.tensors as unknown[]) {
    const ok = typeof t === "object" && t !== null && typeof (t as TensorInfo).name === "string" && isDType((t as TensorInfo).dtype);
    if (!ok) throw new TensorcastError("INVALID_DATA", `selectTensors' file lists ${describe(t)}, not a tensor with a name and a DType`);
  }
  if (!isDType(to)) throw new TensorcastError("INVALID_DATA", `selectTensors' type must be a DType (dtype("float16")), got ${describe(to)}`);
  // Its other keys are ignored: convertFile passes all of its options.
  const { only, skip, names, includeIntegers } = opts as Record<string, unknown>;
  const bad = (key: string, v: unknown, want: string): never => {
    throw new TensorcastError("INVALID_ATTRIBUTE", `selectTensors: option ${key} must be ${want}, got ${describe(v)}`);
  };
  if (only !== undefined && !(only instanceof RegExp)) bad("only", only, "a RegExp");
  if (skip !== undefined && !(skip instanceof RegExp)) bad("skip", skip, "a RegExp");
  if (names !== undefined && !(Array.isArray(names) && names.every((n) => typeof n === "string"))) bad("names", names, "an array of strings");
  if (includeIntegers !== undefined && typeof includeIntegers !== "boolean") bad("includeIntegers", includeIntegers, "true or false");
}

/** The tensors to convert, and why each other one is kept. */
export function selectTensors(file: TensorFile, to: DType, opts: Pick<ConvertOptions, "only" | "skip" | "names" | "includeIntegers">): {
  targets: Map<FileTensor, DType>;
  reasons: Map<FileTensor, string>;
} {
  checkSelectArguments(file, to, opts);
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
    let reason = nameFilterReason(t.name, opts, names);
    if (reason === undefined) {
      if (t.dtype === to) reason = `already ${to.name}`;
      else if (t.dtype.kind === "string" || t.dtype.kind === "complex") {
        if (names) throw new TensorcastError("UNSUPPORTED_TYPE", `${file.path}: tensor ${JSON.stringify(t.name)}: ${t.dtype.name} tensors cannot be cast`);
        reason = `${t.dtype.name} cannot be cast`;
      } else if (t.dtype.kind !== "float" && !opts.includeIntegers && !names) reason = "not floating-point";
    }
    if (reason) reasons.set(t, reason);
    else targets.set(t, to);
  }
  return { targets, reasons };
}

/**
 * The sizes of every file a conversion read and wrote: `file` and its side files (an .onnx model's
 * external data), and the planned output with its side file.
 * @example await filesBytes(model, plan) // bytesIn: model.onnx (369 B) + model.onnx.data (1.03 GiB), not 369 B
 */
export async function filesBytes(file: TensorFile, plan: OutputPlan): Promise<{ bytesIn: number; bytesOut: number }> {
  const sides = file.format === "onnx" ? ((await (file as OnnxModelFile).layout.externalFiles?.size()) ?? 0) : 0;
  return { bytesIn: file.size + sides, bytesOut: plan.size + (plan.external?.size ?? 0) };
}

/**
 * Refuses a side file that is the output (INVALID_ATTRIBUTE), or one of the input's files: the
 * input or one of its own side files, which converting in place with the same names would
 * otherwise replace (OUTPUT_IS_INPUT); then checks it as an output.
 * @example await checkSideFile("dir/model.onnx.data", await inputFilesOf(modelFile), "dir/out.onnx", false)  // throws OUTPUT_IS_INPUT when model.onnx reads model.onnx.data
 */
export async function checkSideFile(path: string, inputs: InputFiles, output: string, force: boolean | undefined): Promise<void> {
  if (await sameFile(path, output)) {
    throw new TensorcastError("INVALID_ATTRIBUTE", `${path}: the side file to write is the output model itself; name another file with --external-data`);
  }
  await inputs.refuse(path, "the side file to write");
  await checkOutput(path, { force });
}

/**
 * Converts IN to OUT. See the file comment for the steps.
 * @throws TensorcastError naming the file and tensor for bad input (INVALID_ATTRIBUTE or IO_ERROR
 *         for OUT's path, before IN is opened; IO_ERROR when the disk is full); INTERNAL when OUT
 *         does not read back as planned; `Interrupted` when `signal` aborts.
 */
export async function convertFile(input: string, output: string, opts: ConvertOptions): Promise<ConvertReport> {
  expectPath(input, "convertFile's input");
  expectPath(output, "convertFile's output");
  expectObject(opts, "convertFile's options", "INVALID_ATTRIBUTE");
  return convertFileOn(input, output, opts);
}

/**
 * convertFile on the worker threads of `shared` when given (left open: a sharded checkpoint's
 * shards share one pool), else on a pool of its own.
 */
export async function convertFileOn(input: string, output: string, opts: ConvertOptions, shared?: TaskPool): Promise<ConvertReport> {
  const started = performance.now();
  checkTarget(opts);
  await checkOutput(output, { input, force: opts.force });
  if (typeof opts.externalData === "string") await checkOutput(sideFilePath(output, opts.externalData), { input, force: opts.force });
  const file = await openTensorFile(input, { format: opts.inputFormat, npy: opts.npy, pytorch: opts.pytorch });
  try {
    return await convertOpenFile(file, output, opts, shared, started);
  } finally {
    await file.close();
  }
}

/**
 * convertFileOn for a file already open (or a view of tensors from several files, which a folder
 * laid out anew writes: its `path` is what errors name), left open. `started` is when the work
 * began, for the report's seconds.
 */
export async function convertOpenFile(file: TensorFile, output: string, opts: ConvertOptions, shared?: TaskPool, started = performance.now()): Promise<ConvertReport> {
  const input = file.path;
  const to = checkTarget(opts);
  await checkOutput(output, { input, force: opts.force });
  const saturate = opts.saturate ?? true;
  let out: AtomicOutput | undefined;
  let side: AtomicOutput | undefined;
  let pool: TaskPool | undefined;
  try {
    // Now that IN is open its external data files are known: none of them is ever written.
    const inputs = await inputFilesOf(file);
    await inputs.refuse(output);
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
    if (plan.external) await checkSideFile(plan.external.path, inputs, output, opts.force);

    await removeStaleTemporaries(output, inputs);
    if (plan.external) {
      await removeStaleTemporaries(plan.external.path, inputs);
      side = await AtomicOutput.create(plan.external.path, { digests: true });
    }
    out = await AtomicOutput.create(output);

    const convertBytes = [...targets.keys()].reduce((n, t) => n + t.byteLength, 0);
    // GGML block types are decoded before the cast, which is worth a worker whatever the pair.
    const decoded = [...targets.keys()].some((t) => t instanceof GgufFileTensor && t.ggml.type !== "F32" && t.dtype.name === "float32");
    const active = shared ?? (pool = new TaskPool(defaultJobs(convertBytes, opts.jobs, !decoded && inThreadOnly([...targets].map(([t, to]) => [t.dtype, to] as const)))));
    const stats = await writePlan(plan, {
      input, output, out, side, pool: active, inFlight: 2 * active.size, chunkBytes: opts.chunkBytes ?? DEFAULT_CHUNK_BYTES, saturate,
      // Copied ranges only occur in models: the bytes around the rewritten initializers.
      source: file.format === "onnx" ? (file as OnnxModelFile).file : undefined, signal: opts.signal, onProgress: opts.onProgress,
    });
    await commitPlan(plan, out, side, output, opts.force ?? false, opts.signal);
    out = undefined;
    side = undefined;

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
      ...(await filesBytes(file, plan)), seconds: (performance.now() - started) / 1000, workers: active.started,
      externalData: plan.external && {
        path: plan.external.path, location: plan.external.location, tensors: plan.external.tensors.length,
        bytes: plan.external.size, automatic: plan.external.automatic,
      },
    };
  } finally {
    if (out) await out.abort();
    if (side) await side.abort();
    if (pool) await pool.close();
  }
}
