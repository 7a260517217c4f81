/**
 * Sharded checkpoints (io/checkpoint.ts): `convertCheckpoint(IN, OUTDIR, { to })` converts every
 * shard with convertFile's own pipeline (the same worker threads, chunks, verification), one shard
 * after another on one shared pool, so memory stays bounded by the chunks in flight whatever the
 * number and size of the shards.
 *
 * Whole folder: the output is built in a hidden temporary folder beside OUTDIR
 * (`.OUTDIR.tensorcast-<pid>-<random>.tmp`): the shards, under their input names (a Hugging Face
 * shard's name carries no type), the folder's other regular files copied (config.json's torch_dtype
 * set to the new type when it applies: checkpoint-config.ts), and the index with the
 * exact total_size. The index is read back with every shard's header, then the folder is renamed to
 * OUTDIR: an interrupted run leaves no OUTDIR.
 *
 * A folder whose weights are one file without an index (io/checkpoint.ts) is the one-shard case:
 * OUTDIR gets that one file under its name, its other files, and no index.
 *
 * `maxShardSize`: the output laid out anew, as save_pretrained(max_shard_size=) would write the
 * converted tensors (io/shard-split.ts): numbered shards and an index, or one file and no index
 * when everything fits, from either layout of the input. Each output shard is converted from a view
 * of the input's tensors (CheckpointShards), through the same pipeline.
 *
 * `shard: { index: K, count: N }`: only slice K of N (shard i of the sorted shard list is in slice
 * i mod N, K from 0 as Kubernetes' JOB_COMPLETION_INDEX counts), written straight into OUTDIR,
 * which N processes share: each shard file appears atomically, slice 0 also copies the other
 * files, and no index is written; `indexCheckpoint(OUTDIR, { from: IN })` writes it once every
 * slice is done.
 */
import { constants, promises as fsp } from "node:fs";
import { dirname, join } from "node:path";
import { dtype, TensorcastError, type DTypeName } from "../../index.js";
import {
  checkCheckpoint, CheckpointShards, DEFAULT_INDEX_NAME, encodeIndex, listedTensors, listFolder, readCheckpoint, shardSource, type Checkpoint,
} from "../io/checkpoint.js";
import { saveFileOrder } from "../io/pytorch.js";
import { splitShards, stemOf, type PlannedShard, type ShardItem } from "../io/shard-split.js";
import {
  AtomicOutput, checkOutput, fileError, kindOf, lstatOrNothing, RandomAccessFile, removeStaleTemporaries, sameFile, systemError, temporaryPath,
} from "../io/file.js";
import { checkpointFilesOf, type InputFiles } from "../io/input-files.js";
import { forgetAtExit, removeAtExit } from "../io/exit-cleanup.js";
import { dataRuns } from "../io/holes.js";
import { openTensorFile } from "../io/reader.js";
import { rawByteLength, type TensorFile } from "../io/tensors.js";
import { checkTarget, convertFileOn, convertOpenFile, defaultJobs, inThreadOnly, selectTensors, type ConvertOptions, type ConvertReport } from "./convert.js";
import { CONFIG_NAME, retypedConfig, type ConfigReport } from "./checkpoint-config.js";
import { TaskPool } from "./pool.js";
import { Interrupted } from "./schedule.js";
import { expectOptionsObject, expectPath, expectStrings } from "../args.js";
import { describe, expectInteger, expectObject } from "../../args.js";

/** Slice `index` (from 0) of `count`. */
export interface ShardSlice {
  readonly index: number;
  readonly count: number;
}

export interface CheckpointConvertOptions extends ConvertOptions {
  /** Convert only this slice of the shards, into a shared OUTDIR, and write no index. */
  shard?: ShardSlice;
  /**
   * Lay the output out anew with at most this many bytes of tensor data per shard (save_pretrained's
   * max_shard_size; parseShardSize reads its spellings); default: the input's layout.
   */
  maxShardSize?: number;
}

