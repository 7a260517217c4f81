/**
 * `tensorcast inspect FILE`: a table of a file's tensors with their type, shape, size and value
 * statistics (min, max, mean of the finite values; NaN and infinity counts).
 */
import { inspectFile, type InspectReport, type TensorSummary } from "../../convert/inspect.js";
import { formatOption, formatStat, jobsOption, npyOptions } from "../../convert/options.js";
import { formatBytes } from "../../io/tensors.js";
import { parseCommandArgs, type OptionSpecs } from "../args.js";
import type { Command } from "../command.js";
import { FILE_JOB_OPTIONS, runFileCommand } from "../fileJob.js";
import { joinText, tableText, type Text } from "../format.js";
import type { CliIO } from "../io.js";
import { entryText, type GgufSummary } from "../../io/gguf-summary.js";
import { EXIT_OK, UsageError } from "../usage.js";

const OPTIONS = {
  json: { type: "boolean" },
  "no-stats": { type: "boolean" },
  format: { type: "string", expects: "safetensors, npy, onnx, pb, pytorch or gguf" },
  key: { type: "string", expects: "the key of a PyTorch checkpoint's dict that holds the state dict, such as model" },
  ...FILE_JOB_OPTIONS,
  help: { type: "boolean", short: "h" },
} as const satisfies OptionSpecs;

const HELP = `Usage: tensorcast inspect FILE|DIR [--json] [--no-stats]

Lists the tensors of a safetensors, .npy, .onnx (its initializers), .pb, GGUF or PyTorch (.bin, .pt, .pth) file: name, type, shape
and bytes, and value statistics read from every element: the smallest, largest and mean finite
value, and how many are NaN or infinite. The header is validated first; a file whose header lies
is refused with the tensor and what is wrong. A sharded checkpoint (a folder with a
model.safetensors.index.json, or the index) is read as one file: every shard's tensors, and so is a
folder of pytorch_model.bin shards. A PyTorch checkpoint is read without running its pickle: only
what torch.load(weights_only=True) accepts (docs/convert.md). A GGUF model (llama.cpp's; a split
one's parts NAME-0000K-of-0000N.gguf are read as one) prints its metadata first (arrays as their type,
count and first items; the tokenizer's summarized), then each tensor's GGML type, stored bytes, bits
per weight and the statistics of its dequantized values.

Options:
  --json               print the report as JSON (with the safetensors __metadata__)
  --no-stats           read the header only
  --format FMT         the format when the name does not say it (safetensors, npy, onnx, pb, pytorch, gguf)
  --key K              a PyTorch checkpoint's state dict under the key K of its dict ({"model": {...}})
  --npy-dtype TYPE     the type of a raw '|V2' / '|V1' .npy array
  --fortran transpose  read a Fortran-order .npy array as its transpose
  -q, --quiet          no progress bar
  --jobs N             worker threads (default: 2 for files over 8 MiB, else none)
  -h, --help           show this help
`;

async function run(args: readonly string[], io: CliIO): Promise<number> {
  const { options: o, positionals } = parseCommandArgs("inspect", args, OPTIONS);
  if (o.help) {
    io.stdout.write(HELP);
    return EXIT_OK;
  }
  if (positionals.length !== 1) {
    throw new UsageError(`inspect takes one file; got ${positionals.length} arguments`, "inspect");
  }
  return runFileCommand(io, o, "reading", ({ signal, onProgress }) =>
    inspectFile(positionals[0], {
      format: formatOption(o.format, "--format", "inspect"),
      npy: npyOptions(o["npy-dtype"], o.fortran, "inspect"),
      pytorch: { key: o.key },
      stats: !o["no-stats"],
      jobs: jobsOption(o.jobs, "inspect"),
      signal, onProgress,
    }),
    renderInspectReport,
  );
}

/** The header and metadata table of a GGUF model. */
function ggufHead(r: InspectReport, g: GgufSummary): Text {
  const head =
    `${r.file}: GGUF v${g.version} (${g.endian}-endian, alignment ${g.alignment}${g.parts > 1 ? `, ${g.parts} parts` : ""}), ` +
    `${r.tensors.length} tensor${r.tensors.length === 1 ? "" : "s"}, ${formatBytes(r.size)}, ${g.metadata.length} metadata keys\n`;
  const rows = g.metadata.map(entryText);
  const table = tableText([{ header: "key" }, { header: "type" }, { header: "value" }], rows.length, (i) => [g.metadata[i].key, rows[i].type, rows[i].value]);
  return joinText(head, table, "\n");
}

/** The table `inspect` prints, a row at a time. */
export function renderInspectReport(r: InspectReport): Text {
  if (r.gguf) return renderGguf(r, r.gguf);
  const withStats = r.tensors.some((t) => t.stats);
  const head =
    `${r.file}: ${r.format}, ${r.tensors.length} tensor${r.tensors.length === 1 ? "" : "s"}, ${formatBytes(r.size)}` +
    (r.metadata ? `, metadata ${JSON.stringify(r.metadata)}` : "") + "\n";
  const columns = [
    { header: "tensor" }, { header: "dtype" }, { header: "shape" }, { header: "bytes", align: "right" as const },
    ...(withStats
      ? [
          { header: "min", align: "right" as const }, { header: "max", align: "right" as const },
          { header: "mean", align: "right" as const }, { header: "nan", align: "right" as const }, { header: "inf", align: "right" as const },
        ]
      : []),
  ];
  const row = (t: TensorSummary): string[] => {
    const s = t.stats;
    const base = [t.name, t.quantized ? `${t.dtype} from ${t.quantized}` : t.dtype, `[${t.shape.join(", ")}]`, String(t.bytes)];
    if (!withStats) return base;
    return [...base, formatStat(s?.min), formatStat(s?.max), formatStat(s?.mean), s ? String(s.nan) : "-", s ? String(s.inf) : "-"];
  };
  return joinText(head, tableText(columns, r.tensors.length, (i) => row(r.tensors[i])));
}

/** A GGUF model: its metadata, then each tensor's GGML type, stored bytes, bits per weight and dequantized statistics. */
function renderGguf(r: InspectReport, g: GgufSummary): Text {
  const withStats = r.tensors.some((t) => t.stats);
  const right = "right" as const;
  const columns = [
    { header: "tensor" }, { header: "ggml type" }, { header: "shape" }, { header: "bytes", align: right }, { header: "bits/w", align: right },
    ...(withStats
      ? [{ header: "min", align: right }, { header: "max", align: right }, { header: "mean", align: right }, { header: "nan", align: right }, { header: "inf", align: right }]
      : []),
  ];
  const row = (t: TensorSummary): string[] => {
    const s = t.stats;
    const base = [t.name, t.ggml?.type ?? t.dtype, `[${t.shape.join(", ")}]`, String(t.ggml?.bytes ?? t.bytes), t.ggml ? formatStat(t.ggml.bitsPerWeight) : "-"];
    if (!withStats) return base;
    return [...base, formatStat(s?.min), formatStat(s?.max), formatStat(s?.mean), s ? String(s.nan) : "-", s ? String(s.inf) : "-"];
  };
  return joinText(ggufHead(r, g), tableText(columns, r.tensors.length, (i) => row(r.tensors[i])));
}

export const inspectCommand: Command = {
  name: "inspect",
  summary: "list a file's tensors: dtype, shape, bytes, min / max / mean, NaN and Inf counts",
  help: HELP,
  run,
};
