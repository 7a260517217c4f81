/**
 * `tensorcast quantize` for ONNX models: one variant of a .onnx file (`--mode`), or every variant
 * of a model folder's onnx/*.onnx (`--modes`). `runQuantizeModel` is the entry a dispatcher calls
 * when the input is an .onnx file or a folder with onnx/ (`isOnnxQuantizeInput`); checkpoint
 * quantization (safetensors) is another command's.
 */
import { statSync } from "node:fs";
import { join } from "node:path";
import { QUANTIZE_MODES, type QuantizeMode, type QuantizeOptions } from "../../../io/onnx/quantize/model.js";
import { quantizeModelFile, quantizeModelFolder, type QuantizeFileReport } from "../../quantize/model-file.js";
import { parseCommandArgs, type OptionSpecs, type OptionValues } from "../args.js";
import type { Command } from "../command.js";
import type { CliIO } from "../io.js";
import { EXIT_OK, UsageError } from "../usage.js";

export const QUANTIZE_MODEL_OPTIONS = {
  mode: { type: "string", expects: `a mode: ${QUANTIZE_MODES.join(", ")}` },
  modes: { type: "string", expects: `a comma-separated list of modes among ${QUANTIZE_MODES.join(", ")}` },
  output: { type: "string", short: "o", expects: "the output .onnx file" },
  "block-size": { type: "string", expects: "a power of two of at least 16" },
  asymmetric: { type: "boolean" },
  "accuracy-level": { type: "string", expects: "0, 1, 2, 3 or 4" },
  "per-channel": { type: "boolean" },
  "quant-type": { type: "string", expects: "nf4 or fp4" },
  "force-requantize": { type: "boolean" },
  force: { type: "boolean", short: "f" },
  json: { type: "boolean" },
  help: { type: "boolean", short: "h" },
} as const satisfies OptionSpecs;

export const QUANTIZE_MODEL_HELP = `Usage: tensorcast quantize IN.onnx --mode MODE -o OUT.onnx [options]
       tensorcast quantize DIR [--modes fp16,q8,int8,uint8,q4,q4f16,bnb4] [options]

Makes the model variants transformers.js and onnxruntime-web load, as onnxruntime 1.30's Python
quantizers make them (q4, bnb4: byte for byte; int8, uint8, q8: every weight and node). With a
folder, each DIR/onnx/NAME.onnx that is not a variant gives DIR/onnx/NAME_SUFFIX.onnx (suffix
"quantized" for q8, the mode's name otherwise).

Modes:
  fp16     the whole graph in float16, float32 inputs and outputs
  q8       int8, or uint8 when the model has Conv, GroupQueryAttention or MultiHeadAttention
  int8     dynamic quantization: DynamicQuantizeLinear + MatMulInteger / ConvInteger, int8 weights
  uint8    the same with uint8 weights
  q4       MatMul -> MatMulNBits, 4 bits, block 32, symmetric
  q4f16    q4, then float16 (MatMulNBits computes in float16)
  bnb4     MatMul -> MatMulBnb4, NF4, block 64

Options:
  --mode <mode>            the variant to make of IN.onnx
  --modes <list>           the variants to make in DIR (default: all)
  -o, --output <file>      OUT.onnx (with --mode)
  --block-size <n>         q4 / q4f16 / bnb4 block: a power of two of at least 16
  --asymmetric             q4 / q4f16: zero points
  --accuracy-level <n>     q4 / q4f16: MatMulNBits' accuracy_level (0..4)
  --per-channel            int8 / uint8 / q8: a scale per output channel
  --quant-type <type>      bnb4: nf4 (default) or fp4
  --force-requantize       quantize a model that holds quantized operators already
  -f, --force              replace existing outputs
  --json                   print the summary as JSON
  -h, --help               show this help

A model with nothing to quantize is written as it is (exit 0; the summary says 0 quantized).
`;

/** Whether `path` is what this command quantizes: an .onnx file, or a folder holding onnx/. */
export function isOnnxQuantizeInput(path: string): boolean {
  if (path.toLowerCase().endsWith(".onnx")) return true;
  try {
    return statSync(join(path, "onnx")).isDirectory();
  } catch {
    return false;
  }
}

function mode(value: string, option: string): QuantizeMode {
  if (!(QUANTIZE_MODES as readonly string[]).includes(value)) {
    throw new UsageError(`${option} ${JSON.stringify(value)} is not a mode; the modes are ${QUANTIZE_MODES.join(", ")}`, "quantize");
  }
  return value as QuantizeMode;
}

function integer(value: string | undefined, option: string): number | undefined {
  if (value === undefined) return undefined;
  if (!/^[0-9]+$/.test(value)) throw new UsageError(`${option} needs a non-negative integer, got ${JSON.stringify(value)}`, "quantize");
  return Number(value);
}

