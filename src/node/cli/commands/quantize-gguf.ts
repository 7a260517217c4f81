/**
 * `tensorcast quantize IN.gguf --mode PRESET -o OUT.gguf`: llama-quantize's presets and options,
 * the output byte for byte what llama_model_quantize writes (src/node/quantize/gguf.ts).
 * `quantize` hands a GGUF input here (isGgufQuantizeInput).
 */
import { TensorcastError } from "../../../index.js";
import { LLAMA_PRESETS, llamaPreset, presetNames, type LlamaPreset } from "../../../ggml/presets.js";
import { ggmlType, GGML_TYPES } from "../../../ggml/types.js";
import { canQuantize } from "../../../ggml/quantize/index.js";
import type { TensorTypeOverride } from "../../../io/gguf/quantize-plan.js";
import { formatBytes } from "../../io/tensors.js";
import { quantizeGgufFile, type QuantizeGgufReport } from "../../quantize/gguf.js";
import { quantizeHfFolder } from "../../quantize/hf-gguf.js";
import { stat } from "node:fs/promises";
import { readImatrixFile, type Imatrix } from "../../quantize/imatrix.js";
import { parseCommandArgs, type OptionSpecs } from "../args.js";
import { jsonText, tableText, writeText, joinText } from "../format.js";
import type { CliIO } from "../io.js";
import { runFileCommand } from "../fileJob.js";
import { EXIT_OK, UsageError } from "../usage.js";
import { splitLimitsOption } from "../split-options.js";
import { jobsOption } from "../../convert/options.js";

export const QUANTIZE_GGUF_OPTIONS = {
  mode: { type: "string", expects: "a llama-quantize preset such as Q4_K_M" },
  output: { type: "string", short: "o", expects: "the output .gguf file" },
  "allow-requantize": { type: "boolean" },
  "leave-output-tensor": { type: "boolean" },
  "output-tensor-type": { type: "string", expects: "a GGML type such as q8_0" },
  "token-embedding-type": { type: "string", expects: "a GGML type such as q8_0" },
  pure: { type: "boolean" },
  "tensor-type": { type: "string", expects: "NAME=TYPE (NAME a regular expression over tensor names), comma-separated for several" },
  imatrix: { type: "string", expects: "an importance matrix file (llama-imatrix's .gguf or legacy .dat)" },
  "keep-split": { type: "boolean" },
  "split-max-size": { type: "string", expects: "a size such as 2G or 500M (1000s) or a number of bytes" },
  "split-max-tensors": { type: "string", expects: "a number of tensors" },
  "no-tensor-first-split": { type: "boolean" },
  jobs: { type: "string", expects: "a number of worker threads" },
  "tokenizer-pre": { type: "string", expects: "a tokenizer.ggml.pre name llama.cpp knows, such as llama-bpe" },
  force: { type: "boolean", short: "f" },
  quiet: { type: "boolean", short: "q" },
  json: { type: "boolean" },
  help: { type: "boolean", short: "h" },
} as const satisfies OptionSpecs;

const writable = (): string => GGML_TYPES.filter((t) => t.stored && canQuantize(t, true)).map((t) => t.name.toLowerCase()).join(", ");

