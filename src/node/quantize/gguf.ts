/**
 * `quantizeGgufFile(IN.gguf, OUT.gguf, options)`: a GGUF model quantized as llama_model_quantize
 * (llama-quantize) writes it, byte for byte: the plan of src/io/gguf/quantize-plan.ts carried out
 * tensor by tensor, rows in bands (memory: a band, never a tensor), each band read, checked as
 * llama.cpp's loader checks it (ggml_validate_row_data), converted to float32 (dequantized for
 * block types, with --allow-requantize), quantized by src/ggml/quantize (bit for bit
 * ggml_quantize_chunk) and checked again: the core's band pipeline (src/io/gguf/quantize-job.ts, which
 * the playground runs on a page's File too), here with worker threads. OUT is written under a hidden
 * temporary name, read back (header through the GGUF reader, every byte through its digest) and only
 * then renamed.
 *
 * The same job writes `convert IN --to TYPE -o OUT.gguf` (planFromTensors: every 2-D float
 * tensor of any file convert reads in TYPE).
 */
import { TensorcastError } from "../../index.js";
import { availableParallelism } from "node:os";
import type { GgufModelTensor } from "../../io/gguf/split.js";
import type { PlannedTensor } from "../../io/gguf/quantize-plan.js";
import {
  BAND_VALUES, BandStream, bandsOf, ggufModelJob, imatrixOf, quantizeHere, writePlannedPart, type Band, type BandQuantizer,
  type GgufModelJobOptions, type RowSource,
} from "../../io/gguf/quantize-job.js";
import type { GgufMetadataEntry } from "../../io/gguf/values.js";
import { layoutGguf } from "../../io/gguf/write.js";
import { TaskPool } from "../convert/pool.js";
import { splitByGgufSplit, splitMetadata, splitOutputPaths, type GgufSplitLimits } from "../../io/gguf/split-write.js";
import { Interrupted } from "../convert/schedule.js";
import { AtomicOutput, checkOutput, fileError, removeStaleTemporaries } from "../io/file.js";
import { openGguf } from "../io/gguf.js";
import { commitAll, verifyWrittenGguf } from "../io/gguf-output.js";

export { checkImatrix, type RowSource } from "../../io/gguf/quantize-job.js";

/** Options of the band pipeline: how it is run, not what it writes (the bytes are the same). */
export interface GgufJobOptions {
  /**
   * Worker threads quantizing bands (0: the calling thread; default: one per core for more than a
   * band of values to quantize, else none).
   */
  readonly jobs?: number;
  /** Float32 values per band (whole rows, at least one; default 1 Mi): tests split tensors with small ones. */
  readonly bandValues?: number;
}

export interface QuantizeGgufFileOptions extends GgufModelJobOptions, GgufJobOptions {
  /** Replace an existing OUT. */
  readonly force?: boolean;
  /** Stops the job between bands (Interrupted). */
  readonly signal?: AbortSignal;
  /** Called with the values done and the total. */
  readonly onProgress?: (done: number, total: number) => void;
  /** The output split by llama-gguf-split's rule (--split-max-size / --split-max-tensors). */
  readonly split?: GgufSplitLimits;
}

export interface QuantizeGgufReport {
  readonly input: string;
  readonly output: string;
  /** The files written: OUT, or the parts of a split model. */
  readonly files: readonly string[];
  readonly preset: string;
  readonly fileType: number;
  readonly tensors: readonly {
    readonly name: string;
    readonly shape: readonly number[];
    readonly from: string;
    readonly to: string;
    /** The type the preset chose before the rows made it fall back. */
    readonly fallbackFrom?: string;
    readonly bytes: number;
  }[];
  readonly fallbacks: number;
  readonly bytesIn: number;
  readonly bytesOut: number;
  readonly seconds: number;
}

