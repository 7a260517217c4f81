/**
 * A Hugging Face folder read for its GGUF, whatever holds it: tensorcast/node's folder jobs
 * (src/node/convert/hf-gguf.ts, src/node/quantize/hf-gguf.ts: a folder on disk) and the
 * playground's folder panel (the files a directory picker gives) read its JSON files, order its
 * tensors and make each tensor's bytes here, so the GGUF is the same byte for byte wherever it is made.
 *
 * - `readHfFolderFiles`: config.json, the tokenizer files and the chat template, through an HfFolderReader;
 * - `hfTensorHeaders`: the tensors in convert_hf_to_gguf's order, from a checkpoint layout
 *   (src/io/checkpoint-layout.ts);
 * - `hfTensorChunks`: a tensor's stored bytes, a chunk of rows at a time (convert_hf_to_gguf's outtypes);
 * - `folderRows`: the rows of a tensor as --outtype auto stores them, a band at a time (a preset's input);
 * - `writeHfGguf` and `hfQuantizeJob`: one GGUF to any sink, as `convert DIR --to T` and `quantize DIR --mode PRESET` write it.
 */
import { TensorcastError } from "../../errors.js";
import { ggmlType } from "../../ggml/types.js";
import type { CheckpointLayout } from "../checkpoint-layout.js";
import { checkImatrix, type GgufModelJob, type GgufModelJobOptions, type RowSource } from "../gguf/quantize-job.js";
import { planGgufQuantization, quantizedMetadata } from "../gguf/quantize-plan.js";
import { layoutGguf, writeGguf, type GgufLayout, type GgufSink } from "../gguf/write.js";
import { utf8Decode } from "../utf8.js";
import { encodeGenerated, encodeRowChunk, partRows, rowGroup, rowLength } from "./encode.js";
import type { Json } from "./json.js";
import { autoOuttype, planHfToGguf, type HfFolderFiles, type HfGgufOuttype, type HfGgufPlan, type HfGgufPlanOptions, type HfGgufTensor, type HfTensorHeader } from "./plan.js";

/** About 16 MiB of float32 values per chunk (`chunkValues` in tests), whole row groups (a row group alone when bigger). */
export const CHUNK_VALUES = 4 * 1024 * 1024;

/** An outtype, or convert_hf_to_gguf's default "auto" (autoOuttype: the 16-bit type of the folder's first 2-D tensor). */
export type HfGgufOuttypeOrAuto = HfGgufOuttype | "auto";

/** The small files of a folder, by name. */
export interface HfFolderReader {
  /** The folder's own name: gguf-py names the model after it. */
  readonly folderName: string;
  /** The folder as messages name it. */
  readonly label: string;
  /** A file of the folder as messages name it. */
  pathOf(name: string): string;
  /** The bytes of the file `name`, or undefined when the folder has no such file. */
  readOptional(name: string): Promise<Uint8Array | undefined>;
}

/** A folder tensor's elements, read as raw little-endian bytes: [start, start + count). */
export interface ElementReader {
  read(start: number, count: number): Promise<Uint8Array>;
}

function parseJson(path: string, b: Uint8Array | undefined): Json | undefined {
  if (b === undefined) return undefined;
  try {
    return JSON.parse(utf8Decode(b, false)) as Json;
  } catch (e) {
    throw new TensorcastError("INVALID_DATA", `${path}: not JSON (${(e as Error).message})`);
  }
}

/**
 * The files of the folder the plan reads besides its tensors.
 * @throws TensorcastError INVALID_DATA without config.json or for a file that is not JSON;
 *         UNSUPPORTED_TYPE for added_tokens.json beside tokenizer.model.
 */