export interface CheckpointReport {
  input: string;
  output: string;
  /** The index's name (the input's), or undefined when the output has none: its weights are one file. */
  indexName?: string;
  /** The weights files written, in order. */
  files: string[];
  to: DTypeName;
  saturate: boolean;
  slice?: ShardSlice;
  /** One report per weights file written, in order. */
  shards: ConvertReport[];
  /** The folder's other files, copied as they are (config.json with its data-type keys retyped, see `config`). */
  copied: string[];
  /** What happened to config.json's torch_dtype / dtype keys, when it has some naming another type than `to`. */
  config?: ConfigReport;
  /** What the folder holds that was left out, and why. */
  skipped: { name: string; reason: string }[];
  /** The index's total_size: the bytes of every tensor's data (absent for a slice). */
  totalSize?: number;
  bytesIn: number;
  bytesOut: number;
  seconds: number;
  workers: number;
}

const COPY_CHUNK = 4 * 1024 * 1024;
const MAX_SLICES = 1_000_000;

/**
 * Parses `--shard K/N`: K from 0 to N - 1 (0-based like JOB_COMPLETION_INDEX), N from 1.
 * @throws TensorcastError INVALID_ATTRIBUTE naming the text and what is accepted.
 * @example parseShardSlice("2/3") // { index: 2, count: 3 }
 */
export function parseShardSlice(text: string): ShardSlice {
  if (typeof text !== "string") throw new TensorcastError("INVALID_ATTRIBUTE", `parseShardSlice takes a string such as "0/3", got ${describe(text)}`);
  const m = /^(\d{1,7})\/(\d{1,7})$/.exec(text.trim());
  const index = m ? Number(m[1]) : NaN;
  const count = m ? Number(m[2]) : NaN;
  if (!m || count < 1 || count > MAX_SLICES || index >= count) {
    throw new TensorcastError(
      "INVALID_ATTRIBUTE",
      `--shard ${JSON.stringify(text)} is not a slice K/N with 0 <= K < N and 1 <= N <= ${MAX_SLICES} (K counts from 0, as JOB_COMPLETION_INDEX does: 0/3, 1/3 and 2/3 are the three slices of 3)`,
    );
  }
  return { index, count };
}

/**
 * The shards of slice `s`: shard i (of the list sorted by name) belongs to slice i mod N, so every
 * process computes the same split from the index alone and the slices differ by one shard at most.
 * @example sliceShards(["a", "b", "c", "d"], { index: 1, count: 3 }) // ["b"]
 */
export function sliceShards(shards: readonly string[], s: ShardSlice): string[] {
  expectStrings(shards, "sliceShards' shards");
  expectObject(s, "sliceShards' slice", "INVALID_ATTRIBUTE");
  expectInteger(s.count, "sliceShards' slice count", 1, MAX_SLICES);
  expectInteger(s.index, "sliceShards' slice index", 0, s.count - 1);
  return shards.filter((_, i) => i % s.count === s.index);
}

/** OUTDIR without trailing slashes ("out/" names the folder out). */
function folderName(path: string): string {
  const trimmed = path.replace(/\/+$/, "");
  return trimmed === "" && path !== "" ? "/" : trimmed;
}

/**
 * @example await checkOutputFolder("out", "Llama-3-8B", false) // false: "out" is new or empty
 *
 * Refuses a whole-folder OUTDIR before anything is converted: the input folder itself, a symbolic
 * link, anything that is not a folder, a folder that is not empty (with `force`, only a folder
 * holding a checkpoint (an index or a .safetensors file) and nothing but regular files, such as an earlier output, is
 * replaced: never a folder with subfolders), and a parent folder that is missing or not writable.
 * With `inputs`, a folder to replace that holds one of the input's files (a Hugging Face cache's
 * blobs/ folder, where the input's shards link to) is refused too.
 * @returns whether an existing OUTDIR is to be replaced.
 * @throws TensorcastError OUTPUT_IS_INPUT for the input folder or a folder holding its files;
 *         INVALID_ATTRIBUTE for what else the caller asked wrongly; IO_ERROR for the file system.
 */
