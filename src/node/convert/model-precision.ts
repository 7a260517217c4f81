/**
 * `convertModelFile(IN, OUT, { to })`: an ONNX model converted as a whole (src/io/onnx/precision):
 * the graph computing in float16 / bfloat16, or its weights stored as float8 / int4 / float4 (or
 * float16 / bfloat16 with `weightsOnly`) and cast back where they are read.
 *
 * Streamed, so that memory does not grow with the weights:
 * 1. IN is validated and its main graph's initializers located (scanModelFile, which also finds
 *    and checks the side files of initializers with external data: inside IN's folder, long
 *    enough, matching their checksum).
 * 2. The graph edit runs on a skeleton of IN in memory: each initializer with external data or of
 *    STREAM_FROM bytes or more stands there as a placeholder, a TensorProto with its dims, type,
 *    name and other fields but no data. The pass converts the rest (small initializers, Constant
 *    values, attributes) itself, and for a placeholder only notes the new type.
 * 3. OUT is laid out (writer.ts: inline, or with a side file when asked or when it would be over
 *    2 GiB), and the placeholders' data is read in chunks, converted on the worker threads
 *    (castWeights' rules: float16 overflow clamped to 65504) and written at its planned offsets.
 * 4. OUT (and its side file) are flushed, read back (the model against the plan, every write's
 *    bytes against their digest) and renamed, side file first, as convertFile does.
 */
import { dtype, TensorcastError, type DType, type DTypeLike } from "../../index.js";
import { convertModelPrecision, type ExternalTensorHook, type KeptNode, type PrecisionResult } from "../../io/onnx/precision/model.js";
import { PbMessage, type PbField } from "../../io/onnx/precision/pb.js";
import { WireWriter } from "../../io/onnx/wire-writer.js";
import { sideFilePath } from "../io/external-data.js";
import { AtomicOutput, checkOutput, removeStaleTemporaries } from "../io/file.js";
import { inputFilesOf } from "../io/input-files.js";
import type { OnnxFileTensor } from "../io/onnx.js";
import { openTensorFile, type OnnxModelFile } from "../io/reader.js";
import { rawByteLength, type FileTensor } from "../io/tensors.js";
import { planEditedModel, type EditedModel, type GraphPiece, type OutputPlan, type TensorEntry } from "../io/writer.js";
import { checkSideFile, defaultJobs, filesBytes, type ConvertReport, type TensorReport } from "./convert.js";
import { measureConversion, type ConvertStats } from "./kernel.js";
import { TaskPool } from "./pool.js";
import { DEFAULT_CHUNK_BYTES, Interrupted } from "./schedule.js";
import { commitPlan, writePlan } from "./write-plan.js";
import { expectPath } from "../args.js";
import { expectObject } from "../../args.js";

/**
 * What convertModelFile does; only `to` is required.
 * @example { to: "float16", keepIoTypes: true, externalData: "out.onnx.data" }
 */
export interface ModelConvertOptions {
  to: DTypeLike;
  /** float8 targets: out-of-range weights become +/-max (default) or NaN / Inf. */
  saturate?: boolean;
  /** Keep the graph's float32 inputs and outputs (Casts at the boundary). */
  keepIoTypes?: boolean;
  /** Store the weights in `to`, cast back to float32 where read; implied for targets other than float16 / bfloat16. */
  weightsOnly?: boolean;
  /** Operators kept in float32 (default: DEFAULT_BLOCKED_OPS). */
  blockOps?: readonly string[];
  /**
   * OUT's side file, relative to OUT's folder: every initializer of 1024 bytes or more is written
   * there. `false`: every initializer inline (refused when OUT would be over 2 GiB). Default:
   * inline, unless OUT would be over 2 GiB; then `<OUT>.data`. IN's own side files are never
   * written to.
   */
  externalData?: string | false;
  /** With a side file: initializers of this many bytes or more go there (default 1024, as onnx). */
  externalThreshold?: number;
  /** Worker threads converting the streamed initializers; default as convertFile. */
  jobs?: number;
  /** Input bytes per chunk (default 4 MiB). */
  chunkBytes?: number;
  force?: boolean;
  signal?: AbortSignal;
  /** Called as the streamed initializers' input bytes are done. */
  onProgress?: (done: number, total: number) => void;
}

/**
 * convertFile's report, plus what happened to the graph.
 * @example { mode: "graph", kept: [], castsInserted: 0, opsetBefore: 13, opsetAfter: 13, tensors: [...], externalData: undefined, ... }
 */
