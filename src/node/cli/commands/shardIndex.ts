/**
 * `tensorcast index OUTDIR [--from IN]`: writes the model.safetensors.index.json of a folder of
 * shards, the merge step after `convert --shard K/N` ran in N processes.
 */
import { TensorcastError } from "../../../index.js";
import { indexCheckpoint, type IndexReport } from "../../convert/sharded.js";
import { INDEX_SUFFIX } from "../../io/checkpoint.js";
import { formatBytes } from "../../io/tensors.js";
import { parseCommandArgs, type OptionSpecs } from "../args.js";
import type { Command } from "../command.js";
import { jsonText, writeText } from "../format.js";
import type { CliIO } from "../io.js";
import { EXIT_OK, UsageError } from "../usage.js";

const OPTIONS = {
  from: { type: "string", expects: "the input checkpoint: its folder or its index" },
  name: { type: "string", expects: `an index file name ending in ${INDEX_SUFFIX}` },
  force: { type: "boolean", short: "f" },
  quiet: { type: "boolean", short: "q" },
  json: { type: "boolean" },
  help: { type: "boolean", short: "h" },
} as const satisfies OptionSpecs;

const HELP = `Usage: tensorcast index OUTDIR [--from IN] [--force] [--json]

Writes the index of a folder of safetensors shards (model.safetensors.index.json): a weight_map
naming every tensor's shard, and metadata.total_size, the bytes of every tensor's data (what
transformers and huggingface_hub write; not the files' sizes). Every shard's header is read and
validated; a tensor in two shards is refused. The index is written under a temporary name, read
back with every shard's header, then renamed into place.

This is the merge step of a conversion spread over N processes or machines:
  tensorcast convert IN --to bfloat16 -o OUTDIR --shard K/N     (K = 0 .. N-1, anywhere)
  tensorcast index OUTDIR --from IN

Options:
  --from IN      the input checkpoint (its folder or index): OUTDIR must hold exactly its shards,
                 each with the same tensors and shapes (a slice that has not finished is named);
                 the index takes its name and keeps its other metadata keys (total_parameters)
  --name NAME    the index's name without --from (default model.safetensors.index.json)
  -f, --force    replace an existing index
  -q, --quiet    print nothing but errors
  --json         print the report as JSON
  -h, --help     show this help

Exit code: 0 written; 1 the shards do not form the checkpoint (nothing written); 2 usage error.
`;

async function run(args: readonly string[], io: CliIO): Promise<number> {
  const { options: o, positionals } = parseCommandArgs("index", args, OPTIONS);
  if (o.help) {
    io.stdout.write(HELP);
    return EXIT_OK;
  }
  if (positionals.length !== 1) throw new UsageError(`index takes one folder; got ${positionals.length} arguments`, "index");
  if (o.name !== undefined && (o.from !== undefined || !o.name.endsWith(INDEX_SUFFIX) || /[\\/]/.test(o.name) || o.name.startsWith("."))) {
    throw new UsageError(
      o.from !== undefined ? "--name and --from contradict each other: with --from the index keeps the input's name"
        : `--name ${JSON.stringify(o.name)} is not a plain file name ending in ${INDEX_SUFFIX}`,
      "index",
    );
  }
  let report: IndexReport;
  try {
    report = await indexCheckpoint(positionals[0], { from: o.from, name: o.name, force: o.force === true });
  } catch (e) {
    if (e instanceof TensorcastError && e.code === "INVALID_ATTRIBUTE") throw new UsageError(e.message, "index");
    throw e;
  }
  if (o.json) writeText(io.stdout, jsonText(report));
  else if (!o.quiet) {
    io.stdout.write(`${report.index}: ${report.tensors} tensors in ${report.shards.length} shards, total_size ${report.totalSize} (${formatBytes(report.totalSize)})\n`);
  }
  return EXIT_OK;
}

export const indexCommand: Command = {
  name: "index",
  summary: "write a sharded checkpoint's index.json from its shards (after convert --shard K/N)",
  help: HELP,
  run,
};