export async function checkOutputFolder(outDir: string, inputFolder: string, force: boolean, inputs?: InputFiles): Promise<boolean> {
  if (outDir === "") throw new TensorcastError("INVALID_ATTRIBUTE", "the output folder's path is empty");
  const out = folderName(outDir);
  if (await sameFile(out, inputFolder)) throw fileError("OUTPUT_IS_INPUT", out, "is the input folder; tensorcast never writes into its input");
  const stat = await lstatOrNothing(out);
  let replace = false;
  if (stat?.isSymbolicLink()) throw fileError("INVALID_ATTRIBUTE", out, "is a symbolic link; name the folder itself (a link is never written through or replaced)");
  if (stat && !stat.isDirectory()) {
    throw fileError("INVALID_ATTRIBUTE", out, `is ${kindOf(stat)}; a checkpoint folder is written as a folder${stat.isFile() ? " (give a folder name)" : ""}`);
  }
  if (stat) {
    const entries = await fsp.readdir(out, { withFileTypes: true });
    if (entries.length > 0) {
      if (!force) throw fileError("INVALID_ATTRIBUTE", out, "already exists and is not empty; pass --force to replace it, or name a new folder");
      const odd = entries.find((e) => !e.isFile());
      if (odd) {
        throw fileError("INVALID_ATTRIBUTE", out, `holds ${JSON.stringify(odd.name)}, which is not a regular file; --force replaces only a folder of a checkpoint's files, never one with subfolders`);
      }
      if (!entries.some((e) => e.name.endsWith(".safetensors.index.json") || e.name.endsWith(".safetensors"))) {
        throw fileError("INVALID_ATTRIBUTE", out, "is not a checkpoint's folder (it has no *.safetensors.index.json and no *.safetensors); --force replaces only such a folder");
      }
      // Replacing the folder removes what it holds.
      for (const e of entries) await inputs?.refuse(join(out, e.name));
      replace = true;
    }
  }
  const parent = dirname(out);
  try {
    const p = await fsp.stat(parent);
    if (!p.isDirectory()) throw fileError("IO_ERROR", out, `cannot write it: ${parent} is ${kindOf(p)}, not a directory`);
    await fsp.access(parent, constants.W_OK | constants.X_OK);
  } catch (e) {
    if (e instanceof TensorcastError) throw e;
    if ((e as NodeJS.ErrnoException).code === "ENOENT") throw fileError("IO_ERROR", out, `cannot write it: its parent folder ${parent} does not exist`);
    throw systemError(out, `write in its parent folder ${parent}`, e);
  }
  return replace;
}

/**
/**
 * Copies `from` to `to` through an AtomicOutput: `to` appears complete or not at all. With
 * `instead`, those bytes are written in place of `from`'s (a config.json retyped). Blocks of zeros
 * are not written (holes.ts), so a sparse file stays sparse; `onCopied` gets each chunk's length
 * as it is done.
 */
export async function copyAtomically(
  from: string, to: string, force: boolean, signal?: AbortSignal, onCopied?: (bytes: number) => void, instead?: Uint8Array,
): Promise<void> {
  await checkOutput(to, { input: from, force });
  const source = await RandomAccessFile.open(from);
  const size = instead?.length ?? source.size;
  let out: AtomicOutput | undefined;
  try {
    out = await AtomicOutput.create(to);
    const buffer = new Uint8Array(Math.min(COPY_CHUNK, size));
    for (let at = 0; at < size; at += COPY_CHUNK) {
      if (signal?.aborted) throw new Interrupted();
      const n = Math.min(COPY_CHUNK, size - at);
      const bytes = instead ? instead.subarray(at, at + n) : await source.read(at, n, buffer.subarray(0, n));
      // finish() sets the size: the blocks left out read back as zeros, and take no space.
      for (const [start, end] of dataRuns(bytes)) await out.write(bytes.subarray(start, end), at + start);
      onCopied?.(n);
    }
    await out.finish(size);
    if (signal?.aborted) throw new Interrupted();
    await out.commit(force);
    out = undefined;
  } finally {
    if (out) await out.abort();
    await source.close();
  }
}

