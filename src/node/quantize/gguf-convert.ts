/**
 * `convert IN --to GGMLTYPE -o OUT.gguf`: any file convert reads (a GGUF model, safetensors, .npy,
 * .onnx, a PyTorch checkpoint) written as GGUF with every float tensor of two or more dimensions
 * in one GGML type, the way llama-quantize --pure would store it: rows that are not whole blocks of
 * the type fall back as llama-quantize's tensor_type_fallback does (Q4_K to Q5_0, ...; F16 when
 * rows are not a multiple of 32), and the report names each one. 1-D float tensors are F32, integer
 * tensors keep their type (I8, I16, I32, I64). Names and order are the input's (a Hugging Face
 * name stays as it is: mapping names to llama.cpp's is not done here).
 *
 * A GGUF input keeps its metadata (split.* dropped, general.quantization_version and
 * general.file_type set last as llama-quantize sets them); another input gets those two only.
 */
import { TensorcastError } from "../../index.js";
import { LLAMA_PRESETS } from "../../ggml/presets.js";
import { canQuantize } from "../../ggml/quantize/index.js";
import { ggmlType, type GgmlType } from "../../ggml/types.js";
import { fallbackType, quantizedMetadata, requiresImatrix, type PlannedTensor } from "../../io/gguf/quantize-plan.js";
import { readGgufBlocks } from "../../io/gguf/records.js";
import type { GgufMetadataEntry } from "../../io/gguf/values.js";
import { checkOutput } from "../io/file.js";
import { openGguf } from "../io/gguf.js";
import { openTensorFile, type OpenOptions } from "../io/reader.js";
import type { TensorFile } from "../io/tensors.js";
import { quantizeReport, writePlannedGguf, type GgufJobOptions, type QuantizeGgufReport, type RowSource } from "./gguf.js";

export interface ConvertToGgufOptions extends OpenOptions, GgufJobOptions {
  /** The GGML type of the 2-D and larger float tensors (a name in any case). */
  readonly to: GgmlType | string;
  /** Quantize tensors that are block-quantized already (a GGUF input's), dequantized first. */
  readonly allowRequantize?: boolean;
  readonly force?: boolean;
  readonly signal?: AbortSignal;
  readonly onProgress?: (done: number, total: number) => void;
}

/** The GGML type a file's tensor type is stored as. */
const GGML_OF: Readonly<Record<string, string>> = {
  float32: "F32", float16: "F16", bfloat16: "BF16", float64: "F64", int8: "I8", int16: "I16", int32: "I32", int64: "I64",
};

/** general.file_type for a type: the ftype of the first llama-quantize preset whose tensors default to it. */
export function fileTypeOf(t: GgmlType): number | undefined {
  return LLAMA_PRESETS.find((p) => p.aliasOf === undefined && p.defaultType === t)?.ftype;
}

/**
 * A GGUF input's metadata as the output keeps it: split.* dropped, general.quantization_version
 * and general.file_type (fileTypeOf `to`; none when no preset is that type) set last.
 */
export function convertedMetadata(input: Iterable<GgufMetadataEntry>, to: GgmlType): GgufMetadataEntry[] {
  const fileType = fileTypeOf(to);
  const metadata = quantizedMetadata(input, fileType ?? 0);
  return fileType === undefined ? metadata.filter((m) => m.key !== "general.file_type") : metadata;
}

function dimsOf(shape: readonly number[]): number[] {
  const d = shape.length === 0 ? [1] : shape.slice().reverse();
  while (d.length > 1 && d[d.length - 1] === 1) d.pop();
  return d;
}

