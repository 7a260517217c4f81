/**
 * `tensorcast convert DIR --to float32|float16|bfloat16|q8_0 -o OUT.gguf`: a Hugging Face folder
 * written as the GGUF file llama.cpp's convert_hf_to_gguf.py writes for it (see docs/convert.md).
 */
import { TensorcastError } from "../../errors.js";
import { HF_GGUF_OUTTYPES, type HfGgufOuttype } from "../../io/hf-gguf/plan.js";
import { convertHfToGguf } from "../convert/hf-gguf.js";
import { parseShardSlice } from "../convert/sharded.js";
import { parseSplitSize, type GgufSplitLimits } from "../../io/gguf/split-write.js";
import { jsonText, writeText } from "./format.js";
import type { CliIO } from "./io.js";
import { EXIT_OK, UsageError } from "./usage.js";

// convert_hf_to_gguf's --outtype spellings are taken too
const OUTTYPE_ALIASES: Readonly<Record<string, HfGgufOuttype>> = { f32: "float32", f16: "float16", bf16: "bfloat16" };

/** Whether a convert goes folder -> GGUF: IN a folder (already known) and OUT named .gguf. */
export function wantsGguf(output: string | undefined): boolean {
  return output !== undefined && output.toLowerCase().endsWith(".gguf");
}

export interface HfToGgufCliOptions {
  readonly to?: string;
  readonly force?: boolean;
  readonly json?: boolean;
  readonly quiet?: boolean;
  /** Options given that do not apply here. */
  readonly others: readonly string[];
  readonly splitMaxSize?: string;
  readonly splitMaxTensors?: string;
  readonly noTensorFirstSplit?: boolean;
  readonly shard?: string;
}

/** The split limits convert_hf_to_gguf.py's options give, or undefined for one file. */
function splitLimits(opts: HfToGgufCliOptions): GgufSplitLimits | undefined {
  let maxBytes: number | undefined;
  let maxTensors: number | undefined;
  if (opts.splitMaxSize !== undefined) {
    try {
      maxBytes = parseSplitSize(opts.splitMaxSize);
    } catch (e) {
      throw new UsageError(`--split-max-size: ${(e as Error).message}`, "convert");
    }
  }
  if (opts.splitMaxTensors !== undefined) {
    if (!/^\d{1,9}$/.test(opts.splitMaxTensors)) throw new UsageError(`--split-max-tensors takes a number of tensors, got ${JSON.stringify(opts.splitMaxTensors)}`, "convert");
    maxTensors = Number(opts.splitMaxTensors);
  }
  // convert_hf_to_gguf.py's 0 means no limit; --no-tensor-first-split alone splits off the metadata.
  if (!maxBytes && !maxTensors && !opts.noTensorFirstSplit) return undefined;
  return { maxBytes, maxTensors, firstWithoutTensors: opts.noTensorFirstSplit === true };
}

export async function runHfToGguf(input: string, output: string, opts: HfToGgufCliOptions, io: CliIO): Promise<number> {
  if (opts.others.length > 0) throw new UsageError(`--${opts.others[0]} does not apply to a folder written as GGUF`, "convert");
  const given = opts.to?.toLowerCase();
  const to = given === undefined ? undefined : (OUTTYPE_ALIASES[given] ?? given);
  if (to === undefined || !(HF_GGUF_OUTTYPES as readonly string[]).includes(to)) {
    throw new UsageError(`a folder written as GGUF needs --to ${HF_GGUF_OUTTYPES.join(", ")}${given === undefined ? "" : `; got ${JSON.stringify(opts.to)}`}`, "convert");
  }
  const split = splitLimits(opts);
  let shard: { index: number; count: number } | undefined;
  if (opts.shard !== undefined) {
    if (split === undefined) throw new UsageError("--shard K/N with -o OUT.gguf writes one part of a split model: give --split-max-size or --split-max-tensors", "convert");
    try {
      shard = parseShardSlice(opts.shard);
    } catch (e) {
      throw new UsageError((e as Error).message, "convert");
    }
  }
  let report;
  try {
    report = await convertHfToGguf(input, output, to as HfGgufOuttype, { force: opts.force, split, shard });
  } catch (e) {
    if (e instanceof TensorcastError && e.code === "INVALID_ATTRIBUTE") throw new UsageError(`-o: ${e.message}`, "convert");
    throw e;
  }
  if (opts.json) writeText(io.stdout, jsonText(report));
  else if (!opts.quiet) {
    if (report.files.length === 1 && report.files[0]!.path === output) {
      io.stdout.write(`${output}: ${report.architecture}, ${report.tensors.length} tensors, ${report.metadataKeys} metadata keys, ${report.bytes} bytes\n`);
    } else {
      for (const f of report.files) io.stdout.write(`${f.path}: ${f.tensors} tensors, ${f.bytes} bytes\n`);
      io.stdout.write(`${report.architecture}, ${report.metadataKeys} metadata keys in the first part\n`);
    }
  }
  return EXIT_OK;
}