export interface ModelConvertReport extends ConvertReport {
  mode: "graph" | "weights";
  /** Nodes left computing in float32, and why. */
  kept: KeptNode[];
  castsInserted: number;
  opsetBefore: number;
  opsetAfter: number;
  /**
   * The data bytes of OUT's floating-point initializers (the main graph's): those stored as `to`,
   * and those left in another type, such as a Conv weight that stays float32 because Conv has no
   * bfloat16 before opset 22.
   */
  floatWeightBytes: { target: number; other: number };
}

/**
 * Initializers of at least this many bytes are streamed rather than held: below it a tensor's
 * chunk job costs more than its bytes (and onnx keeps initializers under 1 KiB inline anyway).
 * Initializers with external data are streamed whatever their size.
 * @example STREAM_FROM  // 1024: a float32 [16, 16] weight is streamed, a [16] bias is not
 */
export const STREAM_FROM = 1024;

/** The initializers a streamed pass reads on demand: every non-string one with external data or of STREAM_FROM bytes or more. */
export function streamedInitializers(file: OnnxModelFile): OnnxFileTensor[] {
  return file.layout.initializers.filter(
    (t) => t.dtype.kind !== "string" && (t.storage === "external" || ((t.storage === "raw" || t.inPlace) && t.byteLength >= STREAM_FROM)),
  );
}

/** Marks a skeleton's placeholder: external_data's location (a NUL, which no real location has), its offset the initializer's index. */
const PLACEHOLDER = "\0tensorcast-streamed";

/** A streamed initializer the pass converted. */
interface StreamedTensor {
  source: OnnxFileTensor;
  label: string;
  /** How many tensors the pass had reported before it. */
  before: number;
}

/**
 * Converts the ONNX model IN into OUT. See the file comment.
 * @example
 * const r = await convertModelFile("model.onnx", "model.f16.onnx", { to: "float16", keepIoTypes: true });
 * // r.mode === "graph"; r.externalData === undefined unless asked for or over 2 GiB
 * @throws TensorcastError the errors of convertModelPrecision, naming IN; INVALID_DATA or IO_ERROR
 *         for a side file of IN that is refused (outside IN's folder, too short, checksum
 *         mismatch); INVALID_ATTRIBUTE or IO_ERROR for OUT's path (before IN is read);
 *         UNSUPPORTED_TYPE for an inline OUT over 2 GiB; INTERNAL when OUT does not read back as
 *         written; `Interrupted` when `signal` aborts.
 */
export async function convertModelFile(input: string, output: string, opts: ModelConvertOptions): Promise<ModelConvertReport> {
  expectPath(input, "convertModelFile's input");
  expectPath(output, "convertModelFile's output");
  expectObject(opts, "convertModelFile's options", "INVALID_ATTRIBUTE");
  const started = performance.now();
  const to = dtype(opts.to);
  const force = opts.force ?? false;
  await checkOutput(output, { input, force });
  if (typeof opts.externalData === "string") await checkOutput(sideFilePath(output, opts.externalData), { input, force });
  const file = (await openTensorFile(input, { format: "onnx" })) as OnnxModelFile;
  let out: AtomicOutput | undefined;
  let side: AtomicOutput | undefined;
  let pool: TaskPool | undefined;
  try {
    // Now that IN is open its external data files are known: none of them is ever written.
    const inputs = await inputFilesOf(file);
    await inputs.refuse(output);
    const streamed = streamedInitializers(file);
    const skeleton = await skeletonOf(file, new Set(streamed));
    const converted: StreamedTensor[] = [];
    const external: ExternalTensorHook = (tensor, label, _kind, before) => {
      const source = placeholderOf(tensor, file);
      if (!source) {
        throw new TensorcastError("NOT_IMPLEMENTED", `${label}: its data is external, which tensorcast reads for the main graph's initializers only`);
      }
      converted.push({ source, label, before });
      return tensor.setVarint(2, to.onnx);
    };
    let result: PrecisionResult;
    try {
      refuseNestedExternal(skeleton, input);
      result = convertModelPrecision(skeleton, {
        to, saturate: opts.saturate, keepIoTypes: opts.keepIoTypes, weightsOnly: opts.weightsOnly, blockOps: opts.blockOps, external,
      });
    } catch (e) {
      if (e instanceof TensorcastError && !e.message.startsWith(`${input}:`)) throw new TensorcastError(e.code, `${input}: ${e.message}`);
      throw e;
    }
    if (opts.signal?.aborted) throw new Interrupted();
    const plan = await planEditedModel(editedModel(result.bytes, file), output, { externalData: opts.externalData, threshold: opts.externalThreshold });
    if (plan.external) await checkSideFile(plan.external.path, inputs, output, force);

    await removeStaleTemporaries(output, inputs);
    if (plan.external) {
      await removeStaleTemporaries(plan.external.path, inputs);
      side = await AtomicOutput.create(plan.external.path, { digests: true });
    }
    // Digests: every byte written is read back, as the model written whole once was.
    out = await AtomicOutput.create(output, { digests: true });
    const convertBytes = converted.reduce((n, t) => n + t.source.byteLength, 0);
    pool = new TaskPool(defaultJobs(convertBytes, opts.jobs));
    const stats = await writePlan(plan, {
      input, output, out, side, pool, inFlight: 2 * pool.size, chunkBytes: opts.chunkBytes ?? DEFAULT_CHUNK_BYTES,
      saturate: opts.saturate ?? true, weights: true, signal: opts.signal, onProgress: opts.onProgress,
    });
    await commitPlan(plan, out, side, output, force, opts.signal);
    out = undefined;
    side = undefined;
    return {
      input, output, inputFormat: "onnx", outputFormat: "onnx", to: to.name, saturate: opts.saturate ?? true,
      tensors: reportTensors(result, converted, plan, stats, to),
      ...(await filesBytes(file, plan)), seconds: (performance.now() - started) / 1000, workers: pool.started,
      externalData: plan.external && {
        path: plan.external.path, location: plan.external.location, tensors: plan.external.tensors.length,
        bytes: plan.external.size, automatic: plan.external.automatic,
      },
      mode: result.mode, kept: result.kept, castsInserted: result.castsInserted, opsetBefore: result.opsetBefore, opsetAfter: result.opsetAfter,
      floatWeightBytes: floatWeightBytes(plan, to),
    };
  } finally {
    if (out) await out.abort();
    if (side) await side.abort();
    if (pool) await pool.close();
    await file.close();
  }
}

