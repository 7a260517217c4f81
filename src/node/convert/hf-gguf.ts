/**
 * A Hugging Face model folder -> one GGUF file, as llama.cpp's convert_hf_to_gguf.py writes it
 * (src/io/hf-gguf/ plans it). Tensors are read one at a time from the shards, encoded and
 * streamed into the file, so memory holds one tensor (as float32) at a time. The file is written
 * under a temporary name, read back with our GGUF reader and checked against the plan (metadata,
 * tensor table, every byte written), then renamed.
 */
import { promises as fsp } from "node:fs";
import { basename, join, resolve } from "node:path";
import { TensorcastError } from "../../errors.js";
import type { HfGgufPlanOptions, HfFolderFiles, HfGgufOuttype, HfGgufPlan, HfTensorHeader } from "../../io/hf-gguf/plan.js";
import { CHUNK_VALUES, hfTensorChunks, hfTensorHeaders, planHfFolder, readHfFolderFiles as readCoreFolderFiles, type HfFolderReader, type HfGgufOuttypeOrAuto } from "../../io/hf-gguf/folder.js";
import type { TensorFile } from "../io/tensors.js";
import { isPytorchFolder, openPytorchFolder } from "../io/pytorch-folder.js";
import { layoutGguf, writeGguf } from "../../io/gguf/write.js";
import { splitByGgufPy, splitMetadata, splitOutputPaths, type GgufSplitLimits } from "../../io/gguf/split-write.js";
import { openCheckpoint, readCheckpoint } from "../io/checkpoint.js";
import { AtomicOutput, checkOutput, removeStaleTemporaries } from "../io/file.js";
import { commitAll, verifyWrittenGguf } from "../io/gguf-output.js";
import { ggmlType } from "../../ggml/types.js";

export interface HfGgufReport {
  readonly output: string;
  readonly architecture: string;
  /** The outtype written ("auto" resolved to bfloat16 or float16). */
  readonly outtype: HfGgufOuttype;
  readonly bytes: number;
  readonly metadataKeys: number;
  readonly tensors: readonly { readonly name: string; readonly source: string; readonly type: string; readonly dims: readonly number[] }[];
  /** The files written: OUT, or the parts of a split model (only one with --shard). */
  readonly files: readonly { readonly path: string; readonly bytes: number; readonly tensors: number }[];
  /** Choices made where convert_hf_to_gguf.py would have stopped (the plan's notes). */
  readonly notes: readonly string[];
}

/** A folder on disk as the core reads its small files (src/io/hf-gguf/folder.ts). */
function diskReader(folder: string): HfFolderReader {
  return {
    folderName: basename(resolve(folder)),
    label: folder,
    pathOf: (n) => join(folder, n),
    async readOptional(n) {
      const path = join(folder, n);
      try {
        const b = await fsp.readFile(path);
        return new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code === "ENOENT") return undefined;
        throw new TensorcastError("IO_ERROR", `${path}: cannot be read (${(e as Error).message})`);
      }
    },
  };
}

/** The files of `folder` the plan reads. */
export function readHfFolderFiles(folder: string): Promise<HfFolderFiles> {
  return readCoreFolderFiles(diskReader(folder));
}

export type { HfGgufOuttypeOrAuto } from "../../io/hf-gguf/folder.js";

/** A folder's plan and a way to open its tensors (by their names in the folder) for reading. */
export interface PreparedFolder {
  readonly plan: HfGgufPlan;
  /** The outtype planned: "auto" resolved. */
  readonly outtype: HfGgufOuttype;
  open(): Promise<TensorFile>;
}

/**
 * The folder's tensor headers in convert_hf_to_gguf's order: safetensors shards by name, each
 * shard's tensors by name (gguf-py's SafetensorsLocal sorts them); PyTorch .bin shards by name,
 * each one's tensors in its state dict's order (torch.load's keys, tied names included).
 */
async function folderTensors(folder: string): Promise<{ headers: HfTensorHeader[]; open: () => Promise<TensorFile> }> {
  if (await isPytorchFolder(folder)) {
    const f = await openPytorchFolder(folder);
    try {
      return { headers: f.tensors.map((t) => ({ name: t.name, dtype: t.dtype.name, shape: t.shape })), open: () => openPytorchFolder(folder) };
    } finally {
      await f.close();
    }
  }
  const headers = hfTensorHeaders(await readCheckpoint(folder));
  return { headers, open: () => openCheckpoint(folder) };
}

/** The plan for a folder (safetensors, one file or sharded, or PyTorch .bin shards) and how to read its tensors. */
export async function prepareFolder(folder: string, outtype: HfGgufOuttypeOrAuto, opts: HfGgufPlanOptions = {}): Promise<PreparedFolder> {
  const files = await readHfFolderFiles(folder);
  const { headers, open } = await folderTensors(folder);
  return { ...planHfFolder(files, headers, outtype, opts), open };
}

