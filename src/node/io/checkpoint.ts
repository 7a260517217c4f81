/**
 * Sharded Hugging Face checkpoints: a folder of safetensors shards
 * (`model-00001-of-00004.safetensors`, ...) and an index, `model.safetensors.index.json`:
 *
 *   { "metadata": { "total_size": 16060522496, ... }, "weight_map": { "tensor": "shard file", ... } }
 *
 * `readCheckpoint` validates a folder against its index strictly, reading every shard's header
 * (nothing else): every file the index names is a plain file name inside the folder (no path, no
 * "..", not hidden) and a regular file (or a link the Hugging Face cache made, see `shardPath`);
 * every tensor is in the shard the index names and in no other; no shard holds a tensor the index
 * does not list; and no `NAME-0000k-of-0000n.safetensors` of a numbered set is missing from the map.
 * `openCheckpoint` then reads the shards as one TensorFile, so `inspect` and `diff` take folders.
 *
 * A folder without an index whose weights are one file (`model.safetensors`, as transformers'
 * save_pretrained writes every checkpoint under its max_shard_size) is the one-shard case: a
 * Checkpoint with `indexed` false, its one shard that file, its weight_map the file's own tensors.
 *
 * total_size is what huggingface_hub's split_state_dict_into_shards_factory sums: the bytes of
 * every tensor's data (storage shared by several tensors once; a safetensors file never shares),
 * not the shards' file sizes, which also count their headers.
 */
import { promises as fsp } from "node:fs";
import { basename, dirname, isAbsolute, join, relative, sep } from "node:path";
import { dtype, TensorcastError } from "../../index.js";
import { fileError, RandomAccessFile, systemError } from "./file.js";
import { firstTooDeep } from "./json.js";
import { MAX_JSON_DEPTH } from "../../io/safetensors/json.js";
import { describe, expectObject } from "../../args.js";
import { openTensorFile, type OpenOptions } from "./reader.js";
import { isPytorchFolder, openPytorchFolder, readPytorchCheckpoint } from "./pytorch-folder.js";
import type { PytorchFile, PytorchOptions } from "./pytorch.js";
import type { FileTensor, TensorFile } from "./tensors.js";
import { expectOptionsObject, expectPath } from "../args.js";

import {
  DEFAULT_INDEX_NAME, INDEX_SUFFIX, indexedLayout, locateWeights, missingFile, oneFileLayout, type CheckpointFolder, type CheckpointLayout, type FolderEntry, type ShardTensor,
} from "../../io/checkpoint-layout.js";

export { INDEX_SUFFIX, DEFAULT_INDEX_NAME, ONE_FILE_NAME, type ShardTensor } from "../../io/checkpoint-layout.js";

/** A validated checkpoint folder (the core's CheckpointLayout, and what Node adds): sharded with an index, or one weights file without one. */
export interface Checkpoint extends CheckpointLayout {
  /** The folder holding the index and the shards. */
  readonly folder: string;
  /** Other regular files of the folder (config.json, tokenizer files, ...), sorted. */
  readonly others: readonly string[];
  /** What the folder holds that is neither: with the reason it is left out of a conversion. */
  readonly skipped: readonly { readonly name: string; readonly reason: string }[];
  /**
   * For a folder of PyTorch shards (pytorch-folder.ts): `shards`, `weightMap` and `tensors` are
   * the safetensors folder save_pretrained writes for it (model-0000k-of-0000n.safetensors or
   * model.safetensors, each shard's state dict as safetensors' save_file stores it, tied names once)
   * and `files` maps each of those shards to the `.bin` it is read from; `index` is the folder's
   * own index (pytorch_model.bin.index.json), `key` picks the state dict.
   */
  readonly pytorch?: { readonly key?: string; readonly index?: string; readonly files: ReadonlyMap<string, string> };
}

/**
 * Whether `path` names a checkpoint rather than a tensor file: a folder, or a file whose name ends
 * in `.index.json`. Nothing is validated yet.
 * @example await isCheckpointPath("Llama-3-8B") // true for a folder; false for "model.safetensors"
 */
export async function isCheckpointPath(path: string): Promise<boolean> {
  if (path.endsWith(".index.json")) return true;
  try {
    return (await fsp.stat(path)).isDirectory();
  } catch {
    return false;
  }
}

/**
 * The folder and index name of `path`: a folder holds exactly one `*.safetensors.index.json`, or
 * none and its weights in one file (`weights`): model.safetensors, else its only `*.safetensors`.
 * @example await locateIndex("Llama-3-8B") // { folder: "Llama-3-8B", indexName: "model.safetensors.index.json" }
 * @example await locateIndex("bert-base") // { folder: "bert-base", indexName: "model.safetensors.index.json", weights: "model.safetensors" }
 * @throws TensorcastError INVALID_DATA for a folder with several indexes, or with none and no
 *         single weights file; IO_ERROR when it cannot be read.
 */
