/**
 * The files an input consists of (a model and each of its external data files; a sharded
 * checkpoint's folder, index, shards and other files), so that no output, side file or removal of
 * a stale temporary ever lands on one. A path is compared by its resolved name and by device and
 * inode, both of the file it leads to and of the entry itself: a hard link, a symbolic link or a
 * path through a linked folder is the same file under another name. Without this, `-o in.data
 * --force`, where in.data is the input model's external data, would replace it and break the model.
 */
import { promises as fsp, type BigIntStats } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { TensorcastError } from "../../index.js";
import type { Checkpoint } from "./checkpoint.js";
import type { OnnxModelFile } from "./reader.js";
import type { TensorFile } from "./tensors.js";
import type { GgufTensorFile } from "./gguf.js";

/** One file of an input: its path and what it is to the input, for messages ("in.onnx's own external data file in.data"). */
export interface InputFile {
  readonly path: string;
  readonly role: string;
}

/** A file's identity on its device; bigint, since inode numbers may pass 2^53. */
function identity(s: BigIntStats): string {
  return `${s.dev}:${s.ino}`;
}

/** stat (following links) and lstat (the entry itself) of `path`; what cannot be looked at is left out. */
async function identities(path: string): Promise<string[]> {
  const ids: string[] = [];
  for (const look of [fsp.stat, fsp.lstat]) {
    try {
      ids.push(identity(await look(path, { bigint: true })));
    } catch {
      // Missing, or not ours to look at: the path comparison still applies.
    }
  }
  return ids;
}

/**
 * The files of one input, looked at once (when the input is opened) and compared with every path
 * about to be written.
 */
export class InputFiles {
  private readonly byPath = new Map<string, InputFile>();
  private readonly byId = new Map<string, InputFile>();

  private constructor() {}

  /**
   * Looks at each file's identity now.
   * @example await InputFiles.of([{ path: "m.onnx", role: "the input file" }])
   */
  static async of(files: readonly InputFile[]): Promise<InputFiles> {
    const set = new InputFiles();
    for (const f of files) {
      if (!set.byPath.has(resolve(f.path))) set.byPath.set(resolve(f.path), f);
      for (const id of await identities(f.path)) if (!set.byId.has(id)) set.byId.set(id, f);
    }
    return set;
  }

  /** The input file `path` is (by name, or by device and inode), or undefined. */
  async find(path: string): Promise<InputFile | undefined> {
    const named = this.byPath.get(resolve(path));
    if (named) return named;
    for (const id of await identities(path)) {
      const f = this.byId.get(id);
      if (f) return f;
    }
    return undefined;
  }

  /** The input file an lstat result describes, or undefined. */
  findStat(stat: BigIntStats): InputFile | undefined {
    return this.byId.get(identity(stat));
  }

  /**
   * Refuses to write `path` when it is one of the input's files, with or without `force`.
   * @param what what `path` is to the output, for the message ("the side file to write").
   * @throws TensorcastError OUTPUT_IS_INPUT naming the path and the input file it is.
   */
  async refuse(path: string, what?: string): Promise<void> {
    const f = await this.find(path);
    if (f) {
      throw new TensorcastError(
        "OUTPUT_IS_INPUT",
        `${path}: ${what ? `${what} ` : ""}is ${f.role}; tensorcast never overwrites its input, even with --force`,
      );
    }
  }
}

/**
 * The files an open input is read from: the file itself, and for a model each external data file
 * its initializers name (relative to its folder).
 */
export async function inputFilesOf(file: TensorFile): Promise<InputFiles> {
  const files: InputFile[] = [{ path: file.path, role: "the input file" }];
  if (file.format === "gguf") {
    for (const part of (file as GgufTensorFile).parts ?? []) if (part !== file.path) files.push({ path: part, role: `a part of the split model ${file.path}` });
  }
  if (file.format === "onnx") {
    const folder = dirname(file.path);
    const seen = new Set<string>();
    for (const t of (file as OnnxModelFile).layout.initializers) {
      const location = t.external?.location;
      if (location === undefined || seen.has(location)) continue;
      seen.add(location);
      files.push({ path: join(folder, location), role: `${file.path}'s own external data file ${location}` });
    }
  }
  return InputFiles.of(files);
}

/** The files of a checkpoint folder: the folder, its index (when it has one), shards and the other files a conversion copies. */
export async function checkpointFilesOf(c: Checkpoint): Promise<InputFiles> {
  return InputFiles.of([
    { path: c.folder, role: "the input folder" },
    ...(c.indexed && !c.pytorch ? [{ path: join(c.folder, c.indexName), role: `the input's index ${c.indexName}` }] : []),
    ...(c.pytorch?.index ? [{ path: join(c.folder, c.pytorch.index), role: `the input's index ${c.pytorch.index}` }] : []),
    ...c.shards.map((s) => c.pytorch?.files.get(s) ?? s).map((s) => ({ path: join(c.folder, s), role: `the input's shard ${s}` })),
    ...c.others.map((o) => ({ path: join(c.folder, o), role: `the input's file ${o}` })),
    // Left out of the copy (a second hard link, a link out of the folder, a subfolder...), still the input's.
    ...c.skipped.map((o) => ({ path: join(c.folder, o.name), role: `the input's file ${o.name}` })),
  ]);
}
