/**
 * `quantizeModelFile(IN, OUT, opts)` and `quantizeModelFolder(DIR, opts)`: the transformers.js
 * variants of ONNX model files, written atomically (a temporary renamed into place, as `convert`
 * does). The model is streamed (streamed.ts): its weights, inline or in side files, are read one at
 * a time by quantizeModel's passes, and OUT gets a side file of its own only when it would pass
 * protobuf's 2 GiB inline.
 */
import { expectOptionsObject, expectPath } from "../args.js";
import { promises as fsp } from "node:fs";
import { basename, join } from "node:path";
import { TensorcastError } from "../../index.js";
import { QUANTIZE_MODES, type LeftFloat, type QuantizeMode, type QuantizeOptions } from "../../io/onnx/quantize/model.js";
import { checkOutput } from "../io/file.js";
import { sideFilePath } from "../io/external-data.js";
import { quantizeStreamed } from "./streamed.js";

/** What quantizeModelFile does: quantizeModel's options, and `force` to replace an existing OUT. */
export interface QuantizeFileOptions extends QuantizeOptions {
  force?: boolean;
  /**
   * OUT's side file, relative to OUT's folder: every initializer of 1024 bytes or more is written
   * there (as `convert --external-data`). Default: inline, unless OUT would pass 2 GiB; then
   * `<OUT>.data`. IN's own files are never written to.
   */
  externalData?: string;
}

/**
 * One variant written.
 * @example { input: "onnx/model.onnx", output: "onnx/model_q4.onnx", mode: "q4", inputBytes: 145559, outputBytes: 88860, seconds: 0.02, quantized: 3, left: [] }
 */
export interface QuantizeFileReport {
  input: string;
  output: string;
  mode: QuantizeMode;
  inputBytes: number;
  outputBytes: number;
  seconds: number;
  /** Nodes quantized (fp16: tensors converted); 0 means OUT is the model as it was. */
  quantized: number;
  /** Candidate nodes left float, and why. */
  left: LeftFloat[];
  /** OUT's side file, written when OUT would pass protobuf's 2 GiB inline. */
  externalData?: string;
}

/**
 * Quantizes the model file IN into OUT (see quantizeModel for the modes).
 * @example await quantizeModelFile("model.onnx", "model_q4.onnx", { mode: "q4" })
 * @throws TensorcastError as quantizeModel; INVALID_ATTRIBUTE when OUT exists (without `force`);
 *         OUTPUT_IS_INPUT when OUT is IN; IO_ERROR for file system failures.
 */
export async function quantizeModelFile(input: string, output: string, opts: QuantizeFileOptions): Promise<QuantizeFileReport> {
  expectPath(input, "quantizeModelFile's input");
  expectPath(output, "quantizeModelFile's output");
  expectOptionsObject(opts, "quantizeModelFile");
  if (opts === undefined) throw new TensorcastError("INVALID_ATTRIBUTE", "quantizeModelFile needs its options, with a mode (q4, q8, int8, uint8, bnb4, fp16 or q4f16)");
  const start = performance.now();
  await checkOutput(output, { input, force: opts.force === true });
  if (opts.externalData !== undefined) {
    if (typeof opts.externalData !== "string" || opts.externalData === "") {
      throw new TensorcastError("INVALID_ATTRIBUTE", `quantizeModelFile's externalData must be a file name relative to the output's folder, got ${JSON.stringify(opts.externalData)}`);
    }
    await checkOutput(sideFilePath(output, opts.externalData), { input, force: opts.force === true });
  }
  const { force: _force, externalData, ...modelOpts } = opts;
  const r = await quantizeStreamed(input, output, modelOpts, opts.force === true, externalData);
  return {
    input, output, mode: r.mode, inputBytes: r.bytesIn, outputBytes: r.bytesOut,
    seconds: (performance.now() - start) / 1000, quantized: r.quantized, left: r.left,
    ...(r.externalData !== undefined ? { externalData: r.externalData } : {}),
  };
}

/** The file suffix of each mode, as transformers.js names the variants (q8 is "quantized"). */
export function variantSuffix(mode: QuantizeMode): string {
  return mode === "q8" ? "quantized" : mode;
}

/** Whether a model file name (without .onnx) is itself a variant: model_q4, decoder_model_merged_quantized, ... */
export function isVariantName(stem: string): boolean {
  return QUANTIZE_MODES.some((m) => stem.endsWith(`_${variantSuffix(m)}`));
}

/** What quantizeModelFolder does: the modes (default all), and the options every mode shares. */
export interface QuantizeFolderOptions extends Omit<QuantizeFileOptions, "mode"> {
  modes?: readonly QuantizeMode[];
  /** Called before each variant is made. */
  onVariant?: (input: string, output: string, mode: QuantizeMode) => void;
}

/**
 * Writes DIR/onnx/NAME_SUFFIX.onnx for every DIR/onnx/NAME.onnx that is not a variant itself and
 * every mode, the names transformers.js loads by dtype.
 * @example await quantizeModelFolder("my-model", { modes: ["q4", "q8"] })  // onnx/model_q4.onnx, onnx/model_quantized.onnx
 * @throws TensorcastError IO_ERROR when DIR has no onnx/ folder; INVALID_DATA when it holds no model.
 */
export async function quantizeModelFolder(dir: string, opts: QuantizeFolderOptions = {}): Promise<QuantizeFileReport[]> {
  expectPath(dir, "quantizeModelFolder's folder");
  expectOptionsObject(opts, "quantizeModelFolder");
  const folder = join(dir, "onnx");
  let names: string[];
  try {
    names = (await fsp.readdir(folder)).filter((n) => n.endsWith(".onnx")).sort();
  } catch (e) {
    throw new TensorcastError("IO_ERROR", `${dir}: cannot read its onnx/ folder (${(e as NodeJS.ErrnoException).code ?? String(e)}); a model folder holds onnx/NAME.onnx`);
  }
  const sources = names.filter((n) => !isVariantName(basename(n, ".onnx")));
  if (sources.length === 0) throw new TensorcastError("INVALID_DATA", `${folder} holds no model to quantize (only variants, or no .onnx file)`);
  const { modes = QUANTIZE_MODES, onVariant, ...shared } = opts;
  const reports: QuantizeFileReport[] = [];
  for (const name of sources) {
    for (const mode of modes) {
      const input = join(folder, name);
      const output = join(folder, `${basename(name, ".onnx")}_${variantSuffix(mode)}.onnx`);
      onVariant?.(input, output, mode);
      reports.push(await quantizeModelFile(input, output, { ...shared, mode }));
    }
  }
  return reports;
}