export const QUANTIZE_GGUF_HELP = `Usage: tensorcast quantize IN.gguf --mode PRESET -o OUT.gguf [options]
       tensorcast quantize DIR --mode PRESET -o OUT.gguf [options]

DIR, a Hugging Face model folder (safetensors, one file or sharded; PyTorch .bin shards; a Hub
cache snapshot), is read as the GGUF file convert_hf_to_gguf.py writes for it with its default
--outtype auto (BF16 for a bfloat16 model, F16 for float16 and float32 ones), which is never
written: its tensors go straight to the preset, in one pass, and OUT is byte for byte
llama_model_quantize's output for that file (docs/hf-to-gguf.md).

Quantizes a GGUF model (llama.cpp's; a split model's parts as one) as llama-quantize does:
OUT is byte for byte the file llama_model_quantize writes for the same preset and options (the
same tensor order, types, metadata and padding; the quantized blocks bit for bit ggml's). PRESET
is one of llama-quantize's names, in any case:
  ${LLAMA_PRESETS.map((p) => p.name).join(", ").replace(/(.{1,90})(, |$)/g, "$1,\n  ").replace(/,\n  $/, "")}
A mix (_S, _M, _L, IQ3_M, ...) gives attn_v, ffn_down, attn_output, the output and the token
embedding more or fewer bits by layer, as llama_tensor_get_type chooses; 1-D tensors and norms
keep their type. A tensor whose rows are not whole blocks of its type falls back as
llama-quantize's does (Q4_K to Q5_0, Q5_K to Q5_1, Q6_K to Q8_0, Q2_K/Q3_K/TQ to Q4_0, IQ to
IQ4_NL; F16 when rows are not a multiple of 32); the summary says which. IQ1_S, IQ1_M, IQ2_XXS,
IQ2_XS, IQ2_S, IQ2_M, IQ3_XXS, IQ3_XS and Q2_K_S need an importance matrix (--imatrix), as
llama.cpp requires one. OUT is written under a hidden temporary name, read back and checked,
then renamed. The way back: tensorcast convert OUT.gguf --to bfloat16 -o OUT.safetensors.

Options:
  --mode PRESET                 the preset (or its llama_ftype number, as llama-quantize takes it)
  -o, --output OUT              the .gguf file to write
  --allow-requantize            quantize tensors that are quantized already (dequantized first)
  --leave-output-tensor         output.weight keeps its type
  --output-tensor-type TYPE     output.weight's type (no fallback, as llama-quantize)
  --token-embedding-type TYPE   token_embd.weight's type (no fallback)
  --pure                        no mix: every quantized tensor in the preset's type
  --tensor-type NAME=TYPE       tensors whose name matches the regular expression NAME (lower-cased,
                                searched as std::regex_search does) get TYPE; repeat the option or
                                separate pairs with commas; the first match wins
  --imatrix FILE                importance weights: llama-imatrix's GGUF file or its legacy .dat
  --keep-split                  a split input written as the same parts, OUT-0000k-of-0000n.gguf (OUT
                                without .gguf; one part too), as llama-quantize --keep-split
  --split-max-size SIZE         OUT split as llama-gguf-split splits: a new part when the tensors
                                (padded to 32 bytes) would pass SIZE (2G, 500M: powers of 10)
  --split-max-tensors N         ... or every N tensors
  --no-tensor-first-split       ... with the first part holding the metadata only
  --tokenizer-pre NAME          DIR only: tokenizer.ggml.pre for a BPE tokenizer whose check-text
                                hash convert_hf_to_gguf.py does not know (a known hash wins)
  --jobs N                      worker threads quantizing row bands (default: one per core when a
                                tensor has more than one band; 0: this thread only); the bytes are
                                the same for every N, as llama-quantize's are for every nthread
  -f, --force                   replace an existing OUT
  -q, --quiet                   print nothing but errors
  --json                        print the report as JSON
  -h, --help                    show this help

TYPE is a GGML type tensorcast writes: ${writable()}.

Examples:
  tensorcast quantize model-f16.gguf --mode Q4_K_M -o model-Q4_K_M.gguf
  tensorcast quantize Llama-3.2-1B/ --mode Q4_K_M -o llama-3.2-1b.Q4_K_M.gguf
  tensorcast quantize model-f16.gguf --mode q8_0 --output-tensor-type f16 -o model-Q8_0.gguf
  tensorcast quantize model-f16.gguf --mode IQ2_XS --imatrix imatrix.gguf -o model-IQ2_XS.gguf
  tensorcast quantize big-f16.gguf --mode Q4_K_M --split-max-size 40G -o big-Q4_K_M.gguf
`;

/** Whether `quantize`'s input is a GGUF model (by its name). */
export function isGgufQuantizeInput(input: string): boolean {
  return input.toLowerCase().endsWith(".gguf");
}

/** Whether `path` is a folder (a Hugging Face model folder, for `quantize DIR --mode PRESET -o OUT.gguf`). */
export async function isFolder(path: string): Promise<boolean> {
  try {
    return (await stat(path)).isDirectory();
  } catch {
    return false;
  }
}

function typeArg(value: string | undefined, option: string): string | undefined {
  if (value === undefined) return undefined;
  try {
    const t = ggmlType(value);
    if (!t.stored || !canQuantize(t, true)) throw new TensorcastError("UNSUPPORTED_TYPE", `${t.name} is not a type tensorcast writes`);
    return t.name;
  } catch (e) {
    if (e instanceof TensorcastError) throw new UsageError(`${option} ${JSON.stringify(value)}: not a GGML type tensorcast writes; the types are ${writable()}`, "quantize");
    throw e;
  }
}

/** llama-quantize's parse_tensor_type: NAME=TYPE, NAME lower-cased. */
function tensorTypes(args: readonly string[]): TensorTypeOverride[] {
  const pairs: TensorTypeOverride[] = [];
  for (let i = 0; i < args.length; i++) {
    let v: string | undefined;
    if (args[i] === "--tensor-type") v = args[i + 1];
    else if (args[i].startsWith("--tensor-type=")) v = args[i].slice("--tensor-type=".length);
    if (v === undefined) continue;
    for (const item of v.split(",")) {
      const at = item.indexOf("=");
      if (at <= 0 || at === item.length - 1) throw new UsageError(`--tensor-type ${JSON.stringify(item)}: give NAME=TYPE, such as attn_v=q8_0`, "quantize");
      pairs.push({ pattern: item.slice(0, at).toLowerCase(), type: typeArg(item.slice(at + 1), `--tensor-type ${item.slice(0, at)}=`)! });
    }
  }
  return pairs;
}

