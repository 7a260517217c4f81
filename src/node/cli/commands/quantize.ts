/**
 * `tensorcast quantize IN --mode fp8|fp8-ue8m0|mxfp4|nvfp4 -o OUT`: a safetensors file or a sharded
 * checkpoint quantized in the layouts Hugging Face loaders read (src/node/quantize/checkpoint.ts),
 * with a summary of the tensors quantized and of those kept and why.
 */
import { TensorcastError } from "../../../index.js";
import { regexOption } from "../../convert/options.js";
import { parseShardSlice } from "../../convert/sharded.js";
import { parseShardSize } from "../../io/shard-split.js";
import { QUANTIZE_MODES, quantizeCheckpoint, type QuantizeMode } from "../../quantize/checkpoint.js";
import { formatBytes } from "../../io/tensors.js";
import { parseCommandArgs, type OptionSpecs } from "../args.js";
import type { Command } from "../command.js";
import { isOnnxQuantizeInput, QUANTIZE_MODEL_OPTIONS, runQuantizeModel } from "./quantize-model.js";
import { isFolder, isGgufQuantizeInput, QUANTIZE_GGUF_OPTIONS, runQuantizeGguf } from "./quantize-gguf.js";
import { llamaPreset } from "../../../ggml/presets.js";
import { jsonText, writeText } from "../format.js";
import type { CliIO } from "../io.js";
import { EXIT_OK, UsageError } from "../usage.js";

const OPTIONS = {
  mode: { type: "string", expects: QUANTIZE_MODES.join(", ") },
  output: { type: "string", short: "o", expects: "the output file or folder" },
  block: { type: "string", expects: "RxC, such as 128x128" },
  only: { type: "string", expects: "a regular expression over tensor names" },
  skip: { type: "string", expects: "a regular expression over tensor names" },
  shard: { type: "string", expects: "K/N: slice K (from 0) of N of a sharded checkpoint's shards" },
  "max-shard-size": { type: "string", expects: "a size such as 5GB, 500MB, 2GiB or a number of bytes" },
  force: { type: "boolean", short: "f" },
  quiet: { type: "boolean", short: "q" },
  json: { type: "boolean" },
  help: { type: "boolean", short: "h" },
} as const satisfies OptionSpecs;

const HELP = `Usage: tensorcast quantize IN.gguf --mode PRESET -o OUT.gguf [options]       (GGUF models)
       tensorcast quantize DIR --mode PRESET -o OUT.gguf [options]           (Hugging Face folders)
       tensorcast quantize IN.onnx --mode MODE -o OUT.onnx | DIR [--modes ...]   (ONNX models)
       tensorcast quantize IN --mode fp8|fp8-ue8m0|mxfp4|nvfp4 -o OUT [options] (checkpoints)

A .gguf model gets llama-quantize's presets (Q4_K_M, Q8_0, IQ4_XS, ...), byte for byte as
llama_model_quantize writes them: \`tensorcast quantize model.gguf --help\` lists its options.
A Hugging Face model folder with -o OUT.gguf gets them too, in one pass: the file is what
llama_model_quantize writes from convert_hf_to_gguf.py's default (--outtype auto) file.

An .onnx model, or a model folder with onnx/, gets transformers.js' variants (q4, q8, int8, uint8,
bnb4, fp16, q4f16): \`tensorcast quantize model.onnx --help\` lists their options.

Quantizes a safetensors file or a model folder (sharded, by its folder or index; or one
model.safetensors and no index; or PyTorch's pytorch_model.bin, alone or in shards with their
index, read as the safetensors folder it converts to) in the layouts
Hugging Face loaders read, bit for bit as transformers 5.18 computes them:
  fp8        2-D Linear weights in RxC tiles (128x128): X.weight float8e4m3fn (w * 448 / amax,
             saturated) and X.weight_scale_inv float32 [rows/R, cols/C] (FineGrainedFP8, DeepSeek-V3)
  fp8-ue8m0  the same with power-of-two inverse scales stored as float8e8m0
  mxfp4      MoE experts (*.experts.gate_up_proj / down_proj, [experts, in, out]) as gpt-oss stores
             them: X_blocks uint8 [experts, out, in/32, 16] and X_scales uint8 [experts, out, in/32]
             (OCP MX v1.0: e8m0 exponent per 32 inputs, float4e2m1 elements, low nibble first)
  nvfp4      2-D Linear weights (in a multiple of 16) as compressed-tensors' nvfp4-pack-quantized:
             X.weight_packed uint8 [out, in/2], X.weight_scale float8e4m3fn [out, in/16] and
             X.weight_global_scale float32 [1] (448 * 6 / amax), every step in float32
Embeddings, lm_head and norms are kept, and so is a weight whose shape is not a multiple of the
block (as transformers leaves it); the summary lists every tensor kept and why. A folder keeps its
layout (a new index with the exact total_size; a one-file folder stays one file, no index), its
other files copied and config.json a quantization_config; --max-shard-size lays it out anew.
An input already quantized is refused. The way back: tensorcast convert OUT --to bfloat16 -o DIR.

Options:
  --mode MODE      fp8, fp8-ue8m0, mxfp4 or nvfp4
  -o, --output OUT the output file (for a file) or folder (for a checkpoint)
  --block RxC      the FP8 tile (default 128x128)
  --only REGEX     quantize only tensors whose name matches
  --skip REGEX     keep tensors whose name matches
  --shard K/N      only slice K (from 0) of N of the shards, into a shared OUT (slice 0 also copies
                   the other files); then tensorcast index OUT writes the index
  --max-shard-size SIZE
                   a folder's output in shards of at most SIZE bytes of tensor data, as
                   save_pretrained(max_shard_size=) (a weight and its scales stay together);
                   5GB, 500MB (powers of 10), 2GiB (powers of 2) or bytes; one file and no index
                   when all fit
  -f, --force      replace an existing output
  -q, --quiet      print nothing but errors
  --json           print the report as JSON
  -h, --help       show this help
`;

