/**
 * `inspectFile(path)`: a file's tensors with their types, shapes and sizes, and (unless told not
 * to) value statistics computed by streaming every tensor through the worker pool.
 */
import { availableParallelism } from "node:os";
import type { DTypeName } from "../../index.js";
import type { NpyOptions } from "../io/npy.js";
import { openTensorFile } from "../io/reader.js";
import type { FileFormat, FileTensor } from "../io/tensors.js";
import { emptyValueStats, hasValues, mergeValueStats, type ValueStats } from "./kernel.js";
import { TaskPool } from "./pool.js";
import { chunkElements, chunksOf, DEFAULT_CHUNK_BYTES, inTensor, runBounded, type Chunk } from "./schedule.js";

export interface InspectOptions {
  format?: FileFormat;
  npy?: NpyOptions;
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
  shape: number[];
  elements: number;
  bytes: number;
  /** Absent when statistics were not asked for or the type has none (string, complex). */
  stats?: ValueStats & { mean: number | null };
}

export interface InspectReport {
  file: string;
  format: FileFormat;
  size: number;
  metadata?: Record<string, string>;
  tensors: TensorSummary[];
}

const THREADS_FROM = 8 * 1024 * 1024;

/** Lists `path`'s tensors and, by default, their value statistics. */
export async function inspectFile(path: string, opts: InspectOptions = {}): Promise<InspectReport> {
  const file = await openTensorFile(path, { format: opts.format, npy: opts.npy });
  let pool: TaskPool | undefined;
  try {
    const wanted = opts.stats ?? true;
    const measured = wanted ? file.tensors.filter((t) => hasValues(t.dtype)) : [];
    const stats = new Map<FileTensor, ValueStats>(measured.map((t) => [t, emptyValueStats()]));
    if (measured.length > 0) {
      const total = measured.reduce((n, t) => n + t.byteLength, 0);
      const jobs = opts.jobs ?? (total >= THREADS_FROM ? Math.min(2, availableParallelism()) : 0);
      pool = new TaskPool(jobs);
      const chunkBytes = opts.chunkBytes ?? DEFAULT_CHUNK_BYTES;
      let done = 0;
      const items = function* (): Generator<[FileTensor, Chunk]> {
        for (const t of measured) for (const c of chunksOf(t.size, chunkElements(t.dtype, chunkBytes))) yield [t, c];
      };
      const active = pool;
      await runBounded(items(), Math.max(2, 2 * jobs), async ([t, c]) => {
        try {
          const raw = await t.read(c.start, c.count);
          const n = raw.length;
          const r = await active.run({ op: "values", raw, dtype: t.dtype.name, count: c.count });
          if (r.op !== "values") throw new Error("internal: wrong task result");
          mergeValueStats(stats.get(t)!, r.stats);
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
      tensors: file.tensors.map((t) => {
        const s = stats.get(t);
        return {
          name: t.name, dtype: t.dtype.name, shape: [...t.shape], elements: t.size, bytes: t.byteLength,
          stats: s ? { ...s, mean: s.finite > 0 ? s.sum / s.finite : null } : undefined,
        };
      }),
    };
  } finally {
    if (pool) await pool.close();
    await file.close();
  }
}
