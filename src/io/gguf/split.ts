/**
 * Split models: llama-gguf-split writes one model as `NAME-00001-of-0000N.gguf` ... with
 * `split.no` (0-based, uint16), `split.count` (uint16) and `split.tensors.count` (int32) in each
 * part, the model's metadata in the first. Read as one model with llama.cpp's loader's checks:
 * the parts in order, each saying which it is, no tensor in two parts, and the total count the
 * first part promises.
 */
import { ggufError } from "./cursor.js";
import type { GgufFile } from "./header.js";
import type { GgufMetadataEntry } from "./values.js";
import type { GgufTensorInfo } from "./tensor-info.js";

/** A tensor of a model: its info and the index of the part (in `GgufModel.files`) holding it. */
export interface GgufModelTensor extends GgufTensorInfo {
  readonly split: number;
}

/** One model, from one file or from every part of a split one. */
export interface GgufModel {
  readonly name: string;
  readonly files: readonly GgufFile[];
  /** The first part's metadata (the model's; the other parts hold split.* keys only). */
  readonly metadata: ReadonlyMap<string, GgufMetadataEntry>;
  /** Every part's tensors, in order. */
  readonly tensors: readonly GgufModelTensor[];
}

/** The models ggufModel made, so a public function can tell one from a look-alike. */
const MODELS = new WeakSet<object>();

/** Whether `x` is a model ggufModel returned. */
export function isGgufModel(x: unknown): x is GgufModel {
  return typeof x === "object" && x !== null && MODELS.has(x);
}

function made(m: GgufModel): GgufModel {
  MODELS.add(m);
  return m;
}

const SPLIT_NAME = /^(.*)-(\d{5})-of-(\d{5})\.gguf$/;

/**
 * The parts of a split model's name: llama.cpp's `PREFIX-%05d-of-%05d.gguf` (1-based), or undefined.
 * @example splitNameOf("m-00002-of-00003.gguf") // { prefix: "m", no: 2, count: 3 }
 */
export function splitNameOf(path: string): { prefix: string; no: number; count: number } | undefined {
  const m = SPLIT_NAME.exec(path);
  if (!m) return undefined;
  const no = Number(m[2]);
  const count = Number(m[3]);
  return no >= 1 && no <= count ? { prefix: m[1], no, count } : undefined;
}

/** Every part's name of a split model, as llama_split_path spells them. */
export function splitPaths(prefix: string, count: number): string[] {
  const pad = (n: number): string => String(n).padStart(5, "0");
  return Array.from({ length: count }, (_, i) => `${prefix}-${pad(i + 1)}-of-${pad(count)}.gguf`);
}

function intValue(g: GgufFile, key: string, types: readonly string[]): number | undefined {
  const e = g.metadata.get(key);
  if (e === undefined) return undefined;
  if (!types.includes(e.type)) throw ggufError(g.name, `${key} must be of type ${types.join(" or ")} but is ${e.type}`);
  return Number(e.value);
}

/** The number of parts a file says its model has (split.count; 1 without it). */
export function splitCountOf(g: GgufFile): number {
  return intValue(g, "split.count", ["uint16"]) ?? 1;
}

/**
 * One model from its parts, in order (one file for an unsplit model).
 * @throws TensorcastError INVALID_DATA for a part that is not the one expected, a missing
 *         split.no, a tensor in two parts, or a total that is not split.tensors.count.
 */
export function ggufModel(files: readonly GgufFile[], name = files[0]?.name ?? "the GGUF model"): GgufModel {
  if (files.length === 0) throw ggufError(name, "a model needs at least one file");
  const count = splitCountOf(files[0]);
  if (files.length === 1 && count <= 1) {
    const tensors = files[0].tensors.map((t) => ({ ...t, split: 0 }));
    return made({ name, files, metadata: files[0].metadata, tensors });
  }
  if (count !== files.length) throw ggufError(name, `split.count is ${count}, but ${files.length} part${files.length === 1 ? " was" : "s were"} given`);
  const tensors: GgufModelTensor[] = [];
  const seen = new Map<string, number>();
  files.forEach((g, i) => {
    const no = intValue(g, "split.no", ["uint16"]);
    if (no === undefined) throw ggufError(g.name, "a part of a split model without split.no");
    if (no !== i) throw ggufError(g.name, `split.no is ${no}, but it is part ${i} (0-based) of ${count}`);
    const c = splitCountOf(g);
    if (c !== count) throw ggufError(g.name, `split.count is ${c}, but the first part says ${count}`);
    for (const t of g.tensors) {
      const before = seen.get(t.name);
      if (before !== undefined) throw ggufError(g.name, `tensor ${JSON.stringify(t.name)} is also in part ${before}`);
      seen.set(t.name, i);
      tensors.push({ ...t, split: i });
    }
  });
  const promised = intValue(files[0], "split.tensors.count", ["int32", "uint32", "uint16", "int64", "uint64"]);
  if (promised !== undefined && promised !== tensors.length) {
    throw ggufError(name, `split.tensors.count is ${promised}, but the ${count} parts hold ${tensors.length} tensors`);
  }
  return made({ name, files, metadata: files[0].metadata, tensors });
}