function blockOption(value: string | undefined): [number, number] | undefined {
  if (value === undefined) return undefined;
  const m = /^(\d+)x(\d+)$/.exec(value);
  const r = m ? Number(m[1]) : 0;
  const c = m ? Number(m[2]) : 0;
  if (!m || r < 1 || c < 1 || r > 65536 || c > 65536) throw new UsageError(`--block ${JSON.stringify(value)} is not RxC with R and C from 1 to 65536, such as 128x128`, "quantize");
  return [r, c];
}

/**
 * The first argument that is not an option or an option's value, as either form of the command
 * (checkpoints here, ONNX models in quantize-model.ts) reads its options.
 */
function firstPositional(args: readonly string[]): string | undefined {
  const specs: OptionSpecs[] = [OPTIONS, QUANTIZE_MODEL_OPTIONS, QUANTIZE_GGUF_OPTIONS];
  const takesValue = (arg: string): boolean => specs.some((spec) => Object.entries(spec).some(([name, o]) =>
    o.type === "string" && (arg === `--${name}` || (o.short !== undefined && arg === `-${o.short}`))));
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    if (a === "--") return args[i + 1];
    if (!a.startsWith("-") || a === "-") return a;
    if (takesValue(a)) i++;
  }
  return undefined;
}

/** The last value of a string option (--name V, --name=V, or -s V) in `args`. */
function optionValue(args: readonly string[], name: string, short?: string): string | undefined {
  let v: string | undefined;
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    if (a === "--") break;
    if (a === `--${name}` || (short !== undefined && a === `-${short}`)) v = args[++i];
    else if (a.startsWith(`--${name}=`)) v = a.slice(name.length + 3);
  }
  return v;
}

/**
 * Whether a folder's quantize is llama-quantize's: -o names a .gguf file, or --mode is a
 * llama-quantize preset and none of the checkpoint modes (fp8, mxfp4, ...).
 */
function wantsGgufFromFolder(args: readonly string[]): boolean {
  if (optionValue(args, "output", "o")?.toLowerCase().endsWith(".gguf")) return true;
  const mode = optionValue(args, "mode");
  if (mode === undefined || (QUANTIZE_MODES as readonly string[]).includes(mode)) return false;
  try {
    llamaPreset(mode);
    return true;
  } catch {
    return false;
  }
}