/** Bytes a worker can take by transfer: the view's own buffer, whole (a copy otherwise). */
function owned(b: Uint8Array): Uint8Array {
  return b.byteOffset === 0 && b.byteLength === b.buffer.byteLength && !(b.buffer instanceof SharedArrayBuffer) ? b : b.slice();
}

/** Bands quantized by `pool`'s worker threads (quantize-band.ts there). */
function onPool(pool: TaskPool): BandQuantizer {
  return async (b: Band, raw: Uint8Array, firstBlock: number) => {
    const { p } = b;
    const result = await pool.run({ op: "quantize", raw: owned(raw), from: p.from.name, to: p.to.name, ncols: p.dims[0], firstBlock, tensor: p.name, imatrix: b.imatrix?.slice() });
    if (result.op !== "quantize") throw new TensorcastError("INTERNAL", `a quantize task came back as ${result.op}`);
    return result.bytes;
  };
}

/** What writePlannedGguf wrote: the bytes, and the files (OUT, or a split model's parts). */
export interface PlannedOutput {
  readonly bytes: number;
  readonly files: readonly string[];
}

/**
 * Writes the output of `plan` to `output` (temporary name, read back, renamed): the tensors'
 * bytes from `sources` (by name). A split model instead when `opts.split` cuts it in more than one
 * part (llama-gguf-split's rule over the output sizes) or `inputParts` gives the tensors of each part
 * (as indices: --keep-split, whose output is named by parts even when there is one):
 * OUT-0000K-of-0000N.gguf (OUT without .gguf), the metadata and the split.* keys in the first part,
 * the split.* keys alone in the others (split-write.ts), every part read back before any is renamed.
 */
export async function writePlannedGguf(
  output: string, metadata: readonly GgufMetadataEntry[], tensors: readonly PlannedTensor[], sources: ReadonlyMap<string, RowSource>,
  opts: GgufJobOptions & { force?: boolean; signal?: AbortSignal; onProgress?: (done: number, total: number) => void; imatrixData?: ReadonlyMap<string, Float32Array>; split?: GgufSplitLimits },
  inputParts?: readonly (readonly number[])[],
): Promise<PlannedOutput> {
  const parts = inputParts
    ?? (opts.split ? splitByGgufSplit(layoutGguf([], tensors.map((p) => ({ name: p.name, ggmlType: p.to, dims: p.dims }))).byteLengths, opts.split) : [tensors.map((_, i) => i)]);
  const splitNames = inputParts !== undefined || parts.length > 1;
  const total = tensors.reduce((n, p) => n + p.dims.reduce((a, b) => a * b, 1), 0);
  let done = 0;
  const progress = (values: number): void => {
    done += values;
    opts.onProgress?.(done, total);
  };
  const quantized = tensors.reduce((n, p) => n + (p.quantize ? p.dims.reduce((a, b) => a * b, 1) : 0), 0);
  const bandValues = opts.bandValues ?? BAND_VALUES;
  const paths = splitNames ? splitOutputPaths(output, parts.length, true) : [output];
  if (splitNames) for (const path of paths) await checkOutput(path, { force: opts.force === true });
  const outs: AtomicOutput[] = [];
  let bytes = 0;
  const pool = new TaskPool(opts.jobs ?? (quantized > bandValues ? availableParallelism() : 0));
  try {
    // Every band of every part in the order they are written: the stream reads and quantizes ahead across tensors and parts.
    const order: Band[] = [];
    for (const part of parts) {
      for (const i of part) {
        const p = tensors[i]!;
        const src = sources.get(p.name);
        if (!src) throw fileError("INTERNAL", output, `no source for tensor ${p.name}`);
        order.push(...bandsOf(p, src, imatrixOf(opts.imatrixData, p), bandValues));
      }
    }
    const signal = opts.signal;
    const stream = new BandStream(order.values(), pool.size === 0 ? quantizeHere : onPool(pool), Math.max(1, 2 * pool.size), () => {
      if (signal?.aborted) throw new Interrupted();
    });
    for (let no = 0; no < parts.length; no++) {
      const path = paths[no]!;
      const mine = parts[no]!.map((i) => tensors[i]!);
      const partMetadata = splitMetadata(metadata, no, parts.length, tensors.length);
      const specs = mine.map((p) => ({ name: p.name, ggmlType: p.to, dims: p.dims }));
      const layout = layoutGguf(partMetadata, specs);
      if (splitNames) await removeStaleTemporaries(path);
      const out = await AtomicOutput.create(path, { digests: true });
      outs.push(out);
      await writePlannedPart(out, partMetadata, mine, stream, progress);
      await out.finish(layout.size);
      await verifyWrittenGguf(out, path, partMetadata, specs, layout.offsets, layout.size);
      bytes += layout.size;
    }
    await commitAll(outs, opts.force === true);
  } finally {
    for (const out of outs) await out.abort();
    await pool.close();
  }
  return { bytes, files: paths };
}

