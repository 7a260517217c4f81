/**
 * Which files of a Hugging Face folder hold its safetensors weights, and whether they agree with
 * the folder's index, whatever holds the folder: tensorcast/node's readCheckpoint (a folder on
 * disk, src/node/io/checkpoint.ts) and the playground's folder panel (the files a page's directory
 * picker gives) both ask these functions, through a CheckpointFolder, so a folder is refused or
 * taken the same way in both.
 *
 * The rules: a folder holds exactly one `*.safetensors.index.json`, or none and its weights in one
 * file (model.safetensors, else its only `*.safetensors`). Every file an index names is a plain
 * file name inside the folder (no path, no "..", not hidden); every tensor is in the shard the
 * index names and in no other; no shard holds a tensor the index does not list; and no
 * `NAME-0000k-of-0000n.safetensors` of a numbered set is missing from the map.
 */
import { TensorcastError } from "../errors.js";
import type { ByteSource } from "./byte-source.js";
import { parseJsonFile } from "./json-file.js";
import { NameIndex } from "./name-index.js";
import { utf8Decode } from "./utf8.js";

/**
 * How a Hugging Face index's name ends: model.safetensors.index.json, model.fp16.safetensors.index.json, ...
 * @example "model.safetensors.index.json".endsWith(INDEX_SUFFIX) // true
 */
export const INDEX_SUFFIX = ".safetensors.index.json";
/** The index name when none is inherited from an input: "model.safetensors.index.json", as transformers names it. */
export const DEFAULT_INDEX_NAME = "model.safetensors.index.json";
/** transformers' name of a checkpoint's weights when they are one file (SAFE_WEIGHTS_NAME). */
export const ONE_FILE_NAME = "model.safetensors";
/** Indexes are kilobytes to a few megabytes; a larger one is refused before it is read. */
const MAX_INDEX_BYTES = 256 * 1024 * 1024;
/** A shard of a numbered set, as transformers and huggingface_hub name them. */
const NUMBERED = /^(.*)-(\d+)-of-(\d+)\.safetensors$/;

/** An entry of a folder: a regular file, a symbolic link, a subfolder, or something else. */
export interface FolderEntry {
  readonly name: string;
  readonly kind: "file" | "link" | "folder" | "other";
}

/** A tensor as its shard's header lists it. */
export interface ShardTensor {
  readonly name: string;
  readonly dtype: string;
  readonly shape: readonly number[];
  readonly byteLength: number;
}

/** A folder as the checks read it: its entries, and the tensors of a safetensors file in it. */
export interface CheckpointFolder {
  /** The folder as messages name it (the path given, in Node). */
  readonly label: string;
  /** A file of the folder as messages name it. */
  pathOf(name: string): string;
  entries(): Promise<readonly FolderEntry[]>;
  /**
   * The tensors of the safetensors file `name`, in file order, its header checked; `role` says why
   * it is wanted ("is named by model.safetensors.index.json"), for the message when it is missing
   * or not a regular file of the folder (missingFile's words).
   */
  shardTensors(name: string, role: string): Promise<readonly ShardTensor[]>;
}

/** Where a folder's weights are: its index's name, and for a folder without one the one weights file. */
export interface WeightsLocation {
  readonly indexName: string;
  readonly weights?: string;
}

/** What the checks found: the shards, the index's map and every shard's tensors. */
export interface CheckpointLayout {
  /**
   * The index file's name inside the folder; for a one-file folder, the name its index would have
   * (the file's name and ".index.json", as save_pretrained names it when it shards).
   */
  readonly indexName: string;
  /** Whether the folder has an index; false: its weights are the one file `shards[0]`. */
  readonly indexed: boolean;
  /** The index's `metadata`, every key kept (total_size as the input had it); empty without an index. */
  readonly metadata: Readonly<Record<string, unknown>>;
  /** The shard files, sorted by name (the order `--shard K/N` slices). */
  readonly shards: readonly string[];
  /** Tensor name -> shard file, in the index's order. */
  readonly weightMap: ReadonlyMap<string, string>;
  /** The shards' tensors: tensors[i] lists shards[i]'s, in file order. */
  readonly tensors: readonly (readonly ShardTensor[])[];
  /** The sum of every tensor's data bytes: what total_size should be. */
  readonly dataBytes: number;
}

/**
 * Whether a folder holding the files `names` is a PyTorch checkpoint folder: one `*.bin.index.json`,
 * or a pytorch_model.bin, and no safetensors weights (tensorcast/node reads those; a Blob folder does not).
 * @example isPytorchListing(["config.json", "pytorch_model.bin"]) // true
 */
