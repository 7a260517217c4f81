/**
 * `tensorcast diff A B`: per-tensor differences between two files, for example a checkpoint and
 * its conversion: elements that differ, the largest absolute and relative error, and the largest
 * error in ULPs of the coarser of the two types.
 */
import { diffFiles, type DiffReport, type TensorDiff } from "../../convert/diff.js";
import { formatOption, jobsOption, npyOptions } from "../../convert/options.js";
import { parseCommandArgs, type OptionSpecs } from "../args.js";
import type { Command } from "../command.js";
import { FILE_JOB_OPTIONS, runFileCommand } from "../fileJob.js";
import { formatError } from "../../../explain/format.js";
import { joinText, tableText, visible, type Text } from "../format.js";
import type { CliIO } from "../io.js";
import { EXIT_OK, UsageError } from "../usage.js";

const OPTIONS = {
  json: { type: "boolean" },
  format: { type: "string", expects: "safetensors, npy, onnx, pb, pytorch or gguf (for both files)" },
  key: { type: "string", expects: "the key of PyTorch checkpoints' dict that holds the state dict, such as model" },
  ...FILE_JOB_OPTIONS,
  help: { type: "boolean", short: "h" },
} as const satisfies OptionSpecs;

const HELP = `Usage: tensorcast diff A B [--json]          (files, or sharded checkpoint folders)

Compares the tensors two files have in common (by name; two single-tensor files are compared
whatever their names), element by element as exact values: how many differ (NaN equals NaN), the
largest absolute and relative error, the largest error in units of the ULP of the coarser of the
two types at that value (0.5 is a correctly rounded conversion), and how many elements are finite
in one file and not the other. Tensors only in A or only in B are listed. A GGUF model's tensors
are compared as their dequantized values (bit for bit ggml's to_float), by their GGUF names:
'diff a.gguf b.gguf', or 'diff model.gguf model.safetensors' after a convert. Against a Hugging
Face folder or file that has none of the GGUF's names ('diff model.gguf OUTDIR' after 'convert
model.gguf -o OUTDIR'), the GGUF is read as transformers loads it: its names, its Q/K rows and
Gemma norms as the folder has them.

Options:
  --json               print the report as JSON
  --format FMT         the format of both files when their names do not say it
  --key K              PyTorch checkpoints: the state dict under the key K of their dict
  --npy-dtype TYPE     the type of raw '|V2' / '|V1' .npy arrays
  --fortran transpose  read Fortran-order .npy arrays as their transpose
  -q, --quiet          no progress bar
  --jobs N             worker threads (default: 2 for files over 8 MiB, else none)
  -h, --help           show this help

Exit code: 0 when both files were read (whether or not they differ), 1 bad input, 2 usage error.
`;

async function run(args: readonly string[], io: CliIO): Promise<number> {
  const { options: o, positionals } = parseCommandArgs("diff", args, OPTIONS);
  if (o.help) {
    io.stdout.write(HELP);
    return EXIT_OK;
  }
  if (positionals.length !== 2) throw new UsageError(`diff takes two files; got ${positionals.length} arguments`, "diff");
  const format = formatOption(o.format, "--format", "diff");
  return runFileCommand(io, o, "comparing", ({ signal, onProgress }) =>
    diffFiles(positionals[0], positionals[1], {
      formatA: format, formatB: format, npy: npyOptions(o["npy-dtype"], o.fortran, "diff"), jobs: jobsOption(o.jobs, "diff"),
      pytorch: { key: o.key },
      signal, onProgress,
    }),
    renderDiffReport,
  );
}

/** The table `diff` prints, a row at a time. */
export function renderDiffReport(r: DiffReport): Text {
  const row = (t: TensorDiff): string[] => {
    const s = t.stats;
    const types = t.dtypeA === t.dtypeB ? t.dtypeA : `${t.dtypeA} / ${t.dtypeB}`;
    if (!s) return [t.name, types, `[${t.shapeA.join(", ")}]`, t.problem ?? "", "", "", "", ""];
    return [
      t.name, types, `[${t.shapeA.join(", ")}]`, `${s.differing} of ${s.count}`,
      formatError(s.maxAbsError), formatError(s.maxRelError), formatError(s.maxUlp), String(s.nonFiniteMismatch),
    ];
  };
  const table = tableText(
    [
      { header: "tensor" }, { header: "dtype (A / B)" }, { header: "shape" }, { header: "differing", align: "right" },
      { header: "max abs err", align: "right" }, { header: "max rel err", align: "right" },
      { header: "max ulp", align: "right" }, { header: "non-finite mismatch", align: "right" },
    ],
    r.tensors.length, (i) => row(r.tensors[i]),
  );
  return joinText(
    `${r.a} vs ${r.b}\n`, table, onlyIn(r.a, r.onlyInA), onlyIn(r.b, r.onlyInB),
    `\n${r.identical} of ${r.tensors.length} common tensors identical\n`,
  );
}

/** "only in FILE: a, b, c", a name at a time (the list can be as long as a file's header). */
function* onlyIn(file: string, names: readonly string[]): Generator<string> {
  if (names.length === 0) return;
  yield `only in ${file}: `;
  for (let i = 0; i < names.length; i++) yield `${i === 0 ? "" : ", "}${visible(names[i])}`;
  yield "\n";
}

export const diffCommand: Command = {
  name: "diff",
  summary: "per-tensor error statistics between two files (absolute, relative, in ULPs)",
  help: HELP,
  run,
};