/** The plan for a folder: its tensors in convert_hf_to_gguf's order (folderTensors). */
export async function planFolder(folder: string, outtype: HfGgufOuttypeOrAuto, opts: HfGgufPlanOptions = {}): Promise<HfGgufPlan> {
  return (await prepareFolder(folder, outtype, opts)).plan;
}

export interface HfGgufOptions {
  readonly force?: boolean;
  /** Float32 values per chunk read and encoded (tests). */
  readonly chunkValues?: number;
  /** Split as convert_hf_to_gguf.py's --split-max-tensors / --split-max-size / --no-tensor-first-split. */
  readonly split?: GgufSplitLimits;
  /**
   * Write only part `index` (from 0, as a Kubernetes Indexed Job's JOB_COMPLETION_INDEX; the file
   * -0000{index+1}-of-...) of the `count` the limits make: one of N machines' share.
   */
  readonly shard?: { readonly index: number; readonly count: number };
  /** tokenizer.ggml.pre where the tokenizer's check-text hash is not a known one (--tokenizer-pre). */
  readonly tokenizerPre?: string;
}

/**
 * Converts the folder `folder` into the GGUF file `output`, or into the parts of a split model
 * (`OUT-0000K-of-0000N.gguf`, OUT without its .gguf) when `split` cuts it in more than one. Each
 * part is written under a temporary name and read back; the parts are renamed into place only
 * once every one of them has been checked. With `shard`, only that part is written, with the
 * bytes the whole run gives it.
 * @throws TensorcastError as planHfToGguf, readCheckpoint and the writer do; IO_ERROR when an
 *         output exists without `force`; INVALID_ATTRIBUTE when `shard` is not one of the parts.
 */
export async function convertHfToGguf(folder: string, output: string, outtype: HfGgufOuttypeOrAuto, opts: HfGgufOptions = {}): Promise<HfGgufReport> {
  const prepared = await prepareFolder(folder, outtype, { tokenizerPre: opts.tokenizerPre });
  const plan = prepared.plan;
  const specs = plan.tensors.map((t) => ({ name: t.name, ggmlType: t.type, dims: t.dims }));
  const groups = opts.split === undefined ? [specs.map((_, i) => i)] : splitByGgufPy(layoutGguf([], specs).byteLengths, opts.split);
  const paths = splitOutputPaths(output, groups.length);
  const parts = groups.map((g, no) => {
    const metadata = splitMetadata(plan.metadata, no, groups.length, specs.length);
    const tensors = g.map((i) => plan.tensors[i]!);
    const layout = layoutGguf(metadata, tensors.map((t) => ({ name: t.name, ggmlType: t.type, dims: t.dims })));
    return { path: paths[no]!, metadata, tensors, layout };
  });
  let chosen = parts;
  if (opts.shard !== undefined) {
    const { index, count } = opts.shard;
    if (count !== parts.length || !Number.isInteger(index) || index < 0 || index >= count) {
      throw new TensorcastError("INVALID_ATTRIBUTE", `--shard ${index}/${count}: the split limits cut ${folder} into ${parts.length} part${parts.length === 1 ? "" : "s"}, so --shard takes K/${parts.length} with K from 0 to ${parts.length - 1}`);
    }
    chosen = [parts[index]!];
  }
  for (const part of chosen) await checkOutput(part.path, { force: opts.force });
  for (const part of chosen) await removeStaleTemporaries(part.path);
  const source = await prepared.open();
  const outs: AtomicOutput[] = [];
  try {
    const byName = new Map(source.tensors.map((t) => [t.name, t]));
    for (const part of chosen) {
      const out = await AtomicOutput.create(part.path, { digests: true });
      outs.push(out);
      const tensors = part.tensors.map((t) => ({
        name: t.name, ggmlType: t.type, dims: t.dims,
        data: hfTensorChunks(t, byName, opts.chunkValues ?? CHUNK_VALUES),
      }));
      await writeGguf(out, part.metadata, tensors);
      await out.finish(part.layout.size);
      await verifyWrittenGguf(out, part.path, part.metadata, part.tensors.map((t) => ({ name: t.name, ggmlType: ggmlType(t.type), dims: t.dims })), part.layout.offsets, part.layout.size);
    }
    await commitAll(outs, opts.force === true);
  } finally {
    for (const out of outs) await out.abort();
    await source.close();
  }
  return {
    output, architecture: plan.architecture, outtype: prepared.outtype, bytes: chosen.reduce((a, p) => a + p.layout.size, 0), metadataKeys: plan.metadata.length,
    tensors: chosen.flatMap((p) => p.tensors).map((t) => ({ name: t.name, source: t.source, type: t.type, dims: t.dims })),
    files: chosen.map((p) => ({ path: p.path, bytes: p.layout.size, tensors: p.tensors.length })),
    notes: plan.notes,
  };
}

export { CHUNK_VALUES } from "../../io/hf-gguf/folder.js";
