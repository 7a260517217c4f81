/**
 * A Hugging Face folder of PyTorch shards: `pytorch_model-0000k-of-0000n.bin` and their index
 * `pytorch_model.bin.index.json` ({"metadata": {...}, "weight_map": {tensor: shard}}), or one
 * `pytorch_model.bin`. Read as one TensorFile (inspect, diff) and listed for conversion to the
 * safetensors folder save_pretrained writes. A folder that also holds a safetensors index or
 * model.safetensors is a safetensors checkpoint (checkpoint.ts), never read as this.
 *
 * The index is checked as strictly as a safetensors one: every shard a plain `.bin` name inside the
 * folder (links only into the Hugging Face cache's blobs/, shardPath), every tensor in the shard the
 * index names and in no other, no shard tensor the index does not list.
 */
import { promises as fsp } from "node:fs";
import { basename, dirname, join } from "node:path";
import { listFolder, otherFiles, shardPath } from "./checkpoint.js";
import { fileError, RandomAccessFile } from "./file.js";
import { parseJsonFile } from "./json.js";
import { NameIndex } from "../../io/name-index.js";
import { isPytorchListing } from "../../io/checkpoint-layout.js";
import type { PytorchFile, PytorchOptions } from "./pytorch.js";
import type { Checkpoint, ShardTensor } from "./checkpoint.js";
import { openTensorFile } from "./reader.js";
import type { TensorFile } from "./tensors.js";

/** How a PyTorch index's name ends: pytorch_model.bin.index.json. */
export const PYTORCH_INDEX_SUFFIX = ".bin.index.json";
const ONE_FILE = "pytorch_model.bin";
const MAX_INDEX_BYTES = 256 * 1024 * 1024;

export interface PytorchFolder {
  readonly folder: string;
  /** The index's name, or undefined for a folder of one pytorch_model.bin. */
  readonly indexName?: string;
  readonly metadata: Readonly<Record<string, unknown>>;
  /** The shards, sorted by name. */
  readonly shards: readonly string[];
  readonly weightMap: ReadonlyMap<string, string>;
  /** The folder's other regular files (config.json, tokenizer files), sorted; other weights left out. */
  readonly others: readonly string[];
  readonly skipped: readonly { readonly name: string; readonly reason: string }[];
}

async function entriesOf(folder: string): Promise<string[] | undefined> {
  try {
    if (!(await fsp.stat(folder)).isDirectory()) return undefined;
  } catch {
    return undefined;
  }
  return (await listFolder(folder)).map((e) => e.name);
}

/**
 * Whether `path` is a PyTorch checkpoint folder (or its .bin.index.json): a folder with one
 * `*.bin.index.json`, or a pytorch_model.bin, and no safetensors weights.
 * @example await isPytorchFolder("bert-base-uncased") // true when it holds pytorch_model.bin only
 */
export async function isPytorchFolder(path: string): Promise<boolean> {
  if (path.endsWith(PYTORCH_INDEX_SUFFIX)) return true;
  const names = await entriesOf(path);
  return names !== undefined && isPytorchListing(names);
}

/**
 * The folder of `path` (a PyTorch folder or its .bin.index.json) and, without an index, its one
 * weights file (pytorch_model.bin); nothing is read but the folder's listing.
 * @example await locatePytorchFolder("bert-base-uncased") // { folder: "bert-base-uncased", weights: "pytorch_model.bin" }
 */
export async function locatePytorchFolder(path: string): Promise<{ folder: string; weights?: string }> {
  if (path.endsWith(PYTORCH_INDEX_SUFFIX)) return { folder: dirname(path) };
  const names = (await listFolder(path)).map((e) => e.name);
  return names.some((n) => n.endsWith(PYTORCH_INDEX_SUFFIX)) ? { folder: path } : { folder: path, weights: ONE_FILE };
}

/**
 * Reads and checks the folder's index and every shard's state dict (no tensor data).
 * @throws TensorcastError INVALID_DATA naming the index or shard at fault.
 */