/** The total size of the files `names` of `folder`. */
async function sizeOfFiles(folder: string, names: readonly string[]): Promise<number> {
  let bytes = 0;
  for (const name of names) {
    try {
      bytes += (await fsp.stat(join(folder, name))).size;
    } catch (e) {
      throw systemError(join(folder, name), "look at it", e);
    }
  }
  return bytes;
}

/** The weights files of an output folder: each with what it holds, and the index's name when it gets one. */
export interface OutputLayout<T extends ShardItem> {
  readonly files: readonly PlannedShard<T>[];
  readonly indexName?: string;
}

/**
 * Where the output's items go: with `maxShardSize`, splitShards' layout under the input's stem
 * (an index only for more than one file); without, the input's own files (`shardOf` says which
 * input shard an item comes from) and its index, if it has one.
 * @example planLayout(c, items, (i) => i.shard).files.map((f) => f.name) // the input's shard names
 */
export function planLayout<T extends ShardItem>(c: Checkpoint, items: readonly T[], shardOf: (item: T) => string, maxShardSize?: number): OutputLayout<T> {
  if (maxShardSize === undefined) {
    const byShard = new Map<string, T[]>(c.shards.map((s) => [s, []]));
    for (const item of items) byShard.get(shardOf(item))!.push(item);
    return { files: c.shards.map((s) => ({ name: s, items: byShard.get(s)! })), indexName: c.indexed ? c.indexName : undefined };
  }
  const files = splitShards(items, maxShardSize, stemOf(c.indexName));
  return { files, indexName: files.length > 1 ? c.indexName : undefined };
}

/** Refuses what a layout anew or a one-file folder cannot do with slices. */
export function checkSliceOptions(input: string, c: Checkpoint, shard: ShardSlice | undefined, maxShardSize: number | undefined): void {
  if (!shard) return;
  if (maxShardSize !== undefined) {
    throw new TensorcastError("INVALID_ATTRIBUTE", "--shard K/N slices the input's shards, each converted into the file of the same name; with --max-shard-size the files are laid out anew, so run it as one process");
  }
  if (!c.indexed) {
    throw fileError("INVALID_ATTRIBUTE", input, `holds one weights file (${c.shards[0]}) and no index; --shard K/N slices a sharded checkpoint's shards`);
  }
}

/** A tensor of the input as one item of the output's layout, with the type it is written in. */
interface TensorItem extends ShardItem {
  readonly shard: string;
  readonly dtype: string;
}

/** The input's tensors in order (shard by shard, each in file order), sized as `opts` converts them. */
function tensorItems(c: Checkpoint, opts: CheckpointConvertOptions): TensorItem[] {
  const to = dtype(opts.to);
  // The header lists alone, through the one selection rule (no tensor is read).
  const listed = listedTensors(c);
  const all: TensorFile = { path: c.folder, format: "safetensors", size: c.dataBytes, tensors: listed, close: async () => undefined };
  const { targets } = selectTensors(all, to, opts);
  return listed.map((t) => ({
    names: [t.name], shard: t.shard, dtype: targets.has(t) ? to.name : t.dtype.name, bytes: targets.has(t) ? rawByteLength(to, t.size) : t.byteLength,
  }));
}

/** Checks the options once, before any file work, as convertFile does for one file. */
function checkOptions(input: string, c: Checkpoint, opts: CheckpointConvertOptions): void {
  checkTarget(opts);
  checkSliceOptions(input, c, opts.shard, opts.maxShardSize);
  if (opts.outputFormat !== undefined && opts.outputFormat !== "safetensors") {
    throw new TensorcastError("INVALID_ATTRIBUTE", `${input}: a sharded checkpoint is written as safetensors shards, not ${opts.outputFormat}`);
  }
  const missing = opts.names?.filter((n) => !c.weightMap.has(n)) ?? [];
  if (missing.length > 0) {
    throw fileError("INVALID_ATTRIBUTE", input, `has no tensor named ${missing.map((n) => JSON.stringify(n)).join(", ")} in any shard`);
  }
}