export async function locateIndex(path: string): Promise<{ folder: string; indexName: string; weights?: string }> {
  if (path.endsWith(".index.json")) {
    if (!path.endsWith(INDEX_SUFFIX)) {
      throw fileError(
        "INVALID_DATA", path,
        `is not a safetensors index (a name ending in ${INDEX_SUFFIX}); tensorcast reads safetensors shards, not pickled .bin ones`,
      );
    }
    return { folder: dirname(path), indexName: basename(path) };
  }
  const folder = diskFolder(path, await listFolder(path));
  return { folder: path, ...locateWeights(folder, await folder.entries()) };
}

/** A folder on disk as the core's checks read it (src/io/checkpoint-layout.ts): shards opened through shardPath. */
function diskFolder(folder: string, entries?: import("node:fs").Dirent[]): CheckpointFolder {
  const kind = (e: import("node:fs").Dirent): FolderEntry["kind"] => (e.isFile() ? "file" : e.isSymbolicLink() ? "link" : e.isDirectory() ? "folder" : "other");
  return {
    label: folder,
    pathOf: (name) => join(folder, name),
    entries: async () => (entries ?? await listFolder(folder)).map((e) => ({ name: e.name, kind: kind(e) })),
    async shardTensors(name, role) {
      const file = await openTensorFile(await shardPath(folder, name, role), { format: "safetensors" });
      try {
        return file.tensors.map((t) => ({ name: t.name, dtype: t.dtype.name, shape: t.shape, byteLength: t.byteLength }));
      } finally {
        await file.close();
      }
    },
  };
}

/** A folder's entries. @throws TensorcastError IO_ERROR when it cannot be read. */
export async function listFolder(folder: string): Promise<import("node:fs").Dirent[]> {
  try {
    return await fsp.readdir(folder, { withFileTypes: true });
  } catch (e) {
    throw systemError(folder, "read the folder", e);
  }
}

/**
 * The path of `name` in `folder` when it is a regular file there (`role` says why it is wanted,
 * for the message: "is named by model.safetensors.index.json").
 * @example await shardPath("m", "model-00001-of-00002.safetensors", "is named by the index") // "m/model-00001-of-00002.safetensors" A symbolic link is followed only
 * where it stays in the folder or is the Hugging Face cache's own layout (a snapshot's files link
 * to `../../blobs/HASH`: `R/snapshots/REV/f` -> `R/blobs/...`); any other link is refused, so a
 * folder cannot make tensorcast read a file elsewhere.
 * @throws TensorcastError INVALID_DATA naming the file and what it is.
 */
export async function shardPath(folder: string, name: string, role: string): Promise<string> {
  const path = join(folder, name);
  let stat: import("node:fs").Stats;
  try {
    stat = await fsp.lstat(path);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") throw missingFile(diskFolder(folder), name, role);
    throw fileError("IO_ERROR", path, `cannot look at it: ${(e as Error).message}`);
  }
  if (stat.isFile()) return path;
  if (!stat.isSymbolicLink()) throw fileError("INVALID_DATA", path, `${role}, but it is not a regular file`);
  let target: string;
  let realFolder: string;
  try {
    [target, realFolder] = await Promise.all([fsp.realpath(path), fsp.realpath(folder)]);
  } catch {
    throw fileError("INVALID_DATA", path, `${role}, but it is a symbolic link to nothing`);
  }
  const inside = (root: string): boolean => {
    const r = relative(root, target);
    return r !== "" && !r.startsWith(`..${sep}`) && r !== ".." && !isAbsolute(r);
  };
  const snapshot = dirname(realFolder);
  const hubCache = basename(snapshot) === "snapshots" && inside(join(dirname(snapshot), "blobs"));
  if (!inside(realFolder) && !hubCache) {
    throw fileError("INVALID_DATA", path, `${role}, but it is a symbolic link to ${target}, outside the folder (only links into the Hugging Face cache's blobs/ are followed)`);
  }
  try {
    if (!(await fsp.stat(target)).isFile()) throw fileError("INVALID_DATA", path, `${role}, but it links to something that is not a regular file`);
  } catch (e) {
    if (e instanceof TensorcastError) throw e;
    throw fileError("IO_ERROR", path, `cannot look at it: ${(e as Error).message}`);
  }
  return path;
}

