/**
 * `convertModelFile(IN, OUT, { to })`: an ONNX model converted as a whole (src/io/onnx/precision):
 * the graph computing in float16 / bfloat16, or its weights stored as float8 / int4 / float4 (or
 * float16 / bfloat16 with `weightsOnly`) and cast back where they are read. The model is read into
 * memory (a protobuf cannot exceed 2 GiB), converted, written under a temporary name, read back and
 * compared, then renamed into place, as convertFile does.
 */
import { promises as fsp } from "node:fs";
import { dtype, TensorcastError, type DTypeLike } from "../../index.js";
import { decodeModel } from "../../io/onnx/model.js";
import { convertModelPrecision, type KeptNode } from "../../io/onnx/precision/model.js";
import { AtomicOutput, checkOutput, fileError, removeStaleTemporaries } from "../io/file.js";
import { MAX_INLINE_MODEL } from "../io/writer.js";
import type { ConvertReport, TensorReport } from "./convert.js";
import { measureConversion } from "./kernel.js";
import { Interrupted } from "./schedule.js";

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
  force?: boolean;
  signal?: AbortSignal;
}

/** convertFile's report, plus what happened to the graph. */
export interface ModelConvertReport extends ConvertReport {
  mode: "graph" | "weights";
  /** Nodes left computing in float32, and why. */
  kept: KeptNode[];
  castsInserted: number;
  opsetBefore: number;
  opsetAfter: number;
}

/**
 * Converts the ONNX model IN into OUT. See the file comment.
 * @throws TensorcastError the errors of convertModelPrecision, naming IN; INVALID_ATTRIBUTE or
 *         IO_ERROR for OUT's path (before IN is read); INTERNAL when OUT does not read back as
 *         written; `Interrupted` when `signal` aborts.
 */
export async function convertModelFile(input: string, output: string, opts: ModelConvertOptions): Promise<ModelConvertReport> {
  const started = performance.now();
  const to = dtype(opts.to);
  await checkOutput(output, { input, force: opts.force });
  const size = (await fsp.stat(input)).size;
  if (size > MAX_INLINE_MODEL) {
    throw fileError("NOT_IMPLEMENTED", input, `is ${size} bytes; a model converted as a whole must fit in one protobuf message (2 GiB)`);
  }
  const bytes = new Uint8Array(await fsp.readFile(input));
  let result: ReturnType<typeof convertModelPrecision>;
  try {
    result = convertModelPrecision(bytes, {
      to, saturate: opts.saturate, keepIoTypes: opts.keepIoTypes, weightsOnly: opts.weightsOnly, blockOps: opts.blockOps,
    });
  } catch (e) {
    if (e instanceof TensorcastError) throw new TensorcastError(e.code, `${input}: ${e.message}`);
    throw e;
  }
  if (opts.signal?.aborted) throw new Interrupted();
  await removeStaleTemporaries(output);
  let out: AtomicOutput | undefined = await AtomicOutput.create(output);
  try {
    await out.write(result.bytes, 0);
    await out.finish(result.bytes.length);
    const back = await fsp.readFile(out.temporary);
    if (!back.equals(result.bytes)) {
      throw fileError("INTERNAL", output, "did not read back as written");
    }
    // The written model must parse as a model (and every TensorProto in it decode).
    decodeModel(back);
    if (opts.signal?.aborted) throw new Interrupted();
    await out.commit(opts.force ?? false);
    out = undefined;
  } finally {
    if (out) await out.abort();
  }
  const tensors = result.tensors.map((t): TensorReport => ({
    name: t.name, shape: [...t.from.shape], from: t.from.dtype.name, to: t.to.dtype.name, converted: true,
    bytesIn: t.from.bytes().length, bytesOut: t.to.bytes().length, stats: measureConversion(t.from, t.to),
  }));
  return {
    input, output, inputFormat: "onnx", outputFormat: "onnx", to: to.name, saturate: opts.saturate ?? true, tensors,
    bytesIn: bytes.length, bytesOut: result.bytes.length, seconds: (performance.now() - started) / 1000, workers: 0,
    mode: result.mode, kept: result.kept, castsInserted: result.castsInserted, opsetBefore: result.opsetBefore, opsetAfter: result.opsetAfter,
  };
}