/** ModelConvertReport.floatWeightBytes, from the initializers OUT lists. */
function floatWeightBytes(plan: OutputPlan, to: DType): { target: number; other: number } {
  const bytes = { target: 0, other: 0 };
  for (const t of plan.lists) {
    if (t.dtype.kind === "float") bytes[t.dtype === to ? "target" : "other"] += rawByteLength(t.dtype, t.shape.reduce((n, d) => n * d, 1));
  }
  return bytes;
}

/** The per-tensor report: the pass's own tensors and the streamed ones, in the order the pass met them. */
function reportTensors(result: PrecisionResult, converted: readonly StreamedTensor[], plan: OutputPlan, stats: Map<unknown, ConvertStats>, to: DType): TensorReport[] {
  const statsOf = new Map(plan.tensors.map((t) => [t.source, stats.get(t)]));
  const reports: TensorReport[] = [];
  let k = 0;
  const streamedUpTo = (n: number): void => {
    for (; k < converted.length && converted[k].before <= n; k++) {
      const { source, label } = converted[k];
      reports.push({
        name: label, shape: [...source.shape], from: source.dtype.name, to: to.name, converted: true,
        bytesIn: source.byteLength, bytesOut: rawByteLength(to, source.size), stats: statsOf.get(source),
      });
    }
  };
  result.tensors.forEach((t, i) => {
    streamedUpTo(i);
    reports.push({
      name: t.name, shape: [...t.from.shape], from: t.from.dtype.name, to: t.to.dtype.name, converted: true,
      bytesIn: t.from.bytes().length, bytesOut: t.to.bytes().length, stats: measureConversion(t.from, t.to),
    });
  });
  streamedUpTo(Infinity);
  return reports;
}

/**
 * IN's ModelProto with each initializer of `streamed` replaced by its placeholder: every other
 * byte read as it is, the big data never.
 */
export async function skeletonOf(model: OnnxModelFile, streamed: ReadonlySet<OnnxFileTensor>): Promise<Uint8Array> {
  const { graph, initializers } = model.layout;
  const file = model.file;
  const graphParts: Uint8Array[] = [];
  let at = graph.contentStart;
  for (let i = 0; i < initializers.length; i++) {
    const t = initializers[i];
    if (!streamed.has(t)) continue;
    graphParts.push(await file.read(at, t.fieldStart - at));
    const w = new WireWriter(256);
    w.fork(5);
    for (const d of t.shape) w.int64Field(1, d);
    w.uint32Field(2, t.dtype.onnx);
    w.stringField(8, t.name, "tensor name");
    for (const [s, e] of t.extras) w.raw(await file.read(s, e - s));
    for (const [key, value] of [["location", PLACEHOLDER], ["offset", String(i)]]) w.fork(13).stringField(1, key).stringField(2, value, "external data location").join();
    w.uint32Field(14, 1);
    w.join();
    graphParts.push(w.finish().slice());
    at = t.end;
  }
  graphParts.push(await file.read(at, graph.end - at));
  const graphLength = graphParts.reduce((n, p) => n + p.length, 0);
  const head = new WireWriter(16).tag(7, 2).lengthPrefix(graphLength).finish();
  const before = await file.read(0, graph.fieldStart);
  const after = await file.read(graph.end, file.size - graph.end);
  const bytes = new Uint8Array(before.length + head.length + graphLength + after.length);
  let pos = 0;
  for (const p of [before, head, ...graphParts, after]) {
    bytes.set(p, pos);
    pos += p.length;
  }
  return bytes;
}