export function isPytorchListing(names: readonly string[]): boolean {
  if (names.some((n) => n.endsWith(INDEX_SUFFIX) || n === ONE_FILE_NAME)) return false;
  return names.some((n) => n.endsWith(".bin.index.json")) || names.includes("pytorch_model.bin");
}

/** `${path}: ${message}`, the way tensorcast names the file an error is about. */
export function fileMessage(code: "INVALID_DATA" | "IO_ERROR", path: string, message: string): TensorcastError {
  return new TensorcastError(code, `${path}: ${message}`);
}

/** The error for a file the folder lacks (`role` says why it is wanted). */
export function missingFile(folder: CheckpointFolder, name: string, role: string): TensorcastError {
  return fileMessage("INVALID_DATA", folder.pathOf(name), `${role}, but there is no such file in ${folder.label}`);
}

/**
 * The folder's index, or (without one) its weights file: model.safetensors first, as transformers'
 * from_pretrained looks (a consolidated.safetensors beside it is another layout of the same weights, left out).
 * @throws TensorcastError INVALID_DATA for a folder with several indexes, or with none and no single weights file.
 */
export function locateWeights(folder: CheckpointFolder, entries: readonly FolderEntry[]): WeightsLocation {
  const names = entries.filter((e) => e.name.endsWith(INDEX_SUFFIX)).map((e) => e.name).sort();
  if (names.length === 1) return { indexName: names[0]! };
  if (names.length > 1) {
    throw fileMessage("INVALID_DATA", folder.label, `holds ${names.length} indexes (${names.join(", ")}); name the one to read: ${folder.pathOf(names[0]!)}`);
  }
  const files = entries.filter((e) => (e.kind === "file" || e.kind === "link") && e.name.endsWith(".safetensors") && !e.name.startsWith(".")).map((e) => e.name).sort();
  const weights = files.includes(ONE_FILE_NAME) ? ONE_FILE_NAME : files.length === 1 ? files[0] : undefined;
  if (weights !== undefined) return { indexName: `${weights}.index.json`, weights };
  if (files.length === 0) {
    throw fileMessage(
      "INVALID_DATA", folder.label,
      `is a folder without safetensors weights: neither a sharded checkpoint's index (a file named like ${DEFAULT_INDEX_NAME}) nor a ${ONE_FILE_NAME}; give a safetensors file, or a model folder holding one of those`,
    );
  }
  throw fileMessage(
    "INVALID_DATA", folder.label,
    `holds ${files.length} safetensors files (${files.slice(0, 4).join(", ")}${files.length > 4 ? ", ..." : ""}) but no index and no ${ONE_FILE_NAME} saying which are the model; give one of the files`,
  );
}

/** Why `name` may not be a shard's name in an index, or undefined when it may. */
function badShardName(name: string): string | undefined {
  if (name === "") return "is empty";
  if (name.startsWith("/") || /^[A-Za-z]:/.test(name)) return "is an absolute path";
  if (name.includes("/") || name.includes("\\")) return "is a path, not a file name in the folder";
  if (name === "." || name === "..") return "names a folder";
  if (name.startsWith(".")) return "is a hidden name (tensorcast's temporaries are hidden)";
  if (name.includes("\0")) return "holds a NUL character";
  if (!name.endsWith(".safetensors")) return "is not a .safetensors file";
  return undefined;
}

/** The index's JSON (read from `index`, named `path` in messages), checked for the two members it must have. */
export async function readIndexJson(index: ByteSource, path: string): Promise<{ metadata: Record<string, unknown>; weightMap: Map<string, string> }> {
  if (index.size > MAX_INDEX_BYTES) throw fileMessage("INVALID_DATA", path, `is ${index.size} bytes, over the ${MAX_INDEX_BYTES}-byte limit for an index`);
  let text: string;
  try {
    text = utf8Decode(await index.read(0, index.size), true);
  } catch (e) {
    if (e instanceof TypeError) throw fileMessage("INVALID_DATA", path, "is not valid UTF-8");
    throw e;
  }
  const json = parseJsonFile(text, path);
  const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
  if (!isObject(json)) throw fileMessage("INVALID_DATA", path, "is not a JSON object with a weight_map");
  const map = json.weight_map;
  if (!isObject(map)) throw fileMessage("INVALID_DATA", path, `has no "weight_map" object (tensor name -> shard file)`);
  const meta = json.metadata ?? {};
  if (!isObject(meta)) throw fileMessage("INVALID_DATA", path, `"metadata" is ${JSON.stringify(meta).slice(0, 40)}, not an object`);
  const weightMap = new Map<string, string>();
  for (const [tensor, shard] of Object.entries(map)) {
    if (typeof shard !== "string") throw fileMessage("INVALID_DATA", path, `weight_map maps tensor ${JSON.stringify(tensor)} to ${JSON.stringify(shard)}, not to a file name`);
    const why = badShardName(shard);
    if (why) throw fileMessage("INVALID_DATA", path, `weight_map maps tensor ${JSON.stringify(tensor)} to ${JSON.stringify(shard)}, which ${why}`);
    weightMap.set(tensor, shard);
  }
  if (weightMap.size === 0) throw fileMessage("INVALID_DATA", path, "has an empty weight_map");
  return { metadata: meta, weightMap };
}

