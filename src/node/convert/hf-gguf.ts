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
import { autoOuttype, planHfToGguf, type HfFolderFiles, type HfGgufOuttype, type HfGgufPlan, type HfGgufTensor, type HfTensorHeader } from "../../io/hf-gguf/plan.js";
import { encodeRowChunk, rowGroup, rowLength } from "../../io/hf-gguf/encode.js";
import type { FileTensor, TensorFile } from "../io/tensors.js";
import type { Json } from "../../io/hf-gguf/json.js";
import { layoutGguf, writeGguf } from "../../io/gguf/write.js";
import { openCheckpoint, readCheckpoint } from "../io/checkpoint.js";
import { AtomicOutput, checkOutput, removeStaleTemporaries } from "../io/file.js";
import { openGguf } from "../io/gguf.js";
import { isPytorchFolder, openPytorchFolder } from "../io/pytorch-folder.js";

export interface HfGgufReport {
  readonly output: string;
  readonly architecture: string;
  /** The outtype written ("auto" resolved to bfloat16 or float16). */
  readonly outtype: HfGgufOuttype;
  readonly bytes: number;
  readonly metadataKeys: number;
  readonly tensors: readonly { readonly name: string; readonly source: string; readonly type: string; readonly dims: readonly number[] }[];
}

async function readOptional(path: string): Promise<Buffer | undefined> {
  try {
    return await fsp.readFile(path);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw new TensorcastError("IO_ERROR", `${path}: cannot be read (${(e as Error).message})`);
  }
}

function parseJson(path: string, b: Buffer | undefined): Json | undefined {
  if (b === undefined) return undefined;
  try {
    return JSON.parse(b.toString("utf8")) as Json;
  } catch (e) {
    throw new TensorcastError("INVALID_DATA", `${path}: not JSON (${(e as Error).message})`);
  }
}

/** The files of `folder` the plan reads. */
export async function readHfFolderFiles(folder: string): Promise<HfFolderFiles> {
  const at = (n: string): string => join(folder, n);
  const config = parseJson(at("config.json"), await readOptional(at("config.json")));
  if (config === undefined) throw new TensorcastError("INVALID_DATA", `${folder}: has no config.json, which names the model class to convert`);
  if ((await readOptional(at("added_tokens.json"))) !== undefined && (await readOptional(at("tokenizer.model"))) !== undefined) {
    throw new TensorcastError("UNSUPPORTED_TYPE", `${folder}: added_tokens.json beside tokenizer.model is not read; convert without it or with the tokens in tokenizer_config.json`);
  }
  const jinja = await readOptional(at("chat_template.jinja"));
  const model = await readOptional(at("tokenizer.model"));
  return {
    folderName: basename(resolve(folder)),
    config,
    tokenizerJson: parseJson(at("tokenizer.json"), await readOptional(at("tokenizer.json"))),
    tokenizerConfig: parseJson(at("tokenizer_config.json"), await readOptional(at("tokenizer_config.json"))),
    tokenizerModel: model === undefined ? undefined : new Uint8Array(model.buffer, model.byteOffset, model.byteLength),
    chatTemplateJinja: jinja?.toString("utf8"),
    chatTemplateJson: parseJson(at("chat_template.json"), await readOptional(at("chat_template.json"))),
  };
}

/** An outtype, or convert_hf_to_gguf's default "auto" (autoOuttype: the 16-bit type of the folder's first 2-D tensor). */
export type HfGgufOuttypeOrAuto = HfGgufOuttype | "auto";

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
  const c = await readCheckpoint(folder);
  const headers: HfTensorHeader[] = [];
  for (const list of c.tensors) {
    const sorted = [...list].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const t of sorted) headers.push({ name: t.name, dtype: t.dtype, shape: t.shape });
  }
  return { headers, open: () => openCheckpoint(folder) };
}

/** The plan for a folder (safetensors, one file or sharded, or PyTorch .bin shards) and how to read its tensors. */
export async function prepareFolder(folder: string, outtype: HfGgufOuttypeOrAuto): Promise<PreparedFolder> {
  const files = await readHfFolderFiles(folder);
  const { headers, open } = await folderTensors(folder);
  const resolved = outtype === "auto" ? autoOuttype(headers) : outtype;
  return { plan: planHfToGguf(files, headers, resolved), outtype: resolved, open };
}

