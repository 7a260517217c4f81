/**
 * The band pipeline of a GGUF quantization job, for any byte source and any sink (no Node
 * built-ins): the plan of quantize-plan.ts carried out tensor by tensor, rows in bands (memory: the
 * bands in flight, never a tensor), each band read, checked, made float32 and quantized
 * (quantize-band.ts), and written through writeGguf as it comes. tensorcast/node's file jobs
 * (src/node/quantize/gguf.ts: temporary names, worker threads, split outputs, the read-back) and the
 * playground's GGUF panel (a page's File in, a FileSystemWritableFileStream or Blob parts out) both
 * run it, so the bytes are the same wherever it runs.
 */
import { TensorcastError } from "../../errors.js";
import { ggmlRowBytes, type GgmlType } from "../../ggml/types.js";
import { planGgufQuantization, type GgufQuantizeOptions, type GgufQuantizePlan, type PlannedTensor } from "./quantize-plan.js";
import { checkRows, quantizeBand } from "./quantize-band.js";
import { readGgufBlocks } from "./records.js";
import type { GgufModel, GgufModelTensor } from "./split.js";
import type { GgufMetadataEntry } from "./values.js";
import { layoutGguf, writeGguf, type GgufLayout, type GgufSink } from "./write.js";

/**
 * Float32 values per band: 1 Mi of them (4 MiB as float32), whole rows, at least one row. Small
 * enough that a tensor of a 7B model is a dozen bands or more, to keep every worker busy; the
 * bands in flight (twice the workers, each its read bytes, float32 values and output) stay a few
 * tens of MiB.
 */
export const BAND_VALUES = 1024 * 1024;

/** A source of one tensor's rows: its GGML type and the bytes of rows [first, first + count). */
export interface RowSource {
  readonly type: GgmlType;
  read(firstRow: number, rows: number): Promise<Uint8Array>;
}

/** One band of a tensor: its rows [first, first + rows), and the weights of the expert it belongs to. */
export interface Band {
  readonly p: PlannedTensor;
  readonly src: RowSource;
  readonly first: number;
  readonly rows: number;
  readonly imatrix?: Float32Array;
}

/**
 * Quantizes a band whose tensor changes type: `raw` is its `p.from` bytes, the answer its `p.to`
 * bytes, as quantizeBand makes them (on a worker, or in the calling thread).
 */
export type BandQuantizer = (b: Band, raw: Uint8Array, firstBlock: number) => Promise<Uint8Array>;

/** quantizeBand in the calling thread. */
export const quantizeHere: BandQuantizer = async (b, raw, firstBlock) => quantizeBand(b.p.name, b.p.from, b.p.to, raw, b.p.dims[0], firstBlock, b.imatrix);

/** The bands of `p`, in order: `bandValues` values or fewer, whole rows, never two experts in one (each has its own importance weights). */
export function* bandsOf(p: PlannedTensor, src: RowSource, imatrix: Float32Array | undefined, bandValues: number): Generator<Band> {
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

/** A band's output bytes: copied (checked) when its tensor keeps its type, else quantized by `quantize`. */
async function bandBytes(b: Band, quantize: BandQuantizer): Promise<Uint8Array> {
  const { p } = b;
  const bytes = await b.src.read(b.first, b.rows);
  const firstBlock = (b.first * p.dims[0]) / p.from.blockSize;
  if (!p.quantize) {
    checkRows(`tensor ${JSON.stringify(p.name)}`, p.from, bytes, firstBlock);
    return bytes;
  }
  return quantize(b, bytes, firstBlock);
}

/**
 * Every band of a job in order, `inFlight` of them read and quantizing ahead of the one the writer
 * waits for, across tensor boundaries, so workers do not idle at the end of each tensor. Memory:
 * those bands, never a tensor. `stop`, called before each band, throws to end the job there.
 */
export class BandStream {
  private readonly ahead: Promise<Uint8Array>[] = [];
  constructor(private readonly bands: Iterator<Band>, private readonly quantize: BandQuantizer, private readonly inFlight: number, private readonly stop?: () => void) {}

  /** The next band's bytes. */
  async next(): Promise<Uint8Array> {
    this.stop?.();
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
      const bytes = bandBytes(b.value, this.quantize);
      // Awaited in order by next(); a band that fails while earlier ones are awaited is no unhandled rejection.
      bytes.catch(() => undefined);
      this.ahead.push(bytes);
    }
  }
}

/** The bands of `p` from the job's stream; `done` is told the values of each. */
export async function* tensorBands(p: PlannedTensor, stream: BandStream, done: ((values: number) => void) | undefined): AsyncGenerator<Uint8Array> {
  const ncols = p.dims[0];
  const rows = p.dims.slice(1).reduce((a, b) => a * b, 1);
  for (let r = 0; r < rows; ) {
    const bytes = await stream.next();
    const n = bytes.length / ggmlRowBytes(p.quantize ? p.to : p.from, ncols)!;
    yield bytes;
    done?.(n * ncols);
    r += n;
  }
}

/** Writes one output file of a job to `sink`: `metadata`, then `tensors` (as planned) from `stream`, in order. */
export function writePlannedPart(sink: GgufSink, metadata: readonly GgufMetadataEntry[], tensors: readonly PlannedTensor[], stream: BandStream, done?: (values: number) => void): Promise<GgufLayout> {
  return writeGguf(sink, metadata, tensors.map((p) => ({ name: p.name, ggmlType: p.to, dims: p.dims, data: tensorBands(p, stream, done) })));
}

