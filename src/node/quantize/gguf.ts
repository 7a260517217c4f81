/**
 * `quantizeGgufFile(IN.gguf, OUT.gguf, options)`: a GGUF model quantized as llama_model_quantize
 * (llama-quantize) writes it, byte for byte: the plan of src/io/gguf/quantize-plan.ts carried out
 * tensor by tensor, rows in bands (memory: a band, never a tensor), each band read, checked as
 * llama.cpp's loader checks it (ggml_validate_row_data), converted to float32 (dequantized for
 * block types, with --allow-requantize), quantized by src/ggml/quantize (bit for bit
 * ggml_quantize_chunk) and checked again. OUT is written under a hidden temporary name, read back
 * (header through the GGUF reader, every byte through its digest) and only then renamed.
 *
 * The same job writes `convert IN --to TYPE -o OUT.gguf` (planFromTensors: every 2-D float
 * tensor of any file convert reads in TYPE).
 */
import { TensorcastError } from "../../index.js";
import { availableParallelism } from "node:os";
import { ggmlRowBytes, type GgmlType } from "../../ggml/types.js";
import type { GgufModel, GgufModelTensor } from "../../io/gguf/split.js";
import { readGgufBlocks } from "../../io/gguf/records.js";
import { planGgufQuantization, type GgufQuantizeOptions, type GgufQuantizePlan, type PlannedTensor } from "../../io/gguf/quantize-plan.js";
import type { GgufMetadataEntry } from "../../io/gguf/values.js";
import { layoutGguf, writeGguf, type GgufTensorToWrite } from "../../io/gguf/write.js";
import { TaskPool } from "../convert/pool.js";
import { splitByGgufSplit, splitMetadata, splitOutputPaths, type GgufSplitLimits } from "../../io/gguf/split-write.js";
import { Interrupted } from "../convert/schedule.js";
import { AtomicOutput, checkOutput, fileError, removeStaleTemporaries } from "../io/file.js";
import { openGguf } from "../io/gguf.js";
import { commitAll, verifyWrittenGguf } from "../io/gguf-output.js";
import { checkRows, quantizeBand } from "./band.js";

/**
 * Float32 values per band: 1 Mi of them (4 MiB as float32), whole rows, at least one row. Small
 * enough that a tensor of a 7B model is a dozen bands or more, to keep every worker busy; the
 * bands in flight (twice the workers, each its read bytes, float32 values and output) stay a few
 * tens of MiB.
 */
const BAND_VALUES = 1024 * 1024;

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