/**
 * Refuses a tensor with external data anywhere but among the main graph's initializers (a Constant's
 * value, a subgraph's initializer): scanModelFile neither finds nor checks those, and copied as
 * they are they would name a file relative to IN's folder from OUT's.
 */
export function refuseNestedExternal(skeleton: Uint8Array, input: string): void {
  const refuse = (where: string): TensorcastError =>
    new TensorcastError("NOT_IMPLEMENTED", `${input}: ${where} has external data; tensorcast reads external data for the main graph's initializers only`);
  const graphs = (g: PbMessage, main: boolean): void => {
    if (!main) for (const t of g.subs(5, "TensorProto")) if (t.int(14) === 1) throw refuse(`initializer ${JSON.stringify(t.string(8))} of subgraph ${JSON.stringify(g.string(2))}`);
    for (const f of g.all(1)) {
      // Read only: each node parsed, looked at and dropped (a million kept nodes cost gigabytes).
      const n = g.peek(f, "NodeProto");
      for (const a of n.subs(5, "AttributeProto")) {
        for (const t of [...a.subs(5, "TensorProto"), ...a.subs(10, "TensorProto")]) {
          if (t.int(14) === 1) throw refuse(`attribute ${JSON.stringify(a.string(1))} of node ${JSON.stringify(n.string(3) || n.string(4))}`);
        }
        for (const body of [...a.subs(6, "GraphProto"), ...a.subs(11, "GraphProto")]) graphs(body, false);
      }
    }
  };
  const graph = PbMessage.parse(skeleton, "ModelProto").sub(7, "GraphProto");
  if (graph) graphs(graph, true);
}

/** The initializer a placeholder stands for, or undefined when `tensor` is not one. */
export function placeholderOf(tensor: PbMessage, file: OnnxModelFile): OnnxFileTensor | undefined {
  let location: string | undefined;
  let offset: string | undefined;
  for (const e of tensor.subs(13, "StringStringEntryProto")) {
    if (e.string(1) === "location") location = e.string(2);
    else if (e.string(1) === "offset") offset = e.string(2);
  }
  if (location !== PLACEHOLDER || offset === undefined) return undefined;
  return file.layout.initializers[Number(offset)];
}

/**
 * The converted skeleton split for writer.ts: placeholders become initializer pieces whose data is
 * streamed from what `resolve` finds for them (by default IN's initializers); `inlineSuffix` gives
 * the fields a placeholder's TensorProto ends with when its data is inline (data_location DEFAULT).
 */
export function editedModel(
  bytes: Uint8Array, file: OnnxModelFile, resolve: (t: PbMessage) => FileTensor | undefined = (t) => placeholderOf(t, file),
  inlineSuffix?: (t: PbMessage) => Uint8Array | undefined,
): EditedModel {
  const model = PbMessage.parse(bytes, "ModelProto");
  // The pass has found the graph; scanModelFile refused a model with two.
  const at = model.fields.findIndex((f) => f.no === 7);
  const encode = (fields: PbField[]): Uint8Array => new PbMessage(fields).encode(64);
  const graph = model.message(model.fields[at], "GraphProto");
  const pieces: GraphPiece[] = [];
  const lists: TensorEntry[] = [];
  const seen = new Set<FileTensor>();
  let run: PbField[] = [];
  for (const f of graph.fields) {
    if (f.no !== 5) {
      run.push(f);
      continue;
    }
    const t = graph.message(f, "TensorProto");
    const type = dtype(t.int(2));
    const shape = t.varints(1).map(Number);
    lists.push({ name: t.string(8), dtype: type, shape });
    const source = t.int(14) === 1 ? resolve(t) : undefined;
    if (!source) {
      run.push(f);
      continue;
    }
    if (seen.has(source)) throw new TensorcastError("INTERNAL", `${file.path}: initializer ${JSON.stringify(source.name)} appears twice in the converted model`);
    seen.add(source);
    if (run.length > 0) pieces.push({ kind: "bytes", data: encode(run) });
    run = [];
    const extra = encode(t.fields.filter((x) => ![1, 2, 8, 13, 14].includes(x.no)));
    pieces.push({ kind: "initializer", source, name: t.string(8), dtype: type, shape, extra, inlineSuffix: inlineSuffix?.(t) });
  }
  if (run.length > 0) pieces.push({ kind: "bytes", data: encode(run) });
  return { head: encode(model.fields.slice(0, at)), graph: pieces, tail: encode(model.fields.slice(at + 1)), lists };
}