/** Files that hold weights in another form, left out of a converted folder rather than copied unconverted. */
export const OTHER_WEIGHTS = /\.(safetensors|bin|pt|pth|ckpt|h5|msgpack|onnx|onnx_data|gguf|npy|npz|pb|index\.json)$/;

/**
 * Reads and validates the checkpoint at `path` (a folder, or its index file).
 * @example (await readCheckpoint("Llama-3-8B")).shards // ["model-00001-of-00004.safetensors", ...] Every shard's header
 * is read and checked (safetensors' own rules, then the index's claims: src/io/checkpoint-layout.ts); no tensor data is read.
 * @throws TensorcastError INVALID_DATA naming the index or the shard and what is wrong.
 */
export async function readCheckpoint(path: string, opts: { pytorch?: PytorchOptions } = {}): Promise<Checkpoint> {
  expectPath(path, "readCheckpoint's path");
  if (await isPytorchFolder(path)) return readPytorchCheckpoint(path, opts.pytorch);
  const { folder, indexName, weights } = await locateIndex(path);
  if (weights !== undefined) return readOneFile(folder, indexName, weights);
  return checkCheckpoint(folder, indexName, await shardPath(folder, indexName, "is the index"));
}

/** The Checkpoint of a folder whose weights are the one file `weights`: its weight_map is the file's tensors. */
async function readOneFile(folder: string, indexName: string, weights: string): Promise<Checkpoint> {
  const layout = await oneFileLayout(diskFolder(folder), indexName, weights);
  const { others, skipped } = await otherFiles(folder, await listFolder(folder), [weights], `weights other than ${weights}`);
  return { folder, ...layout, others, skipped };
}

/**
 * readCheckpoint for the index `indexName` of `folder`, its text read from `indexPath` (which is
 * elsewhere only while a written index is checked under its temporary name).
 * @example await checkCheckpoint("out", "model.safetensors.index.json", "out/.model.safetensors.index.json.tensorcast-42-ab12cd34.tmp")
 */
export async function checkCheckpoint(folder: string, indexName: string, indexPath: string): Promise<Checkpoint> {
  const entries = await listFolder(folder);
  const index = await RandomAccessFile.open(indexPath);
  let layout: CheckpointLayout;
  try {
    const disk = diskFolder(folder, entries);
    layout = await indexedLayout(disk, indexName, index, indexPath, await disk.entries());
  } finally {
    await index.close();
  }
  const { others, skipped } = await otherFiles(folder, entries, [indexName, ...layout.shards], "weights the index does not list");
  return { folder, ...layout, others, skipped };
}

/**
 * The files of `folder` besides its checkpoint's own (`own`: the index and shards), sorted: those a
 * conversion copies, and those it leaves out with the reason (`otherWeights` for weights in another
 * form or outside the map).
 */
export async function otherFiles(
  folder: string, entries: import("node:fs").Dirent[], own: readonly string[], otherWeights: string,
): Promise<{ others: string[]; skipped: { name: string; reason: string }[] }> {
  const others: string[] = [];
  const skipped: { name: string; reason: string }[] = [];
  // A file copied as it is must not be a second name of one outside the folder, which a hard link
  // can be and no path shows (shards are parsed before use, so theirs do not matter: docs/convert.md).
  const other = async (name: string): Promise<void> => {
    let links: number;
    try {
      links = (await fsp.stat(join(folder, name))).nlink;
    } catch (err) {
      throw systemError(join(folder, name), "look at it", err);
    }
    if (links > 1) skipped.push({ name, reason: `${links} hard links: it may be a file outside the folder` });
    else others.push(name);
  };
  for (const e of entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
    if (own.includes(e.name) || e.name.startsWith(".")) continue;
    if (e.isDirectory()) skipped.push({ name: e.name, reason: "a subfolder" });
    else if (OTHER_WEIGHTS.test(e.name)) skipped.push({ name: e.name, reason: otherWeights });
    else if (e.isFile()) await other(e.name);
    else if (e.isSymbolicLink()) {
      try {
        await shardPath(folder, e.name, "is a file of the folder");
      } catch (err) {
        if (!(err instanceof TensorcastError)) throw err;
        skipped.push({ name: e.name, reason: "a symbolic link out of the folder" });
        continue;
      }
      await other(e.name);
    } else skipped.push({ name: e.name, reason: "not a regular file" });
  }
  return { others, skipped };
}