export interface QuantizeGgufFileOptions extends GgufQuantizeOptions, GgufJobOptions {
  /** Replace an existing OUT. */
  readonly force?: boolean;
  /** Stops the job between bands (Interrupted). */
  readonly signal?: AbortSignal;
  /** Called with the values done and the total. */
  readonly onProgress?: (done: number, total: number) => void;
  /** Importance weights by tensor name: ne[0] per expert (ne[0] * ne[2] values). */
  readonly imatrixData?: ReadonlyMap<string, Float32Array>;
  /** More key-value pairs set after general.file_type (llama-quantize's quantize.imatrix.*). */
  readonly extraMetadata?: readonly GgufMetadataEntry[];
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

/** A source of one tensor's rows: its GGML type and the bytes of rows [first, first + count). */
export interface RowSource {
  readonly type: GgmlType;
  read(firstRow: number, rows: number): Promise<Uint8Array>;
}

/** One band of a tensor: its rows [first, first + rows), and the expert it belongs to. */
interface Band {
  readonly p: PlannedTensor;
  readonly src: RowSource;
  readonly first: number;
  readonly rows: number;
  readonly imatrix?: Float32Array;
}

/** The bands of `p`, in order: `bandValues` values or fewer, whole rows, never two experts in one (each has its own importance weights). */
function* bandsOf(p: PlannedTensor, src: RowSource, imatrix: Float32Array | undefined, bandValues: number): Generator<Band> {
  const ncols = p.dims[0];
  const rowsPerExpert = p.dims[1] ?? 1;
  const rows = p.dims.slice(1).reduce((a, b) => a * b, 1);
  const band = Math.max(1, Math.floor(bandValues / Math.max(1, ncols)));
  for (let r = 0; r < rows; ) {
    let n = Math.min(band, rows - r);
    if (p.quantize) n = Math.min(n, rowsPerExpert - (r % rowsPerExpert));
    const expert = Math.floor(r / rowsPerExpert);
    yield { p, src, first: r, rows: n, imatrix: p.quantize ? imatrix?.subarray(expert * ncols, (expert + 1) * ncols) : undefined };
    r += n;
  }
}

/** Bytes a worker can take by transfer: the view's own buffer, whole (a copy otherwise). */
function owned(b: Uint8Array): Uint8Array {
  return b.byteOffset === 0 && b.byteLength === b.buffer.byteLength && !(b.buffer instanceof SharedArrayBuffer) ? b : b.slice();
}

/** A band's output bytes: copied (checked) when its tensor keeps its type, else quantized by `pool`. */
async function bandBytes(b: Band, pool: TaskPool): Promise<Uint8Array> {
  const { p } = b;
  const ncols = p.dims[0];
  const bytes = await b.src.read(b.first, b.rows);
  const firstBlock = (b.first * ncols) / p.from.blockSize;
  if (!p.quantize) {
    checkRows(`tensor ${JSON.stringify(p.name)}`, p.from, bytes, firstBlock);
    return bytes;
  }
  if (pool.size === 0) return quantizeBand(p.name, p.from, p.to, bytes, ncols, firstBlock, b.imatrix);
  const result = await pool.run({ op: "quantize", raw: owned(bytes), from: p.from.name, to: p.to.name, ncols, firstBlock, tensor: p.name, imatrix: b.imatrix?.slice() });
  if (result.op !== "quantize") throw new TensorcastError("INTERNAL", `a quantize task came back as ${result.op}`);
  return result.bytes;
}

/**
 * Every band of a job in order, `inFlight` of them read and quantizing ahead of the one the writer
 * waits for, across tensor boundaries, so workers do not idle at the end of each tensor. Memory:
 * those bands, never a tensor.
 */
class BandStream {
  private readonly ahead: Promise<Uint8Array>[] = [];
  constructor(private readonly bands: Iterator<Band>, private readonly pool: TaskPool, private readonly inFlight: number, private readonly signal: AbortSignal | undefined) {}

  /** The next band's bytes. */
  async next(): Promise<Uint8Array> {
    if (this.signal?.aborted) throw new Interrupted();
    this.fill();
    const next = this.ahead.shift();
    if (!next) throw new TensorcastError("INTERNAL", "the GGUF quantization job ran out of bands");
    const bytes = await next;
    this.fill();
    return bytes;
  }