export async function readPytorchFolder(path: string, opts: PytorchOptions = {}): Promise<PytorchFolder> {
  const folder = path.endsWith(PYTORCH_INDEX_SUFFIX) ? dirname(path) : path;
  const entries = await listFolder(folder);
  const names = entries.map((e) => e.name);
  const indexes = path.endsWith(PYTORCH_INDEX_SUFFIX) ? [basename(path)] : names.filter((n) => n.endsWith(PYTORCH_INDEX_SUFFIX)).sort();
  if (indexes.length > 1) throw fileError("INVALID_DATA", folder, `holds ${indexes.length} PyTorch indexes (${indexes.join(", ")}); name the one to read`);
  let indexName: string | undefined;
  let metadata: Record<string, unknown> = {};
  const weightMap = new Map<string, string>();
  if (indexes.length === 1) {
    indexName = indexes[0];
    const indexPath = await shardPath(folder, indexName, "is the index");
    const file = await RandomAccessFile.open(indexPath);
    let text: string;
    try {
      if (file.size > MAX_INDEX_BYTES) throw fileError("INVALID_DATA", indexPath, `is ${file.size} bytes, over the ${MAX_INDEX_BYTES}-byte limit for an index`);
      text = new TextDecoder("utf-8", { fatal: true }).decode(await file.read(0, file.size));
    } catch (e) {
      if (e instanceof TypeError) throw fileError("INVALID_DATA", indexPath, "is not valid UTF-8");
      throw e;
    } finally {
      await file.close();
    }
    const json = parseJsonFile(text, indexPath);
    const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
    if (!isObject(json) || !isObject(json.weight_map)) throw fileError("INVALID_DATA", indexPath, `has no "weight_map" object (tensor name -> shard file)`);
    if (json.metadata !== undefined && !isObject(json.metadata)) throw fileError("INVALID_DATA", indexPath, `"metadata" is not an object`);
    metadata = (json.metadata as Record<string, unknown> | undefined) ?? {};
    for (const [t, s] of Object.entries(json.weight_map)) {
      if (typeof s !== "string" || s.includes("/") || s.includes("\\") || s.startsWith(".") || !s.endsWith(".bin")) {
        throw fileError("INVALID_DATA", indexPath, `weight_map maps tensor ${JSON.stringify(t)} to ${JSON.stringify(s)}, not a .bin file name in the folder`);
      }
      weightMap.set(t, s);
    }
    if (weightMap.size === 0) throw fileError("INVALID_DATA", indexPath, "has an empty weight_map");
  } else if (!names.includes(ONE_FILE)) {
    throw fileError("INVALID_DATA", folder, `has neither a PyTorch index (*${PYTORCH_INDEX_SUFFIX}) nor ${ONE_FILE}`);
  }
  const shards = indexName ? [...new Set(weightMap.values())].sort() : [ONE_FILE];
  const seen = new NameIndex();
  for (const s of shards) {
    const f = (await openTensorFile(await shardPath(folder, s, `is named by ${indexName ?? "the folder"}`), { format: "pytorch", pytorch: opts })) as PytorchFile;
    try {
      for (const t of f.tensors) {
        if (seen.find(t.name) >= 0) throw fileError("INVALID_DATA", f.path, `holds tensor ${JSON.stringify(t.name)}, which another shard holds too`);
        seen.add(t.name);
        if (!indexName) continue;
        const mapped = weightMap.get(t.name);
        if (mapped === undefined) throw fileError("INVALID_DATA", f.path, `holds tensor ${JSON.stringify(t.name)}, which ${indexName}'s weight_map does not list`);
        if (mapped !== s) throw fileError("INVALID_DATA", f.path, `holds tensor ${JSON.stringify(t.name)}, which ${indexName} says is in ${mapped}`);
      }
    } finally {
      await f.close();
    }
  }
  for (const [t, s] of weightMap) if (seen.find(t) < 0) throw fileError("INVALID_DATA", join(folder, s), `has no tensor ${JSON.stringify(t)}, which ${indexName} says it holds`);
  // As a safetensors folder's: links into the Hugging Face cache's blobs/ followed, others left out.
  const { others, skipped } = await otherFiles(folder, entries, [...(indexName ? [indexName] : []), ...shards], "weights the index does not list");
  return { folder, indexName, metadata, shards, weightMap, others, skipped };
}