/**
 * Converts the sharded checkpoint at `input` (a folder or its index) into the folder `outDir`;
 * see the file comment.
 * @example await convertCheckpoint("Llama-3-8B", "Llama-3-8B-bf16", { to: "bfloat16" }) // report.totalSize: the new index's total_size
 * @example await convertCheckpoint("Llama-3-8B", "out", { to: "bfloat16", shard: { index: 0, count: 4 } }) // slice 0 of 4, no index
 * @throws TensorcastError INVALID_DATA for an inconsistent checkpoint (io/checkpoint.ts),
 *         INVALID_ATTRIBUTE for a refused OUTDIR, what convertFile throws for a shard, INTERNAL
 *         when the written index does not read back; `Interrupted` when `signal` aborts.
 */
export async function convertCheckpoint(input: string, outDir: string, opts: CheckpointConvertOptions): Promise<CheckpointReport> {
  expectPath(input, "convertCheckpoint's input");
  expectPath(outDir, "convertCheckpoint's output folder");
  expectObject(opts, "convertCheckpoint's options", "INVALID_ATTRIBUTE");
  if (opts.maxShardSize !== undefined) expectInteger(opts.maxShardSize, "convertCheckpoint's maxShardSize", 1, Number.MAX_SAFE_INTEGER, "INVALID_ATTRIBUTE");
  const started = performance.now();
  const c = await readCheckpoint(input, { pytorch: opts.pytorch });
  checkOptions(input, c, opts);
  const inputs = await checkpointFilesOf(c);
  const out = folderName(outDir);
  const force = opts.force ?? false;
  const layout = planLayout(c, tensorItems(c, opts), (t) => t.shard, opts.maxShardSize);
  const files = opts.shard ? layout.files.filter((f) => sliceShards(c.shards, opts.shard!).includes(f.name)) : layout.files;
  const sizeIn = new Map(c.tensors.flat().map((t) => [t.name, t.byteLength]));
  const bytesOf = (f: PlannedShard<TensorItem>): number => f.items.reduce((n, t) => n + sizeIn.get(t.names[0])!, 0);
  const mineBytes = files.reduce((n, f) => n + bytesOf(f), 0);
  // The tensors converted are the floating-point ones (and the integers with includeIntegers).
  const to = dtype(opts.to);
  const types = new Map(c.tensors.flat().map((t) => [t.name, dtype(t.dtype)]));
  const converted = files.flatMap((f) => f.items.map((t) => types.get(t.names[0])!)).filter((t) => t.kind === "float" || opts.includeIntegers);
  const jobs = defaultJobs(mineBytes, opts.jobs, inThreadOnly(converted.map((t) => [t, to] as const)));

  let target: string;
  let replace = false;
  let building: string | undefined;
  if (opts.shard) {
    if (await sameFile(out, c.folder)) throw fileError("OUTPUT_IS_INPUT", out, "is the input folder; tensorcast never writes into its input");
    // Every file of the slice is checked before any is written: a slice refuses whole, or runs.
    const names = [...files.map((f) => f.name), ...(opts.shard.index === 0 ? c.others : [])];
    for (const name of names) await inputs.refuse(join(out, name));
    await makeSharedFolder(out);
    for (const name of names) await checkOutput(join(out, name), { input: c.others.includes(name) ? join(c.folder, name) : shardSource(c, name), force });
    target = out;
  } else {
    replace = await checkOutputFolder(out, c.folder, force, inputs);
    await removeStaleTemporaries(out, inputs);
    building = await makeBuildingFolder(out);
    target = building;
  }

  // Progress counts the other files' bytes too: a large one (a 5 GiB file of the folder) is
  // otherwise minutes of a bar standing at 100 %.
  const copying = !opts.shard || opts.shard.index === 0 ? c.others : [];
  const copyBytes = await sizeOfFiles(c.folder, copying);
  const total = mineBytes + copyBytes;
  const pool = new TaskPool(jobs);
  // A PyTorch folder's shards are read as views too: each written as save_file orders a state dict
  // of the converted types (largest type first, then by name), as save_pretrained after .to(TYPE) does.
  const views = opts.maxShardSize === undefined && !c.pytorch ? undefined : new CheckpointShards(c);
  try {
    const shards: ConvertReport[] = [];
    let done = 0;
    for (const f of files) {
      const tensors = (c.pytorch ? [...f.items].sort((a, b) => saveFileOrder({ name: a.names[0], dtype: a.dtype }, { name: b.names[0], dtype: b.dtype })) : f.items).map((t) => t.names[0]);
      const names = opts.names?.filter((n) => tensors.includes(n));
      const fileOpts: ConvertOptions = {
        ...opts, names, inputFormat: "safetensors", outputFormat: "safetensors", force: opts.shard ? force : false,
        onProgress: opts.onProgress ? (d) => opts.onProgress!(done + d, total) : undefined,
      };
      // The input's layout: each shard converted as the file it is; a layout anew: a view of the
      // input's tensors that go into this file.
      const report = views
        ? await convertOpenFile(await views.view(tensors), join(target, f.name), fileOpts, pool)
        : await convertFileOn(join(c.folder, f.name), join(target, f.name), fileOpts, pool);
      done += bytesOf(f);
      // Named where it will be, not in the folder being built.
      shards.push({ ...report, output: join(out, f.name) });
    }
    await views?.close();
    const copied: string[] = [];
    let config: ConfigReport | undefined;
    for (const name of copying) {
      const retyped = name === CONFIG_NAME ? await retypedConfig(join(c.folder, name), c, opts) : undefined;
      config = retyped?.report ?? config;
      await copyAtomically(join(c.folder, name), join(target, name), opts.shard ? force : false, opts.signal, (n) => {
        done += n;
        opts.onProgress?.(done, total);
      }, retyped?.bytes);
      copied.push(name);
    }
    let totalSize: number | undefined;
    if (building) {
      if (layout.indexName !== undefined) {
        const expected = opts.maxShardSize === undefined ? c : expectedLayout(c, layout, layout.indexName);
        totalSize = (await indexFolder(building, { from: expected, force: false })).totalSize;
      }
      // A signal that came while the folder was checked still means "do not write OUTDIR".
      if (opts.signal?.aborted) throw new Interrupted();
      await commitFolder(building, out, replace);
      forgetAtExit(building);
      building = undefined;
    }
    return {
      input, output: out, indexName: opts.shard ? c.indexName : layout.indexName, files: files.map((f) => f.name), to: dtype(opts.to).name, saturate: opts.saturate ?? true,
      slice: opts.shard, shards, copied, config, skipped: [...c.skipped], totalSize,
      bytesIn: shards.reduce((n, r) => n + r.bytesIn, 0), bytesOut: shards.reduce((n, r) => n + r.bytesOut, 0),
      seconds: (performance.now() - started) / 1000, workers: pool.started,
    };
  } finally {
    await views?.close();
    await pool.close();
    if (building) {
      await fsp.rm(building, { recursive: true, force: true }).catch(() => undefined);
      forgetAtExit(building);
    }
  }
}