/** What a quantization job reports: each tensor's types and bytes, the totals, the files written. */
export function quantizeReport(
  input: string, output: string, preset: string, fileType: number, planned: readonly PlannedTensor[], bytesIn: number, written: PlannedOutput, started: number,
): QuantizeGgufReport {
  const lengths = layoutGguf([], planned.map((p) => ({ name: p.name, ggmlType: p.to, dims: p.dims }))).byteLengths;
  return {
    input, output, files: written.files, preset, fileType, fallbacks: planned.filter((p) => p.fallbackFrom).length,
    tensors: planned.map((p, i) => ({
      name: p.name, shape: p.dims.slice().reverse(), from: p.from.name, to: p.to.name, bytes: lengths[i]!,
      ...(p.fallbackFrom ? { fallbackFrom: p.fallbackFrom.name } : {}),
    })),
    bytesIn, bytesOut: written.bytes, seconds: (performance.now() - started) / 1000,
  };
}

/**
 * Quantizes the GGUF model at `input` (a split model's parts read as one) into `output` as
 * llama_model_quantize does with the same preset and options.
 * @throws TensorcastError as planGgufQuantization; INVALID_DATA for a tensor whose data
 *         ggml_validate_row_data refuses (NaN or Inf in the input, or a scale that overflows
 *         float16 when quantized) or a GGUF file llama.cpp would not read; IO_ERROR from the file system.
 */
export async function quantizeGgufFile(input: string, output: string, opts: QuantizeGgufFileOptions): Promise<QuantizeGgufReport> {
  const started = performance.now();
  await checkOutput(output, { input, force: opts.force === true });
  const file = await openGguf(input);
  try {
    const model = file.model;
    const { plan, metadata, sources } = ggufModelJob(model, opts);
    const byName = new Map(model.tensors.map((t) => [t.name, t]));
    await removeStaleTemporaries(output);
    const written = await writePlannedGguf(output, metadata, plan.tensors, sources, opts, inputParts(plan.tensors, byName, opts));
    return quantizeReport(input, output, plan.preset.name, plan.fileType, plan.tensors, file.size, written, started);
  } finally {
    await file.close();
  }
}

/**
 * With keepSplit, the input's parts (llama_model_quantize's keep_split: a tensor goes in the part
 * its input part has, the count the highest one); undefined otherwise.
 */
function inputParts(tensors: readonly PlannedTensor[], input: ReadonlyMap<string, GgufModelTensor>, opts: QuantizeGgufFileOptions): number[][] | undefined {
  if (opts.keepSplit && opts.split) throw new TensorcastError("INVALID_ATTRIBUTE", "--keep-split keeps the input's parts; it does not go with --split-max-size or --split-max-tensors");
  if (!opts.keepSplit) return undefined;
  const of = tensors.map((p) => input.get(p.name)!.split);
  const parts: number[][] = Array.from({ length: Math.max(0, ...of) + 1 }, () => []);
  of.forEach((k, i) => parts[k]!.push(i));
  return parts;
}
