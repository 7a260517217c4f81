/**
 * `tensorcast convert DIR --to TYPE -o OUT.gguf`: a Hugging Face folder written as GGUF (see
 * docs/hf-to-gguf.md). TYPE float32, float16, bfloat16, q8_0, tq1_0, tq2_0 or auto (f32, f16,
 * bf16 too) is convert_hf_to_gguf.py's --outtype: its file, byte for byte. Any other GGML type
 * tensorcast writes (q4_k, q6_k, ...) is `convert IN.gguf --to TYPE`'s output for the file
 * convert_hf_to_gguf.py --outtype auto makes, in one pass (src/node/quantize/hf-gguf.ts).
 */
import { TensorcastError } from "../../errors.js";
import { canQuantize } from "../../ggml/quantize/index.js";
import { GGML_TYPES, ggmlType, type GgmlType } from "../../ggml/types.js";
import { HF_GGUF_OUTTYPES } from "../../io/hf-gguf/plan.js";
import { convertHfToGguf, type HfGgufOuttypeOrAuto } from "../convert/hf-gguf.js";
import { convertHfFolderToGgml } from "../quantize/hf-gguf.js";
import { renderQuantizeGgufReport } from "./commands/quantize-gguf.js";
import { runFileCommand } from "./fileJob.js";
import { parseShardSlice } from "../convert/sharded.js";
import type { GgufSplitLimits } from "../../io/gguf/split-write.js";
import { splitLimitsOption } from "./split-options.js";
import { IMATRIX_TYPES } from "../../io/gguf/quantize-plan.js";
import { jsonText, writeText } from "./format.js";
import type { CliIO } from "./io.js";
import { EXIT_OK, UsageError } from "./usage.js";

// convert_hf_to_gguf's --outtype spellings are taken too
const OUTTYPE_ALIASES: Readonly<Record<string, HfGgufOuttypeOrAuto>> = { f32: "float32", f16: "float16", bf16: "bfloat16" };

/** The GGML types written through convert IN.gguf --to TYPE's rules. */
function ggmlTargets(): GgmlType[] {
  return GGML_TYPES.filter((t) => t.stored && t.quantized && canQuantize(t, true) && !IMATRIX_TYPES.includes(t.name) && !["Q8_0", "TQ1_0", "TQ2_0"].includes(t.name));
}

function accepted(): string {
  return `${[...HF_GGUF_OUTTYPES, "auto"].join(", ")} (convert_hf_to_gguf.py's --outtype), or ${ggmlTargets().map((t) => t.name.toLowerCase()).join(", ")}`;
}

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
  readonly tokenizerPre?: string;
}

/** The split limits convert_hf_to_gguf.py's options give, or undefined for one file. */
const splitLimits = (opts: HfToGgufCliOptions): GgufSplitLimits | undefined =>
  splitLimitsOption({ size: opts.splitMaxSize, tensors: opts.splitMaxTensors, noTensorFirstSplit: opts.noTensorFirstSplit }, "gguf-py", "convert");

export async function runHfToGguf(input: string, output: string, opts: HfToGgufCliOptions, io: CliIO): Promise<number> {
  if (opts.others.length > 0) throw new UsageError(`--${opts.others[0]} does not apply to a folder written as GGUF`, "convert");
  const given = opts.to?.toLowerCase();
  if (given === undefined) throw new UsageError(`a folder written as GGUF needs --to ${accepted()}`, "convert");
  const to = OUTTYPE_ALIASES[given] ?? given;
  if (!(HF_GGUF_OUTTYPES as readonly string[]).includes(to) && to !== "auto") {
    let t: GgmlType | undefined;
    try {
      t = ggmlType(given);
    } catch {
      t = undefined;
    }
    if (t === undefined || !ggmlTargets().includes(t)) {
      const why = t !== undefined && IMATRIX_TYPES.includes(t.name) ? ` (${t.name} needs an importance matrix: tensorcast quantize DIR --mode PRESET --imatrix FILE -o OUT.gguf)` : "";
      throw new UsageError(`a folder written as GGUF needs --to ${accepted()}; got ${JSON.stringify(opts.to)}${why}`, "convert");
    }
    const target = t;
    if (splitLimits(opts) !== undefined || opts.shard !== undefined) throw new UsageError(`--split-max-size, --split-max-tensors, --no-tensor-first-split and --shard split convert_hf_to_gguf's outtypes (${[...HF_GGUF_OUTTYPES, "auto"].join(", ")}); --to ${given} writes one file`, "convert");
    return runFileCommand(io, { json: opts.json, quiet: opts.quiet }, "converting", async ({ signal, onProgress }) => {
      try {
        return await convertHfFolderToGgml(input, output, { to: target, force: opts.force === true, signal, onProgress, tokenizerPre: opts.tokenizerPre });
      } catch (e) {
        if (e instanceof TensorcastError && e.code === "INVALID_ATTRIBUTE") throw new UsageError(`-o: ${e.message}`, "convert");
        throw e;
      }
    }, (r) => (opts.quiet ? "" : renderQuantizeGgufReport(r)));
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
    report = await convertHfToGguf(input, output, to as HfGgufOuttypeOrAuto, { force: opts.force, split, shard, tokenizerPre: opts.tokenizerPre });
  } catch (e) {
    if (e instanceof TensorcastError && e.code === "INVALID_ATTRIBUTE") throw new UsageError(`-o: ${e.message}`, "convert");
    throw e;
  }
  if (opts.json) writeText(io.stdout, jsonText(report));
  else if (!opts.quiet) {
    for (const n of report.notes) io.stdout.write(`note: ${n}\n`);
    if (report.files.length === 1 && report.files[0]!.path === output) {
      io.stdout.write(`${output}: ${report.architecture}, ${report.outtype}, ${report.tensors.length} tensors, ${report.metadataKeys} metadata keys, ${report.bytes} bytes\n`);
    } else {
      for (const f of report.files) io.stdout.write(`${f.path}: ${f.tensors} tensors, ${f.bytes} bytes\n`);
      io.stdout.write(`${report.architecture}, ${report.metadataKeys} metadata keys in the first part\n`);
    }
  }
  return EXIT_OK;
}