/**
 * What an output folder laid out anew must hold, as indexFolder checks it: the planned files, each
 * tensor in the planned one, with the input's shapes; the input index's metadata (total_parameters
 * and the like) kept.
 */
function expectedLayout(c: Checkpoint, layout: OutputLayout<ShardItem>, indexName: string): Checkpoint {
  const weightMap = new Map<string, string>();
  for (const f of layout.files) for (const item of f.items) for (const n of item.names) weightMap.set(n, f.name);
  const shapes = new Map(c.tensors.flat().map((t) => [t.name, t]));
  return {
    ...c, indexName, indexed: true, shards: layout.files.map((f) => f.name), weightMap,
    tensors: layout.files.map((f) => f.items.flatMap((item) => item.names.map((n) => shapes.get(n)!))),
  };
}

/** Creates the folder N slices share, or accepts it when it is one (never a link or a file). */
async function makeSharedFolder(out: string): Promise<void> {
  try {
    await fsp.mkdir(out);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== "EEXIST") {
      if ((e as NodeJS.ErrnoException).code === "ENOENT") throw fileError("IO_ERROR", out, `cannot create it: its parent folder ${dirname(out)} does not exist`);
      throw systemError(out, "create it", e);
    }
    const stat = await lstatOrNothing(out);
    if (!stat?.isDirectory()) throw fileError("INVALID_ATTRIBUTE", out, `is ${stat ? kindOf(stat) : "gone"}; the slices of a sharded checkpoint are written into a folder`);
  }
}