/** A GGUF tensor's rows, read through the core reader. */
export function ggufRows(model: GgufModel, t: GgufModelTensor): RowSource {
  const blocksPerRow = t.dims[0] / t.ggmlType.blockSize;
  return { type: t.ggmlType, read: (first, rows) => readGgufBlocks(model, t, first * blocksPerRow, rows * blocksPerRow) };
}

/** `p`'s importance weights in `data`: a token embedding's entry of the wrong size is ignored, as llama.cpp ignores it. */
export function imatrixOf(data: ReadonlyMap<string, Float32Array> | undefined, p: PlannedTensor): Float32Array | undefined {
  const w = data?.get(p.name);
  return w !== undefined && w.length === p.dims[0] * (p.dims[2] ?? 1) ? w : undefined;
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

export interface GgufModelJobOptions extends GgufQuantizeOptions {
  /** Importance weights by tensor name: ne[0] per expert (ne[0] * ne[2] values). */
  readonly imatrixData?: ReadonlyMap<string, Float32Array>;
  /** More key-value pairs set after general.file_type (llama-quantize's quantize.imatrix.*). */
  readonly extraMetadata?: readonly GgufMetadataEntry[];
}

/** What a model's quantization job writes: the plan, the output's metadata, and each tensor's rows by name. */
export interface GgufModelJob {
  readonly plan: GgufQuantizePlan;
  readonly metadata: readonly GgufMetadataEntry[];
  readonly sources: ReadonlyMap<string, RowSource>;
}

/**
 * The job of quantizing `model` as llama_model_quantize does with `opts`: planned, its importance
 * weights checked, its metadata (extraMetadata replacing the plan's pairs of the same key, last).
 * @throws TensorcastError as planGgufQuantization and checkImatrix.
 */
export function ggufModelJob(model: GgufModel, opts: GgufModelJobOptions): GgufModelJob {
  const plan = planGgufQuantization(model.metadata, model.tensors, opts);
  checkImatrix(plan, opts.imatrixData);
  const extra = opts.extraMetadata ?? [];
  const metadata = extra.length > 0 ? [...plan.metadata.filter((m) => !extra.some((x) => x.key === m.key)), ...extra] : plan.metadata;
  const byName = new Map(model.tensors.map((t) => [t.name, t]));
  const sources = new Map(plan.tensors.map((p) => [p.name, ggufRows(model, byName.get(p.name)!)]));
  return { plan, metadata, sources };
}

export interface QuantizeGgufModelOptions extends GgufModelJobOptions {
  /** Float32 values per band (whole rows, at least one; default BAND_VALUES). */
  readonly bandValues?: number;
  /** Who quantizes a band (default: the calling thread). */
  readonly quantize?: BandQuantizer;
  /** Bands read and quantizing ahead of the writer (default 1). */
  readonly inFlight?: number;
  /** Called before each band: what it throws ends the job there (a caller's cancel). */
  readonly stop?: () => void;
  /** Called with the values done and the total. */
  readonly onProgress?: (done: number, total: number) => void;
  /** Called with the job and its layout once planned, before any byte is written. */
  readonly onPlan?: (job: GgufModelJob, layout: GgufLayout) => void | Promise<void>;
}

/**
 * Quantizes `model` into one GGUF file written to `sink` as it is made, the bytes llama_model_quantize
 * writes with the same preset and options (the bytes of tensorcast/node's quantizeGgufFile unsplit).
 * Memory: the bands in flight. The sink gets each piece once, in order; a piece may be a view the
 * writer reuses (the padding) or reads again after the write (the header), so a sink that keeps a
 * piece past its write, or transfers it to another thread, copies it.
 * @throws TensorcastError as ggufModelJob; INVALID_DATA for a tensor whose data ggml_validate_row_data
 *         refuses; whatever the model's source or the sink throws.
 */
export function quantizeGgufModel(model: GgufModel, sink: GgufSink, opts: QuantizeGgufModelOptions): Promise<{ job: GgufModelJob; layout: GgufLayout }> {
  return runGgufJob(ggufModelJob(model, opts), sink, opts);
}

/**
 * Writes `job` (a GGUF model's, ggufModelJob; a Hugging Face folder's, hfQuantizeJob) to `sink` as
 * one GGUF file, band by band, as quantizeGgufModel does.
 * @throws TensorcastError INVALID_DATA for a tensor whose data ggml_validate_row_data refuses;
 *         whatever the job's sources or the sink throws.
 */
export async function runGgufJob(job: GgufModelJob, sink: GgufSink, opts: Omit<QuantizeGgufModelOptions, keyof GgufModelJobOptions> & Pick<GgufModelJobOptions, "imatrixData">): Promise<{ job: GgufModelJob; layout: GgufLayout }> {
  const { tensors } = job.plan;
  await opts.onPlan?.(job, layoutGguf(job.metadata, tensors.map((p) => ({ name: p.name, ggmlType: p.to, dims: p.dims }))));
  const bandValues = opts.bandValues ?? BAND_VALUES;
  const order: Band[] = [];
  for (const p of tensors) order.push(...bandsOf(p, job.sources.get(p.name)!, imatrixOf(opts.imatrixData, p), bandValues));
  const total = tensors.reduce((n, p) => n + p.dims.reduce((a, b) => a * b, 1), 0);
  let done = 0;
  const stream = new BandStream(order.values(), opts.quantize ?? quantizeHere, Math.max(1, opts.inFlight ?? 1), opts.stop);
  const layout = await writePlannedPart(sink, job.metadata, tensors, stream, (values) => {
    done += values;
    opts.onProgress?.(done, total);
  });
  return { job, layout };
}