  private fill(): void {
    while (this.ahead.length < this.inFlight) {
      const b = this.bands.next();
      if (b.done) return;
      const bytes = bandBytes(b.value, this.pool);
      // Awaited in order by next(); a band that fails while earlier ones are awaited is no unhandled rejection.
      bytes.catch(() => undefined);
      this.ahead.push(bytes);
    }
  }
}

/** The bands of `p` from the job's stream. */
async function* tensorBands(p: PlannedTensor, stream: BandStream, done: ((values: number) => void) | undefined): AsyncGenerator<Uint8Array> {
  const ncols = p.dims[0];
  const rows = p.dims.slice(1).reduce((a, b) => a * b, 1);
  for (let r = 0; r < rows; ) {
    const bytes = await stream.next();
    const n = (bytes.length / ggmlRowBytes(p.quantize ? p.to : p.from, ncols)!);
    yield bytes;
    done?.(n * ncols);
    r += n;
  }
}

/** A GGUF tensor's rows, read through the core reader. */
function ggufRows(model: GgufModel, t: GgufModelTensor): RowSource {
  const blocksPerRow = t.dims[0] / t.ggmlType.blockSize;
  return { type: t.ggmlType, read: (first, rows) => readGgufBlocks(model, t, first * blocksPerRow, rows * blocksPerRow) };
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
  const imatrixOf = (p: PlannedTensor): Float32Array | undefined => {
    // A token embedding's entry of the wrong size is ignored, as llama.cpp ignores it.
    const w = opts.imatrixData?.get(p.name);
    return w !== undefined && w.length === p.dims[0] * (p.dims[2] ?? 1) ? w : undefined;
  };
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
        order.push(...bandsOf(p, src, imatrixOf(p), bandValues));
      }
    }
    const stream = new BandStream(order.values(), pool, Math.max(1, 2 * pool.size), opts.signal);
    for (let no = 0; no < parts.length; no++) {
      const path = paths[no]!;
      const mine = parts[no]!.map((i) => tensors[i]!);
      const partMetadata = splitMetadata(metadata, no, parts.length, tensors.length);
      const specs = mine.map((p) => ({ name: p.name, ggmlType: p.to, dims: p.dims }));
      const layout = layoutGguf(partMetadata, specs);
      if (splitNames) await removeStaleTemporaries(path);
      const out = await AtomicOutput.create(path, { digests: true });
      outs.push(out);
      const toWrite: GgufTensorToWrite[] = mine.map((p, i) => ({ ...specs[i], data: tensorBands(p, stream, progress) }));
      await writeGguf(out, partMetadata, toWrite);
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
    const plan: GgufQuantizePlan = planGgufQuantization(model.metadata, model.tensors, opts);
    checkImatrix(plan, opts.imatrixData);
    const metadata = opts.extraMetadata && opts.extraMetadata.length > 0
      ? [...plan.metadata.filter((m) => !opts.extraMetadata!.some((x) => x.key === m.key)), ...opts.extraMetadata]
      : plan.metadata;
    const byName = new Map(model.tensors.map((t) => [t.name, t]));
    const sources = new Map(plan.tensors.map((p) => [p.name, ggufRows(model, byName.get(p.name)!)]));
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

/**
 * The importance weights of the tensors quantized, as llama_model_quantize_impl checks them:
 * finite, and ne[0] * ne[2] of them where a tensor has an entry (the token embedding's wrong
 * size is only ignored); a tensor that needs them (IQ1, IQ2, IQ3_XXS, a Q2_K_S Q2_K) must have an entry.
 */
export function checkImatrix(plan: GgufQuantizePlan, data: ReadonlyMap<string, Float32Array> | undefined): void {
  if (data === undefined) return;
  for (const [name, w] of data) {
    const i = w.findIndex((v) => !Number.isFinite(v));
    if (i >= 0) throw new TensorcastError("INVALID_DATA", `the importance matrix's entry ${name} holds ${w[i]} at ${i}; llama.cpp refuses non-finite weights`);
  }
  for (const p of plan.tensors) {
    if (!p.quantize) continue;
    const w = data.get(p.name);
    const want = p.dims[0] * (p.dims[2] ?? 1);
    if (w !== undefined && w.length !== want && !(p.name === "token_embd.weight" || p.name === "per_layer_token_embd.weight")) {
      throw new TensorcastError("INVALID_DATA", `the importance matrix's entry for ${p.name} has ${w.length} weights, the tensor needs ${want} (ne[0] * ne[2]), as llama.cpp checks`);
    }
    if ((w === undefined || w.length !== want) && p.requiresImatrix) {
      throw new TensorcastError("INVALID_DATA", `the importance matrix has no weights for ${p.name}, which ${p.to.name} needs ("missing importance matrix for tensor in a very low-bit quantization", as llama.cpp says)`);
    }
  }
}
