/**
 * `diffFiles(A, B)`: per-tensor differences between two files, matched by name (two files of one
 * tensor each are compared whatever their names): how many elements differ, the largest absolute
 * and relative error, and the largest error in units of the coarser type's ULP.
 */
import { availableParallelism } from "node:os";
import { dtype, type DTypeName } from "../../index.js";
import type { NpyOptions } from "../io/npy.js";
import { NameIndex } from "../../io/name-index.js";
import { openTensorSource } from "../io/checkpoint.js";
import { dequantizedView } from "../quantize/checkpoint.js";
import { hfNamedFor } from "../io/gguf-hf.js";

const FLOAT_TYPES = new Set(["float32", "float16", "bfloat16"]);
import type { FileFormat, FileTensor, TensorFile } from "../io/tensors.js";
import type { PytorchOptions } from "../io/pytorch.js";
import { emptyDiffStats, hasValues, mergeDiffStats, type DiffStats } from "./kernel.js";
import { TaskPool } from "./pool.js";
import { chunkElements, chunksOf, DEFAULT_CHUNK_BYTES, inTensor, runBounded, type Chunk } from "./schedule.js";
import { expectOptionsObject, expectPath } from "../args.js";

export interface DiffOptions {
  formatA?: FileFormat;
  formatB?: FileFormat;
  npy?: NpyOptions;
  /** A PyTorch checkpoint's reading options, for both files. */
  pytorch?: PytorchOptions;
  jobs?: number;
  chunkBytes?: number;
  signal?: AbortSignal;
  onProgress?: (done: number, total: number) => void;
}

export interface TensorDiff {
  name: string;
  /** The name in B, when it differs (two single-tensor files). */
  nameB?: string;
  dtypeA: DTypeName;
  dtypeB: DTypeName;
  /** The files' own arrays, not copies (a file can list millions of tensors). */
  shapeA: readonly number[];
  shapeB: readonly number[];
  /** Why no statistics: shapes differ, or a type without values. */
  problem?: string;
  stats?: DiffStats;
}

export interface DiffReport {
  a: string;
  b: string;
  tensors: TensorDiff[];
  onlyInA: string[];
  onlyInB: string[];
  /** Tensors whose values all agree. */
  identical: number;
}

const THREADS_FROM = 8 * 1024 * 1024;

function sameShape(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((d, i) => d === b[i]);
}

function pairs(a: TensorFile, b: TensorFile): { matched: [FileTensor, FileTensor][]; onlyA: string[]; onlyB: string[] } {
  if (a.tensors.length === 1 && b.tensors.length === 1) return { matched: [[a.tensors[0], b.tensors[0]]], onlyA: [], onlyB: [] };
  // A file can list millions of tensors: B's names in a NameIndex, not a Map, and no set of A's.
  // Names are unique in every file openTensorFile opens (safetensors keeps a repeated name's last
  // entry, ONNX refuses a repeated initializer name), so index j is B's tensor j.
  const names = new NameIndex(b.tensors.map((t) => t.name));
  const inA = new Uint8Array(names.names.length);
  const matched: [FileTensor, FileTensor][] = [];
  const onlyA: string[] = [];
  for (const t of a.tensors) {
    const j = names.find(t.name);
    if (j < 0) onlyA.push(t.name);
    else {
      matched.push([t, b.tensors[j]]);
      inA[j] = 1;
    }
  }
  return { matched, onlyA, onlyB: b.tensors.filter((t) => inA[names.find(t.name)] === 0).map((t) => t.name) };
}

/** Compares the tensors of `pathA` and `pathB`. */
export async function diffFiles(pathA: string, pathB: string, opts: DiffOptions = {}): Promise<DiffReport> {
  expectPath(pathA, "diffFiles' first path");
  expectPath(pathB, "diffFiles' second path");
  expectOptionsObject(opts, "diffFiles");
  const a = await openTensorSource(pathA, { format: opts.formatA, npy: opts.npy, pytorch: opts.pytorch });
  let b: TensorFile | undefined;
  let pool: TaskPool | undefined;
  try {
    b = await openTensorSource(pathB, { format: opts.formatB, npy: opts.npy, pytorch: opts.pytorch });
    // A GGUF model against a Hugging Face folder: matched through transformers' names and values.
    const left = hfNamedFor(a, b);
    b = hfNamedFor(b, a);
    // A quantized B (FP8 blocks, MXFP4 experts) is compared through its dequantized values, in A's type.
    const typesA = new Map(left.tensors.map((t) => [t.name, t.dtype] as const));
    b = dequantizedView(b, (name) => (FLOAT_TYPES.has(typesA.get(name)?.name ?? "") ? typesA.get(name)! : dtype("bfloat16"))).file;
    const { matched, onlyA, onlyB } = pairs(left, b);
    const rows: TensorDiff[] = [];
    const work: [FileTensor, FileTensor, DiffStats][] = [];
    for (const [ta, tb] of matched) {
      const row: TensorDiff = {
        name: ta.name, dtypeA: ta.dtype.name, dtypeB: tb.dtype.name, shapeA: ta.shape, shapeB: tb.shape,
      };
      if (tb.name !== ta.name) row.nameB = tb.name;
      if (!sameShape(ta.shape, tb.shape)) row.problem = "shapes differ";
      else if (!hasValues(ta.dtype) || !hasValues(tb.dtype)) row.problem = `${hasValues(ta.dtype) ? tb.dtype.name : ta.dtype.name} has no values to compare`;
      else {
        row.stats = emptyDiffStats();
        if (ta.size > 0) work.push([ta, tb, row.stats]);
      }
      rows.push(row);
    }
    const total = work.reduce((n, [ta, tb]) => n + ta.byteLength + tb.byteLength, 0);
    const jobs = opts.jobs ?? (total >= THREADS_FROM ? Math.min(2, availableParallelism()) : 0);
    pool = new TaskPool(jobs);
    const chunkBytes = opts.chunkBytes ?? DEFAULT_CHUNK_BYTES;
    const items = function* (): Generator<[FileTensor, FileTensor, DiffStats, Chunk]> {
      for (const [ta, tb, s] of work) {
        const wider = ta.dtype.bits >= tb.dtype.bits ? ta.dtype : tb.dtype;
        for (const c of chunksOf(ta.size, chunkElements(wider, chunkBytes))) yield [ta, tb, s, c];
      }
    };
    let done = 0;
    const active = pool;
    await runBounded(items(), Math.max(2, 2 * active.size), async ([ta, tb, s, c]) => {
      let ra: Uint8Array;
      let rb: Uint8Array;
      try {
        ra = await ta.read(c.start, c.count);
      } catch (e) {
        throw inTensor(e, pathA, ta.name);
      }
      try {
        rb = await tb.read(c.start, c.count);
      } catch (e) {
        throw inTensor(e, pathB, tb.name);
      }
      const n = ra.length + rb.length;
      const r = await active.run({ op: "diff", a: ra, aType: ta.dtype.name, b: rb, bType: tb.dtype.name, count: c.count });
      if (r.op !== "diff") throw new Error("internal: wrong task result");
      mergeDiffStats(s, r.stats);
      done += n;
      opts.onProgress?.(done, total);
    }, opts.signal);
    const identical = rows.filter((r) => r.stats && r.stats.differing === 0).length;
    return { a: pathA, b: pathB, tensors: rows, onlyInA: onlyA, onlyInB: onlyB, identical };
  } finally {
    if (pool) await pool.close();
    await a.close();
    if (b) await b.close();
  }
}