/** One tensor's place in the output: its type, and the fallback when rows do not fit. */
export function planTensor(name: string, from: GgmlType, shape: readonly number[], to: GgmlType, allowRequantize: boolean): PlannedTensor {
  const dims = dimsOf(shape);
  const float = from.quantized || from.name === "F32" || from.name === "F16" || from.name === "BF16" || from.name === "F64";
  let target = from;
  let fallbackFrom: GgmlType | undefined;
  if (float && dims.length >= 2) {
    target = fallbackType(to, dims[0]);
    if (target !== to) fallbackFrom = to;
  } else if (float) {
    // 1-D tensors (norms, biases) stay float32, as llama.cpp keeps them.
    target = from.quantized ? from : ggmlType("F32");
  }
  if (from.quantized && target !== from && !allowRequantize) {
    throw new TensorcastError("UNSUPPORTED_TYPE", `tensor ${name} is ${from.name} already: requantizing from type ${from.name} is disabled, as in llama-quantize (--allow-requantize dequantizes it first, losing more)`);
  }
  if (target !== from && requiresImatrix(name, target, -1) && name !== "output.weight") {
    throw new TensorcastError("UNSUPPORTED_TYPE", `tensor ${name}: ${target.name} needs an importance matrix, as llama.cpp requires one; use tensorcast quantize IN.gguf --mode PRESET --imatrix FILE`);
  }
  return { name, from, to: target, dims, quantize: target !== from, allowed: float, requiresImatrix: false, ...(fallbackFrom ? { fallbackFrom } : {}) };
}

function sourceType(name: string, dtypeName: string): GgmlType {
  const g = GGML_OF[dtypeName];
  if (g === undefined) {
    throw new TensorcastError("UNSUPPORTED_TYPE", `tensor ${name} is ${dtypeName}, which GGUF cannot hold and tensorcast does not quantize from; GGUF takes float32, float16, bfloat16, float64 and int8 to int64 (convert it to float32 first)`);
  }
  return ggmlType(g);
}

/**
 * Writes the tensors of `input` as the GGUF file `output`, the float ones of two or more
 * dimensions in `opts.to`.
 * @throws TensorcastError UNKNOWN_DTYPE for a name that is no GGML type; UNSUPPORTED_TYPE for a
 *         type tensorcast does not write, one that needs an importance matrix (IQ1, IQ2, IQ3_XXS),
 *         a tensor type GGUF cannot hold, a quantized tensor without allowRequantize;
 *         INVALID_DATA for NaN or Inf (refused as llama.cpp's checks refuse them).
 */
export async function convertToGgufFile(input: string, output: string, opts: ConvertToGgufOptions): Promise<QuantizeGgufReport> {
  const started = performance.now();
  const to = typeof opts.to === "string" ? ggmlType(opts.to) : opts.to;
  if (!to.stored || !canQuantize(to, true)) throw new TensorcastError("UNSUPPORTED_TYPE", `tensorcast does not write GGML type ${to.name}`);
  await checkOutput(output, { input, force: opts.force === true });
  const allowRequantize = opts.allowRequantize === true;
  const fileType = fileTypeOf(to);
  let file: TensorFile;
  let metadataIn: GgufMetadataEntry[] = [];
  let planned: PlannedTensor[];
  const sources = new Map<string, RowSource>();
  const gguf = opts.format === "gguf" || (opts.format === undefined && input.toLowerCase().endsWith(".gguf"));
  if (gguf) {
    const g = await openGguf(input);
    file = g;
    metadataIn = [...g.model.metadata.values()];
    try {
      planned = g.model.tensors.map((t) => planTensor(t.name, t.ggmlType, t.shape, to, allowRequantize));
    } catch (e) {
      await g.close();
      throw e;
    }
    for (const t of g.model.tensors) {
      const perRow = t.dims[0] / t.ggmlType.blockSize;
      sources.set(t.name, { type: t.ggmlType, read: (first, rows) => readGgufBlocks(g.model, t, first * perRow, rows * perRow) });
    }
  } else {
    file = await openTensorFile(input, opts);
    try {
      planned = file.tensors.map((t) => planTensor(t.name, sourceType(t.name, t.dtype.name), t.shape, to, allowRequantize));
    } catch (e) {
      await file.close();
      throw e;
    }
    for (const t of file.tensors) {
      const ncols = t.shape.length === 0 ? 1 : t.shape[t.shape.length - 1];
      sources.set(t.name, { type: sourceType(t.name, t.dtype.name), read: (first, rows) => t.read(first * ncols, rows * ncols) });
    }
  }
  try {
    let metadata = convertedMetadata(metadataIn, to);
    if (!gguf) metadata = metadata.filter((m) => m.key === "general.quantization_version" || m.key === "general.file_type");
    const written = await writePlannedGguf(output, metadata, planned, sources, opts);
    return quantizeReport(input, output, `--to ${to.name}`, fileType ?? -1, planned, file.size, written, started);
  } finally {
    await file.close();
  }
}