/**
 * Renames the finished folder `building` to `out`. A rename onto an existing folder fails unless
 * that folder is empty, so an OUTDIR that appeared meanwhile is never lost; with `replace`, the
 * existing OUTDIR (checked by checkOutputFolder) is moved aside first and removed once the new one
 * is in place, or moved back if that fails.
 */
export async function commitFolder(building: string, out: string, replace: boolean): Promise<void> {
  let aside: string | undefined;
  try {
    if (replace) {
      aside = temporaryPath(out);
      await fsp.rename(out, aside);
    }
    await fsp.rename(building, out);
  } catch (e) {
    if (aside) await fsp.rename(aside, out).catch(() => undefined);
    const code = (e as NodeJS.ErrnoException).code;
    if (code === "ENOTEMPTY" || code === "EEXIST" || code === "ENOTDIR" || code === "EISDIR") {
      throw fileError("IO_ERROR", out, "appeared while converting; it was left alone and nothing was written");
    }
    throw systemError(out, "finish writing it", e);
  }
  if (aside) await fsp.rm(aside, { recursive: true, force: true }).catch(() => undefined);
  try {
    const dir = await fsp.open(dirname(out), "r");
    try {
      await dir.sync();
    } finally {
      await dir.close();
    }
  } catch {
    // Some file systems cannot sync a directory; the rename itself has happened.
  }
}

export interface IndexOptions {
  /** The input checkpoint (a folder or its index): its shards, tensors, index name and metadata are what `folder` must match. */
  from?: string | Checkpoint;
  /** The index's name when there is no input (default model.safetensors.index.json). */
  name?: string;
  /** Replace an existing index. */
  force?: boolean;
}

export interface IndexReport {
  /** The index written. */
  index: string;
  shards: string[];
  tensors: number;
  /** The bytes of every tensor's data. */
  totalSize: number;
  metadata: Record<string, unknown>;
}

/**
 * Writes the index of the safetensors shards in `folder` (every non-hidden `*.safetensors` file;
 * each header read and validated), with total_size their tensors' data bytes. With `from`, the
 * shards must be exactly the input's and hold exactly its tensors, each in the shard of the same
 * name and of the same shape, and its metadata's other keys are kept. The index is written under a
 * temporary name, read back with every shard's header, then renamed into place.
 * @throws TensorcastError INVALID_DATA naming a missing or extra shard or tensor; INVALID_ATTRIBUTE
 *         for an existing index without `force`; INTERNAL when the written index does not read back.
 * @example await indexCheckpoint("out", { from: "model" }) // { index: "out/model.safetensors.index.json", totalSize: ..., ... }
 */
export async function indexCheckpoint(folder: string, opts: IndexOptions = {}): Promise<IndexReport> {
  expectPath(folder, "indexCheckpoint's folder");
  expectOptionsObject(opts, "indexCheckpoint");
  const from = typeof opts.from === "string" ? await readCheckpoint(opts.from) : opts.from;
  return indexFolder(folderName(folder), { ...opts, from });
}