/** The safetensors shard a PyTorch shard becomes: pytorch_model-00001-of-00002.bin -> model-00001-of-00002.safetensors. */
export function safetensorsShardName(bin: string): string {
  return `${bin.replace(/^pytorch_model/, "model").replace(/\.bin$/, "")}.safetensors`;
}

/**
 * The folder as the Checkpoint of the safetensors folder save_pretrained writes for it, which every
 * folder-taking job (convert --to, quantize, --max-shard-size) reads as it reads a safetensors one:
 * each `.bin` is the shard safetensorsShardName names (one pytorch_model.bin: model.safetensors),
 * its tensors those `asSafetensors()` keeps (in the state dict's order, tied names once), total_size their
 * bytes; `pytorch.files` says which `.bin` each shard is read from (openShard).
 * @example (await readPytorchCheckpoint("bert-base-uncased")).shards // ["model.safetensors"]
 * @throws TensorcastError as readPytorchFolder does.
 */
export async function readPytorchCheckpoint(path: string, opts: PytorchOptions = {}): Promise<Checkpoint> {
  const c = await readPytorchFolder(path, opts);
  const shards: string[] = [];
  const files = new Map<string, string>();
  const weightMap = new Map<string, string>();
  const tensors: ShardTensor[][] = [];
  let dataBytes = 0;
  for (const s of c.shards) {
    const name = c.indexName ? safetensorsShardName(s) : "model.safetensors";
    if (files.has(name)) throw fileError("INVALID_DATA", join(c.folder, s), `would be written as ${name}, as ${files.get(name)} would; rename one of the shards`);
    const f = (await openTensorFile(await shardPath(c.folder, s, `is named by ${c.indexName ?? "the folder"}`), { format: "pytorch", pytorch: opts })) as PytorchFile;
    try {
      // In the state dict's order (tied names once), the order save_pretrained splits a state dict in; each file
      // written is ordered as save_file orders it (sharded.ts).
      const kept = new Set(f.asSafetensors().tensors.map((t) => t.name));
      const list = f.tensors.filter((t) => kept.has(t.name)).map((t) => ({ name: t.name, dtype: t.dtype.name, shape: t.shape, byteLength: t.byteLength }));
      for (const t of list) {
        weightMap.set(t.name, name);
        dataBytes += t.byteLength;
      }
      tensors.push(list);
    } finally {
      await f.close();
    }
    shards.push(name);
    files.set(name, s);
  }
  // Sorted by name, as a safetensors checkpoint's shards are (the order --shard K/N slices).
  const order = shards.map((_, i) => i).sort((a, b) => (shards[a] < shards[b] ? -1 : shards[a] > shards[b] ? 1 : 0));
  const { total_size: _, ...metadata } = c.metadata as Record<string, unknown>;
  return {
    folder: c.folder, indexName: "model.safetensors.index.json", indexed: c.indexName !== undefined, metadata,
    shards: order.map((i) => shards[i]), weightMap, tensors: order.map((i) => tensors[i]), dataBytes, others: c.others, skipped: c.skipped,
    pytorch: { key: opts.key, index: c.indexName, files },
  };
}

/**
 * The folder's shards read as one TensorFile (inspect, diff).
 * @example const f = await openPytorchFolder("bert-base-uncased"); f.tensors.length; await f.close();
 */
export async function openPytorchFolder(path: string, opts: PytorchOptions = {}): Promise<TensorFile> {
  const c = await readPytorchFolder(path, opts);
  const files: PytorchFile[] = [];
  try {
    for (const s of c.shards) files.push((await openTensorFile(join(c.folder, s), { format: "pytorch", pytorch: opts })) as PytorchFile);
  } catch (e) {
    await Promise.all(files.map((f) => f.close()));
    throw e;
  }
  return {
    path, format: "pytorch", size: files.reduce((n, f) => n + f.size, 0), tensors: files.flatMap((f) => f.tensors),
    metadata: Object.fromEntries(Object.entries(c.metadata).map(([k, v]) => [k, typeof v === "string" ? v : JSON.stringify(v)])),
    close: async () => {
      await Promise.all(files.map((f) => f.close()));
    },
  };
}
