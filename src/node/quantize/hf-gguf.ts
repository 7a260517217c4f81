/**
 * A Hugging Face folder straight to a quantized GGUF, in one pass and with no file in between:
 *
 * - `quantizeHfFolder(DIR, OUT.gguf, { preset })` writes what llama_model_quantize writes from the
 *   file convert_hf_to_gguf.py makes of DIR with its default `--outtype auto`;
 * - `convertHfFolderToGgml(DIR, OUT.gguf, { to })` writes what `convert IN.gguf --to TYPE` writes
 *   from that same file (convertToGgufFile's GGUF form).
 *
 * That file is never written: its plan (src/io/hf-gguf/) gives the metadata and tensor table, and
 * each tensor's rows are made from the folder as convert_hf_to_gguf stores them (BF16, F16 or F32,
 * encode.ts), a band at a time, then handed to the same plan and job as a GGUF input's rows
 * (quantize-plan.ts, writePlannedGguf): the bytes of the file are the same as the two steps'.
 */
import { TensorcastError } from "../../errors.js";
import { canQuantize } from "../../ggml/quantize/index.js";
import { ggmlType, type GgmlType } from "../../ggml/types.js";
import { encodeGenerated, encodeRowChunk, partRows, rowGroup, rowLength } from "../../io/hf-gguf/encode.js";
import type { HfGgufTensor } from "../../io/hf-gguf/plan.js";
import { planGgufQuantization, quantizedMetadata } from "../../io/gguf/quantize-plan.js";
import type { GgufMetadataEntry } from "../../io/gguf/values.js";
import { CHUNK_VALUES, prepareFolder } from "../convert/hf-gguf.js";
import { checkOutput, removeStaleTemporaries } from "../io/file.js";
import type { FileTensor, TensorFile } from "../io/tensors.js";
import { convertedMetadata, fileTypeOf, planTensor, type ConvertToGgufOptions } from "./gguf-convert.js";
import { checkImatrix, quantizeReport, writePlannedGguf, type QuantizeGgufFileOptions, type QuantizeGgufReport, type RowSource } from "./gguf.js";

/** Bytes per value of the types convert_hf_to_gguf's auto output stores. */
const VALUE_BYTES: Readonly<Record<string, number>> = { F32: 4, F16: 2, BF16: 2 };

/**
 * The rows of `t` as convert_hf_to_gguf stores them, in GGML rows (dims[0] values each): the
 * folder's values (its parts one after the other: merged experts) read in chunks of whole row
 * groups (a permuted Q or K's heads), encoded, and the band asked for cut out of the chunk; bands
 * come in order, so each value is read once. `sources` gives each part's tensor by its name.
 */
