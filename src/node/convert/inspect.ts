/**
 * `inspectFile(path)`: a file's tensors with their types, shapes and sizes, and (unless told not
 * to) value statistics computed by streaming every tensor through the worker pool.
 */
import { availableParallelism } from "node:os";
import { dtype, type DTypeName } from "../../index.js";
import type { NpyOptions } from "../io/npy.js";
import { openTensorSource } from "../io/checkpoint.js";
import { dequantizedView } from "../quantize/checkpoint.js";
import type { FileFormat, FileTensor } from "../io/tensors.js";
import type { PytorchOptions } from "../io/pytorch.js";
import type { GgmlStorage, GgufFileTensor, GgufTensorFile } from "../io/gguf.js";
import { summarizeGguf, type GgufSummary } from "../io/gguf-summary.js";
import { emptyValueStats, hasValues, mergeValueStats, type ValueStats } from "./kernel.js";
import { TaskPool } from "./pool.js";
import { storedBlocks } from "./write-plan.js";
import { chunkElements, chunksOf, DEFAULT_CHUNK_BYTES, inTensor, runBounded, type Chunk } from "./schedule.js";
import { expectOptionsObject, expectPath } from "../args.js";

export interface InspectOptions {
  format?: FileFormat;
  npy?: NpyOptions;
  /** A PyTorch checkpoint's reading options (the key of the dict holding the state dict). */
  pytorch?: PytorchOptions;
  /** Compute value statistics (default true): reads every byte. */
  stats?: boolean;
  jobs?: number;
  chunkBytes?: number;
  signal?: AbortSignal;
  onProgress?: (done: number, total: number) => void;
}

export interface TensorSummary {
  name: string;
  dtype: DTypeName;
  /** The file's own array, not a copy (a file can list millions of tensors). */
  shape: readonly number[];
  elements: number;
  bytes: number;
  /** For a quantized tensor shown as one: its scheme, block and stored parts (dtype and bytes are the dequantized bfloat16's). */
  quantized?: string;
  /** For a GGUF tensor: its GGML type, stored bytes and bits per weight (dtype and bytes are what it is read as). */
  ggml?: GgmlStorage;
  /** Absent when statistics were not asked for or the type has none (string, complex). */
  stats?: ValueStats & { mean: number | null };
}

export interface InspectReport {
  file: string;
  format: FileFormat;
  size: number;
  metadata?: Record<string, string>;
  /** For a GGUF model: its header and metadata, arrays as their first items. */
  gguf?: GgufSummary;
  tensors: TensorSummary[];
}

const THREADS_FROM = 8 * 1024 * 1024;

/** The statistics of a tensor without elements. */
const NO_VALUES: Readonly<ValueStats> = emptyValueStats();

/** Lists `path`'s tensors and, by default, their value statistics. */
export async function inspectFile(path: string, opts: InspectOptions = {}): Promise<InspectReport> {
  expectPath(path, "inspectFile's path");
  expectOptionsObject(opts, "inspectFile");
  // A quantized tensor (FP8 blocks, MXFP4 experts) is listed once, with its dequantized (bfloat16) values.
  const view = dequantizedView(await openTensorSource(path, { format: opts.format, npy: opts.npy, pytorch: opts.pytorch }), () => dtype("bfloat16"));
  const file = view.file;
  let pool: TaskPool | undefined;
  try {
    const wanted = opts.stats ?? true;
    // By tensor index, and only for tensors with elements: a header can list millions of empty ones.
    const stats = new Array<ValueStats | undefined>(file.tensors.length).fill(undefined);
    const measured: number[] = [];
    for (let i = 0; i < file.tensors.length; i++) {
      const t = file.tensors[i];
      if (wanted && hasValues(t.dtype) && t.size > 0) {
        stats[i] = emptyValueStats();
        measured.push(i);
      }
    }
    if (measured.length > 0) {
      const total = measured.reduce((n, i) => n + file.tensors[i].byteLength, 0);
      const jobs = opts.jobs ?? (total >= THREADS_FROM ? Math.min(2, availableParallelism()) : 0);
      pool = new TaskPool(jobs);
      const chunkBytes = opts.chunkBytes ?? DEFAULT_CHUNK_BYTES;
      let done = 0;
      const items = function* (): Generator<[FileTensor, ValueStats, Chunk]> {
        for (const i of measured) {
          const t = file.tensors[i];
          for (const c of chunksOf(t.size, chunkElements(t.dtype, chunkBytes))) yield [t, stats[i]!, c];
        }
      };
      const active = pool;
      await runBounded(items(), Math.max(2, 2 * active.size), async ([t, s, c]) => {
        try {
          const blocks = active.size > 0 ? await storedBlocks(t, c.start, c.count) : undefined;
          const raw = blocks ? blocks.raw : await t.read(c.start, c.count);
          const n = blocks ? c.count * (t.dtype.bits / 8) : raw.length;
          const r = await active.run({ op: "values", raw, dtype: t.dtype.name, count: c.count, ggml: blocks?.ggml });
          if (r.op !== "values") throw new Error("internal: wrong task result");
          mergeValueStats(s, r.stats);
          done += n;
          opts.onProgress?.(done, total);
        } catch (e) {
          throw inTensor(e, path, t.name);
        }
      }, opts.signal);
    }
    return {
      file: path, format: file.format, size: file.size,
      metadata: file.metadata ? { ...file.metadata } : undefined,
      gguf: file.format === "gguf" && (file as GgufTensorFile).model ? summarizeGguf((file as GgufTensorFile).model) : undefined,
      tensors: file.tensors.map((t, i) => ({
        name: t.name, dtype: t.dtype.name, shape: t.shape, elements: t.size, bytes: t.byteLength, quantized: view.quantized.get(t.name),
        ggml: (t as Partial<GgufFileTensor>).ggml,
        stats: wanted && hasValues(t.dtype) ? withMean(stats[i] ?? NO_VALUES) : undefined,
      })),
    };
  } finally {
    if (pool) await pool.close();
    await file.close();
  }
}

/**
 * `s` and its mean, spelled out: an object spread ({ ...s, mean }) made a slow-mode object three
 * times the size, which a million tensors notice.
 */
function withMean(s: Readonly<ValueStats>): ValueStats & { mean: number | null } {
  return {
    count: s.count, min: s.min, max: s.max, sum: s.sum, finite: s.finite, nan: s.nan, inf: s.inf,
    mean: s.finite > 0 ? s.sum / s.finite : null,
  };
}