/** `quantize IN.gguf --mode PRESET -o OUT.gguf ...`. */
export async function runQuantizeGguf(args: readonly string[], io: CliIO): Promise<number> {
  const { options: o, positionals } = parseCommandArgs("quantize", args, QUANTIZE_GGUF_OPTIONS);
  if (o.help) {
    io.stdout.write(QUANTIZE_GGUF_HELP);
    return EXIT_OK;
  }
  if (positionals.length !== 1) throw new UsageError(`quantize takes one input; got ${positionals.length} arguments`, "quantize");
  if (o.mode === undefined) throw new UsageError(`--mode PRESET is missing; the presets are ${presetNames()}`, "quantize");
  let preset: LlamaPreset;
  try {
    preset = llamaPreset(o.mode);
  } catch (e) {
    if (e instanceof TensorcastError) throw new UsageError(`--mode ${JSON.stringify(o.mode)} is not a llama-quantize preset; the presets are ${presetNames()}`, "quantize");
    throw e;
  }
  if (o.output === undefined) throw new UsageError("-o OUT.gguf is missing", "quantize");
  const input = positionals[0];
  const options = {
    preset, allowRequantize: o["allow-requantize"] === true, leaveOutputTensor: o["leave-output-tensor"] === true,
    outputTensorType: typeArg(o["output-tensor-type"], "--output-tensor-type"), tokenEmbeddingType: typeArg(o["token-embedding-type"], "--token-embedding-type"),
    pure: o.pure === true, tensorTypes: tensorTypes(args), force: o.force === true, jobs: jobsOption(o.jobs, "quantize"),
    keepSplit: o["keep-split"] === true, split: splitLimitsOption({ size: o["split-max-size"], tensors: o["split-max-tensors"], noTensorFirstSplit: o["no-tensor-first-split"] }, "gguf-split", "quantize"),
  };
  if (options.keepSplit && options.split) throw new UsageError("--keep-split keeps the input's parts; it does not go with --split-max-size, --split-max-tensors or --no-tensor-first-split", "quantize");
  let imatrix: Imatrix | undefined;
  if (o.imatrix !== undefined) imatrix = await readImatrixFile(o.imatrix);
  // A model folder: convert_hf_to_gguf's --outtype auto file, quantized, with no file in between.
  const folder = await isFolder(input);
  if (folder && !o.output.toLowerCase().endsWith(".gguf")) throw new UsageError(`-o ${JSON.stringify(o.output)}: a folder quantized with a llama-quantize preset is written as one GGUF file; name it OUT.gguf`, "quantize");
  if (!folder && o["tokenizer-pre"] !== undefined) throw new UsageError("--tokenizer-pre names a Hugging Face folder's tokenizer; a GGUF input keeps its own tokenizer.ggml.pre", "quantize");
  const job = folder ? quantizeHfFolder : quantizeGgufFile;
  return runFileCommand(io, { json: o.json, quiet: o.quiet }, "quantizing", async ({ signal, onProgress }) => {
    try {
      return await job(input, o.output!, {
        ...options, signal, onProgress, imatrix: imatrix !== undefined,
        imatrixData: imatrix?.weights, extraMetadata: imatrix?.metadata(o.imatrix!), tokenizerPre: o["tokenizer-pre"],
      });
    } catch (e) {
      if (e instanceof TensorcastError && e.code === "INVALID_ATTRIBUTE" && e.message.includes("pass --force")) throw new UsageError(`-o: ${e.message}`, "quantize");
      throw e;
    }
  }, (r) => (o.quiet ? "" : renderQuantizeGgufReport(r)));
}

/** What `quantize IN.gguf` prints: each tensor's types, then the totals and the fallbacks. */
export function renderQuantizeGgufReport(r: QuantizeGgufReport) {
  const table = tableText(
    [{ header: "tensor" }, { header: "shape" }, { header: "from" }, { header: "to" }, { header: "bytes", align: "right" }],
    r.tensors.length,
    (i) => {
      const t = r.tensors[i];
      return [t.name, `[${t.shape.join(", ")}]`, t.from, t.fallbackFrom ? `${t.to} (fallback from ${t.fallbackFrom})` : t.from === t.to ? `${t.to} (kept)` : t.to, String(t.bytes)];
    },
  );
  const fell = r.fallbacks > 0 ? `${r.fallbacks} of ${r.tensors.length} tensors fell back to another type: their rows are not whole blocks of the preset's type\n` : "";
  return joinText(
    `${r.input} -> ${r.files.length === 1 ? r.files[0] : `${r.files[0]} ... (${r.files.length} parts)`}  (${r.preset}, ${r.fileType >= 0 ? `general.file_type ${r.fileType}` : "no general.file_type: no llama-quantize preset is that type"})\n`, table,
    `\n${r.tensors.filter((t) => t.from !== t.to).length} of ${r.tensors.length} tensors quantized; ${formatBytes(r.bytesIn)} -> ${formatBytes(r.bytesOut)} in ${r.seconds.toFixed(2)} s\n${fell}`,
  );
}

export { jsonText, writeText };
