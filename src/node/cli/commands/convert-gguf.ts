/**
 * `tensorcast convert IN --to GGMLTYPE -o OUT.gguf`: a file's float tensors quantized to one GGML
 * type and written as GGUF (src/node/quantize/gguf-convert.ts). `convert` hands an OUT.gguf here
 * when IN is a file (isGgufConvert).
 */
import { stat } from "node:fs/promises";
import { TensorcastError } from "../../../index.js";
import { canQuantize } from "../../../ggml/quantize/index.js";
import { GGML_TYPES, ggmlType } from "../../../ggml/types.js";
import { formatOption } from "../../convert/options.js";
import { convertToGgufFile } from "../../quantize/gguf-convert.js";
import { parseCommandArgs, type OptionSpecs } from "../args.js";
import type { CliIO } from "../io.js";
import { runFileCommand } from "../fileJob.js";
import { EXIT_OK, UsageError } from "../usage.js";
import { renderQuantizeGgufReport } from "./quantize-gguf.js";

const OPTIONS = {
  to: { type: "string", expects: "a GGML type such as q4_k or Q8_0" },
  output: { type: "string", short: "o", expects: "the output .gguf file" },
  format: { type: "string", expects: "safetensors, npy, onnx, pb, pytorch or gguf" },
  "output-format": { type: "string", expects: "gguf" },
  key: { type: "string", expects: "the key of a PyTorch checkpoint's dict that holds the state dict" },
  "allow-requantize": { type: "boolean" },
  force: { type: "boolean", short: "f" },
  quiet: { type: "boolean", short: "q" },
  json: { type: "boolean" },
  help: { type: "boolean", short: "h" },
} as const satisfies OptionSpecs;

const written = (): string => GGML_TYPES.filter((t) => t.stored && canQuantize(t, true) && !["IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ1_S", "IQ1_M", "IQ3_XXS"].includes(t.name)).map((t) => t.name.toLowerCase()).join(", ");

export const CONVERT_GGUF_HELP = `Usage: tensorcast convert IN --to GGMLTYPE -o OUT.gguf [options]

Writes the tensors of IN (a GGUF model, safetensors, .npy, .onnx or .pb, a PyTorch checkpoint) as
a GGUF file: every float tensor of two or more dimensions quantized to GGMLTYPE (any case) bit
for bit as ggml_quantize_chunk, 1-D float tensors as F32, integer tensors as they are. A tensor
whose rows are not whole blocks of GGMLTYPE falls back as llama-quantize's does (Q4_K -> Q5_0,
Q5_K -> Q5_1, Q6_K -> Q8_0, Q2_K/Q3_K/TQ -> Q4_0, IQ -> IQ4_NL; F16 for rows not a multiple of
32), and the summary says so. Names and order are IN's (safetensors names are kept, not mapped to
llama.cpp's). A GGUF IN keeps its metadata, with general.file_type and
general.quantization_version set as llama-quantize sets them. For llama-quantize's mixes
(Q4_K_M, ...) use tensorcast quantize IN.gguf --mode PRESET.

GGMLTYPE: ${written()}.

Options:
  --to GGMLTYPE          the type of the quantized tensors
  -o, --output OUT.gguf  the file to write (hidden temporary name, read back, renamed)
  --format FMT           IN's format when its name does not say it
  --key K                a PyTorch checkpoint's state dict under the key K of its dict
  --allow-requantize     quantize tensors of a GGUF IN that are block-quantized already
  -f, --force            replace an existing OUT
  -q, --quiet            print nothing but errors
  --json                 print the report as JSON
  -h, --help             show this help
`;

/** Whether `convert`'s arguments ask for this form: OUT.gguf (or --output-format gguf) from a file. */
export async function isGgufConvert(output: string | undefined, outputFormat: string | undefined, input: string | undefined): Promise<boolean> {
  if (output === undefined || input === undefined) return false;
  if (!(outputFormat?.toLowerCase() === "gguf" || (outputFormat === undefined && output.toLowerCase().endsWith(".gguf")))) return false;
  try {
    return !(await stat(input)).isDirectory();
  } catch {
    return true;
  }
}

export async function runConvertToGguf(args: readonly string[], io: CliIO): Promise<number> {
  const { options: o, positionals } = parseCommandArgs("convert", args, OPTIONS);
  if (o.help) {
    io.stdout.write(CONVERT_GGUF_HELP);
    return EXIT_OK;
  }
  if (positionals.length !== 1) throw new UsageError(`convert takes one input file; got ${positionals.length}`, "convert");
  if (o.to === undefined) throw new UsageError(`convert to GGUF needs --to GGMLTYPE; the types are ${written()}`, "convert");
  let to;
  try {
    // tensorcast's own names of the plain types, as convert_hf_to_gguf's --outtype spells them too.
    to = ggmlType(({ float32: "F32", float16: "F16", bfloat16: "BF16" } as Record<string, string>)[o.to.toLowerCase()] ?? o.to);
    if (!to.stored || !canQuantize(to, true)) throw new TensorcastError("UNSUPPORTED_TYPE", "not written");
  } catch (e) {
    if (e instanceof TensorcastError) throw new UsageError(`--to ${JSON.stringify(o.to)} is not a GGML type tensorcast writes to GGUF; the types are ${written()}`, "convert");
    throw e;
  }
  if (o["output-format"] !== undefined && o["output-format"].toLowerCase() !== "gguf") throw new UsageError("OUT.gguf is GGUF; --output-format can only be gguf here", "convert");
  const format = formatOption(o.format, "--format", "convert");
  const input = positionals[0];
  const output = o.output!;
  return runFileCommand(io, { json: o.json, quiet: o.quiet }, "converting", async ({ signal, onProgress }) => {
    try {
      return await convertToGgufFile(input, output, { to, format, pytorch: { key: o.key }, allowRequantize: o["allow-requantize"] === true, force: o.force === true, signal, onProgress });
    } catch (e) {
      if (e instanceof TensorcastError && e.code === "INVALID_ATTRIBUTE" && e.message.includes(output)) throw new UsageError(`-o: ${e.message}`, "convert");
      throw e;
    }
  }, (r) => (o.quiet ? "" : renderQuantizeGgufReport(r)));
}