/** The plan for a folder: its tensors in convert_hf_to_gguf's order (folderTensors). */
export async function planFolder(folder: string, outtype: HfGgufOuttypeOrAuto): Promise<HfGgufPlan> {
  return (await prepareFolder(folder, outtype)).plan;
}

/**
 * Converts the folder `folder` into the GGUF file `output`.
 * @throws TensorcastError as planHfToGguf, readCheckpoint and the writer do; IO_ERROR when OUT exists without `force`.
 */
export async function convertHfToGguf(folder: string, output: string, outtype: HfGgufOuttypeOrAuto, opts: { force?: boolean; chunkValues?: number } = {}): Promise<HfGgufReport> {
  await checkOutput(output, { force: opts.force });
  const prepared = await prepareFolder(folder, outtype);
  const plan = prepared.plan;
  const layout = layoutGguf(plan.metadata, plan.tensors.map((t) => ({ name: t.name, ggmlType: t.type, dims: t.dims })));
  await removeStaleTemporaries(output);
  const source = await prepared.open();
  let out: AtomicOutput | undefined;
  try {
    const byName = new Map(source.tensors.map((t) => [t.name, t]));
    out = await AtomicOutput.create(output, { digests: true });
    const sink = out;
    const tensors = plan.tensors.map((t) => ({
      name: t.name, ggmlType: t.type, dims: t.dims,
      data: chunks(t, byName.get(t.source)!, opts.chunkValues ?? CHUNK_VALUES),
    }));
    await writeGguf(sink, plan.metadata, tensors);
    await out.finish(layout.size);
    const differs = await out.checkWritten();
    if (differs !== undefined) throw new TensorcastError("IO_ERROR", `${output}: ${differs}`);
    await verifyGguf(out.temporary, plan, layout.size);
    await out.commit(opts.force === true);
    out = undefined;
  } finally {
    await out?.abort();
    await source.close();
  }
  return {
    output, architecture: plan.architecture, outtype: prepared.outtype, bytes: layout.size, metadataKeys: plan.metadata.length,
    tensors: plan.tensors.map((t) => ({ name: t.name, source: t.source, type: t.type, dims: t.dims })),
  };
}

/** About 16 MiB of float32 values per chunk (`chunkValues` in tests), whole row groups (a row group alone when bigger). */
export const CHUNK_VALUES = 4 * 1024 * 1024;

/** A tensor's stored bytes, read and encoded a chunk of rows at a time: memory stays a few chunks whatever the tensor's size. */
async function* chunks(t: HfGgufTensor, s: FileTensor, chunkValues: number): AsyncGenerator<Uint8Array> {
  const len = rowLength(t);
  const rows = t.shape.length <= 1 ? 1 : (t.shape[0] ?? 0);
  const group = rowGroup(t);
  const per = Math.max(group, Math.floor(chunkValues / Math.max(1, len * group)) * group);
  for (let r = 0; r < rows; r += per) {
    const n = Math.min(per, rows - r);
    yield encodeRowChunk(t, await s.read(r * len, n * len));
  }
}

/** Reads the written file back with our reader: the keys in order with their types, and the tensor table. */
async function verifyGguf(path: string, plan: HfGgufPlan, size: number): Promise<void> {
  const f = await openGguf(path);
  try {
    const bad = (what: string): TensorcastError => new TensorcastError("INTERNAL", `${path}: read back, ${what}`);
    if (f.size !== size) throw bad(`it has ${f.size} bytes, not ${size}`);
    const keys = [...f.model.metadata.values()];
    if (keys.length !== plan.metadata.length) throw bad(`it has ${keys.length} keys, not ${plan.metadata.length}`);
    keys.forEach((e, i) => {
      const want = plan.metadata[i]!;
      if (e.key !== want.key || e.type !== want.type) throw bad(`key ${i} is ${e.key} (${e.type}), not ${want.key} (${want.type})`);
    });
    const ts = f.model.tensors;
    if (ts.length !== plan.tensors.length) throw bad(`it has ${ts.length} tensors, not ${plan.tensors.length}`);
    ts.forEach((t, i) => {
      const want = plan.tensors[i]!;
      if (t.name !== want.name || t.ggmlType.name !== want.type || t.dims.join(",") !== want.dims.join(",")) {
        throw bad(`tensor ${i} is ${t.name} ${t.ggmlType.name} [${t.dims.join(", ")}], not ${want.name} ${want.type} [${want.dims.join(", ")}]`);
      }
    });
  } finally {
    await f.close();
  }
}