/**
 * @example encodeIndex({ total_parameters: 3 }, new Map([["b", "s2"], ["a", "s1"]]), 12)
 * // '{\n  "metadata": {\n    "total_parameters": 3,\n    "total_size": 12\n  },\n  "weight_map": {\n    "a": "s1",\n    "b": "s2"\n  }\n}\n'
 *
 * The text of an index, as transformers writes it (`json.dumps(index, indent=2, sort_keys=True)`
 * and a newline): metadata with total_size set to `totalSize` and its other keys kept, the
 * weight_map sorted by tensor name.
 */
export function encodeIndex(metadata: Readonly<Record<string, unknown>>, weightMap: ReadonlyMap<string, string>, totalSize: number): string {
  expectObject(metadata, "encodeIndex's metadata");
  if (!(weightMap instanceof Map)) throw new TensorcastError("INVALID_DATA", `encodeIndex's weightMap must be a Map (tensor name -> shard file), got ${describe(weightMap)}`);
  for (const [k, v] of weightMap) {
    if (typeof k !== "string" || typeof v !== "string") {
      throw new TensorcastError("INVALID_DATA", `encodeIndex's weightMap maps ${describe(k)} to ${describe(v)}; names and shard files are strings`);
    }
  }
  if (typeof totalSize !== "number" || !Number.isSafeInteger(totalSize) || totalSize < 0) {
    throw new TensorcastError("INVALID_DATA", `encodeIndex's totalSize must be an integer in [0, 2^53 - 1], got ${describe(totalSize)}`);
  }
  const meta: Record<string, unknown> = { ...metadata, total_size: totalSize };
  const sortedMeta = Object.fromEntries(Object.keys(meta).sort().map((k) => [k, meta[k]]));
  const names = [...weightMap.keys()].sort();
  // Built by hand, not through an object: a tensor named "0" would move first, "__proto__" vanish.
  const lines = names.map((n, i) => `    ${JSON.stringify(n)}: ${JSON.stringify(weightMap.get(n))}${i < names.length - 1 ? "," : ""}`);
  let metaText: string;
  try {
    metaText = JSON.stringify(sortedMeta, null, 2).split("\n").join("\n  ");
  } catch (e) {
    // A bigint, a cycle, or nesting deeper than the stack (JSON.stringify recurses).
    if (e instanceof TypeError || e instanceof RangeError) throw new TensorcastError("INVALID_DATA", `encodeIndex's metadata cannot be written as JSON: ${e.message}`);
    throw e;
  }
  const text = `{\n  "metadata": ${metaText},\n  "weight_map": {\n${lines.join("\n")}\n  }\n}\n`;
  // What the index reader (parseJsonFile) would refuse is not written.
  if (firstTooDeep(text) >= 0) throw new TensorcastError("INVALID_DATA", `encodeIndex's metadata nests arrays and objects more than ${MAX_JSON_DEPTH} deep with the index around it`);
  return text;
}

/**
 * @example const f = await openCheckpoint("Llama-3-8B"); f.tensors.length; await f.close();
 *
 * A checkpoint's shards read as one file (for `inspect` and `diff`): its tensors are every shard's,
 * shard by shard, and `size` is the shards' total. The index's metadata is given as strings.
 */
export async function openCheckpoint(path: string): Promise<TensorFile> {
  expectPath(path, "openCheckpoint's path");
  const c = await readCheckpoint(path);
  const files: TensorFile[] = [];
  try {
    for (const s of c.shards) files.push(await openTensorFile(join(c.folder, s), { format: "safetensors" }));
  } catch (e) {
    await Promise.all(files.map((f) => f.close()));
    throw e;
  }
  const tensors: FileTensor[] = files.flatMap((f) => f.tensors);
  const metadata = Object.fromEntries(Object.entries(c.metadata).map(([k, v]) => [k, typeof v === "string" ? v : JSON.stringify(v)]));
  return {
    path, format: "safetensors", size: files.reduce((n, f) => n + f.size, 0), tensors, metadata,
    close: async () => {
      await Promise.all(files.map((f) => f.close()));
    },
  };
}

/**
 * A tensor file or a sharded checkpoint (a folder or its index): what `inspect` and `diff` open.
 * @example await openTensorSource("model.safetensors"); await openTensorSource("Llama-3-8B/")
 * @throws TensorcastError as openTensorFile and readCheckpoint do.
 */
export async function openTensorSource(path: string, opts: OpenOptions = {}): Promise<TensorFile> {
  expectPath(path, "openTensorSource's path");
  expectOptionsObject(opts, "openTensorSource");
  // A folder of pytorch_model.bin shards (and no safetensors) is read through its .bin index.
  if (await isPytorchFolder(path)) return openPytorchFolder(path, opts.pytorch);
  return (await isCheckpointPath(path)) ? openCheckpoint(path) : openTensorFile(path, opts);
}