/** The layout of a folder whose weights are the one file `weights`: its weight_map is the file's tensors. */
export async function oneFileLayout(folder: CheckpointFolder, indexName: string, weights: string): Promise<CheckpointLayout> {
  const list = [...(await folder.shardTensors(weights, "is the folder's weights"))];
  const weightMap = new Map<string, string>();
  let dataBytes = 0;
  for (const t of list) {
    weightMap.set(t.name, weights);
    dataBytes += t.byteLength;
  }
  return { indexName, indexed: false, metadata: {}, shards: [weights], weightMap, tensors: [list], dataBytes };
}

/**
 * The layout of the folder's index `indexName` (its bytes `index`, named `indexPath` in messages:
 * the index itself, or a written one under its temporary name), checked against every shard's header.
 * @throws TensorcastError INVALID_DATA naming the index or the shard and what is wrong.
 */
export async function indexedLayout(folder: CheckpointFolder, indexName: string, index: ByteSource, indexPath: string, entries: readonly FolderEntry[]): Promise<CheckpointLayout> {
  const { metadata, weightMap } = await readIndexJson(index, indexPath);
  const shards = [...new Set(weightMap.values())].sort();
  const present = new Set(entries.map((e) => e.name));
  // A numbered set must be complete: a shard the map forgets would be lost without a word.
  const sets = new Map<string, number>();
  for (const s of shards) {
    const m = NUMBERED.exec(s);
    if (m) sets.set(`${m[1]}\0${m[3]}`, (sets.get(`${m[1]}\0${m[3]}`) ?? 0) + 1);
  }
  for (const name of [...present].sort()) {
    const m = NUMBERED.exec(name);
    if (!m || shards.includes(name)) continue;
    if (sets.has(`${m[1]}\0${m[3]}`)) {
      throw fileMessage("INVALID_DATA", folder.pathOf(indexName), `maps no tensor to ${name}, a shard of the same numbered set as the others`);
    }
  }
  const tensors: ShardTensor[][] = [];
  let dataBytes = 0;
  const seen = new NameIndex();
  const seenIn: number[] = [];
  for (let i = 0; i < shards.length; i++) {
    const p = folder.pathOf(shards[i]!);
    const list: ShardTensor[] = [];
    for (const t of await folder.shardTensors(shards[i]!, `is named by ${indexName}`)) {
      const j = seen.find(t.name);
      if (j >= 0) {
        throw fileMessage("INVALID_DATA", p, `holds tensor ${JSON.stringify(t.name)}, which ${shards[seenIn[j]!]} holds too; a tensor must be in one shard`);
      }
      seen.add(t.name);
      seenIn.push(i);
      const mapped = weightMap.get(t.name);
      if (mapped === undefined) throw fileMessage("INVALID_DATA", p, `holds tensor ${JSON.stringify(t.name)}, which ${indexName}'s weight_map does not list`);
      if (mapped !== shards[i]) throw fileMessage("INVALID_DATA", p, `holds tensor ${JSON.stringify(t.name)}, which ${indexName} says is in ${mapped}`);
      list.push(t);
      dataBytes += t.byteLength;
    }
    tensors.push(list);
  }
  if (seen.names.length !== weightMap.size) {
    for (const [t, s] of weightMap) {
      if (seen.find(t) < 0) throw fileMessage("INVALID_DATA", folder.pathOf(s), `has no tensor ${JSON.stringify(t)}, which ${indexName} says it holds`);
    }
  }
  return { indexName, indexed: true, metadata, shards, weightMap, tensors, dataBytes };
}