export async function readHfFolderFiles(folder: HfFolderReader): Promise<HfFolderFiles> {
  const read = (n: string): Promise<Uint8Array | undefined> => folder.readOptional(n);
  const config = parseJson(folder.pathOf("config.json"), await read("config.json"));
  if (config === undefined) throw new TensorcastError("INVALID_DATA", `${folder.label}: has no config.json, which names the model class to convert`);
  if ((await read("added_tokens.json")) !== undefined && (await read("tokenizer.model")) !== undefined) {
    throw new TensorcastError("UNSUPPORTED_TYPE", `${folder.label}: added_tokens.json beside tokenizer.model is not read; convert without it or with the tokens in tokenizer_config.json`);
  }
  const jinja = await read("chat_template.jinja");
  return {
    folderName: folder.folderName,
    config,
    tokenizerJson: parseJson(folder.pathOf("tokenizer.json"), await read("tokenizer.json")),
    tokenizerConfig: parseJson(folder.pathOf("tokenizer_config.json"), await read("tokenizer_config.json")),
    tokenizerModel: await read("tokenizer.model"),
    chatTemplateJinja: jinja === undefined ? undefined : utf8Decode(jinja, false),
    chatTemplateJson: parseJson(folder.pathOf("chat_template.json"), await read("chat_template.json")),
  };
}

/** A safetensors folder's tensor headers in convert_hf_to_gguf's order: shards by name, each shard's tensors by name (gguf-py's SafetensorsLocal sorts them). */
export function hfTensorHeaders(layout: Pick<CheckpointLayout, "tensors">): HfTensorHeader[] {
  const headers: HfTensorHeader[] = [];
  for (const list of layout.tensors) {
    const sorted = [...list].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const t of sorted) headers.push({ name: t.name, dtype: t.dtype, shape: t.shape });
  }
  return headers;
}

/** The plan for a folder's files and tensor headers at `outtype` ("auto" resolved, as autoOuttype resolves it). */
export function planHfFolder(files: HfFolderFiles, headers: readonly HfTensorHeader[], outtype: HfGgufOuttypeOrAuto, opts: HfGgufPlanOptions = {}): { plan: HfGgufPlan; outtype: HfGgufOuttype } {
  const resolved = outtype === "auto" ? autoOuttype(headers) : outtype;
  return { plan: planHfToGguf(files, headers, resolved, opts), outtype: resolved };
}

function sourceOf(sources: ReadonlyMap<string, ElementReader>, name: string): ElementReader {
  const s = sources.get(name);
  if (s === undefined) throw new TensorcastError("INTERNAL", `tensor ${name} of the plan is not in the folder`);
  return s;
}

/**
 * A tensor's stored bytes, read and encoded a chunk of rows at a time, part after part (merged
 * experts: one expert's rows, then the next's): memory stays a few chunks whatever the tensor's
 * size or its number of experts. `sources` gives each part's tensor by its name.
 */
export async function* hfTensorChunks(t: HfGgufTensor, sources: ReadonlyMap<string, ElementReader>, chunkValues = CHUNK_VALUES): AsyncGenerator<Uint8Array> {
  if (t.generated !== undefined) {
    yield encodeGenerated(t);
    return;
  }
  const len = rowLength(t);
  const rows = partRows(t);
  const group = rowGroup(t);
  const per = Math.max(group, Math.floor(chunkValues / Math.max(1, len * group)) * group);
  for (const part of t.parts) {
    const s = sourceOf(sources, part.name);
    for (let r = 0; r < rows; r += per) {
      const n = Math.min(per, rows - r);
      yield encodeRowChunk(t, await s.read(r * len, n * len), part.dtype);
    }
  }
}

/**
 * Writes the plan's GGUF to `sink` as it is made: convert_hf_to_gguf.py's file for the folder,
 * one file (no split), the bytes `tensorcast convert DIR --to T -o OUT.gguf` writes.
 * @throws TensorcastError as the sources and the sink do.
 */
export function writeHfGguf(sink: GgufSink, plan: HfGgufPlan, sources: ReadonlyMap<string, ElementReader>, chunkValues = CHUNK_VALUES): Promise<GgufLayout> {
  return writeGguf(sink, plan.metadata, plan.tensors.map((t) => ({ name: t.name, ggmlType: t.type, dims: t.dims, data: hfTensorChunks(t, sources, chunkValues) })));
}

/** The layout writeHfGguf writes for `plan` (its size before any byte is written). */
export function hfGgufLayout(plan: HfGgufPlan): GgufLayout {
  return layoutGguf(plan.metadata, plan.tensors.map((t) => ({ name: t.name, ggmlType: t.type, dims: t.dims })));
}

/** Bytes per value of the types convert_hf_to_gguf's auto output stores. */
const VALUE_BYTES: Readonly<Record<string, number>> = { F32: 4, F16: 2, BF16: 2 };