/**
 * The path a shard of `c` is read from: the shard itself, or the `.bin` a PyTorch folder's shard comes from.
 * @example shardSource(c, "model-00001-of-00002.safetensors") // "m/pytorch_model-00001-of-00002.bin" for a PyTorch folder
 */
export function shardSource(c: Checkpoint, shard: string): string {
  return join(c.folder, c.pytorch?.files.get(shard) ?? shard);
}

/**
 * Opens the shard `shard` of `c` as the safetensors file it is, or (a PyTorch folder) will be:
 * the `.bin`'s state dict as save_file stores it (PytorchFile.asSafetensors).
 * @example const f = await openShard(c, c.shards[0]); f.tensors; await f.close();
 */
export async function openShard(c: Checkpoint, shard: string): Promise<TensorFile> {
  if (!c.pytorch) return openTensorFile(join(c.folder, shard), { format: "safetensors" });
  const file = (await openTensorFile(await shardPath(c.folder, c.pytorch.files.get(shard)!, "is a shard of the folder"), { format: "pytorch", pytorch: { key: c.pytorch.key } })) as PytorchFile;
  return file.asSafetensors();
}

/** A tensor as the index and headers list it, with its shard; reading it is an error (nothing is opened). */
export interface ListedTensor extends FileTensor {
  readonly shard: string;
}

/**
 * The checkpoint's tensors in order (shard by shard, each in file order) as FileTensors that are
 * never read, for the rules that decide from names, types and shapes alone (which tensors a
 * conversion changes, which pairs are quantized) before any shard is opened.
 */
export function listedTensors(c: Checkpoint): ListedTensor[] {
  const unread = async (): Promise<Uint8Array> => {
    throw new TensorcastError("INTERNAL", "a tensor listed for planning was read");
  };
  return c.tensors.flatMap((ts, i) => ts.map((t) => ({
    name: t.name, dtype: dtype(t.dtype), shape: t.shape, size: t.shape.reduce((a, b) => a * b, 1), byteLength: t.byteLength, read: unread, shard: c.shards[i],
  })));
}

/**
 * A checkpoint's shards, opened as a folder laid out anew reads them: `view(names)` gives the
 * tensors `names` (from any shards, in that order) as one TensorFile whose metadata is that of the
 * shard holding the first (a shard's `__metadata__`, such as `{"format": "pt"}`, carries over to
 * the files written from it). Each view closes the shards the one before needed and this one does
 * not: the tensors go in order, so a few shards are open at a time, however many there are.
 * @example const shards = new CheckpointShards(c); const v = await shards.view(["a", "b"]); ...; await shards.close();
 */
export class CheckpointShards {
  private readonly open = new Map<string, TensorFile>();
  private readonly tensorsOf = new Map<string, Map<string, FileTensor>>();

  constructor(private readonly c: Checkpoint) {}

  /** @throws TensorcastError INVALID_DATA for a name the checkpoint does not have. */
  async view(names: readonly string[]): Promise<TensorFile> {
    const shards = names.map((n) => {
      const s = this.c.weightMap.get(n);
      if (s === undefined) throw fileError("INVALID_DATA", this.c.folder, `has no tensor ${JSON.stringify(n)}`);
      return s;
    });
    // An empty view (a checkpoint without tensors) still takes the metadata of the first shard.
    const metaShard = shards[0] ?? this.c.shards[0];
    const wanted = new Set([...shards, metaShard]);
    for (const [s, f] of this.open) {
      if (wanted.has(s)) continue;
      this.open.delete(s);
      this.tensorsOf.delete(s);
      await f.close();
    }
    for (const s of wanted) {
      if (this.open.has(s)) continue;
      const f = await openShard(this.c, s);
      this.open.set(s, f);
      this.tensorsOf.set(s, new Map(f.tensors.map((t) => [t.name, t])));
    }
    const tensors = names.map((n, i) => this.tensorsOf.get(shards[i])!.get(n)!);
    // Named by its one source file when it has one (a PyTorch folder's .bin, read as it converts), else by the folder.
    const one = new Set(shards).size <= 1;
    return {
      path: one ? shardSource(this.c, metaShard) : this.c.folder, format: this.c.pytorch ? "pytorch" : "safetensors",
      size: tensors.reduce((n, t) => n + t.byteLength, 0), tensors, metadata: this.open.get(metaShard)!.metadata,
      close: async () => undefined,
    };
  }

  async close(): Promise<void> {
    const files = [...this.open.values()];
    this.open.clear();
    this.tensorsOf.clear();
    await Promise.all(files.map((f) => f.close()));
  }
}
