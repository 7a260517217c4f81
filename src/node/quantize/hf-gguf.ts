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
import { folderRows, hfQuantizeJob } from "../../io/hf-gguf/folder.js";
import type { HfGgufPlan, HfGgufTensor } from "../../io/hf-gguf/plan.js";
import type { GgufMetadataEntry } from "../../io/gguf/values.js";
import { prepareFolder } from "../convert/hf-gguf.js";
import { checkOutput, removeStaleTemporaries } from "../io/file.js";
import type { FileTensor, TensorFile } from "../io/tensors.js";
import { convertedMetadata, fileTypeOf, planTensor, type ConvertToGgufOptions } from "./gguf-convert.js";
import { quantizeReport, writePlannedGguf, type QuantizeGgufFileOptions, type QuantizeGgufReport, type RowSource } from "./gguf.js";

/** The rows of a folder's tensor as --outtype auto stores them: the core's (src/io/hf-gguf/folder.ts). */
export { folderRows } from "../../io/hf-gguf/folder.js";

interface Opened {
  readonly file: TensorFile;
  readonly tensors: readonly HfGgufTensor[];
  readonly metadata: readonly GgufMetadataEntry[];
  readonly sources: Map<string, RowSource>;
  readonly plan: HfGgufPlan;
  readonly byName: ReadonlyMap<string, FileTensor>;
}

/** How a folder is read: the values per read chunk (tests make them small), the name for a BPE tokenizer whose check-text hash is unknown. */
interface FolderOptions {
  readonly chunkValues?: number;
  readonly tokenizerPre?: string;
}

/** The folder planned as convert_hf_to_gguf --outtype auto plans it, opened, with every tensor's row source. */
async function openAuto(folder: string, chunkValues?: number, tokenizerPre?: string): Promise<Opened> {
  const prepared = await prepareFolder(folder, "auto", { tokenizerPre });
  const file = await prepared.open();
  const byName = new Map(file.tensors.map((t) => [t.name, t]));
  const sources = new Map<string, RowSource>();
  for (const t of prepared.plan.tensors) sources.set(t.name, folderRows(t, byName, chunkValues));
  return { file, tensors: prepared.plan.tensors, metadata: prepared.plan.metadata, sources, plan: prepared.plan, byName };
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
    const { plan, metadata, sources } = hfQuantizeJob(src.plan, src.byName, opts);
    await removeStaleTemporaries(output);
    const written = await writePlannedGguf(output, metadata, plan.tensors, sources, opts);
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