export function folderRows(t: HfGgufTensor, sources: ReadonlyMap<string, FileTensor>, chunkValues = CHUNK_VALUES): RowSource {
  const per = VALUE_BYTES[t.type];
  if (per === undefined) throw new TensorcastError("INTERNAL", `tensor ${t.name}: rows of ${t.type} are not cut into bands`);
  const ncols = t.dims[0];
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
      const s = sources.get(part.name);
      if (s === undefined) throw new TensorcastError("INTERNAL", `tensor ${part.name} of the plan is not in the folder`);
      out.set(encodeRowChunk(t, await s.read(x - k * partValues, end - x), part.dtype), (x - a) * per);
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

interface Opened {
  readonly file: TensorFile;
  readonly tensors: readonly HfGgufTensor[];
  readonly metadata: readonly GgufMetadataEntry[];
  readonly sources: Map<string, RowSource>;
}

/** The folder planned as convert_hf_to_gguf --outtype auto plans it, opened, with every tensor's row source. */
/** How a folder is read: the values per read chunk (tests make them small), the name for a BPE tokenizer whose check-text hash is unknown. */
interface FolderOptions {
  readonly chunkValues?: number;
  readonly tokenizerPre?: string;
}

async function openAuto(folder: string, chunkValues?: number, tokenizerPre?: string): Promise<Opened> {
  const prepared = await prepareFolder(folder, "auto", { tokenizerPre });
  const file = await prepared.open();
  const byName = new Map(file.tensors.map((t) => [t.name, t]));
  const sources = new Map<string, RowSource>();
  for (const t of prepared.plan.tensors) sources.set(t.name, folderRows(t, byName, chunkValues));
  return { file, tensors: prepared.plan.tensors, metadata: prepared.plan.metadata, sources };
}

/**
 * Quantizes the Hugging Face folder `folder` (safetensors, one file or sharded; PyTorch .bin
 * shards; a Hub cache snapshot) into `output` with a llama-quantize preset: byte for byte
 * llama_model_quantize's output for the file convert_hf_to_gguf.py --outtype auto writes.
 * @throws TensorcastError as planHfToGguf (a model class or tokenizer not converted) and
 *         planGgufQuantization (an unknown preset; an IQ1/IQ2/IQ3_XXS/Q2_K_S preset without an
 *         importance matrix) do; INVALID_DATA for NaN or Inf in a tensor (llama.cpp refuses them).
 */
export async function quantizeHfFolder(folder: string, output: string, opts: QuantizeGgufFileOptions & FolderOptions): Promise<QuantizeGgufReport> {
  const started = performance.now();
  if (opts.keepSplit === true) throw new TensorcastError("INVALID_ATTRIBUTE", "--keep-split keeps a split GGUF input's parts; a folder has none (--split-max-size or --split-max-tensors split the output)");
  if (opts.split === undefined) await checkOutput(output, { input: folder, force: opts.force === true });
  const src = await openAuto(folder, opts.chunkValues, opts.tokenizerPre);
  try {
    const inputs = src.tensors.map((t) => ({ name: t.name, ggmlType: ggmlType(t.type), dims: t.dims }));
    const plan = planGgufQuantization(new Map(src.metadata.map((m) => [m.key, m])), inputs, opts);
    checkImatrix(plan, opts.imatrixData);
    const metadata = quantizedMetadata(src.metadata, plan.fileType, opts.extraMetadata ?? []);
    await removeStaleTemporaries(output);
    const written = await writePlannedGguf(output, metadata, plan.tensors, src.sources, opts);
    return quantizeReport(folder, output, plan.preset.name, plan.fileType, plan.tensors, src.file.size, written, started);
  } finally {
    await src.file.close();
  }
}

/**
 * Writes the folder as GGUF with every float tensor of two or more dimensions in one GGML type:
 * what convertToGgufFile writes from the file convert_hf_to_gguf.py --outtype auto makes of it
 * (its tensor order and metadata, general.file_type set last; rows that are not whole blocks fall
 * back as llama-quantize's do).
 * @throws TensorcastError as convertToGgufFile does for a GGUF input.
 */
export async function convertHfFolderToGgml(folder: string, output: string, opts: Pick<ConvertToGgufOptions, "to" | "force" | "signal" | "onProgress"> & FolderOptions): Promise<QuantizeGgufReport> {
  const started = performance.now();
  const to: GgmlType = typeof opts.to === "string" ? ggmlType(opts.to) : opts.to;
  if (!to.stored || !canQuantize(to, true)) throw new TensorcastError("UNSUPPORTED_TYPE", `tensorcast does not write GGML type ${to.name}`);
  await checkOutput(output, { input: folder, force: opts.force === true });
  const src = await openAuto(folder, opts.chunkValues, opts.tokenizerPre);
  try {
    const planned = src.tensors.map((t) => planTensor(t.name, ggmlType(t.type), t.shape, to, false));
    const metadata = convertedMetadata(src.metadata, to);
    await removeStaleTemporaries(output);
    const written = await writePlannedGguf(output, metadata, planned, src.sources, opts);
    return quantizeReport(folder, output, `--to ${to.name}`, fileTypeOf(to) ?? -1, planned, src.file.size, written, started);
  } finally {
    await src.file.close();
  }
}