async function run(args: readonly string[], io: CliIO): Promise<number> {
  // An .onnx model or a model folder with onnx/ is the other form: transformers.js' variants.
  const input = firstPositional(args);
  // A GGUF model is the third form: llama-quantize's presets.
  if (input !== undefined && isGgufQuantizeInput(input)) return runQuantizeGguf(args, io);
  // So is a model folder written as OUT.gguf: convert_hf_to_gguf's file, quantized in the same pass.
  if (input !== undefined && wantsGgufFromFolder(args) && (await isFolder(input))) return runQuantizeGguf(args, io);
  // A Hub folder often holds both model.safetensors and onnx/: a checkpoint mode (fp8, mxfp4, ...)
  // is about the former, whatever the folder also holds.
  const checkpointMode = args.some((a, i) => (a === "--mode" && (QUANTIZE_MODES as readonly string[]).includes(args[i + 1] ?? "")) ||
    (QUANTIZE_MODES as readonly string[]).includes(a.startsWith("--mode=") ? a.slice("--mode=".length) : ""));
  if (input !== undefined && isOnnxQuantizeInput(input) && !(checkpointMode && !input.toLowerCase().endsWith(".onnx"))) return runQuantizeModel(args, io);
  const { options: o, positionals } = parseCommandArgs("quantize", args, OPTIONS);
  if (o.help) {
    io.stdout.write(HELP);
    return EXIT_OK;
  }
  if (positionals.length !== 1) throw new UsageError(`quantize takes one input; got ${positionals.length} arguments`, "quantize");
  if (o.mode === undefined || !(QUANTIZE_MODES as readonly string[]).includes(o.mode)) {
    throw new UsageError(`--mode ${o.mode === undefined ? "is missing" : JSON.stringify(o.mode) + " is not a mode"}; the modes are ${QUANTIZE_MODES.join(", ")}`, "quantize");
  }
  if (o.output === undefined) throw new UsageError("-o OUT is missing", "quantize");
  const mode = o.mode as QuantizeMode;
  const block = blockOption(o.block);
  if (block && (mode === "mxfp4" || mode === "nvfp4")) throw new UsageError(`--block is for fp8 modes; ${mode} blocks are ${mode === "mxfp4" ? 32 : 16} inputs`, "quantize");
  let report;
  try {
    report = await quantizeCheckpoint(positionals[0], o.output, {
      mode, block, only: regexOption(o.only, "--only", "quantize"), skip: regexOption(o.skip, "--skip", "quantize"), force: o.force === true,
      shard: o.shard === undefined ? undefined : parseShardSlice(o.shard),
      maxShardSize: o["max-shard-size"] === undefined ? undefined : parseShardSize(o["max-shard-size"]),
    });
  } catch (e) {
    if (e instanceof TensorcastError && e.code === "INVALID_ATTRIBUTE" && !/already quantized|quantization_config/.test(e.message)) throw new UsageError(e.message, "quantize");
    throw e;
  }
  if (o.json) writeText(io.stdout, jsonText(report));
  else if (!o.quiet) {
    const q = report.tensors.filter((t) => t.action === "quantized");
    const kept = report.tensors.filter((t) => t.action === "kept");
    const lines = [
      `${report.output}: ${mode}${report.block ? ` ${report.block[0]}x${report.block[1]}` : ""}, ${q.length} tensors quantized, ${kept.length} kept; ${formatBytes(report.bytesIn)} -> ${formatBytes(report.bytesOut)}${report.totalSize !== undefined ? `, total_size ${report.totalSize}` : ""}`,
      ...q.map((t) => `  quantized ${t.name} -> ${t.written.join(", ")}`),
      ...kept.map((t) => `  kept      ${t.name}: ${t.reason}`),
    ];
    if (report.config) lines.push("  config.json: quantization_config added");
    io.stdout.write(lines.join("\n") + "\n");
  }
  return EXIT_OK;
}

export const quantizeCommand: Command = {
  name: "quantize",
  summary: "llama-quantize's presets for a GGUF model (Q4_K_M, ...), transformers.js' variants of an ONNX model (q4, q8, ...), or FP8 / MXFP4 checkpoints",
  help: HELP,
  run,
};