/** The library options the command line asks for (mode aside). */
function sharedOptions(o: OptionValues<typeof QUANTIZE_MODEL_OPTIONS>): Omit<QuantizeOptions, "mode"> & { force: boolean } {
  const blockSize = integer(o["block-size"], "--block-size");
  if (blockSize !== undefined && (blockSize < 16 || (blockSize & (blockSize - 1)) !== 0)) {
    throw new UsageError(`--block-size must be a power of two of at least 16 (16, 32, 64, 128, ...), got ${blockSize}`, "quantize");
  }
  const quantType = o["quant-type"];
  if (quantType !== undefined && quantType !== "nf4" && quantType !== "fp4") throw new UsageError(`--quant-type must be nf4 or fp4, got ${JSON.stringify(quantType)}`, "quantize");
  const out: Omit<QuantizeOptions, "mode"> & { force: boolean } = { force: o.force === true };
  if (blockSize !== undefined) out.blockSize = blockSize;
  if (o.asymmetric) out.symmetric = false;
  const level = integer(o["accuracy-level"], "--accuracy-level");
  if (level !== undefined) out.accuracyLevel = level;
  if (o["per-channel"]) out.perChannel = true;
  if (quantType) out.quantType = quantType;
  if (o["force-requantize"]) out.forceRequantize = true;
  return out;
}

function size(n: number): string {
  return n >= 1 << 20 ? `${(n / (1 << 20)).toFixed(1)} MiB` : `${(n / 1024).toFixed(1)} KiB`;
}

/** The summary of one variant, a line and one per node left float. */
export function summaryLines(r: QuantizeFileReport): string[] {
  // fp16 converts tensors (weights and value types), the other modes replace nodes.
  const unit = r.mode === "fp16" ? ["tensor", "converted to float16"] : ["node", "quantized"];
  // q4f16 with no MatMul to quantize still converts the model to float16.
  const none = r.mode === "q4f16" ? "nothing to quantize to 4 bits: converted to float16" : "nothing to quantize: written as it was";
  const what = r.quantized === 0 ? none : `${r.quantized} ${unit[0]}${r.quantized === 1 ? "" : "s"} ${unit[1]}`;
  const lines = [`${r.output}: ${r.mode}, ${size(r.inputBytes)} -> ${size(r.outputBytes)} (${((100 * r.outputBytes) / Math.max(1, r.inputBytes)).toFixed(0)}%), ${r.seconds.toFixed(2)} s, ${what}${r.left.length ? `, ${r.left.length} left float` : ""}`];
  for (const l of r.left) lines.push(`  left float: ${l.opType} ${l.node}: ${l.reason}`);
  return lines;
}

/** `tensorcast quantize` on an ONNX input (see the file comment); returns the exit code. */
export async function runQuantizeModel(args: readonly string[], io: CliIO): Promise<number> {
  const { options: o, positionals } = parseCommandArgs("quantize", args, QUANTIZE_MODEL_OPTIONS);
  if (o.help) {
    io.stdout.write(QUANTIZE_MODEL_HELP);
    return EXIT_OK;
  }
  if (positionals.length !== 1) throw new UsageError(`quantize takes one input (a .onnx file or a model folder), got ${positionals.length}`, "quantize");
  const input = positionals[0];
  const shared = sharedOptions(o);
  let reports: QuantizeFileReport[];
  if (input.toLowerCase().endsWith(".onnx")) {
    if (o.modes !== undefined) throw new UsageError("--modes is for a model folder; for one file give --mode and -o", "quantize");
    if (o.mode === undefined) throw new UsageError("quantize IN.onnx needs --mode MODE", "quantize");
    if (o.output === undefined) throw new UsageError("quantize IN.onnx needs -o OUT.onnx", "quantize");
    reports = [await quantizeModelFile(input, o.output, { ...shared, mode: mode(o.mode, "--mode") })];
  } else {
    if (o.mode !== undefined || o.output !== undefined) throw new UsageError("for a model folder give --modes (the outputs are named by mode), not --mode or -o", "quantize");
    const modes = o.modes === undefined ? undefined : o.modes.split(",").map((m) => mode(m.trim(), "--modes"));
    reports = await quantizeModelFolder(input, {
      ...shared, modes, onVariant: o.json ? undefined : (_in, out, m) => io.stderr.write(`making ${out} (${m})\n`),
    });
  }
  if (o.json) io.stdout.write(`${JSON.stringify(reports, null, 2)}\n`);
  else for (const r of reports) io.stdout.write(`${summaryLines(r).join("\n")}\n`);
  return EXIT_OK;
}

export const quantizeModelCommand: Command = {
  name: "quantize",
  summary: "make transformers.js' model variants (q4, q8, int8, uint8, bnb4, fp16, q4f16) of an ONNX model",
  help: QUANTIZE_MODEL_HELP,
  run: runQuantizeModel,
};
