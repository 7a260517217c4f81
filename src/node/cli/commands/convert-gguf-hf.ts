/**
 * `tensorcast convert model.gguf [--to TYPE] -o OUTDIR`: a GGUF model written as the Hugging Face
 * folder transformers saves after loading it (src/node/convert/gguf-to-hf.ts). Chosen when IN is
 * GGUF and OUT names no file format, as a checkpoint folder's output is.
 */
import { TensorcastError } from "../../../index.js";
import { formatError } from "../../../explain/format.js";
import { convertGgufToHf, GGUF_HF_TYPES, type GgufHfType, type GgufToHfReport } from "../../convert/gguf-to-hf.js";
import { formatOption, jobsOption, sizeOption } from "../../convert/options.js";
import { progressWanted } from "../../convert/progress.js";
import { checkOutputFolder } from "../../convert/sharded.js";
import { formatBytes } from "../../io/tensors.js";
import { formatOfPath } from "../../io/reader.js";
import { parseShardSize } from "../../io/shard-split.js";
import { joinText, jsonText, tableText, writeText, type Text } from "../format.js";
import type { CliIO } from "../io.js";
import { EXIT_OK, UsageError } from "../usage.js";

/** The flags runGgufToHf reads; the others must be absent. */
export interface GgufHfFlags {
  readonly to?: string;
  readonly force?: boolean;
  readonly quiet?: boolean;
  readonly json?: boolean;
  readonly jobs?: string;
  readonly "chunk-size"?: string;
  readonly "max-shard-size"?: string;
  readonly [flag: string]: unknown;
}

const NOT_FOR_FOLDER = [
  "only", "skip", "initializers", "include-int", "saturate", "no-saturate", "output-format", "npy-dtype", "fortran",
  "external-data", "inline", "shard", "key", "keep-io-types", "weights-only", "block-ops",
] as const;

/** Whether `convert IN -o OUT` is GGUF to a Hugging Face folder: IN is GGUF, OUT names no file format. */
export function isGgufToFolder(input: string, format: string | undefined, output: string | undefined, outputFormat: string | undefined): boolean {
  if (output === undefined || outputFormat !== undefined) return false;
  const inFormat = format !== undefined ? formatOption(format, "--format", "convert") : formatOfPath(input);
  return inFormat === "gguf" && formatOfPath(output) === undefined;
}

type Stoppable = <R>(
  io: CliIO, bar: boolean, interrupted: (signal: string) => string,
  work: (signal: AbortSignal, onProgress: ((done: number, total: number) => void) | undefined) => Promise<R>,
) => Promise<{ done: true; report: R } | { done: false; exit: number }>;

export async function runGgufToHf(input: string, output: string, o: GgufHfFlags, io: CliIO, stoppable: Stoppable): Promise<number> {
  for (const flag of NOT_FOR_FOLDER) {
    if (o[flag] !== undefined) throw new UsageError(`--${flag} does not apply to a GGUF model written as a Hugging Face folder (every tensor is written, in TYPE)`, "convert");
  }
  if (o.to !== undefined && !(GGUF_HF_TYPES as readonly string[]).includes(o.to)) {
    throw new UsageError(`--to ${o.to}: a GGUF model is written as a Hugging Face folder in ${GGUF_HF_TYPES.join(", ")} (transformers' dtype=); for other types write OUT.safetensors`, "convert");
  }
  const jobs = jobsOption(o.jobs, "convert");
  const chunkBytes = sizeOption(o["chunk-size"], "convert");
  let maxShardSize: number | undefined;
  try {
    maxShardSize = o["max-shard-size"] === undefined ? undefined : parseShardSize(o["max-shard-size"]);
    // An -o that can never work is a usage error, found before the model is read.
    await checkOutputFolder(output, input, o.force === true);
  } catch (e) {
    if (e instanceof TensorcastError && e.code === "INVALID_ATTRIBUTE") throw new UsageError(`${maxShardSize === undefined && o["max-shard-size"] !== undefined ? "--max-shard-size" : "-o"}: ${e.message}`, "convert");
    throw e;
  }
  const run = await stoppable(io, progressWanted(io.stderr, o.quiet === true),
    (signal) => `interrupted by ${signal}: ${output} was not written (${input} is unchanged)\n`,
    (signal, onProgress) => convertGgufToHf(input, output, {
      to: o.to as GgufHfType | undefined, maxShardSize, force: o.force === true, jobs, chunkBytes, signal, onProgress,
    }));
  if (!run.done) return run.exit;
  if (o.json) writeText(io.stdout, jsonText(run.report));
  else if (!o.quiet) writeText(io.stdout, renderGgufHfReport(run.report));
  return EXIT_OK;
}

/** What `convert model.gguf -o OUTDIR` prints: each tensor, then the folder. */
export function renderGgufHfReport(r: GgufToHfReport): Text {
  const stats = new Map(r.shards.flatMap((s) => s.tensors.map((t) => [t.name, t.stats] as const)));
  const table = tableText(
    [
      { header: "tensor" }, { header: "shape" }, { header: "from (GGUF)" }, { header: "stored" }, { header: "transform" },
      { header: "max abs err", align: "right" }, { header: "max rel err", align: "right" },
    ],
    r.tensors.length, (i) => {
      const t = r.tensors[i];
      const s = stats.get(t.name);
      return [t.name, `[${t.shape.join(", ")}]`, t.from, t.ggmlType, t.transform === "identity" ? "" : t.transform, s ? formatError(s.maxAbsError) : "", s ? formatError(s.maxRelError) : ""];
    },
  );
  return joinText(
    `${r.input} -> ${r.output}  (GGUF ${r.architecture} -> Hugging Face folder, ${r.to}; errors: ${r.to} against the dequantized float32)\n`,
    table,
    `\n${r.tensors.length} tensors in ${r.files.join(", ")}` +
      (r.indexName !== undefined ? `; index ${r.indexName}, total_size ${r.totalSize}` : " (one file, no index)") +
      `; ${formatBytes(r.bytesIn)} -> ${formatBytes(r.bytesOut)} in ${r.seconds.toFixed(2)} s\n` +
      `written: ${r.written.join(", ")}\n` +
      (r.skipped.length > 0 ? `left out (transformers has no place for them): ${r.skipped.join(", ")}\n` : ""),
  );
}