/**
 * The rows of `t` as convert_hf_to_gguf stores them, in GGML rows (dims[0] values each): the
 * folder's values (its parts one after the other: merged experts) read in chunks of whole row
 * groups (a permuted Q or K's heads), encoded, and the band asked for cut out of the chunk; bands
 * come in order, so each value is read once. `sources` gives each part's tensor by its name.
 */
export function folderRows(t: HfGgufTensor, sources: ReadonlyMap<string, ElementReader>, chunkValues = CHUNK_VALUES): RowSource {
  const per = VALUE_BYTES[t.type];
  if (per === undefined) throw new TensorcastError("INTERNAL", `tensor ${t.name}: rows of ${t.type} are not cut into bands`);
  const ncols = t.dims[0]!;
  const group = Math.max(1, rowGroup(t) * rowLength(t));
  const total = t.shape.reduce((a, b) => a * b, 1);
  const partValues = partRows(t) * rowLength(t);
  // values [a, b) of the whole tensor, encoded part by part (a part's values are whole groups)
  const encode = async (a: number, b: number): Promise<Uint8Array> => {
    if (t.generated !== undefined) return encodeGenerated(t).subarray(a * per, b * per);
    const out = new Uint8Array((b - a) * per);
    for (let x = a; x < b; ) {
      const k = Math.floor(x / partValues);
      const end = Math.min(b, (k + 1) * partValues);
      const part = t.parts[k]!;
      out.set(encodeRowChunk(t, await sourceOf(sources, part.name).read(x - k * partValues, end - x), part.dtype), (x - a) * per);
      x = end;
    }
    return out;
  };
  let chunk: { start: number; end: number; bytes: Uint8Array } | undefined;
  return {
    type: ggmlType(t.type),
    async read(firstRow, rows) {
      const start = firstRow * ncols;
      const end = (firstRow + rows) * ncols;
      if (chunk === undefined || start < chunk.start || end > chunk.end) {
        const a = Math.floor(start / group) * group;
        const b = Math.min(total, Math.max(Math.ceil(end / group) * group, a + Math.floor(chunkValues / group) * group));
        let bytes: Uint8Array;
        if (chunk !== undefined && a >= chunk.start && a < chunk.end) {
          // A band across the chunk's end: the groups encoded already are kept, the rest read.
          const fresh = await encode(chunk.end, b);
          bytes = new Uint8Array((b - a) * per);
          bytes.set(chunk.bytes.subarray((a - chunk.start) * per));
          bytes.set(fresh, (chunk.end - a) * per);
        } else {
          bytes = await encode(a, b);
        }
        chunk = { start: a, end: b, bytes };
      }
      const band = chunk.bytes.subarray((start - chunk.start) * per, (end - chunk.start) * per);
      // the tensor's last band: the source is kept until the file is written, its chunk need not be
      if (end >= total) chunk = undefined;
      return band;
    },
  };
}

/**
 * The job of quantizing a folder planned with --outtype auto (`plan`) as llama_model_quantize
 * quantizes the file convert_hf_to_gguf.py writes for it: the quantization planned from that file's
 * metadata and tensor table, its importance weights checked, the output's metadata (extraMetadata
 * set last), each tensor's rows made from the folder (folderRows). runGgufJob (src/io/gguf/quantize-job.ts) writes it.
 * @throws TensorcastError as planGgufQuantization and checkImatrix.
 */
export function hfQuantizeJob(plan: HfGgufPlan, sources: ReadonlyMap<string, ElementReader>, opts: GgufModelJobOptions & { chunkValues?: number }): GgufModelJob {
  const inputs = plan.tensors.map((t) => ({ name: t.name, ggmlType: ggmlType(t.type), dims: t.dims }));
  const q = planGgufQuantization(new Map(plan.metadata.map((m) => [m.key, m])), inputs, opts);
  checkImatrix(q, opts.imatrixData);
  const rows = new Map<string, RowSource>();
  for (const t of plan.tensors) rows.set(t.name, folderRows(t, sources, opts.chunkValues));
  return { plan: q, metadata: quantizedMetadata(plan.metadata, q.fileType, opts.extraMetadata ?? []), sources: rows };
}
