/**
 * `tensorcast convert DIR --to float32|float16|bfloat16|q8_0 -o OUT.gguf`: a Hugging Face folder
 * written as the GGUF file llama.cpp's convert_hf_to_gguf.py writes for it (see docs/convert.md).
 */
import { TensorcastError } from "../../errors.js";
import { HF_GGUF_OUTTYPES, type HfGgufOuttype } from "../../io/hf-gguf/plan.js";
import { convertHfToGguf } from "../convert/hf-gguf.js";
import { jsonText, writeText } from "./format.js";
import type { CliIO } from "./io.js";
import { EXIT_OK, UsageError } from "./usage.js";

// convert_hf_to_gguf's --outtype spellings are taken too
const OUTTYPE_ALIASES: Readonly<Record<string, HfGgufOuttype>> = { f32: "float32", f16: "float16", bf16: "bfloat16" };

/** Whether a convert goes folder -> GGUF: IN a folder (already known) and OUT named .gguf. */
export function wantsGguf(output: string | undefined): boolean {
  return output !== undefined && output.toLowerCase().endsWith(".gguf");
}

export async function runHfToGguf(input: string, output: string, opts: { to?: string; force?: boolean; json?: boolean; quiet?: boolean; others: readonly string[] }, io: CliIO): Promise<number> {
  if (opts.others.length > 0) throw new UsageError(`--${opts.others[0]} does not apply to a folder written as GGUF`, "convert");
  const given = opts.to?.toLowerCase();
  const to = given === undefined ? undefined : (OUTTYPE_ALIASES[given] ?? given);
  if (to === undefined || !(HF_GGUF_OUTTYPES as readonly string[]).includes(to)) {
    throw new UsageError(`a folder written as GGUF needs --to ${HF_GGUF_OUTTYPES.join(", ")}${given === undefined ? "" : `; got ${JSON.stringify(opts.to)}`}`, "convert");
  }
  let report;
  try {
    report = await convertHfToGguf(input, output, to as HfGgufOuttype, { force: opts.force });
  } catch (e) {
    if (e instanceof TensorcastError && e.code === "INVALID_ATTRIBUTE") throw new UsageError(`-o: ${e.message}`, "convert");
    throw e;
  }
  if (opts.json) writeText(io.stdout, jsonText(report));
  else if (!opts.quiet) {
    io.stdout.write(`${output}: ${report.architecture}, ${report.tensors.length} tensors, ${report.metadataKeys} metadata keys, ${report.bytes} bytes\n`);
  }
  return EXIT_OK;
}