async function indexFolder(folder: string, opts: { from?: Checkpoint; name?: string; force?: boolean }): Promise<IndexReport> {
  const expected = opts.from;
  const indexName = expected?.indexName ?? opts.name ?? DEFAULT_INDEX_NAME;
  const entries = await listFolder(folder);
  const shards = entries.filter((e) => !e.name.startsWith(".") && e.name.endsWith(".safetensors") && !e.isDirectory()).map((e) => e.name).sort();
  if (expected) {
    const missing = expected.shards.filter((s) => !shards.includes(s));
    if (missing.length > 0) {
      throw fileError(
        "INVALID_DATA", folder,
        `lacks ${missing.length} of the ${expected.shards.length} shards (${missing.slice(0, 4).join(", ")}${missing.length > 4 ? ", ..." : ""}): a slice has not finished or failed; run it again, then index`,
      );
    }
    const extra = shards.filter((s) => !expected.shards.includes(s));
    if (extra.length > 0) throw fileError("INVALID_DATA", join(folder, extra[0]), `is not a shard of ${join(expected.folder, expected.indexName)}; remove it or index without --from`);
  } else if (shards.length === 0) {
    throw fileError("INVALID_DATA", folder, "holds no .safetensors shard to index");
  }
  const weightMap = new Map<string, string>();
  const shapes = expected ? new Map(expected.tensors.flat().map((t) => [t.name, t.shape])) : undefined;
  let totalSize = 0;
  for (const s of shards) {
    const file = await openTensorFile(join(folder, s), { format: "safetensors" });
    try {
      for (const t of file.tensors) {
        const other = weightMap.get(t.name);
        if (other !== undefined) throw fileError("INVALID_DATA", file.path, `holds tensor ${JSON.stringify(t.name)}, which ${other} holds too; a tensor must be in one shard`);
        if (expected) {
          const want = expected.weightMap.get(t.name);
          if (want === undefined) throw fileError("INVALID_DATA", file.path, `holds tensor ${JSON.stringify(t.name)}, which the input does not have`);
          if (want !== s) throw fileError("INVALID_DATA", file.path, `holds tensor ${JSON.stringify(t.name)}, which the input holds in ${want}`);
          const shape = shapes!.get(t.name)!;
          if (shape.length !== t.shape.length || shape.some((d, k) => d !== t.shape[k])) {
            throw fileError("INVALID_DATA", file.path, `tensor ${JSON.stringify(t.name)} has shape [${t.shape.join(", ")}], but [${shape.join(", ")}] in the input`);
          }
        }
        weightMap.set(t.name, s);
        totalSize += t.byteLength;
      }
    } finally {
      await file.close();
    }
  }
  if (expected && weightMap.size !== expected.weightMap.size) {
    const lost = [...expected.weightMap.keys()].find((t) => !weightMap.has(t))!;
    throw fileError("INVALID_DATA", join(folder, expected.weightMap.get(lost)!), `has no tensor ${JSON.stringify(lost)}, which the input's shard of that name holds`);
  }
  const metadata = { ...(expected?.metadata ?? {}), total_size: totalSize };
  const path = join(folder, indexName);
  // `index IN --from IN --force` would replace the very index it reads.
  if (expected) await (await checkpointFilesOf(expected)).refuse(path, "the index to write");
  await checkOutput(path, { force: opts.force });
  const out = await AtomicOutput.create(path);
  try {
    const bytes = new TextEncoder().encode(encodeIndex(metadata, weightMap, totalSize));
    await out.write(bytes, 0);
    await out.finish(bytes.length);
    // Read back as any input index is, every shard's header with it.
    let back: Checkpoint;
    try {
      back = await checkCheckpoint(folder, indexName, out.temporary);
    } catch (e) {
      if (!(e instanceof TensorcastError)) throw e;
      throw fileError("INTERNAL", path, `the index written does not read back (${e.message}), so it was removed`);
    }
    const same = back.weightMap.size === weightMap.size && [...weightMap].every(([t, s]) => back.weightMap.get(t) === s);
    if (!same || back.dataBytes !== totalSize || back.metadata.total_size !== totalSize) {
      throw fileError("INTERNAL", path, "the index written does not read back as planned, so it was removed");
    }
    await out.commit(opts.force ?? false);
  } catch (e) {
    await out.abort();
    throw e;
  }
  return { index: path, shards, tensors: weightMap.size, totalSize, metadata };
}


/**
 * The hidden folder OUTDIR is built in (renamed to OUTDIR when complete), created empty and
 * removed if the process exits first.
 * @throws TensorcastError IO_ERROR naming OUTDIR when it cannot be created.
 */
export async function makeBuildingFolder(out: string): Promise<string> {
  const building = temporaryPath(out);
  try {
    await fsp.mkdir(building);
  } catch (e) {
    throw systemError(out, `create it (as ${building})`, e);
  }
  removeAtExit(building, true);
  return building;
}
